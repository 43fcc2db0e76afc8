/**
 * ucx-spec: the UCP and UCS internals that changed between the UCX versions
 * ucx-spec builds on (1.13.1, 1.18.1, 1.22.0), behind UCX's own version
 * macro, in this one file.  Macros only, so that it needs no internal header:
 * each expands where the types it names are in scope (the barrier library,
 * built against installed headers, uses the configuration part).
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PROTO_SPEC_COMPAT_H_
#define UCP_PROTO_SPEC_COMPAT_H_

#include <ucp/api/ucp_def.h>
#include <ucp/api/ucp_version.h>
#include <ucs/config/parser.h>
#include <uct/api/uct.h>

#define UCP_PROTO_SPEC_UCX_AT_LEAST(_major, _minor) \
    (UCP_API_VERSION >= UCP_VERSION(_major, _minor))

/* 1.18 moved ucs_roundup_pow2 and ucs_align_up here, a header UCX does not
 * install: only code built in UCX's tree finds it */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18) && __has_include(<ucs/sys/ptr_arith.h>)
#  include <ucs/sys/ptr_arith.h>
#endif


/* --- configuration ------------------------------------------------------ */

/* From 1.18 a table is read through the entry that registered it, which is
 * static: call this where UCS_CONFIG_REGISTER_TABLE(_table, ...) is */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  define ucp_proto_spec_config_fill(_opts, _table, _env_prefix, _table_prefix) \
    ucs_config_parser_fill_opts(_opts, UCS_CONFIG_GET_TABLE(_table), \
                                _env_prefix, 0)
#  define UCP_PROTO_SPEC_CONFIG_PARSER_DOC  .doc = ucs_config_doc_nop,
#else
#  define ucp_proto_spec_config_fill(_opts, _table, _env_prefix, _table_prefix) \
    ucs_config_parser_fill_opts(_opts, _table, _env_prefix, _table_prefix, 0)
#  define UCP_PROTO_SPEC_CONFIG_PARSER_DOC
#endif


/* --- a tag receive's buffer and its registration ------------------------ */

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
/* a datatype iterator; the registration is a UCP memory handle (UCP's own
 * cache), registered for the whole buffer */
typedef ucp_mem_h ucp_proto_spec_memh_t;
#  define ucp_proto_spec_rreq_buffer(_r) ((_r)->recv.dt_iter.type.contig.buffer)
#  define ucp_proto_spec_rreq_length(_r) ((_r)->recv.dt_iter.length)
#  define ucp_proto_spec_rreq_mem_type(_r) \
    ((ucs_memory_type_t)(_r)->recv.dt_iter.mem_info.type)
#  define ucp_proto_spec_rreq_is_contig(_r) \
    ((_r)->recv.dt_iter.dt_class == UCP_DATATYPE_CONTIG)
#  define ucp_proto_spec_rreq_memh(_r) ((_r)->recv.dt_iter.type.contig.memh)
#  define ucp_proto_spec_memh_md_map(_memh) \
    (((_memh) == NULL) ? 0 : (_memh)->md_map)
#  define ucp_proto_spec_rreq_user_memh(_r) \
    (ucp_proto_spec_rreq_is_contig(_r) && \
     (ucp_proto_spec_rreq_memh(_r) != NULL) && \
     ucp_memh_is_user_memh(ucp_proto_spec_rreq_memh(_r)))
/* only the memory domains UCP may cache for this memory (as its own v1
 * rendezvous does) */
#  define ucp_proto_spec_rreq_reg(_r, _md_map, _length) \
    ucp_datatype_iter_mem_reg((_r)->recv.worker->context, &(_r)->recv.dt_iter, \
                              (_md_map) & \
                              (_r)->recv.worker->context->cache_md_map[ \
                                      ucp_proto_spec_rreq_mem_type(_r)] & \
                              (_r)->recv.worker->context->reg_md_map[ \
                                      ucp_proto_spec_rreq_mem_type(_r)], \
                              0, UCS_BIT(UCP_DATATYPE_CONTIG))
#  define ucp_proto_spec_rreq_dereg(_r) \
    ucp_datatype_iter_mem_dereg(&(_r)->recv.dt_iter, \
                                UCS_BIT(UCP_DATATYPE_CONTIG))
#  define ucp_proto_spec_sreq_memh(_s)      ((_s)->send.state.dt.dt.contig.memh)
#  define ucp_proto_spec_sreq_user_memh(_s) \
    ((ucp_proto_spec_sreq_memh(_s) != NULL) && \
     ucp_memh_is_user_memh(ucp_proto_spec_sreq_memh(_s)))
#else
typedef const uct_mem_h *ucp_proto_spec_memh_t;
#  define ucp_proto_spec_rreq_buffer(_r)    ((_r)->recv.buffer)
#  define ucp_proto_spec_rreq_length(_r)    ((_r)->recv.length)
#  define ucp_proto_spec_rreq_mem_type(_r)  ((_r)->recv.mem_type)
#  define ucp_proto_spec_rreq_is_contig(_r) UCP_DT_IS_CONTIG((_r)->recv.datatype)
#  define ucp_proto_spec_rreq_memh(_r)      ((_r)->recv.state.dt.contig.memh)
#  define ucp_proto_spec_rreq_user_memh(_r) \
    ((_r)->flags & UCP_REQUEST_FLAG_USER_MEMH)
#  define ucp_proto_spec_rreq_reg(_r, _md_map, _length) \
    ucp_request_recv_buffer_reg(_r, _md_map, _length)
