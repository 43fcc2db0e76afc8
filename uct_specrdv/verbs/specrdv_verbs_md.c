/**
 * ucx-spec: the verbs writer's memory domains, one per RDMA device, and their
 * devices, one per active RoCE port.
 *
 * InfiniBand ports are not offered: no machine this project tests on has
 * one, and their addressing (LIDs, no IP on the port) would be code that no
 * test runs.  mlx5dv is not used, for the same reason.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_verbs.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucm/api/ucm.h>
#include <sys/mman.h>
#include <limits.h>
#include <string.h>


/* ibv_reg_mr's cost, as UCX's ib memory domain estimates it */
#define UCT_SPECRDV_VERBS_REG_OVERHEAD  16e-6
#define UCT_SPECRDV_VERBS_REG_GROWTH    0.06e-9

#define UCT_SPECRDV_VERBS_ACCESS \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)


static ucs_status_t
uct_specrdv_verbs_query_md_resources(uct_md_resource_desc_t **resources_p,
                                     unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **devices;
    int i, num_devices;

    devices = ibv_get_device_list(&num_devices);
    if ((devices == NULL) || (num_devices == 0)) {
        ucs_debug("specrdv: no RDMA device: %m");
        if (devices != NULL) {
            ibv_free_device_list(devices);
        }
        *resources_p     = NULL;
        *num_resources_p = 0;
        return UCS_OK;
    }

    resources = ucs_calloc(num_devices, sizeof(*resources),
                           "specrdv_verbs_md_resources");
    if (resources == NULL) {
        ibv_free_device_list(devices);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_devices; ++i) {
        ucs_snprintf_zero(resources[i].md_name, sizeof(resources[i].md_name),
                          UCT_SPECRDV_VERBS_MD_PREFIX "%s",
                          ibv_get_device_name(devices[i]));
    }

    ibv_free_device_list(devices);
    *resources_p     = resources;
    *num_resources_p = num_devices;
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_md_query(uct_md_h tl_md,
                                               uct_specrdv_md_attr_t *md_attr)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);

    uct_specrdv_md_attr_init(md_attr);
    UCT_SPECRDV_MD_CAP(md_attr, flags)            = UCT_MD_FLAG_REG |
                                                    UCT_MD_FLAG_NEED_MEMH |
                                                    UCT_MD_FLAG_NEED_RKEY;
    UCT_SPECRDV_MD_CAP(md_attr, reg_mem_types)    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_SPECRDV_MD_CAP(md_attr, access_mem_types) = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_SPECRDV_MD_CAP(md_attr, max_reg)          = md->dev_attr.max_mr_size;
    md_attr->rkey_packed_size = sizeof(uct_specrdv_packed_rkey_t);
    md_attr->reg_cost         = (md->rcache != NULL) ?
            ucs_linear_func_make(md->rcache_overhead, 0) :
            ucs_linear_func_make(UCT_SPECRDV_VERBS_REG_OVERHEAD,
                                 UCT_SPECRDV_VERBS_REG_GROWTH);
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_reg(uct_specrdv_verbs_md_t *md,
                                          void *address, size_t length,
                                          int silent, struct ibv_mr **mr_p)
{
    *mr_p = ibv_reg_mr(md->pd, address, length, UCT_SPECRDV_VERBS_ACCESS);
    if (*mr_p == NULL) {
        ucs_log(silent ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
                "specrdv: ibv_reg_mr(%p, %zu) on %s failed: %m", address,
                length, ibv_get_device_name(md->ctx->device));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_dereg(struct ibv_mr *mr)
{
    if (ibv_dereg_mr(mr) != 0) {
        ucs_error("specrdv: ibv_dereg_mr failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_md_reg(uct_md_h tl_md, void *address,
                                             size_t length, unsigned flags,
                                             uct_mem_h *memh_p)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);
    uct_specrdv_verbs_rcache_region_t *region;
    ucs_rcache_region_t *rregion;
    uct_specrdv_verbs_mem_t *memh;
    ucs_status_t status;

    if (md->rcache != NULL) {
        status = uct_specrdv_rcache_get(md->rcache, address, length,
                                        PROT_READ | PROT_WRITE, &flags,
                                        &rregion);
        if (status != UCS_OK) {
            return status;
        }

        region  = ucs_derived_of(rregion, uct_specrdv_verbs_rcache_region_t);
        *memh_p = &region->memh;
        return UCS_OK;
    }

    memh = ucs_malloc(sizeof(*memh), "specrdv_verbs_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_specrdv_verbs_reg(md, address, length,
                                   flags & UCT_MD_MEM_FLAG_HIDE_ERRORS,
                                   &memh->mr);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}
UCT_SPECRDV_MD_MEM_REG_DEFINE(uct_specrdv_verbs_md_mem_reg,
                              uct_specrdv_verbs_md_reg)

static ucs_status_t
uct_specrdv_verbs_md_mem_dereg(uct_md_h tl_md,
                               const uct_md_mem_dereg_params_t *params)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);
    uct_specrdv_verbs_mem_t *memh;
    ucs_status_t status;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    memh = params->memh;
    if (md->rcache != NULL) {
        ucs_rcache_region_put(md->rcache,
                              &ucs_container_of(memh,
                                                uct_specrdv_verbs_rcache_region_t,
                                                memh)->super);
        return UCS_OK;
    }

    status = uct_specrdv_verbs_dereg(memh->mr);
    ucs_free(memh);
    return status;
}

