/**
 * ucx-spec: specrdv endpoint on the verbs writer: the generic endpoint's
 * active messages, put/get by RDMA write/read, and flush and fence as RC
 * needs them (an active message is in the peer's memory only when the work
 * request that carried it has completed).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_verbs.h"

#include <uct/base/uct_iov.inl>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <arpa/inet.h>


static UCS_F_ALWAYS_INLINE uct_specrdv_verbs_iface_t*
uct_specrdv_verbs_ep_iface(uct_specrdv_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_specrdv_verbs_iface_t);
}

static UCS_CLASS_INIT_FUNC(uct_specrdv_verbs_ep_t, const uct_ep_params_t *params)
{
    uct_specrdv_verbs_iface_t *iface = ucs_derived_of(params->iface,
                                                      uct_specrdv_verbs_iface_t);
    const uct_specrdv_verbs_iface_addr_t *addr;
    struct sockaddr_in sin;
    uct_specrdv_verbs_peer_t *peer;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);

    addr = (const void*)params->iface_addr;
    if (!uct_specrdv_iface_addr_is_writer(params->iface_addr,
                                          &uct_specrdv_verbs_writer)) {
        ucs_error("specrdv: not a verbs interface address");
        return UCS_ERR_INVALID_ADDR;
    }

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = addr->ip;
    sin.sin_port        = addr->port;
    status = uct_specrdv_verbs_conn_peer_get(iface, addr->nonce, &sin, &peer);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_ep_t, &iface->super, &peer->super);
    return UCS_OK;
}

/* A peer that left and has no other endpoint here is forgotten */
static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_verbs_ep_t)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(&self->super);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(self->super.peer);

    if (peer->remote_closed && (peer->qps[0].fd < 0) &&
        (peer->qps[1].fd < 0) &&
        (ucs_list_length(&peer->super.eps) == 1)) {
        peer->reap   = 1;
        iface->wireup_event = 1;
    }
}

UCS_CLASS_DEFINE(uct_specrdv_verbs_ep_t, uct_specrdv_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_verbs_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_verbs_ep_t, uct_ep_t);



/* Room for one RDMA operation, after the requests already waiting */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_verbs_ep_rma_begin(uct_specrdv_ep_t *ep)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    ucs_status_t status              = uct_specrdv_ep_ready(ep);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    return ((uct_specrdv_verbs_conn_connect(
                     iface, uct_specrdv_verbs_peer(ep->peer)) == UCS_OK) &&
            uct_specrdv_verbs_peer_tx_room(iface,
                                           uct_specrdv_verbs_peer(ep->peer),
                                           UCT_SPECRDV_VERBS_TX_RESERVE + 1)) ?
           UCS_OK : UCS_ERR_NO_RESOURCE;
}

/* RDMA needs the QP and a work request, which an active message does not
 * wait for (it waits in a fallback buffer): where RDMA could not go now, the
 * request waits even if an active message could, or UCP would retry an RDMA
 * operation refused for want of the QP again and again */
ucs_status_t uct_specrdv_verbs_ep_pending_add(uct_ep_h tl_ep,
                                              uct_pending_req_t *req,
                                              unsigned flags)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    if (uct_specrdv_verbs_ep_rma_begin(ep) != UCS_OK) {
        uct_specrdv_ep_pending_push(ep, req);
        return UCS_OK;
    }

    return uct_specrdv_ep_pending_add(tl_ep, req, flags);
}

