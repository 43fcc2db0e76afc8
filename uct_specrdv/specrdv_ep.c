/**
 * ucx-spec: specrdv endpoint, the part shared by every writer.
 *
 * An active message is written into the slot or fallback element the
 * connection layer found, so it is complete when the call returns.  A
 * zero-copy send through a ring whose writer gathers (RDMA) is sent from the
 * user's buffers and completes when they may be reused; otherwise they are
 * copied there too, and it never calls its completion.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_ep.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>


UCS_CLASS_INIT_FUNC(uct_specrdv_ep_t, uct_specrdv_iface_t *iface,
                    uct_specrdv_peer_t *peer)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    self->peer  = peer;
    self->flags = 0;
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_add_tail(&peer->eps, &self->list);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_ep_t)
{
    uct_specrdv_iface_t *iface = uct_specrdv_ep_iface(self);

    if (self->flags & UCT_SPECRDV_EP_INVALIDATED) {
        --iface->invalidated;
    }
    uct_specrdv_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_arbiter_group_cleanup(&self->arb_group);
    ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_specrdv_ep_t, uct_base_ep_t);


static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_ep_max_payload(uct_specrdv_ep_t *ep)
{
    return uct_specrdv_iface_max_payload(uct_specrdv_ep_iface(ep));
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_ep_tx_begin(uct_specrdv_ep_t *ep, uct_specrdv_tx_t *tx)
{
    ucs_status_t status = uct_specrdv_ep_ready(ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    return uct_specrdv_peer_tx_begin(&uct_specrdv_ep_iface(ep)->conns,
                                     ep->peer, tx);
}

static UCS_F_ALWAYS_INLINE void
uct_specrdv_ep_tx_end(uct_specrdv_ep_t *ep, uct_specrdv_tx_t *tx, uint8_t id,
                      size_t length)
{
    uct_specrdv_iface_t *iface = uct_specrdv_ep_iface(ep);

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id, tx->payload,
                       length, "TX: AM %s", tx->ring ? "ring" : "fallback");
    uct_specrdv_peer_tx_end(&iface->conns, ep->peer, tx, UCT_SPECRDV_MSG_AM, id,
                            length);
}

ucs_status_t uct_specrdv_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                     uint64_t header, const void *payload,
                                     unsigned length)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_tx_t tx;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0,
                     uct_specrdv_ep_max_payload(ep), "am_short");

    status = uct_specrdv_ep_tx_begin(ep, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    *(uint64_t*)tx.payload = header;
    if (length > 0) { /* UCP sends a 0-byte message with a NULL payload */
        memcpy(UCS_PTR_BYTE_OFFSET(tx.payload, sizeof(header)), payload,
               length);
    }
    uct_specrdv_ep_tx_end(ep, &tx, id, length + sizeof(header));
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(header) + length);
    return UCS_OK;
}

/* The iov's bytes after the header: gathered from the user's buffers when
 * @a zcopy and the writer can (then UCS_INPROGRESS until @a comp), or
 * copied into the slot's view (UCS_OK) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_ep_am_iov(uct_specrdv_ep_t *ep, uint8_t id, const void *header,
                      unsigned header_length, const uct_iov_t *iov,
                      size_t iovcnt, int zcopy, uct_completion_t *comp,
                      size_t *length_p)
{
    uct_specrdv_iface_t *iface        = uct_specrdv_ep_iface(ep);
    const uct_specrdv_gather_t gather = {header_length, iov, iovcnt};
    size_t length = header_length + uct_iov_total_length(iov, iovcnt);
    ucs_iov_iter_t iov_iter;
    uct_specrdv_tx_t tx;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SPECRDV_MAX_IOV, "specrdv_am_iov");
    UCT_CHECK_LENGTH(length, 0, uct_specrdv_ep_max_payload(ep), "am_iov");

    status = uct_specrdv_ep_tx_begin(ep, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    memcpy(tx.payload, header, header_length);
    *length_p = length;
    if (zcopy && tx.ring && (iface->conns.ops->ring_write_gather != NULL)) {
        uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_SEND, id,
                           tx.payload, header_length, "TX: AM ring, gathered");
        return uct_specrdv_peer_tx_end_gather(&iface->conns, ep->peer, &tx, id,
                                              length, &gather, comp);
    }

    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter,
                      UCS_PTR_BYTE_OFFSET(tx.payload, header_length), SIZE_MAX);
    uct_specrdv_ep_tx_end(ep, &tx, id, length);
    return UCS_OK;
}

ucs_status_t uct_specrdv_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                         const uct_iov_t *iov, size_t iovcnt)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_specrdv_ep_am_iov(ep, id, NULL, 0, iov, iovcnt, 0, NULL,
                                   &length);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    }
    return status;
}

ssize_t uct_specrdv_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                uct_pack_callback_t pack_cb, void *arg,
                                unsigned flags)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_tx_t tx;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);

    status = uct_specrdv_ep_tx_begin(ep, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    length = pack_cb(tx.payload, arg);
    ucs_assertv(length <= uct_specrdv_ep_max_payload(ep),
                "packed %zu bytes, max %zu", length,
                uct_specrdv_ep_max_payload(ep));
    uct_specrdv_ep_tx_end(ep, &tx, id, length);
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}

ucs_status_t uct_specrdv_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                     const void *header, unsigned header_length,
                                     const uct_iov_t *iov, size_t iovcnt,
                                     unsigned flags, uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_specrdv_ep_am_iov(ep, id, header, header_length, iov, iovcnt,
                                   1, comp, &length);
    if (!UCS_STATUS_IS_ERR(status)) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, length);
    }
    return status;
}

ucs_status_t uct_specrdv_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags)
{
    uct_specrdv_ep_t *ep       = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_iface_t *iface = uct_specrdv_ep_iface(ep);

    if (ucs_arbiter_group_is_empty(&ep->arb_group) &&
        uct_specrdv_peer_can_send(&iface->conns, ep->peer)) {
        return UCS_ERR_BUSY;
    }

    uct_specrdv_ep_pending_push(ep, req);
    return UCS_OK;
}

void uct_specrdv_ep_pending_push(uct_specrdv_ep_t *ep, uct_pending_req_t *req)
{
    uct_pending_req_arb_group_push(&ep->arb_group, req);
    ucs_arbiter_group_schedule(&uct_specrdv_ep_iface(ep)->arbiter,
                               &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
}

ucs_arbiter_cb_result_t
uct_specrdv_ep_process_pending(ucs_arbiter_t *arbiter,
                               ucs_arbiter_group_t *group,
                               ucs_arbiter_elem_t *elem, void *arg)
{
    uct_specrdv_ep_t *ep = ucs_container_of(group, uct_specrdv_ep_t,
                                            arb_group);
    unsigned *count      = arg;
    uct_pending_req_t *req;
    ucs_status_t status;

    /* A failed endpoint's requests wait for the user to purge them */
    if (uct_specrdv_ep_status(ep) != UCS_OK) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }

    if (!uct_specrdv_peer_can_send(&uct_specrdv_ep_iface(ep)->conns,
                                   ep->peer)) {
        return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
    }

    req        = ucs_container_of(elem, uct_pending_req_t, priv);
    ep->flags |= UCT_SPECRDV_EP_DISPATCHING;
    status     = req->func(req);
    ep->flags &= ~UCT_SPECRDV_EP_DISPATCHING;
    ucs_trace_data("specrdv: pending request %p: %s", req,
                   ucs_status_string(status));
    if (status == UCS_OK) {
        ++(*count);
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        ++(*count);
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    }

    return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
}

