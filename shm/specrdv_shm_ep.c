/**
 * ucx-spec: specrdv endpoint on the shared-memory writer.
 *
 * Sends are complete when they return: the message sits in the receiver's
 * slot or FIFO element, and put/get have been copied by the kernel.  So
 * zero-copy operations never call their completion.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_ep.h"

#include <uct/base/uct_iov.inl>
#include <uct/sm/base/sm_iface.h>
#include <ucs/debug/log.h>
#include <sys/uio.h>
#include <errno.h>


static UCS_CLASS_INIT_FUNC(uct_specrdv_shm_ep_t, const uct_ep_params_t *params)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(params->iface,
                                                    uct_specrdv_shm_iface_t);
    const uct_specrdv_shm_iface_addr_t *addr;
    uct_specrdv_shm_peer_t *peer;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super.super);

    addr   = (const void*)params->iface_addr;
    status = uct_specrdv_shm_peer_get(iface, addr, &peer);
    if (status != UCS_OK) {
        ucs_error("specrdv: cannot reach pid %d (shmid %d): %s", addr->pid,
                  addr->shmid, ucs_status_string(status));
        return status;
    }

    if (peer->remote_id < 0) {
        peer->remote_id = uct_specrdv_shm_seg_claim_peer(&peer->seg,
                                                         iface->seg.ctl->nonce);
        if (peer->remote_id < 0) {
            ucs_error("specrdv: pid %d accepts no more peers "
                      "(UCX_SPECRDV_SHM_MAX_PEERS=%u there)", peer->pid,
                      peer->seg.ctl->max_peers);
            return UCS_ERR_EXCEEDS_LIMIT;
        }
    }

    status = uct_ep_keepalive_init(&self->keepalive, peer->pid);
    if (status != UCS_OK) {
        return status;
    }

    self->peer  = peer;
    self->flags = 0;
    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_add_tail(&peer->eps, &self->list);
    ucs_debug("specrdv: ep %p to pid %d, our id there %d", self, peer->pid,
              peer->remote_id);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_shm_ep_t)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(self->super.super.iface,
                                                    uct_specrdv_shm_iface_t);

    if (self->flags & UCT_SPECRDV_SHM_EP_INVALIDATED) {
        --iface->invalidated;
    }
    uct_specrdv_shm_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_arbiter_group_cleanup(&self->arb_group);
    ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_specrdv_shm_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_shm_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_shm_ep_t, uct_ep_t);


static UCS_F_ALWAYS_INLINE uct_specrdv_shm_iface_t*
uct_specrdv_shm_ep_iface(uct_specrdv_shm_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_specrdv_shm_iface_t);
}

static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_shm_ep_max_payload(uct_specrdv_shm_ep_t *ep)
{
    return uct_specrdv_shm_iface_max_payload(uct_specrdv_shm_ep_iface(ep));
}

/* An endpoint whose error was reported, or whose peer failed, takes no more
 * operations */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_shm_ep_status(uct_specrdv_shm_ep_t *ep)
{
    if (ucs_unlikely(ep->flags & UCT_SPECRDV_SHM_EP_FAILED)) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    if (ucs_unlikely(ep->peer->flags & UCT_SPECRDV_SHM_PEER_FAILED)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_shm_ep_tx_begin(uct_specrdv_shm_ep_t *ep, size_t length,
                            uct_specrdv_shm_tx_t *tx)
{
    ucs_status_t status = uct_specrdv_shm_ep_status(ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* Requests already waiting go first, unless this is one of them */
    if (ucs_unlikely(!ucs_arbiter_group_is_empty(&ep->arb_group) &&
                     !(ep->flags & UCT_SPECRDV_SHM_EP_DISPATCHING))) {
        return UCS_ERR_NO_RESOURCE;
    }

    return uct_specrdv_shm_peer_tx_begin(uct_specrdv_shm_ep_iface(ep), ep->peer,
                                         length, tx);
}

static UCS_F_ALWAYS_INLINE void
uct_specrdv_shm_ep_tx_end(uct_specrdv_shm_ep_t *ep, uct_specrdv_shm_tx_t *tx,
                          uint8_t id, size_t length)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);

    uct_iface_trace_am(&iface->super.super, UCT_AM_TRACE_TYPE_SEND, id,
                       tx->payload, length, "TX: AM %s",
                       tx->ring ? "ring" : "fifo");
    uct_specrdv_shm_peer_tx_end(iface, ep->peer, tx, UCT_SPECRDV_MSG_AM, id,
                                length);
}

ucs_status_t uct_specrdv_shm_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                         uint64_t header, const void *payload,
                                         unsigned length)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    uct_specrdv_shm_tx_t tx;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0,
                     uct_specrdv_shm_ep_max_payload(ep), "am_short");

    status = uct_specrdv_shm_ep_tx_begin(ep, length + sizeof(header), &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    *(uint64_t*)tx.payload = header;
    memcpy(UCS_PTR_BYTE_OFFSET(tx.payload, sizeof(header)), payload, length);
    uct_specrdv_shm_ep_tx_end(ep, &tx, id, length + sizeof(header));
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(header) + length);
    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_shm_ep_am_iov(uct_specrdv_shm_ep_t *ep, uint8_t id,
                          const void *header, unsigned header_length,
                          const uct_iov_t *iov, size_t iovcnt, size_t *length_p)
{
    size_t length = header_length + uct_iov_total_length(iov, iovcnt);
    ucs_iov_iter_t iov_iter;
    uct_specrdv_shm_tx_t tx;
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SM_MAX_IOV, "specrdv_am_iov");
    UCT_CHECK_LENGTH(length, 0, uct_specrdv_shm_ep_max_payload(ep), "am_iov");

    status = uct_specrdv_shm_ep_tx_begin(ep, length, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    memcpy(tx.payload, header, header_length);
    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(iov, iovcnt, &iov_iter,
                      UCS_PTR_BYTE_OFFSET(tx.payload, header_length), SIZE_MAX);
    uct_specrdv_shm_ep_tx_end(ep, &tx, id, length);
    *length_p = length;
    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                             const uct_iov_t *iov,
                                             size_t iovcnt)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_specrdv_shm_ep_am_iov(ep, id, NULL, 0, iov, iovcnt, &length);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, length);
    }
    return status;
}