static ucs_status_t
uct_specrdv_verbs_ep_rma(uct_ep_h tl_ep, struct ibv_send_wr *wr,
                         uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep             = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(ep->peer);
    ucs_status_t status;

    status = uct_specrdv_verbs_ep_rma_begin(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_specrdv_verbs_peer_post_comp(iface, peer, wr, comp);
    return ucs_likely(status == UCS_OK) ? UCS_INPROGRESS : status;
}

void uct_specrdv_verbs_bcopy_desc_init(uct_iface_h tl_iface, void *obj,
                                       uct_mem_h memh)
{
    uct_specrdv_verbs_bcopy_desc_t *desc = obj;

    desc->lkey = uct_specrdv_verbs_memh_lkey(memh);
}

/* The work request is done: a get's bytes go to the user, and the buffer
 * back to the pool */
static void uct_specrdv_verbs_bcopy_done(uct_completion_t *self)
{
    uct_specrdv_verbs_bcopy_desc_t *desc =
            ucs_container_of(self, uct_specrdv_verbs_bcopy_desc_t, done);

    if ((desc->unpack_cb != NULL) && (self->status == UCS_OK)) {
        desc->unpack_cb(desc->unpack_arg, desc + 1, desc->length);
    }
    if (desc->comp != NULL) {
        uct_invoke_completion(desc->comp, self->status);
    }
    ucs_mpool_put(desc);
}

static ucs_status_t
uct_specrdv_verbs_ep_bcopy(uct_ep_h tl_ep, enum ibv_wr_opcode opcode,
                           uct_specrdv_verbs_bcopy_desc_t *desc,
                           uint64_t remote_addr, uct_rkey_t rkey)
{
    struct ibv_sge sge    = {
        .addr   = (uintptr_t)(desc + 1),
        .length = desc->length,
        .lkey   = desc->lkey
    };
    struct ibv_send_wr wr = {
        .sg_list             = &sge,
        .num_sge             = 1,
        .opcode              = opcode,
        .send_flags          = 0,
        .wr.rdma.remote_addr = remote_addr,
        .wr.rdma.rkey        = rkey
    };
    ucs_status_t status;

    desc->done.func   = uct_specrdv_verbs_bcopy_done;
    desc->done.count  = 1;
    desc->done.status = UCS_OK;
    status = uct_specrdv_verbs_ep_rma(tl_ep, &wr, &desc->done);
    if (status != UCS_INPROGRESS) {
        ucs_mpool_put(desc);
    }
    return status;
}

ssize_t uct_specrdv_verbs_ep_put_bcopy(uct_ep_h tl_ep,
                                       uct_pack_callback_t pack_cb, void *arg,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_specrdv_ep_t *ep             = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    uct_specrdv_verbs_bcopy_desc_t *desc;
    ucs_status_t status;
    size_t length;

    desc = ucs_mpool_get_inline(&iface->bcopy_mp);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    length          = pack_cb(desc + 1, arg);
    desc->length    = length;
    desc->comp      = NULL;
    desc->unpack_cb = NULL;
    status          = uct_specrdv_verbs_ep_bcopy(tl_ep, IBV_WR_RDMA_WRITE, desc,
                                                 remote_addr, rkey);
    if (ucs_unlikely(status != UCS_INPROGRESS)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

ucs_status_t uct_specrdv_verbs_ep_get_bcopy(uct_ep_h tl_ep,
                                            uct_unpack_callback_t unpack_cb,
                                            void *arg, size_t length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep             = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    uct_specrdv_verbs_bcopy_desc_t *desc;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, UCT_SPECRDV_VERBS_BCOPY_SIZE, "get_bcopy");
    desc = ucs_mpool_get_inline(&iface->bcopy_mp);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    desc->length     = length;
    desc->comp       = comp;
    desc->unpack_cb  = unpack_cb;
    desc->unpack_arg = arg;
    status           = uct_specrdv_verbs_ep_bcopy(tl_ep, IBV_WR_RDMA_READ, desc,
                                                  remote_addr, rkey);
    if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    }
    return status;
}

ucs_status_t uct_specrdv_verbs_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                            unsigned length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    uct_specrdv_ep_t *ep             = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->config.max_inline, "put_short");
    status = uct_specrdv_verbs_ep_rma_begin(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_specrdv_verbs_peer_write_inline(
            iface, uct_specrdv_verbs_peer(ep->peer), buffer, length,
            remote_addr, rkey);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    }
    return status;
}

