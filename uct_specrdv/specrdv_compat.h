/**
 * ucx-spec: the UCT internals that changed between the UCX versions specrdv
 * builds on (1.13.1, 1.18.1, 1.22.0), behind UCX's own version macro, in
 * this one file.  Each writer keeps the 1.13.1 shapes of its functions; the
 * adaptors here give UCX the shapes it calls.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_COMPAT_H_
#define UCT_SPECRDV_COMPAT_H_

#include <uct/api/version.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/math.h>
#include <string.h>

#define UCT_SPECRDV_UCX_AT_LEAST(_major, _minor) \
    (UCT_API >= UCT_VERSION(_major, _minor))

#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  include <ucs/sys/ptr_arith.h>
#  include <ucs/time/time.h>
#endif


/* --- memory domain ------------------------------------------------------ */

#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
/* flat attributes; UCX fills the defaults.  UCP may cache registrations of
 * host memory on a writer's md in its own memory-handle cache (UCP's datatype
 * iterator registers only on such mds) */
typedef uct_md_attr_v2_t uct_specrdv_md_attr_t;
#  define UCT_SPECRDV_MD_CAP(_attr, _field)   (_attr)->_field
#  define uct_specrdv_md_attr_init(_attr) \
    ({ \
        uct_md_base_md_query(_attr); \
        (_attr)->cache_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST); \
    })
#else
typedef uct_md_attr_t uct_specrdv_md_attr_t;
#  define UCT_SPECRDV_MD_CAP(_attr, _field)   (_attr)->cap._field
static UCS_F_MAYBE_UNUSED void
uct_specrdv_md_attr_init(uct_specrdv_md_attr_t *md_attr)
{
    memset(md_attr, 0, sizeof(*md_attr));
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
}
#endif

/* An md's mem_reg and mkey_pack as UCX calls them, around the writer's
 * (md, address, length, flags, memh_p) and (memh, rkey_buffer) */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  define UCT_SPECRDV_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              const uct_md_mem_reg_params_t *params, \
                              uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, \
                     UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0), \
                     memh_p); \
    }
#  define UCT_SPECRDV_MD_MKEY_PACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, void *address, \
                              size_t length, \
                              const uct_md_mkey_pack_params_t *params, \
                              void *rkey_buffer) \
    { \
        return _impl(memh, rkey_buffer); \
    }
/* the slot that held is_sockaddr_accessible */
#  define UCT_SPECRDV_MD_OPS_TAIL \
    .mem_attach         = (uct_md_mem_attach_func_t) \
                                  ucs_empty_function_return_unsupported, \
    .detect_memory_type = (uct_md_detect_memory_type_func_t) \
                                  ucs_empty_function_return_unsupported
#else
#  define UCT_SPECRDV_MD_MEM_REG_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, void *address, size_t length, \
                              unsigned flags, uct_mem_h *memh_p) \
    { \
        return _impl(md, address, length, flags, memh_p); \
    }
#  define UCT_SPECRDV_MD_MKEY_PACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, \
                              const uct_md_mkey_pack_params_t *params, \
                              void *rkey_buffer) \
    { \
        return _impl(memh, rkey_buffer); \
    }
#  define UCT_SPECRDV_MD_OPS_TAIL \
    .is_sockaddr_accessible = ucs_empty_function_return_zero_int, \
    .detect_memory_type     = (uct_md_detect_memory_type_func_t) \
                                      ucs_empty_function_return_unsupported
#endif

/* The registration cache's configuration moved from UCT to UCS in 1.18 */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
typedef ucs_rcache_config_t uct_specrdv_rcache_config_t;
#  define uct_specrdv_rcache_config_table         ucs_config_rcache_table
#  define uct_specrdv_rcache_set_params(_p, _c)   ucs_rcache_set_params(_p, _c)
#  define uct_specrdv_rcache_get(_rc, _a, _l, _prot, _arg, _r) \
    ucs_rcache_get(_rc, _a, _l, ucs_get_page_size(), _prot, _arg, _r)
#  define uct_specrdv_rcache_params_align(_p)     /* per ucs_rcache_get() */
/* called whenever a new region overlaps a cached one: ours keep nothing per
 * region that a merge would have to combine */
