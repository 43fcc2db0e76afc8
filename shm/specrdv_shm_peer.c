/**
 * ucx-spec: the shared-memory writer's wire acts.
 *
 * A ring slot is written in place: the sender's view of the receiver's ring
 * is the receiver's memory, so sealing the slot is the whole transfer.  The
 * fallback channel is the receiver's multi-producer FIFO, which also carries
 * the writer's control messages (CONNECT, RING, DISCONNECT).  A sender claims
 * a ring in the receiver's pool with an atomic and announces it through the
 * FIFO ahead of the first message that uses it; the explicit credit update
 * is a store into the ring's control line.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_peer.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>


static UCS_F_ALWAYS_INLINE uct_specrdv_shm_iface_t*
uct_specrdv_shm_conns_iface(uct_specrdv_conns_t *conns)
{
    return ucs_container_of(conns, uct_specrdv_shm_iface_t, super.conns);
}

static UCS_F_ALWAYS_INLINE uct_specrdv_shm_peer_t*
uct_specrdv_shm_peer(uct_specrdv_peer_t *peer)
{
    return ucs_derived_of(peer, uct_specrdv_shm_peer_t);
}

ucs_status_t uct_specrdv_shm_peer_get(uct_specrdv_shm_iface_t *iface,
                                      const uct_specrdv_shm_iface_addr_t *addr,
                                      uct_specrdv_shm_peer_t **peer_p)
{
    uct_specrdv_peer_t *generic;
    uct_specrdv_shm_peer_t *peer;
    ucs_status_t status;

    ucs_list_for_each(generic, &iface->super.conns.peers, list) {
        peer = uct_specrdv_shm_peer(generic);
        if (peer->nonce == addr->nonce) {
            *peer_p = peer;
            return UCS_OK;
        }
    }

    peer = ucs_calloc(1, sizeof(*peer), "specrdv_shm_peer");
    if (peer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_specrdv_shm_seg_attach(addr->shmid, addr->nonce, &peer->seg);
    if (status != UCS_OK) {
        ucs_free(peer);
        return status;
    }

    if (peer->seg.ctl->geom.slot_size != iface->super.conns.geom.slot_size) {
        ucs_error("specrdv: peer pid %d uses %zu-byte slots, this process %zu",
                  addr->pid, peer->seg.ctl->geom.slot_size,
                  iface->super.conns.geom.slot_size);
        uct_specrdv_shm_seg_detach(&peer->seg);
        ucs_free(peer);
        return UCS_ERR_UNREACHABLE;
    }

    uct_specrdv_peer_init(&iface->super.conns, &peer->super);
    snprintf(peer->super.name, sizeof(peer->super.name), "pid %d",
             peer->seg.ctl->pid);
    peer->nonce     = addr->nonce;
    peer->pid       = peer->seg.ctl->pid;
    peer->remote_id = -1;
    peer->tx_ring   = -1;
    peer->local_id  = -1;
    *peer_p         = peer;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_shm_fb_reserve(uct_specrdv_conns_t *conns,
                           uct_specrdv_peer_t *generic, uct_specrdv_tx_t *tx)
{
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_peer(generic);
    ucs_status_t status;

    status = uct_specrdv_shm_fifo_reserve(
            &peer->seg,
            tx->ctrl ? 0 : uct_specrdv_shm_fifo_ctrl_room(&peer->seg),
            &tx->pos);
    if (ucs_likely(status == UCS_OK)) {
        tx->payload = uct_specrdv_shm_fifo_elem(&peer->seg, tx->pos) + 1;
    } else if (status != UCS_ERR_NO_RESOURCE) {
        uct_specrdv_peer_fail(conns, generic, status);
    }
    return status;
}

static void uct_specrdv_shm_fb_post(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic,
                                    uct_specrdv_tx_t *tx,
                                    const uct_specrdv_hdr_t *hdr)
{
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_peer(generic);

    uct_specrdv_shm_fifo_elem(&peer->seg, tx->pos)->hdr = *hdr;
    uct_specrdv_shm_fifo_push(&peer->seg, tx->pos);
}

static int uct_specrdv_shm_fb_can_send(uct_specrdv_conns_t *conns,
                                       uct_specrdv_peer_t *generic)
{
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_peer(generic);

    return uct_specrdv_shm_fifo_free(&peer->seg, peer->seg.ctl->fifo_head,
                                     uct_specrdv_shm_fifo_ctrl_room(&peer->seg));
}

static ucs_status_t
uct_specrdv_shm_peer_send_ctrl(uct_specrdv_shm_iface_t *iface,
                               uct_specrdv_shm_peer_t *peer, uint8_t op,
                               uint32_t ring)
{
    uct_specrdv_shm_ctrl_t *ctrl;
    uct_specrdv_tx_t tx;
    ucs_status_t status;

    tx.ctrl = 1;
    status  = uct_specrdv_shm_fb_reserve(&iface->super.conns, &peer->super,
                                         &tx);
    if (status != UCS_OK) {
        return status;
    }

    tx.ring     = 0;
    ctrl        = tx.payload;
    ctrl->nonce = iface->seg.ctl->nonce;
    ctrl->shmid = iface->seg.shmid;
    ctrl->pid   = iface->seg.ctl->pid;
    ctrl->ring  = ring;
    uct_specrdv_peer_tx_end(&iface->super.conns, &peer->super, &tx,
                            UCT_SPECRDV_MSG_CTRL, op, sizeof(*ctrl));
    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_peer_claim_id(uct_specrdv_shm_iface_t *iface,
                                           uct_specrdv_shm_peer_t *peer)
{
    if (peer->remote_id >= 0) {
        return UCS_OK;
    }

    peer->remote_id = uct_specrdv_shm_seg_claim_peer(&peer->seg,
                                                     iface->seg.ctl->nonce);
    if (peer->remote_id < 0) {
        ucs_error("specrdv: pid %d accepts no more peers "
                  "(UCX_SPECRDV_SHM_MAX_PEERS=%u there)", peer->pid,
                  peer->seg.ctl->max_peers);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    peer->super.src = peer->remote_id;
    return UCS_OK;
}

/* A peer that only sent to us so far has no entry in its table yet: the
 * receiver's first message to it (RING_REVOKE) claims one */