static ucs_status_t
uct_specrdv_verbs_ep_zcopy(uct_ep_h tl_ep, enum ibv_wr_opcode opcode,
                           const uct_iov_t *iov, size_t iovcnt,
                           uint64_t remote_addr, uct_rkey_t rkey,
                           uct_completion_t *comp, size_t *length_p)
{
    struct ibv_sge sge[UCT_SPECRDV_VERBS_MAX_IOV];
    struct ibv_send_wr wr = {
        .sg_list             = sge,
        .opcode              = opcode,
        .send_flags          = 0,
        .wr.rdma.remote_addr = remote_addr,
        .wr.rdma.rkey        = rkey
    };
    size_t i, length = 0;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SPECRDV_VERBS_MAX_IOV,
                       "specrdv_verbs_zcopy");
    for (i = 0, wr.num_sge = 0; i < iovcnt; ++i) {
        if (uct_iov_get_length(&iov[i]) == 0) {
            continue;
        }
        sge[wr.num_sge].addr     = (uintptr_t)iov[i].buffer;
        sge[wr.num_sge].length   = uct_iov_get_length(&iov[i]);
        sge[wr.num_sge++].lkey   = uct_specrdv_verbs_memh_lkey(iov[i].memh);
        length                  += uct_iov_get_length(&iov[i]);
    }

    *length_p = length;
    return uct_specrdv_verbs_ep_rma(tl_ep, &wr, comp);
}

ucs_status_t uct_specrdv_verbs_ep_put_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    ucs_status_t status;
    size_t length;

    status = uct_specrdv_verbs_ep_zcopy(tl_ep, IBV_WR_RDMA_WRITE, iov, iovcnt,
                                        remote_addr, rkey, comp, &length);
    if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, ZCOPY,
                          length);
    }
    return status;
}

ucs_status_t uct_specrdv_verbs_ep_get_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    ucs_status_t status;
    size_t length;

    status = uct_specrdv_verbs_ep_zcopy(tl_ep, IBV_WR_RDMA_READ, iov, iovcnt,
                                        remote_addr, rkey, comp, &length);
    if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, ZCOPY,
                          length);
    }
    return status;
}

ucs_status_t uct_specrdv_verbs_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep             = ucs_derived_of(tl_ep, uct_specrdv_ep_t);
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_ep_iface(ep);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(ep->peer);
    ucs_status_t status;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_specrdv_ep_pending_purge(tl_ep, NULL, NULL);
        return UCS_OK;
    }

    /* requests waiting before this one, or messages waiting for the QP */
    status = uct_specrdv_ep_ready(ep);
    if ((status == UCS_OK) && (peer->fb_waiting > 0)) {
        status = UCS_ERR_NO_RESOURCE;
    }
    if (status == UCS_ERR_NO_RESOURCE) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    }
    if (status != UCS_OK) {
        return status;
    }

    if (peer->sn_completed == peer->sn_posted) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    status = uct_specrdv_verbs_peer_signal(iface, peer);
    if (status != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (comp != NULL) {
        status = uct_specrdv_verbs_peer_add_comp(iface, peer, comp);
        if (status != UCS_OK) {
            return status;
        }
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

ucs_status_t uct_specrdv_verbs_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    uct_specrdv_verbs_peer(ep->peer)->fence = 1;
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

/* Whether the endpoint's peer is the interface instance at @a iface_addr */
int uct_specrdv_verbs_ep_is_connected(const uct_ep_h tl_ep,
                                      const uct_iface_addr_t *iface_addr)
{
    const uct_specrdv_verbs_iface_addr_t *addr = (const void*)iface_addr;
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    return uct_specrdv_iface_addr_is_writer(iface_addr,
                                            &uct_specrdv_verbs_writer) &&
           (uct_specrdv_verbs_peer(ep->peer)->nonce == addr->nonce);
}

/* The peer's liveness is its TCP connection, watched from progress: a peer
 * found dead has failed its endpoints already.  One that closed its
 * interface is gone too, for an endpoint still pointing at it. */
ucs_status_t uct_specrdv_verbs_ep_check(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    UCT_SPECRDV_EP_CHECK_PARAMS(flags, comp);
    if (!uct_specrdv_verbs_conn_alive(&uct_specrdv_ep_iface(ep)->conns,
                                      ep->peer)) {
        return uct_specrdv_ep_invalidate(tl_ep, 0);
    }
    return UCS_OK;
}
