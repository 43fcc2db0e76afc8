/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_iface.h"

#include <uct/sm/base/sm_iface.h>


static ucs_status_t uct_specrdv_shm_iface_query(uct_iface_h tl_iface,
                                                uct_iface_attr_t *iface_attr)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);

    uct_specrdv_iface_query(&iface->super, iface_attr);
    iface_attr->device_addr_len = uct_sm_iface_get_device_addr_len();
    iface_attr->iface_addr_len  = 0;
    iface_attr->ep_addr_len     = 0;
    /* UCX's estimates for its own shared-memory transports (mm) */
    iface_attr->latency             = ucs_linear_func_make(80e-9, 0);
    iface_attr->overhead            = 10e-9;
    iface_attr->bandwidth.dedicated = iface->super.config.bandwidth;
    iface_attr->bandwidth.shared    = 0;
    /* UCP needs a connection model for every transport it opens, even one it
     * will not use: without it every worker created with UCX_TLS=all aborts */
    iface_attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    return UCS_OK;
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_shm_iface_t, uct_iface_t);

/* Endpoints come with the slot protocol's data path; until then no peer is
 * reachable and ep_create refuses, so the other endpoint operations cannot be
 * reached. */
static uct_iface_ops_t uct_specrdv_shm_iface_tl_ops = {
    .ep_create                = (uct_ep_create_func_t)ucs_empty_function_return_unsupported,
    .ep_destroy               = (uct_ep_destroy_func_t)ucs_empty_function,
    .ep_flush                 = (uct_ep_flush_func_t)ucs_empty_function_return_unsupported,
    .ep_fence                 = (uct_ep_fence_func_t)ucs_empty_function_return_unsupported,
    .iface_flush              = (uct_iface_flush_func_t)ucs_empty_function_return_success,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = (uct_iface_progress_func_t)ucs_empty_function_return_zero,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_shm_iface_t),
    .iface_query              = uct_specrdv_shm_iface_query,
    .iface_get_device_address = uct_sm_iface_get_device_address,
    .iface_get_address        = (uct_iface_get_address_func_t)ucs_empty_function_return_success,
    .iface_is_reachable       = (uct_iface_is_reachable_func_t)ucs_empty_function_return_zero_int
};

static uct_iface_internal_ops_t uct_specrdv_shm_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)ucs_empty_function_return_unsupported
};

static UCS_CLASS_INIT_FUNC(uct_specrdv_shm_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_iface_t,
                              &uct_specrdv_shm_iface_tl_ops,
                              &uct_specrdv_shm_iface_internal_ops, md, worker,
                              params, tl_config);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_shm_iface_t)
{
}

UCS_CLASS_DEFINE(uct_specrdv_shm_iface_t, uct_specrdv_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_shm_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_shm_iface_t, uct_iface_t);

ucs_status_t uct_specrdv_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_shm_iface_t)(md, worker, params,
                                                            config, iface_p);
}
