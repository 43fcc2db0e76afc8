/**
 * ucx-spec: the shared-memory writer's memory domain and its one device.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_iface.h"

#include <uct/specrdv/specrdv_writer.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <limits.h>
#include <string.h>


/* gtest and UCP treat UCT_MEM_HANDLE_NULL as "not registered" */
#define UCT_SPECRDV_SHM_MEMH ((uct_mem_h)0x5bec7d5)


static ucs_status_t
uct_specrdv_shm_query_md_resources(uct_md_resource_desc_t **resources_p,
                                   unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;

    resources = ucs_calloc(1, sizeof(*resources), "specrdv_shm_md_resource");
    if (resources == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ucs_strncpy_zero(resources->md_name, UCT_SPECRDV_SHM_MD_NAME,
                     sizeof(resources->md_name));
    *resources_p     = resources;
    *num_resources_p = 1;
    return UCS_OK;
}

static ucs_status_t uct_specrdv_shm_md_query(uct_md_h tl_md,
                                             uct_specrdv_md_attr_t *md_attr)
{
    /* The shm writer's zero-copy operations (CMA) reach any host memory of
     * the peer by address: registration is a formality and rkeys are empty */
    uct_specrdv_md_attr_init(md_attr);
    UCT_SPECRDV_MD_CAP(md_attr, flags)            = UCT_MD_FLAG_REG;
    UCT_SPECRDV_MD_CAP(md_attr, reg_mem_types)    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_SPECRDV_MD_CAP(md_attr, access_mem_types) = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_SPECRDV_MD_CAP(md_attr, max_reg)          = ULONG_MAX;
    md_attr->rkey_packed_size = sizeof(uct_specrdv_packed_rkey_t);
    md_attr->reg_cost         = ucs_linear_func_make(9e-9, 0);
    return UCS_OK;
}

static ucs_status_t uct_specrdv_shm_md_reg(uct_md_h tl_md, void *address,
                                           size_t length, unsigned flags,
                                           uct_mem_h *memh_p)
{
    *memh_p = UCT_SPECRDV_SHM_MEMH;
    return UCS_OK;
}
UCT_SPECRDV_MD_MEM_REG_DEFINE(uct_specrdv_shm_md_mem_reg, uct_specrdv_shm_md_reg)

static ucs_status_t
uct_specrdv_shm_md_mem_dereg(uct_md_h tl_md,
                             const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    if (params->memh != UCT_SPECRDV_SHM_MEMH) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t uct_specrdv_shm_md_pack(uct_mem_h memh, void *rkey_buffer)
{
    uct_specrdv_packed_rkey_store(rkey_buffer, 0);
    return UCS_OK;
}
UCT_SPECRDV_MD_MKEY_PACK_DEFINE(uct_specrdv_shm_md_mkey_pack,
                                uct_specrdv_shm_md_pack)

static void uct_specrdv_shm_md_close(uct_md_h tl_md)
{
    ucs_free(ucs_derived_of(tl_md, uct_specrdv_md_t));
}

static uct_md_ops_t uct_specrdv_shm_md_ops = {
    .close                  = uct_specrdv_shm_md_close,
    .query                  = uct_specrdv_shm_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg                = uct_specrdv_shm_md_mem_reg,
    .mem_dereg              = uct_specrdv_shm_md_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_specrdv_shm_md_mkey_pack,
    UCT_SPECRDV_MD_OPS_TAIL
};

static ucs_status_t uct_specrdv_shm_md_open(const char *md_name,
                                            const uct_md_config_t *config,
                                            uct_md_h *md_p)
{
    uct_specrdv_md_t *md;

    if (strcmp(md_name, UCT_SPECRDV_SHM_MD_NAME)) {
        return UCS_ERR_NO_DEVICE;
    }

    md = ucs_calloc(1, sizeof(*md), "specrdv_shm_md");
    if (md == NULL) {
        ucs_error("specrdv: failed to allocate memory domain");
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_specrdv_shm_md_ops;
    md->super.component = &uct_specrdv_component;
    md->writer          = &uct_specrdv_shm_writer;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_shm_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                              unsigned *num_devices_p)
{
    return uct_single_device_resource(md, UCT_SPECRDV_SHM_DEVICE_NAME,
                                      UCT_DEVICE_TYPE_SHM,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, devices_p,
                                      num_devices_p);
}

uct_specrdv_writer_t uct_specrdv_shm_writer = {
    .name               = "shm",
    .id                 = UCT_SPECRDV_WRITER_SHM,
    .config_table       = uct_specrdv_shm_config_table,
    .config_size        = sizeof(uct_specrdv_shm_config_t),
    .query_md_resources = uct_specrdv_shm_query_md_resources,
    .md_open            = uct_specrdv_shm_md_open,
    .query_devices      = uct_specrdv_shm_query_devices,
    .iface_open         = uct_specrdv_shm_iface_open
};