static ucs_status_t uct_specrdv_verbs_md_pack(uct_mem_h memh, void *rkey_buffer)
{
    uct_specrdv_packed_rkey_store(rkey_buffer,
                                  ((uct_specrdv_verbs_mem_t*)memh)->mr->rkey);
    return UCS_OK;
}
UCT_SPECRDV_MD_MKEY_PACK_DEFINE(uct_specrdv_verbs_md_mkey_pack,
                                uct_specrdv_verbs_md_pack)

static ucs_status_t uct_specrdv_verbs_rcache_mem_reg(void *context,
                                                     ucs_rcache_t *rcache,
                                                     void *arg,
                                                     ucs_rcache_region_t *rregion,
                                                     uint16_t rcache_flags)
{
    uct_specrdv_verbs_rcache_region_t *region =
            ucs_derived_of(rregion, uct_specrdv_verbs_rcache_region_t);
    unsigned flags = *(unsigned*)arg;

    return uct_specrdv_verbs_reg(context, (void*)region->super.super.start,
                                 region->super.super.end -
                                 region->super.super.start,
                                 (rcache_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
                                 (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS),
                                 &region->memh.mr);
}

static void uct_specrdv_verbs_rcache_mem_dereg(void *context,
                                               ucs_rcache_t *rcache,
                                               ucs_rcache_region_t *rregion)
{
    uct_specrdv_verbs_dereg(ucs_derived_of(rregion,
                                           uct_specrdv_verbs_rcache_region_t)
                                    ->memh.mr);
}

static void uct_specrdv_verbs_rcache_dump_region(void *context,
                                                 ucs_rcache_t *rcache,
                                                 ucs_rcache_region_t *rregion,
                                                 char *buf, size_t max)
{
    struct ibv_mr *mr = ucs_derived_of(rregion,
                                       uct_specrdv_verbs_rcache_region_t)
                                ->memh.mr;

    snprintf(buf, max, "lkey 0x%x rkey 0x%x", mr->lkey, mr->rkey);
}

static ucs_rcache_ops_t uct_specrdv_verbs_rcache_ops = {
    .mem_reg     = uct_specrdv_verbs_rcache_mem_reg,
    .mem_dereg   = uct_specrdv_verbs_rcache_mem_dereg,
    .dump_region = uct_specrdv_verbs_rcache_dump_region,
    UCT_SPECRDV_RCACHE_OPS_MERGE
};

/* As UCX's ib memory domain keeps its registrations (uct_ib_md_parse_reg_methods) */
static ucs_status_t
uct_specrdv_verbs_md_rcache_init(uct_specrdv_verbs_md_t *md,
                                 const uct_specrdv_md_config_t *config)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    md->rcache = NULL;
    if (config->rcache_enable == UCS_NO) {
        return UCS_OK;
    }

    uct_specrdv_rcache_set_params(&params, &config->rcache);
    uct_specrdv_rcache_params_align(&params);
    params.region_struct_size = sizeof(uct_specrdv_verbs_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = md;
    params.ops                = &uct_specrdv_verbs_rcache_ops;
    status = ucs_rcache_create(&params, ibv_get_device_name(md->ctx->device),
                               NULL, &md->rcache);
    if (status != UCS_OK) {
        ucs_log((config->rcache_enable == UCS_YES) ? UCS_LOG_LEVEL_ERROR :
                                                     UCS_LOG_LEVEL_DEBUG,
                "specrdv: %s: no registration cache (%s)",
                ibv_get_device_name(md->ctx->device),
                ucs_status_string(status));
        md->rcache = NULL;
        return (config->rcache_enable == UCS_YES) ? status : UCS_OK;
    }

    md->rcache_overhead = uct_specrdv_rcache_overhead(&config->rcache);
    return UCS_OK;
}

static void uct_specrdv_verbs_md_close(uct_md_h tl_md)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }
    ibv_dealloc_pd(md->pd);
    ibv_close_device(md->ctx);
    ucs_free(md);
}

static uct_md_ops_t uct_specrdv_verbs_md_ops = {
    .close                  = uct_specrdv_verbs_md_close,
    .query                  = uct_specrdv_verbs_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_specrdv_verbs_md_mem_reg,
    .mem_dereg              = uct_specrdv_verbs_md_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_specrdv_verbs_md_mkey_pack,
    UCT_SPECRDV_MD_OPS_TAIL
};