static ucs_status_t uct_specrdv_shm_connect(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *generic)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_conns_iface(conns);
    uct_specrdv_shm_peer_t *peer   = uct_specrdv_shm_peer(generic);
    ucs_status_t status;

    status = uct_specrdv_shm_peer_claim_id(iface, peer);
    if (status != UCS_OK) {
        return status;
    }

    return uct_specrdv_shm_peer_send_ctrl(iface, peer,
                                          UCT_SPECRDV_SHM_CTRL_CONNECT, 0);
}

/* The ring is ours to use once the receiver has been told, through the FIFO,
 * ahead of the first message that goes through it */
static ucs_status_t uct_specrdv_shm_ring_request(uct_specrdv_conns_t *conns,
                                                 uct_specrdv_peer_t *generic)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_conns_iface(conns);
    uct_specrdv_shm_peer_t *peer   = uct_specrdv_shm_peer(generic);
    ucs_status_t status;

    if (peer->tx_ring < 0) {
        peer->tx_ring = uct_specrdv_shm_seg_claim_ring(&peer->seg,
                                                       peer->remote_id);
        if (peer->tx_ring < 0) {
            return UCS_ERR_EXCEEDS_LIMIT;
        }
    }

    status = uct_specrdv_shm_peer_send_ctrl(iface, peer,
                                            UCT_SPECRDV_SHM_CTRL_RING,
                                            peer->tx_ring);
    if (status != UCS_OK) {
        return status;
    }

    uct_specrdv_ring_tx_init(&peer->super.tx,
                             uct_specrdv_shm_seg_ring(&peer->seg, peer->tx_ring),
                             &peer->seg.ctl->geom);
    return UCS_OK;
}

static uint16_t uct_specrdv_shm_ring_credits(uct_specrdv_conns_t *conns,
                                             uct_specrdv_peer_t *generic)
{
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_peer(generic);

    return peer->seg.ring_ctl[peer->tx_ring].returned;
}

