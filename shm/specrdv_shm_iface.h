/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_IFACE_H_
#define UCT_SPECRDV_SHM_IFACE_H_

#include <uct/specrdv/specrdv_iface.h>


typedef struct uct_specrdv_shm_iface {
    uct_specrdv_iface_t super;
} uct_specrdv_shm_iface_t;


ucs_status_t uct_specrdv_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p);

#endif