static ucs_arbiter_cb_result_t
uct_specrdv_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                        ucs_arbiter_elem_t *elem, void *arg)
{
    uct_purge_cb_args_t *cb_args = arg;
    uct_pending_req_t *req       = ucs_container_of(elem, uct_pending_req_t,
                                                    priv);

    if (cb_args->cb != NULL) {
        cb_args->cb(req, cb_args->arg);
    } else {
        ucs_debug("specrdv: ep %p cancels pending request %p",
                  ucs_container_of(group, uct_specrdv_ep_t, arb_group), req);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_specrdv_ep_pending_purge(uct_ep_h tl_ep,
                                  uct_pending_purge_callback_t cb, void *arg)
{
    uct_specrdv_ep_t *ep     = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_purge_cb_args_t args = {cb, arg};

    ucs_arbiter_group_purge(&uct_specrdv_ep_iface(ep)->arbiter, &ep->arb_group,
                            uct_specrdv_ep_purge_cb, &args);
}

ucs_status_t uct_specrdv_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    ucs_status_t status  = uct_specrdv_ep_status(ep);
    uct_specrdv_iface_t *iface;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_specrdv_ep_pending_purge(tl_ep, NULL, NULL);
        return UCS_OK;
    }

    if (status != UCS_OK) {
        return status;
    }

    /* after the completions still to be delivered (of every endpoint) */
    iface = uct_specrdv_ep_iface(ep);
    if (iface->done.count > 0) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return (comp == NULL) ? UCS_INPROGRESS :
                                uct_specrdv_iface_complete_later(iface, comp);
    }

    /* Messages are in place when their call returns; what flush waits for
     * is room for those still to come, as UCT's shared-memory transports do */
    if (!uct_specrdv_peer_can_send(&iface->conns, ep->peer)) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    UCT_TL_EP_STAT_FLUSH(&ep->super);
    return UCS_OK;
}

ucs_status_t uct_specrdv_ep_invalidate(uct_ep_h tl_ep,
                                       UCT_SPECRDV_EP_INVALIDATE_ARGS)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    /* The error goes to the user from progress, never from inside this call */
    if (!(ep->flags & UCT_SPECRDV_EP_INVALIDATED)) {
        ep->flags |= UCT_SPECRDV_EP_INVALIDATED;
        ++uct_specrdv_ep_iface(ep)->invalidated;
    }
    return UCS_OK;
}

void uct_specrdv_ep_report_invalidated(uct_specrdv_iface_t *iface)
{
    uct_specrdv_peer_t *peer;
    uct_specrdv_ep_t *ep;

    /* The error handler may destroy any endpoint: look again after each */
again:
    ucs_list_for_each(peer, &iface->conns.peers, list) {
        ucs_list_for_each(ep, &peer->eps, list) {
            if (ep->flags & UCT_SPECRDV_EP_INVALIDATED) {
                ep->flags &= ~UCT_SPECRDV_EP_INVALIDATED;
                ep->flags |= UCT_SPECRDV_EP_FAILED;
                --iface->invalidated;
                uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                        UCS_ERR_ENDPOINT_TIMEOUT);
                goto again;
            }
        }
    }
}