static void uct_specrdv_shm_ring_release(uct_specrdv_conns_t *conns,
                                         uct_specrdv_peer_t *generic)
{
    /* The receiver frees the ring's ownership when it has drained it */
    uct_specrdv_shm_peer(generic)->tx_ring = -1;
}

/* A process that died cannot write any more; nor can one whose interface
 * closed (the segment says so) */
static int uct_specrdv_shm_peer_alive(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *generic)
{
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_peer(generic);

    return !peer->seg.ctl->closed &&
           ((kill(peer->pid, 0) == 0) || (errno != ESRCH));
}

static void uct_specrdv_shm_credit_push(uct_specrdv_conns_t *conns,
                                        uct_specrdv_peer_t *peer,
                                        unsigned ring, uint16_t tail)
{
    uct_specrdv_shm_conns_iface(conns)->seg.ring_ctl[ring].returned = tail;
}

static void uct_specrdv_shm_ring_free(uct_specrdv_conns_t *conns,
                                      unsigned ring)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_conns_iface(conns);

    /* The next owner starts counting credits from zero */
    iface->seg.ring_ctl[ring].returned = 0;
    ucs_memory_cpu_store_fence();
    iface->seg.ring_ctl[ring].owner    = 0;
}

static void uct_specrdv_shm_rx_ctrl(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic,
                                    const uct_specrdv_hdr_t *hdr,
                                    const void *payload)
{
    uct_specrdv_shm_iface_t *iface     = uct_specrdv_shm_conns_iface(conns);
    uct_specrdv_shm_peer_t *peer       = uct_specrdv_shm_peer(generic);
    const uct_specrdv_shm_ctrl_t *ctrl = payload;

    if (hdr->length != sizeof(*ctrl)) {
        goto err;
    }

    switch (hdr->am_id) {
    case UCT_SPECRDV_SHM_CTRL_RING:
        if ((ctrl->ring >= iface->seg.ctl->num_rings) ||
            (iface->seg.ring_ctl[ctrl->ring].owner != peer->local_id + 1)) {
            ucs_error("specrdv: peer pid %d announced ring %u it does not own",
                      peer->pid, ctrl->ring);
            uct_specrdv_peer_fail(conns, generic, UCS_ERR_IO_ERROR);
            return;
        }
        uct_specrdv_conns_rx_ring_open(conns, generic, ctrl->ring);
        return;
    case UCT_SPECRDV_SHM_CTRL_DISCONNECT:
        if (generic->rx_ring >= 0) {
            uct_specrdv_conns_rx_ring_close(conns, generic);
        }
        iface->by_id[peer->local_id] = NULL;
        ucs_memory_cpu_store_fence();
        iface->seg.peers[peer->local_id] = 0;
        peer->local_id                   = -1;
        return;
    }

err:
    ucs_error("specrdv: peer pid %d sent invalid control message %u",
              peer->pid, hdr->am_id);
    uct_specrdv_peer_fail(conns, generic, UCS_ERR_IO_ERROR);
}

/* CONNECT from a sender we do not know yet, by its id here */
static void uct_specrdv_shm_rx_connect(uct_specrdv_shm_iface_t *iface,
                                       unsigned src,
                                       const uct_specrdv_hdr_t *hdr,
                                       const void *payload)
{
    const uct_specrdv_shm_ctrl_t *ctrl = payload;
    uct_specrdv_shm_iface_addr_t addr;
    uct_specrdv_shm_peer_t *peer;
    ucs_status_t status;

    /* Messages of a sender that left before its CONNECT was read, or whose
     * connection failed, are dropped; the table entry names who claimed it */
    if ((hdr->type != UCT_SPECRDV_MSG_CTRL) ||
        (hdr->am_id != UCT_SPECRDV_SHM_CTRL_CONNECT) ||
        (hdr->length != sizeof(*ctrl)) || (hdr->psn != 0) ||
        (iface->seg.peers[src] != ctrl->nonce)) {
        ucs_debug("specrdv: dropped a message from unconnected sender id %u",
                  src);
        return;
    }

    addr.nonce = ctrl->nonce;
    addr.shmid = ctrl->shmid;
    addr.pid   = ctrl->pid;
    status     = uct_specrdv_shm_peer_get(iface, &addr, &peer);
    if (status != UCS_OK) {
        /* Its segment is gone with it, and so are its messages: the entry
         * can go to the next sender, whose messages come after them */
        ucs_debug("specrdv: connecting pid %d is gone: %s", ctrl->pid,
                  ucs_status_string(status));
        iface->seg.peers[src] = 0;
        return;
    }

    if ((peer->local_id >= 0) ||
        (uct_specrdv_seq_rx_order(&peer->super.seq, hdr->psn) != 0)) {
        ucs_error("specrdv: peer pid %d connected twice", ctrl->pid);
        uct_specrdv_peer_fail(&iface->super.conns, &peer->super,
                              UCS_ERR_IO_ERROR);
        return;
    }

    peer->local_id    = src;
    iface->by_id[src] = peer;
}