ssize_t uct_specrdv_shm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                    uct_pack_callback_t pack_cb, void *arg,
                                    unsigned flags)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    uct_specrdv_shm_tx_t tx;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);

    status = uct_specrdv_shm_ep_tx_begin(ep, uct_specrdv_shm_ep_max_payload(ep),
                                         &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    length = pack_cb(tx.payload, arg);
    ucs_assertv(length <= uct_specrdv_shm_ep_max_payload(ep),
                "packed %zu bytes, max %zu", length,
                uct_specrdv_shm_ep_max_payload(ep));
    uct_specrdv_shm_ep_tx_end(ep, &tx, id, length);
    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}

ucs_status_t uct_specrdv_shm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                         const void *header,
                                         unsigned header_length,
                                         const uct_iov_t *iov, size_t iovcnt,
                                         unsigned flags, uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;
    size_t length;

    /* The receiver's slot is the only place the data can go, so a gather copy
     * straight from the user's buffers is the zero-copy send here */
    status = uct_specrdv_shm_ep_am_iov(ep, id, header, header_length, iov,
                                       iovcnt, &length);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, length);
    }
    return status;
}

static ucs_status_t
uct_specrdv_shm_ep_cma(uct_specrdv_shm_ep_t *ep, const uct_iov_t *iov,
                       size_t iovcnt, uint64_t remote_addr, int is_put)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    size_t local_cnt               = UCT_SM_MAX_IOV;
    size_t first                   = 0;
    size_t done                    = 0;
    struct iovec local[UCT_SM_MAX_IOV], remote;
    ucs_iov_iter_t iov_iter;
    ucs_status_t status;
    size_t total;
    ssize_t ret;

    status = uct_specrdv_shm_ep_status(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ucs_iov_iter_init(&iov_iter);
    total = uct_iov_to_iovec(local, &local_cnt, iov, iovcnt, SIZE_MAX,
                             &iov_iter);
    while (done < total) {
        remote.iov_base = (void*)(uintptr_t)(remote_addr + done);
        remote.iov_len  = total - done;
        ret = is_put ? process_vm_writev(ep->peer->pid, local + first,
                                         local_cnt - first, &remote, 1, 0) :
                       process_vm_readv(ep->peer->pid, local + first,
                                        local_cnt - first, &remote, 1, 0);
        if (ucs_unlikely(ret <= 0)) {
            if ((ret < 0) && (errno == EINTR)) {
                continue;
            }
            status = uct_iface_handle_ep_err(&iface->super.super.super,
                                             &ep->super.super,
                                             UCS_ERR_CONNECTION_RESET);
            ucs_log(uct_base_iface_failure_log_level(&iface->super.super,
                                                     status,
                                                     UCS_ERR_CONNECTION_RESET),
                    "specrdv: %s(pid=%d, %zu bytes at 0x%" PRIx64 ") failed: %m",
                    is_put ? "process_vm_writev" : "process_vm_readv",
                    ep->peer->pid, total - done, remote_addr + done);
            return UCS_ERR_CONNECTION_RESET;
        }

        /* A partial copy stops at a page boundary: drop what was copied */
        done += ret;
        while (ret > 0) {
            if ((size_t)ret >= local[first].iov_len) {
                ret -= local[first++].iov_len;
            } else {
                local[first].iov_base = UCS_PTR_BYTE_OFFSET(
                        local[first].iov_base, ret);
                local[first].iov_len -= ret;
                ret                   = 0;
            }
        }
    }

    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SM_MAX_IOV, "specrdv_put_zcopy");
    status = uct_specrdv_shm_ep_cma(ep, iov, iovcnt, remote_addr, 1);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    return status;
}