#  define UCT_SPECRDV_RCACHE_OPS_MERGE \
    .merge = (void*)ucs_empty_function,
static UCS_F_MAYBE_UNUSED double
uct_specrdv_rcache_overhead(const uct_specrdv_rcache_config_t *config)
{
    /* "auto": 1.13.1's default */
    return (config->overhead == UCS_TIME_AUTO) ? 180e-9 :
           ucs_time_to_sec(config->overhead);
}
#else
typedef uct_md_rcache_config_t uct_specrdv_rcache_config_t;
#  define uct_specrdv_rcache_config_table         uct_md_config_rcache_table
#  define uct_specrdv_rcache_set_params(_p, _c)   uct_md_set_rcache_params(_p, _c)
#  define uct_specrdv_rcache_get(_rc, _a, _l, _prot, _arg, _r) \
    ucs_rcache_get(_rc, _a, _l, _prot, _arg, _r)
#  define uct_specrdv_rcache_params_align(_p) \
    (_p)->max_alignment = ucs_get_page_size()
#  define uct_specrdv_rcache_overhead(_c)         uct_md_rcache_overhead(_c)
#  define UCT_SPECRDV_RCACHE_OPS_MERGE
#endif

/* rkey_compare: UCP compares keys from 1.18 */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  define UCT_SPECRDV_COMPONENT_RKEY_COMPARE \
    .rkey_compare = uct_base_rkey_compare,
#else
#  define UCT_SPECRDV_COMPONENT_RKEY_COMPARE
#endif

#if UCT_SPECRDV_UCX_AT_LEAST(1, 19)
#  define UCT_SPECRDV_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, \
                              const uct_rkey_unpack_params_t *params, \
                              uct_rkey_t *rkey_p, void **handle_p) \
    { \
        return _impl(component, rkey_buffer, rkey_p, handle_p); \
    }
#else
#  define UCT_SPECRDV_RKEY_UNPACK_DEFINE(_name, _impl) \
    static ucs_status_t _name(uct_component_t *component, \
                              const void *rkey_buffer, uct_rkey_t *rkey_p, \
                              void **handle_p) \
    { \
        return _impl(component, rkey_buffer, rkey_p, handle_p); \
    }
#endif


/* --- interface ---------------------------------------------------------- */

/* Reachability and connection: from 1.18 UCP asks through the internal ops,
 * with params; the writer's checks keep (iface, device address, iface
 * address) and (ep, iface address).  The _DEFINE macros make _fn##_v2 where
 * it is needed; the ops tables take the macros below. */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  define UCT_SPECRDV_IFACE_IS_REACHABLE_DEFINE(_fn) \
    static int _fn##_v2(const uct_iface_h tl_iface, \
                        const uct_iface_is_reachable_params_t *params) \
    { \
        if (!uct_iface_is_reachable_params_addrs_valid(params)) { \
            return 0; \
        } \
        if (!_fn(tl_iface, params->device_addr, params->iface_addr)) { \
            /* UCP logs why a lane was not chosen */ \
            uct_iface_fill_info_str_buf(params, "not a specrdv interface " \
                                        "of this writer with these slots"); \
            return 0; \
        } \
        return uct_iface_scope_is_reachable(tl_iface, params); \
    }
#  define UCT_SPECRDV_EP_IS_CONNECTED_DEFINE(_fn) \
    static int _fn##_v2(const uct_ep_h tl_ep, \
                        const uct_ep_is_connected_params_t *params) \
    { \
        return (params->field_mask & UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR) && \
               _fn(tl_ep, params->iface_addr); \
    }
#  define UCT_SPECRDV_IFACE_OPS_IS_REACHABLE(_fn) \
    .iface_is_reachable = uct_base_iface_is_reachable
#  define UCT_SPECRDV_INTERNAL_OPS_V2(_is_reachable, _is_connected) \
    .ep_connect_to_ep_v2   = (uct_ep_connect_to_ep_v2_func_t) \
                                     ucs_empty_function_return_unsupported, \
    .iface_is_reachable_v2 = _is_reachable##_v2, \
    .ep_is_connected       = _is_connected##_v2,
