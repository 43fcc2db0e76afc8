/**
 * ucx-spec: a connection between two specrdv shm interfaces.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_peer.h"
#include "specrdv_shm_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


/* Fallback sends to wait after the receiver's polling set was full */
#define UCT_SPECRDV_SHM_RING_RETRY  256


ucs_status_t uct_specrdv_shm_peer_get(uct_specrdv_shm_iface_t *iface,
                                      const uct_specrdv_shm_iface_addr_t *addr,
                                      uct_specrdv_shm_peer_t **peer_p)
{
    uct_specrdv_shm_peer_t *peer;
    ucs_status_t status;

    ucs_list_for_each(peer, &iface->peers, list) {
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

    if (peer->seg.ctl->geom.slot_size != iface->super.config.slot_size) {
        ucs_error("specrdv: peer pid %d uses %zu-byte slots, this process %zu",
                  addr->pid, peer->seg.ctl->geom.slot_size,
                  iface->super.config.slot_size);
        uct_specrdv_shm_seg_detach(&peer->seg);
        ucs_free(peer);
        return UCS_ERR_UNREACHABLE;
    }

    peer->nonce     = addr->nonce;
    peer->pid       = peer->seg.ctl->pid;
    peer->remote_id = -1;
    peer->tx_ring   = -1;
    peer->local_id  = -1;
    peer->rx_ring   = -1;
    ucs_list_head_init(&peer->eps);
    ucs_list_add_tail(&iface->peers, &peer->list);
    *peer_p = peer;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_shm_peer_send_ctrl(uct_specrdv_shm_iface_t *iface,
                               uct_specrdv_shm_peer_t *peer, uint8_t op,
                               uint32_t ring)
{
    uct_specrdv_shm_tx_t tx = {.ring = 0};
    uct_specrdv_shm_ctrl_t *ctrl;
    ucs_status_t status;

    status = uct_specrdv_shm_fifo_reserve(&peer->seg, &tx.fifo_pos);
    if (status != UCS_OK) {
        return status;
    }

    ctrl        = (void*)(uct_specrdv_shm_fifo_elem(&peer->seg, tx.fifo_pos) + 1);
    ctrl->nonce = iface->seg.ctl->nonce;
    ctrl->shmid = iface->seg.shmid;
    ctrl->pid   = iface->seg.ctl->pid;
    ctrl->ring  = ring;
    uct_specrdv_shm_peer_tx_end(iface, peer, &tx, UCT_SPECRDV_MSG_CTRL, op,
                                sizeof(*ctrl));
    return UCS_OK;
}

/* Ask for a place in the receiver's polling set; the ring is ours to use once
 * the receiver has been told, through the FIFO, ahead of the first message
 * that goes through it */
static void uct_specrdv_shm_peer_ring_claim(uct_specrdv_shm_iface_t *iface,
                                            uct_specrdv_shm_peer_t *peer)
{
    if (peer->tx_ring < 0) {
        peer->tx_ring = uct_specrdv_shm_seg_claim_ring(&peer->seg,
                                                       peer->remote_id);
        if (peer->tx_ring < 0) {
            UCS_STATS_UPDATE_COUNTER(iface->stats,
                                     UCT_SPECRDV_SHM_IFACE_STAT_RING_REFUSED, 1);
            peer->fb_sends = -UCT_SPECRDV_SHM_RING_RETRY;
            return;
        }
    }

    if (uct_specrdv_shm_peer_send_ctrl(iface, peer, UCT_SPECRDV_SHM_CTRL_RING,
                                       peer->tx_ring) != UCS_OK) {
        return;
    }

    uct_specrdv_ring_tx_init(&peer->tx,
                             uct_specrdv_shm_seg_ring(&peer->seg, peer->tx_ring),
                             &peer->seg.ctl->geom);
    peer->flags |= UCT_SPECRDV_SHM_PEER_RING_READY;
    UCS_STATS_UPDATE_COUNTER(iface->stats,
                             UCT_SPECRDV_SHM_IFACE_STAT_RING_CLAIMED, 1);
}

static UCS_F_ALWAYS_INLINE int
uct_specrdv_shm_peer_ring_credits(uct_specrdv_shm_peer_t *peer)
{
    if (uct_specrdv_ring_tx_credits(&peer->tx) == 0) {
        uct_specrdv_ring_tx_credits_update(
                &peer->tx, peer->seg.ring_ctl[peer->tx_ring].returned);
    }
    return uct_specrdv_ring_tx_credits(&peer->tx);
}

ucs_status_t uct_specrdv_shm_peer_tx_begin(uct_specrdv_shm_iface_t *iface,
                                           uct_specrdv_shm_peer_t *peer,
                                           size_t length,
                                           uct_specrdv_shm_tx_t *tx)
{
    ucs_status_t status;

    if (ucs_unlikely(!(peer->flags & UCT_SPECRDV_SHM_PEER_CONNECTED))) {
        status = uct_specrdv_shm_peer_send_ctrl(iface, peer,
                                                UCT_SPECRDV_SHM_CTRL_CONNECT, 0);
        if (status != UCS_OK) {
            goto no_resource;
        }
        peer->flags |= UCT_SPECRDV_SHM_PEER_CONNECTED;
    }

    if (ucs_likely(peer->flags & UCT_SPECRDV_SHM_PEER_RING_READY)) {
        if (ucs_likely(uct_specrdv_shm_peer_ring_credits(peer) > 0)) {
            goto ring;
        }
        UCS_STATS_UPDATE_COUNTER(iface->stats,
                                 UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_CREDITS, 1);
    } else if (peer->fb_sends >= (int)iface->super.config.ring_after) {
        uct_specrdv_shm_peer_ring_claim(iface, peer);
        if (peer->flags & UCT_SPECRDV_SHM_PEER_RING_READY) {
            goto ring;
        }
    }

    status = uct_specrdv_shm_fifo_reserve(&peer->seg, &tx->fifo_pos);
    if (status != UCS_OK) {
        goto no_resource;
    }

    ++peer->fb_sends;
    tx->ring    = 0;
    tx->payload = uct_specrdv_shm_fifo_elem(&peer->seg, tx->fifo_pos) + 1;
    UCS_STATS_UPDATE_COUNTER(iface->stats,
                             UCT_SPECRDV_SHM_IFACE_STAT_TX_FALLBACK, 1);
    return UCS_OK;

ring:
    ucs_assert(length <= uct_specrdv_ring_max_payload(&peer->tx.geom));
    tx->ring    = 1;
    tx->payload = uct_specrdv_ring_tx_payload(&peer->tx);
    UCS_STATS_UPDATE_COUNTER(iface->stats, UCT_SPECRDV_SHM_IFACE_STAT_TX_RING,
                             1);
    return UCS_OK;

no_resource:
    UCS_STATS_UPDATE_COUNTER(iface->stats,
                             UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_RESOURCE, 1);
    return UCS_ERR_NO_RESOURCE;
}

void uct_specrdv_shm_peer_tx_end(uct_specrdv_shm_iface_t *iface,
                                 uct_specrdv_shm_peer_t *peer,
                                 uct_specrdv_shm_tx_t *tx, uint8_t type,
                                 uint8_t am_id, uint32_t length)
{
    uct_specrdv_hdr_t hdr = {
        .length  = length,
        .psn     = peer->conn.tx_psn++,
        .src     = peer->remote_id,
        .am_id   = am_id,
        .type    = type
    };
    uct_specrdv_shm_fifo_elem_t *elem;

    if (peer->rx_ring >= 0) {
        hdr.flags   = UCT_SPECRDV_HDR_FLAG_CREDITS;
        hdr.credits = uct_specrdv_ring_rx_credits_take(
                &iface->rings[peer->rx_ring].rx);
    }

    if (tx->ring) {
        uct_specrdv_ring_tx_post(&peer->tx, &hdr);
    } else {
        elem      = uct_specrdv_shm_fifo_elem(&peer->seg, tx->fifo_pos);
        elem->hdr = hdr;
        uct_specrdv_shm_fifo_push(&peer->seg, tx->fifo_pos);
    }
}

int uct_specrdv_shm_peer_can_send(uct_specrdv_shm_peer_t *peer)
{
    uint64_t head;

    if ((peer->flags & UCT_SPECRDV_SHM_PEER_RING_READY) &&
        (uct_specrdv_shm_peer_ring_credits(peer) > 0)) {
        return 1;
    }

    head = peer->seg.ctl->fifo_head;
    return uct_specrdv_shm_fifo_elem(&peer->seg, head)->seq == head;
}

static void uct_specrdv_shm_peer_rx_ring_open(uct_specrdv_shm_iface_t *iface,
                                             uct_specrdv_shm_peer_t *peer,
                                             uint32_t ring)
{
    const uct_specrdv_ring_geom_t *geom = &iface->seg.ctl->geom;

    if ((ring >= iface->seg.ctl->num_rings) ||
        (iface->seg.ring_ctl[ring].owner != peer->local_id + 1) ||
        (iface->rings[ring].peer != NULL) || (peer->rx_ring >= 0)) {
        ucs_error("specrdv: peer pid %d announced ring %u it does not own",
                  peer->pid, ring);
        uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
        return;
    }

    uct_specrdv_ring_rx_init(&iface->rings[ring].rx,
                             uct_specrdv_shm_seg_ring(&iface->seg, ring),
                             iface->released + (size_t)ring * geom->num_slots,
                             geom);
    iface->rings[ring].peer          = peer;
    iface->rings[ring].closing       = 0;
    peer->rx_ring                    = ring;
    iface->poll_set[iface->poll_count++] = ring;
}

static void uct_specrdv_shm_peer_poll_set_remove(uct_specrdv_shm_iface_t *iface,
                                                 unsigned ring)
{
    unsigned i;

    for (i = 0; i < iface->poll_count; ++i) {
        if (iface->poll_set[i] == ring) {
            iface->poll_set[i] = iface->poll_set[--iface->poll_count];
            return;
        }
    }
}

void uct_specrdv_shm_peer_rx_ring_close(uct_specrdv_shm_iface_t *iface,
                                        uct_specrdv_shm_peer_t *peer)
{
    uct_specrdv_shm_rx_ring_t *ring = &iface->rings[peer->rx_ring];
    unsigned index                  = peer->rx_ring;

    uct_specrdv_shm_peer_poll_set_remove(iface, index);
    peer->rx_ring = -1;
    ring->closing = 1;
    uct_specrdv_shm_peer_rx_ring_reclaim(iface, index);
}

void uct_specrdv_shm_peer_rx_ring_reclaim(uct_specrdv_shm_iface_t *iface,
                                          unsigned index)
{
    uct_specrdv_shm_rx_ring_t *ring = &iface->rings[index];

    if ((ring->peer == NULL) || !uct_specrdv_ring_rx_is_idle(&ring->rx)) {
        return;
    }

    /* The next owner starts counting credits from zero */
    ring->peer                          = NULL;
    iface->seg.ring_ctl[index].returned = 0;
    ucs_memory_cpu_store_fence();
    iface->seg.ring_ctl[index].owner    = 0;
}

void uct_specrdv_shm_peer_rx_connect(uct_specrdv_shm_iface_t *iface,
                                     unsigned src, const uct_specrdv_hdr_t *hdr,
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
        (uct_specrdv_conn_rx_order(&peer->conn, hdr->psn) != 0)) {
        ucs_error("specrdv: peer pid %d connected twice", ctrl->pid);
        uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
        return;
    }

    peer->local_id    = src;
    iface->by_id[src] = peer;
}

void uct_specrdv_shm_peer_rx_ctrl(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer,
                                  const uct_specrdv_hdr_t *hdr,
                                  const void *payload)
{
    const uct_specrdv_shm_ctrl_t *ctrl = payload;

    if (hdr->length != sizeof(*ctrl)) {
        goto err;
    }

    switch (hdr->am_id) {
    case UCT_SPECRDV_SHM_CTRL_RING:
        uct_specrdv_shm_peer_rx_ring_open(iface, peer, ctrl->ring);
        return;
    case UCT_SPECRDV_SHM_CTRL_DISCONNECT:
        if (peer->rx_ring >= 0) {
            uct_specrdv_shm_peer_rx_ring_close(iface, peer);
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
    uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
}

void uct_specrdv_shm_peer_fail(uct_specrdv_shm_iface_t *iface,
                               uct_specrdv_shm_peer_t *peer,
                               ucs_status_t status)
{
    uct_specrdv_shm_ep_t *ep;

    if (peer->flags & UCT_SPECRDV_SHM_PEER_FAILED) {
        return;
    }

    ucs_error("specrdv: connection with pid %d failed: %s", peer->pid,
              ucs_status_string(status));
    peer->flags |= UCT_SPECRDV_SHM_PEER_FAILED;
    if (peer->rx_ring >= 0) {
        /* A broken sender may still write: the ring never returns to the
         * pool, it only leaves the polling set */
        uct_specrdv_shm_peer_poll_set_remove(iface, peer->rx_ring);
    }

    ucs_list_for_each(ep, &peer->eps, list) {
        uct_iface_handle_ep_err(&iface->super.super.super, &ep->super.super,
                                status);
    }
}

void uct_specrdv_shm_peer_destroy(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer)
{
    ucs_assert(ucs_list_is_empty(&peer->eps));

    /* Best effort: if its FIFO is full now, the peer keeps our entry and ring
     * until it exits */
    if ((peer->flags & UCT_SPECRDV_SHM_PEER_CONNECTED) &&
        !(peer->flags & UCT_SPECRDV_SHM_PEER_FAILED) &&
        (uct_specrdv_shm_peer_send_ctrl(iface, peer,
                                        UCT_SPECRDV_SHM_CTRL_DISCONNECT,
                                        0) != UCS_OK)) {
        ucs_debug("specrdv: could not tell pid %d we are leaving", peer->pid);
    }

    ucs_list_del(&peer->list);
    uct_specrdv_shm_seg_detach(&peer->seg);
    ucs_free(peer);
}
