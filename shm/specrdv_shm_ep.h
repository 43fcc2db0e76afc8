/**
 * ucx-spec: specrdv endpoint on the shared-memory writer: the generic
 * endpoint's active messages, put/get by CMA, and a liveness check by pid.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_EP_H_
#define UCT_SPECRDV_SHM_EP_H_

#include "specrdv_shm_peer.h"

#include <uct/specrdv/specrdv_ep.h>


typedef struct uct_specrdv_shm_ep {
    uct_specrdv_ep_t       super;
    uct_keepalive_info_t   keepalive;
} uct_specrdv_shm_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_specrdv_shm_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_shm_ep_t, uct_ep_t);

ucs_status_t uct_specrdv_shm_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey);
ssize_t uct_specrdv_shm_ep_put_bcopy(uct_ep_h tl_ep,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_specrdv_shm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);
ucs_status_t uct_specrdv_shm_ep_get_bcopy(uct_ep_h tl_ep,
                                          uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp);
ucs_status_t uct_specrdv_shm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp);

ucs_status_t uct_specrdv_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp);
int uct_specrdv_shm_ep_is_connected(const uct_ep_h tl_ep,
                                    const uct_iface_addr_t *iface_addr);

#endif