#else
#  define UCT_SPECRDV_IFACE_IS_REACHABLE_DEFINE(_fn)
#  define UCT_SPECRDV_EP_IS_CONNECTED_DEFINE(_fn)
#  define UCT_SPECRDV_IFACE_OPS_IS_REACHABLE(_fn) \
    .iface_is_reachable = _fn
#  define UCT_SPECRDV_INTERNAL_OPS_V2(_is_reachable, _is_connected)
#endif

/* the shared-memory base's same-host check, in the writer's shape */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  define uct_specrdv_sm_iface_is_reachable(_iface, _dev_addr, _iface_addr) \
    ({ \
        uct_iface_is_reachable_params_t _params = { \
            .field_mask  = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR | \
                           UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR, \
            .device_addr = (_dev_addr), \
            .iface_addr  = (_iface_addr) \
        }; \
        uct_sm_iface_is_reachable(_iface, &_params); \
    })
#else
#  define uct_specrdv_sm_iface_is_reachable(_iface, _dev_addr, _iface_addr) \
    uct_sm_iface_is_reachable(_iface, _dev_addr, _iface_addr)
#endif

/* 1.20: UCP asks for v2 attributes whenever a protocol needs them */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 20)
#  define UCT_SPECRDV_INTERNAL_OPS_QUERY_V2 \
    .iface_query_v2 = uct_iface_base_query_v2,
#else
#  define UCT_SPECRDV_INTERNAL_OPS_QUERY_V2
#endif

/* the internal ops of a writer's interface */
#define UCT_SPECRDV_INTERNAL_OPS(_estimate_perf, _is_reachable, _is_connected) \
    UCT_SPECRDV_INTERNAL_OPS_QUERY_V2 \
    .iface_estimate_perf = _estimate_perf, \
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function, \
    .ep_query            = (uct_ep_query_func_t) \
                                   ucs_empty_function_return_unsupported, \
    .ep_invalidate       = uct_specrdv_ep_invalidate, \
    UCT_SPECRDV_INTERNAL_OPS_V2(_is_reachable, _is_connected)

/* An estimate's path bandwidth (1.22.0 has it, 1.18.1 not): where an
 * operation's bandwidth changes, _adjust(&path_bandwidth) changes it alike */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 22)
#  define uct_specrdv_perf_attr_path_bandwidth(_perf_attr, _adjust) \
    do { \
        if ((_perf_attr)->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) { \
            _adjust(&(_perf_attr)->path_bandwidth); \
        } \
    } while (0)
#else
#  define uct_specrdv_perf_attr_path_bandwidth(_perf_attr, _adjust) \
    do { } while (0)
#endif

/* From 1.18 an intra-node transport is one without this flag */
#ifndef UCT_IFACE_FLAG_INTER_NODE
#  define UCT_IFACE_FLAG_INTER_NODE 0
#endif

/* 1.18 grew the pool configuration; 0 as a grow factor fails the pool */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
#  define UCT_SPECRDV_MPOOL_CONFIG_GROW \
    .max_chunk_size = SIZE_MAX, .grow_factor = 1.0
#else
#  define UCT_SPECRDV_MPOOL_CONFIG_GROW
#endif

static UCS_F_MAYBE_UNUSED ucs_status_t
uct_specrdv_mpool_init(ucs_mpool_t *mp, size_t elem_size, size_t alignment,
                       unsigned elems_per_chunk, ucs_mpool_ops_t *ops,
                       const char *name)
{
#if UCT_SPECRDV_UCX_AT_LEAST(1, 18)
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.elem_size       = elem_size;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, 0, elem_size, 0, alignment, elems_per_chunk,
                          UINT_MAX, ops, name);
#endif
}


/* --- endpoint ----------------------------------------------------------- */

/* ep_invalidate took flags; from 1.21 a params struct (callers pass 0) */
#if UCT_SPECRDV_UCX_AT_LEAST(1, 21)
#  define UCT_SPECRDV_EP_INVALIDATE_ARGS const uct_ep_invalidate_params_t *params
#else
#  define UCT_SPECRDV_EP_INVALIDATE_ARGS unsigned flags
#endif

#if UCT_SPECRDV_UCX_AT_LEAST(1, 22)
#  define UCT_SPECRDV_EP_CHECK_PARAMS(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#else
#  define UCT_SPECRDV_EP_CHECK_PARAMS(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#endif

#endif