static ucs_status_t uct_specrdv_verbs_md_open(const char *md_name,
                                              const uct_md_config_t *config,
                                              uct_md_h *md_p)
{
    size_t prefix_len = strlen(UCT_SPECRDV_VERBS_MD_PREFIX);
    struct ibv_device **devices;
    uct_specrdv_verbs_md_t *md;
    ucs_status_t status;
    int i, num_devices;

    if (strncmp(md_name, UCT_SPECRDV_VERBS_MD_PREFIX, prefix_len)) {
        return UCS_ERR_NO_DEVICE;
    }

    devices = ibv_get_device_list(&num_devices);
    if (devices == NULL) {
        return UCS_ERR_NO_DEVICE;
    }

    for (i = 0; i < num_devices; ++i) {
        if (!strcmp(ibv_get_device_name(devices[i]), md_name + prefix_len)) {
            break;
        }
    }

    if (i == num_devices) {
        status = UCS_ERR_NO_DEVICE;
        goto out_free_list;
    }

    md = ucs_calloc(1, sizeof(*md), "specrdv_verbs_md");
    if (md == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_free_list;
    }

    md->ctx = ibv_open_device(devices[i]);
    if (md->ctx == NULL) {
        ucs_error("specrdv: ibv_open_device(%s) failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_free_md;
    }

    if (ibv_query_device(md->ctx, &md->dev_attr) != 0) {
        ucs_error("specrdv: ibv_query_device(%s) failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->pd = ibv_alloc_pd(md->ctx);
    if (md->pd == NULL) {
        ucs_error("specrdv: ibv_alloc_pd(%s) failed: %m", md_name);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    status = uct_specrdv_verbs_md_rcache_init(
            md, (const uct_specrdv_md_config_t*)config);
    if (status != UCS_OK) {
        goto err_dealloc_pd;
    }

    md->super.super.ops       = &uct_specrdv_verbs_md_ops;
    md->super.super.component = &uct_specrdv_component;
    md->super.writer          = &uct_specrdv_verbs_writer;
    *md_p                     = &md->super.super;
    status                    = UCS_OK;
    goto out_free_list;

err_dealloc_pd:
    ibv_dealloc_pd(md->pd);
err_close:
    ibv_close_device(md->ctx);
err_free_md:
    ucs_free(md);
out_free_list:
    ibv_free_device_list(devices);
    return status;
}

/* The RoCE v2 GID of an IPv4 address on the port (::ffff:a.b.c.d): the
 * connection's QPs use it, and its address is where our TCP wireup listens */
ucs_status_t uct_specrdv_verbs_port_gid(struct ibv_context *ctx,
                                        uint8_t port_num, int gid_index,
                                        uint8_t *gid_index_p, union ibv_gid *gid,
                                        uint32_t *ip_p)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff};
    struct ibv_port_attr port_attr;
    int i, first, last;

    if ((ibv_query_port(ctx, port_num, &port_attr) != 0) ||
        (port_attr.state != IBV_PORT_ACTIVE) ||
        (port_attr.link_layer != IBV_LINK_LAYER_ETHERNET)) {
        return UCS_ERR_NO_DEVICE;
    }

    first = (gid_index >= 0) ? gid_index : 0;
    last  = (gid_index >= 0) ? gid_index : port_attr.gid_tbl_len - 1;
    for (i = first; i <= last; ++i) {
        if ((ibv_query_gid(ctx, port_num, i, gid) == 0) &&
            !memcmp(gid->raw, v4_mapped, sizeof(v4_mapped))) {
            *gid_index_p = i;
            memcpy(ip_p, gid->raw + sizeof(v4_mapped), sizeof(*ip_p));
            return UCS_OK;
        }
    }

    return UCS_ERR_NO_DEVICE;
}

static ucs_status_t
uct_specrdv_verbs_query_devices(uct_md_h tl_md,
                                uct_tl_device_resource_t **devices_p,
                                unsigned *num_devices_p)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);
    const char *dev_name       = ibv_get_device_name(md->ctx->device);
    uct_tl_device_resource_t *devices;
    union ibv_gid gid;
    uint8_t gid_index;
    unsigned count;
    uint32_t ip;
    int port;

    devices = ucs_calloc(md->dev_attr.phys_port_cnt, sizeof(*devices),
                         "specrdv_verbs_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    count = 0;
    for (port = 1; port <= md->dev_attr.phys_port_cnt; ++port) {
        if (uct_specrdv_verbs_port_gid(md->ctx, port, -1, &gid_index, &gid,
                                       &ip) != UCS_OK) {
            ucs_debug("specrdv: %s:%d is not an active RoCE port with an "
                      "IPv4 address", dev_name, port);
            continue;
        }

        ucs_snprintf_zero(devices[count].name, sizeof(devices[count].name),
                          "%s:%d", dev_name, port);
        devices[count].type       = UCT_DEVICE_TYPE_NET;
        devices[count].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++count;
    }

    *devices_p     = devices;
    *num_devices_p = count;
    return UCS_OK;
}

uct_specrdv_writer_t uct_specrdv_verbs_writer = {
    .name               = "verbs",
    .id                 = UCT_SPECRDV_WRITER_VERBS,
    .config_table       = uct_specrdv_verbs_config_table,
    .config_size        = sizeof(uct_specrdv_verbs_config_t),
    .query_md_resources = uct_specrdv_verbs_query_md_resources,
    .md_open            = uct_specrdv_verbs_md_open,
    .query_devices      = uct_specrdv_verbs_query_devices,
    .iface_open         = uct_specrdv_verbs_iface_open
};
