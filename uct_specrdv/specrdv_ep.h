/**
 * ucx-spec: specrdv endpoint, the part shared by every writer: active
 * messages through the connection layer, pending requests, flush and the
 * report of invalidated endpoints.  A writer's endpoint derives from it and
 * adds its RMA and its liveness check.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_EP_H_
#define UCT_SPECRDV_EP_H_

#include "specrdv_iface.h"


enum {
    UCT_SPECRDV_EP_DISPATCHING = UCS_BIT(0), /* running a pending request */
    UCT_SPECRDV_EP_INVALIDATED = UCS_BIT(1), /* error still to report */
    UCT_SPECRDV_EP_FAILED      = UCS_BIT(2)  /* error reported */
};


typedef struct uct_specrdv_ep {
    uct_base_ep_t          super;
    uct_specrdv_peer_t     *peer;
    uint8_t                flags;
    ucs_list_link_t        list;       /* in the peer's endpoints */
    ucs_arbiter_group_t    arb_group;
} uct_specrdv_ep_t;


UCS_CLASS_DECLARE(uct_specrdv_ep_t, uct_specrdv_iface_t*, uct_specrdv_peer_t*);


static UCS_F_ALWAYS_INLINE uct_specrdv_iface_t*
uct_specrdv_ep_iface(const uct_specrdv_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_specrdv_iface_t);
}

/* An endpoint whose error was reported, or whose peer failed, takes no more
 * operations */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_ep_status(const uct_specrdv_ep_t *ep)
{
    if (ucs_unlikely(ep->flags & UCT_SPECRDV_EP_FAILED)) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    if (ucs_unlikely(ep->peer->flags & UCT_SPECRDV_PEER_FAILED)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}


/* Whether the endpoint may start an operation now: it has not failed, and
 * requests already waiting go first, unless this is one of them */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_ep_ready(uct_specrdv_ep_t *ep)
{
    ucs_status_t status = uct_specrdv_ep_status(ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    if (ucs_unlikely(!ucs_arbiter_group_is_empty(&ep->arb_group) &&
                     !(ep->flags & UCT_SPECRDV_EP_DISPATCHING))) {
        return UCS_ERR_NO_RESOURCE;
    }

    return UCS_OK;
}


ucs_status_t uct_specrdv_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                     uint64_t header, const void *payload,
                                     unsigned length);
ucs_status_t uct_specrdv_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                         const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_specrdv_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                uct_pack_callback_t pack_cb, void *arg,
                                unsigned flags);
ucs_status_t uct_specrdv_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                     const void *header, unsigned header_length,
                                     const uct_iov_t *iov, size_t iovcnt,
                                     unsigned flags, uct_completion_t *comp);

ucs_status_t uct_specrdv_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags);
/* Queue @a req unconditionally: for a writer whose other operations need
 * more than an active message does */
void uct_specrdv_ep_pending_push(uct_specrdv_ep_t *ep, uct_pending_req_t *req);
void uct_specrdv_ep_pending_purge(uct_ep_h tl_ep,
                                  uct_pending_purge_callback_t cb, void *arg);
ucs_arbiter_cb_result_t
uct_specrdv_ep_process_pending(ucs_arbiter_t *arbiter,
                               ucs_arbiter_group_t *group,
                               ucs_arbiter_elem_t *elem, void *arg);

ucs_status_t uct_specrdv_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t uct_specrdv_ep_invalidate(uct_ep_h tl_ep,
                                       UCT_SPECRDV_EP_INVALIDATE_ARGS);

/* Report the errors of invalidated endpoints, from progress */
void uct_specrdv_ep_report_invalidated(uct_specrdv_iface_t *iface);

#endif
