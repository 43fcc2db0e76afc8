/**
 * ucx-spec: specrdv endpoint on the shared-memory writer.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_EP_H_
#define UCT_SPECRDV_SHM_EP_H_

#include "specrdv_shm_peer.h"


enum {
    UCT_SPECRDV_SHM_EP_DISPATCHING = UCS_BIT(0), /* running a pending request */
    UCT_SPECRDV_SHM_EP_INVALIDATED = UCS_BIT(1), /* error still to report */
    UCT_SPECRDV_SHM_EP_FAILED      = UCS_BIT(2)  /* error reported */
};


typedef struct uct_specrdv_shm_ep {
    uct_base_ep_t          super;
    uct_specrdv_shm_peer_t *peer;
    uint8_t                flags;
    ucs_list_link_t        list;       /* in the peer's endpoints */
    ucs_arbiter_group_t    arb_group;
    uct_keepalive_info_t   keepalive;
} uct_specrdv_shm_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_specrdv_shm_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_shm_ep_t, uct_ep_t);

ucs_status_t uct_specrdv_shm_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                         uint64_t header, const void *payload,
                                         unsigned length);
ucs_status_t uct_specrdv_shm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                             const uct_iov_t *iov,
                                             size_t iovcnt);
ssize_t uct_specrdv_shm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                    uct_pack_callback_t pack_cb, void *arg,
                                    unsigned flags);
ucs_status_t uct_specrdv_shm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                         const void *header,
                                         unsigned header_length,
                                         const uct_iov_t *iov, size_t iovcnt,
                                         unsigned flags,
                                         uct_completion_t *comp);

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

ucs_status_t uct_specrdv_shm_ep_pending_add(uct_ep_h tl_ep,
                                            uct_pending_req_t *req,
                                            unsigned flags);
void uct_specrdv_shm_ep_pending_purge(uct_ep_h tl_ep,
                                      uct_pending_purge_callback_t cb,
                                      void *arg);
ucs_arbiter_cb_result_t
uct_specrdv_shm_ep_process_pending(ucs_arbiter_t *arbiter,
                                   ucs_arbiter_group_t *group,
                                   ucs_arbiter_elem_t *elem, void *arg);

ucs_status_t uct_specrdv_shm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp);
ucs_status_t uct_specrdv_shm_ep_invalidate(uct_ep_h tl_ep, unsigned flags);

/* Report the errors of invalidated endpoints, from progress */
void uct_specrdv_shm_ep_report_invalidated(uct_specrdv_shm_iface_t *iface);

ucs_status_t uct_specrdv_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp);

#endif