ucs_status_t uct_specrdv_shm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SM_MAX_IOV, "specrdv_get_zcopy");
    status = uct_specrdv_shm_ep_cma(ep, iov, iovcnt, remote_addr, 0);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY,
                          uct_iov_total_length(iov, iovcnt));
    }
    return status;
}

static ucs_status_t
uct_specrdv_shm_ep_cma_buffer(uct_specrdv_shm_ep_t *ep, void *buffer,
                              size_t length, uint64_t remote_addr, int is_put)
{
    uct_iov_t iov = {
        .buffer = buffer,
        .length = length,
        .memh   = UCT_MEM_HANDLE_NULL,
        .stride = 0,
        .count  = 1
    };

    return uct_specrdv_shm_ep_cma(ep, &iov, 1, remote_addr, is_put);
}

ucs_status_t uct_specrdv_shm_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0,
                     uct_specrdv_shm_ep_iface(ep)->super.config.slot_size,
                     "put_short");
    status = uct_specrdv_shm_ep_cma_buffer(ep, (void*)buffer, length,
                                           remote_addr, 1);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    }
    return status;
}

ssize_t uct_specrdv_shm_ep_put_bcopy(uct_ep_h tl_ep,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    ucs_status_t status;
    size_t length;

    length = pack_cb(iface->bounce, arg);
    ucs_assert(length <= iface->super.config.slot_size);
    status = uct_specrdv_shm_ep_cma_buffer(ep, iface->bounce, length,
                                           remote_addr, 1);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

ucs_status_t uct_specrdv_shm_ep_get_bcopy(uct_ep_h tl_ep,
                                          uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->super.config.slot_size, "get_bcopy");
    status = uct_specrdv_shm_ep_cma_buffer(ep, iface->bounce, length,
                                           remote_addr, 0);
    if (status != UCS_OK) {
        return status;
    }

    unpack_cb(arg, iface->bounce, length);
    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_ep_pending_add(uct_ep_h tl_ep,
                                            uct_pending_req_t *req,
                                            unsigned flags)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);

    if (ucs_arbiter_group_is_empty(&ep->arb_group) &&
        uct_specrdv_shm_peer_can_send(ep->peer)) {
        return UCS_ERR_BUSY;
    }

    uct_pending_req_arb_group_push(&ep->arb_group, req);
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