static unsigned uct_specrdv_shm_poll_fifo(uct_specrdv_conns_t *conns)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_conns_iface(conns);
    size_t max_payload = uct_specrdv_shm_fifo_max_payload(&iface->seg);
    unsigned count     = 0;
    uct_specrdv_shm_fifo_elem_t *elem;
    uct_specrdv_shm_peer_t *peer;
    unsigned src;

    while (count < UCT_SPECRDV_SHM_RX_BATCH) {
        elem = uct_specrdv_shm_fifo_peek(&iface->seg, iface->fifo_tail);
        if (elem == NULL) {
            break;
        }

        src = elem->hdr.src;
        if (ucs_unlikely(src >= iface->seg.ctl->max_peers)) {
            ucs_error("specrdv: dropped a message from sender id %u", src);
        } else if (ucs_unlikely((peer = iface->by_id[src]) == NULL)) {
            if (elem->hdr.length <= max_payload) {
                uct_specrdv_shm_rx_connect(iface, src, &elem->hdr, elem + 1);
            }
        } else if (uct_specrdv_conns_rx_fallback(conns, &peer->super,
                                                 &elem->hdr, elem + 1,
                                                 max_payload) ==
                   UCT_SPECRDV_RX_HELD) {
            break;
        }

        uct_specrdv_shm_fifo_pop(&iface->seg, iface->fifo_tail++);
        ++count;
    }

    return count;
}

const uct_specrdv_wire_ops_t uct_specrdv_shm_wire_ops = {
    .connect       = uct_specrdv_shm_connect,
    .ring_request  = uct_specrdv_shm_ring_request,
    .ring_credits  = uct_specrdv_shm_ring_credits,
    .ring_write    = NULL,
    .fb_reserve    = uct_specrdv_shm_fb_reserve,
    .fb_post       = uct_specrdv_shm_fb_post,
    .fb_can_send   = uct_specrdv_shm_fb_can_send,
    .credit_push   = uct_specrdv_shm_credit_push,
    .ring_release  = uct_specrdv_shm_ring_release,
    .peer_alive    = uct_specrdv_shm_peer_alive,
    .ring_free     = uct_specrdv_shm_ring_free,
    .rx_ctrl       = uct_specrdv_shm_rx_ctrl,
    .poll_fallback = uct_specrdv_shm_poll_fifo
};

void uct_specrdv_shm_peer_destroy(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer)
{
    /* Best effort: if its FIFO is full now, the peer keeps our entry and ring
     * until it exits */
    if ((peer->super.flags & UCT_SPECRDV_PEER_CONNECTED) &&
        !(peer->super.flags & UCT_SPECRDV_PEER_FAILED) &&
        (uct_specrdv_shm_peer_send_ctrl(iface, peer,
                                        UCT_SPECRDV_SHM_CTRL_DISCONNECT,
                                        0) != UCS_OK)) {
        ucs_debug("specrdv: could not tell pid %d we are leaving", peer->pid);
    }

    uct_specrdv_peer_cleanup(&iface->super.conns, &peer->super);
    uct_specrdv_shm_seg_detach(&peer->seg);
    ucs_free(peer);
}