#  define ucp_proto_spec_rreq_dereg(_r)     ucp_request_recv_buffer_dereg(_r)
#  define ucp_proto_spec_sreq_memh(_s)      ((_s)->send.state.dt.dt.contig.memh)
#  define ucp_proto_spec_sreq_user_memh(_s) \
    ((_s)->flags & UCP_REQUEST_FLAG_USER_MEMH)
#endif

/* the memory domains a receive or send is registered on */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  define ucp_proto_spec_rreq_md_map(_r) \
    ucp_proto_spec_memh_md_map(ucp_proto_spec_rreq_memh(_r))
#  define ucp_proto_spec_sreq_md_map(_s) \
    ucp_proto_spec_memh_md_map(ucp_proto_spec_sreq_memh(_s))
#else
#  define ucp_proto_spec_rreq_md_map(_r) ((_r)->recv.state.dt.contig.md_map)
#  define ucp_proto_spec_sreq_md_map(_s) ((_s)->send.state.dt.dt.contig.md_map)
#endif


/* --- remote keys -------------------------------------------------------- */

/* 1.20 added a terminator to packed keys: the argument after the flags */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 20)
#  define UCP_PROTO_SPEC_RKEY_TERMINATOR_ARG , 0
#else
#  define UCP_PROTO_SPEC_RKEY_TERMINATOR_ARG
#endif

#define ucp_proto_spec_rkey_packed_size(_context, _md_map) \
    ucp_rkey_packed_size(_context, _md_map, UCS_SYS_DEVICE_ID_UNKNOWN, 0 \
                         UCP_PROTO_SPEC_RKEY_TERMINATOR_ARG)

/* the key of [_address, +_length) registered as _memh on _md_map */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  define ucp_proto_spec_rkey_pack_memh(_context, _md_map, _memh, _address, \
                                        _length, _mem_info, _uct_flags, _buf) \
    ucp_rkey_pack_memh(_context, _md_map, _memh, _address, _length, \
                       _mem_info, 0, NULL, \
                       _uct_flags UCP_PROTO_SPEC_RKEY_TERMINATOR_ARG, _buf)
#else
#  define ucp_proto_spec_rkey_pack_memh(_context, _md_map, _memh, _address, \
                                        _length, _mem_info, _uct_flags, _buf) \
    ucp_rkey_pack_uct(_context, _md_map, _memh, _mem_info, 0, _uct_flags, \
                      NULL, _buf)
#endif


/* --- UCP's v2 protocols ------------------------------------------------- */

/* spec_v2.c carries speculation on them from 1.18; before, it is refused
 * (spec_worker.c), and these stand in for its calls */
#if !UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  define ucp_proto_spec_v2_rtr_config(_ep, _rreq, _length)   NULL
#  define ucp_proto_spec_v2_rreq_rtr_config(_sr)              NULL
#  define ucp_proto_spec_v2_carrier_init(_c, _ep, _rreq, _sr, _cfg) \
    do { (void)(_cfg); ucs_fatal("spec: no v2 protocols before UCX 1.18"); } \
    while (0)
#  define ucp_proto_spec_v2_am_send(_c, _lane, _pack, _length) \
    UCS_ERR_UNSUPPORTED
#  define ucp_proto_spec_v2_rtr_taken(_c, _rreq, _cfg, _length) \
    ({ (void)(_cfg); ucs_fatal("spec: no v2 protocols before UCX 1.18"); 0; })
#  define ucp_proto_spec_v2_carrier_own(_c, _rreq, _cfg, _length) \
    do { (void)(_cfg); ucs_fatal("spec: no v2 protocols before UCX 1.18"); } \
    while (0)
#  define ucp_proto_spec_v2_offer_carrier_init(_c, _ep, _rreq, _rts) \
    ucs_fatal("spec: no v2 protocols before UCX 1.18")
#  define ucp_proto_spec_v2_carrier_return(_c, _rreq)
#  define ucp_proto_spec_v2_sreq_key_size(_sreq)               0
#  define ucp_proto_spec_v2_sreq_key_pack(_sreq, _buf, _addr)  UCS_ERR_UNSUPPORTED
#  define ucp_proto_spec_v2_carrier_dead(_c)
#  define ucp_proto_spec_v2_sreq_fits(_sreq)                   0
#  define ucp_proto_spec_v2_predict_rndv(_ep, _length)         0
#  define ucp_proto_spec_v2_send_predict_rndv(_ep, _param, _length) 0
#  define ucp_proto_spec_v2_cleanup(_spec)
#endif

/* A protocol's datatypes: a field from 1.22 (it was probed for all) */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 22)
#  define UCP_PROTO_SPEC_PROTO_DT_MASK .dt_mask = UCS_BIT(UCP_DATATYPE_CONTIG),
#else
#  define UCP_PROTO_SPEC_PROTO_DT_MASK
#endif

/* From 1.22 a request's progress function comes from its configuration's
 * wrappers, which a configuration made outside selection must fill */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 22)
#  define ucp_proto_spec_v2_cfg_init(_worker, _cfg) \
    ucp_request_progress_wrapper_init(_worker, _cfg)
#else
#  define ucp_proto_spec_v2_cfg_init(_worker, _cfg)
#endif

/* --- memory domain attributes ------------------------------------------- */

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  define ucp_proto_spec_md_attr_t          uct_md_attr_v2_t
#  define UCP_PROTO_SPEC_MD_FLAGS(_md_attr) ((_md_attr)->flags)
#else
#  define ucp_proto_spec_md_attr_t          uct_md_attr_t
#  define UCP_PROTO_SPEC_MD_FLAGS(_md_attr) ((_md_attr)->cap.flags)
#endif

#endif