ucs_arbiter_cb_result_t
uct_specrdv_shm_ep_process_pending(ucs_arbiter_t *arbiter,
                                   ucs_arbiter_group_t *group,
                                   ucs_arbiter_elem_t *elem, void *arg)
{
    uct_specrdv_shm_ep_t *ep = ucs_container_of(group, uct_specrdv_shm_ep_t,
                                                arb_group);
    unsigned *count          = arg;
    uct_pending_req_t *req;
    ucs_status_t status;

    /* A failed endpoint's requests wait for the user to purge them */
    if (uct_specrdv_shm_ep_status(ep) != UCS_OK) {
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }

    if (!uct_specrdv_shm_peer_can_send(ep->peer)) {
        return UCS_ARBITER_CB_RESULT_RESCHED_GROUP;
    }

    req        = ucs_container_of(elem, uct_pending_req_t, priv);
    ep->flags |= UCT_SPECRDV_SHM_EP_DISPATCHING;
    status     = req->func(req);
    ep->flags &= ~UCT_SPECRDV_SHM_EP_DISPATCHING;
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
uct_specrdv_shm_ep_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                            ucs_arbiter_elem_t *elem, void *arg)
{
    uct_purge_cb_args_t *cb_args = arg;
    uct_pending_req_t *req       = ucs_container_of(elem, uct_pending_req_t,
                                                    priv);

    if (cb_args->cb != NULL) {
        cb_args->cb(req, cb_args->arg);
    } else {
        ucs_debug("specrdv: ep %p cancels pending request %p",
                  ucs_container_of(group, uct_specrdv_shm_ep_t, arb_group),
                  req);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

void uct_specrdv_shm_ep_pending_purge(uct_ep_h tl_ep,
                                      uct_pending_purge_callback_t cb,
                                      void *arg)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    uct_purge_cb_args_t args       = {cb, arg};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group,
                            uct_specrdv_shm_ep_purge_cb, &args);
}

ucs_status_t uct_specrdv_shm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status      = uct_specrdv_shm_ep_status(ep);

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_specrdv_shm_ep_pending_purge(tl_ep, NULL, NULL);
        return UCS_OK;
    }

    if (status != UCS_OK) {
        return status;
    }

    /* Sends are done when they return; what flush has to wait for is room
     * for those still to come, as UCT's other shared-memory transports do */
    if (!uct_specrdv_shm_peer_can_send(ep->peer)) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
        return UCS_ERR_NO_RESOURCE;
    }

    UCT_TL_EP_STAT_FLUSH(&ep->super);
    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_ep_invalidate(uct_ep_h tl_ep, unsigned flags)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);

    /* The error goes to the user from progress, never from inside this call */
    if (!(ep->flags & UCT_SPECRDV_SHM_EP_INVALIDATED)) {
        ep->flags |= UCT_SPECRDV_SHM_EP_INVALIDATED;
        ++uct_specrdv_shm_ep_iface(ep)->invalidated;
    }
    return UCS_OK;
}

void uct_specrdv_shm_ep_report_invalidated(uct_specrdv_shm_iface_t *iface)
{
    uct_specrdv_shm_peer_t *peer;
    uct_specrdv_shm_ep_t *ep;

    /* The error handler may destroy any endpoint: look again after each */
again:
    ucs_list_for_each(peer, &iface->peers, list) {
        ucs_list_for_each(ep, &peer->eps, list) {
            if (ep->flags & UCT_SPECRDV_SHM_EP_INVALIDATED) {
                ep->flags &= ~UCT_SPECRDV_SHM_EP_INVALIDATED;
                ep->flags |= UCT_SPECRDV_SHM_EP_FAILED;
                --iface->invalidated;
                uct_iface_handle_ep_err(&iface->super.super.super,
                                        &ep->super.super,
                                        UCS_ERR_ENDPOINT_TIMEOUT);
                goto again;
            }
        }
    }
}

ucs_status_t uct_specrdv_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    /* A live process may have closed the interface: its segment says so */
    if (ep->peer->seg.ctl->closed) {
        return uct_specrdv_shm_ep_invalidate(tl_ep, 0);
    }

    uct_ep_keepalive_check(tl_ep, &ep->keepalive, ep->peer->pid, flags, comp);
    return UCS_OK;
}
