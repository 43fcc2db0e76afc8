/**
 * ucx-spec: the connection layer.  See specrdv_conn.h.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_conn.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Messages taken from one ring per progress call */
#define UCT_SPECRDV_RX_BATCH        16

/* Progress calls between two questions whether a peer that has not released
 * a revoked ring is still there */
#define UCT_SPECRDV_REVOKE_POLLS    4096


const char *uct_specrdv_conn_counter_names[] = {
#define UCT_SPECRDV_CONN_COUNTER_NAME(_name, _desc) #_name,
    UCT_SPECRDV_CONN_COUNTERS(UCT_SPECRDV_CONN_COUNTER_NAME)
#undef UCT_SPECRDV_CONN_COUNTER_NAME
    NULL
};


ucs_status_t uct_specrdv_conns_init(uct_specrdv_conns_t *conns,
                                    const uct_specrdv_conns_params_t *params)
{
    memset(conns, 0, sizeof(*conns));
    conns->ops           = params->ops;
    conns->deliver       = params->deliver;
    conns->failed        = params->failed;
    conns->geom          = params->geom;
    conns->num_rings     = params->num_rings;
    conns->ring_after    = params->ring_after;
    conns->credit_update = params->credit_update;
    conns->fb_window     = params->fb_window;
    ucs_list_head_init(&conns->peers);

    conns->rings    = ucs_calloc(params->num_rings, sizeof(*conns->rings),
                                 "specrdv_rx_rings");
    conns->poll_set = ucs_calloc(params->num_rings, sizeof(*conns->poll_set),
                                 "specrdv_poll_set");
    if ((conns->rings == NULL) || (conns->poll_set == NULL)) {
        uct_specrdv_conns_cleanup(conns);
        return UCS_ERR_NO_MEMORY;
    }

    return UCS_OK;
}

void uct_specrdv_conns_cleanup(uct_specrdv_conns_t *conns)
{
    ucs_free(conns->poll_set);
    ucs_free(conns->rings);
}

void uct_specrdv_peer_init(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer)
{
    memset(&peer->seq, 0, sizeof(peer->seq));
    peer->flags        = 0;
    peer->tx_epoch     = 0;
    peer->rx_epoch     = 0;
    peer->fb_sends     = 0;
    peer->fb_sent      = 0;
    peer->fb_acked     = 0;
    peer->rx_ring      = -1;
    peer->rx_fb_msgs   = 0;
    peer->rx_fb_done   = 0;
    peer->rx_fb_pushed = 0;
    ucs_list_head_init(&peer->eps);
    ucs_list_add_tail(&conns->peers, &peer->list);
}

void uct_specrdv_peer_cleanup(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer)
{
    ucs_assert(ucs_list_is_empty(&peer->eps));
    if (peer->flags & UCT_SPECRDV_PEER_CTRL_TX) {
        --conns->ctrl_pending;
    }
    if ((peer->rx_ring >= 0) && !(peer->flags & UCT_SPECRDV_PEER_FAILED)) {
        uct_specrdv_conns_rx_ring_close(conns, peer);
    }
    ucs_list_del(&peer->list);
}

/* The writer's connect act, once, before the first message to the peer */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_peer_connect(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer)
{
    if (ucs_likely(peer->flags & UCT_SPECRDV_PEER_CONNECTED)) {
        return UCS_OK;
    }

    if (conns->ops->connect(conns, peer) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    peer->flags |= UCT_SPECRDV_PEER_CONNECTED;
    return UCS_OK;
}

/* Whether the peer's fallback window has room for a message: the count the
 * receiver pushed is read only when the one we know leaves none */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_peer_fb_window_open(uct_specrdv_conns_t *conns,
                                uct_specrdv_peer_t *peer)
{
    if (ucs_likely(conns->fb_window == 0) ||
        (peer->fb_sent - peer->fb_acked < conns->fb_window)) {
        return 1;
    }

    peer->fb_acked = conns->ops->fb_credits(conns, peer);
    return peer->fb_sent - peer->fb_acked < conns->fb_window;
}

ucs_status_t uct_specrdv_peer_fb_reserve(uct_specrdv_conns_t *conns,
                                         uct_specrdv_peer_t *peer,
                                         uct_specrdv_tx_t *tx)
{
    if (!uct_specrdv_peer_fb_window_open(conns, peer)) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx->ctrl = 1;
    return conns->ops->fb_reserve(conns, peer, tx);
}

/* Tell the peer how many of its fallback messages we delivered, or remember
 * to at the next progress call: it may have nothing more to send until it
 * hears */
static ucs_status_t uct_specrdv_peer_fb_credit_push(uct_specrdv_conns_t *conns,
                                                    uct_specrdv_peer_t *peer)
{
    if (conns->ops->fb_credit_push(conns, peer, peer->rx_fb_done) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    peer->rx_fb_pushed = peer->rx_fb_done;
    UCT_SPECRDV_CONNS_STAT(conns, FB_CREDIT_UPDATES);
    return UCS_OK;
}

/* A control message of the connection layer: no payload, fallback channel */
static ucs_status_t uct_specrdv_peer_send_ctrl(uct_specrdv_conns_t *conns,
                                               uct_specrdv_peer_t *peer,
                                               uint8_t op)
{
    uct_specrdv_tx_t tx;

    if ((uct_specrdv_peer_connect(conns, peer) != UCS_OK) ||
        (uct_specrdv_peer_fb_reserve(conns, peer, &tx) != UCS_OK)) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx.ring = 0;
    uct_specrdv_peer_tx_end(conns, peer, &tx, UCT_SPECRDV_MSG_CTRL, op, 0);
    return UCS_OK;
}

/* A control operation, or with @a op 0 the fallback credits */
static ucs_status_t uct_specrdv_peer_send_deferrable(uct_specrdv_conns_t *conns,
                                                     uct_specrdv_peer_t *peer,
                                                     uint8_t op)
{
    return (op == 0) ? uct_specrdv_peer_fb_credit_push(conns, peer) :
                       uct_specrdv_peer_send_ctrl(conns, peer, op);
}

/* Send @a op now, or remember it (@a flag) for the next progress call */
static void uct_specrdv_peer_send_or_defer(uct_specrdv_conns_t *conns,
                                           uct_specrdv_peer_t *peer,
                                           uint8_t op, uint8_t flag)
{
    if (uct_specrdv_peer_send_deferrable(conns, peer, op) == UCS_OK) {
        return;
    }

    if (!(peer->flags & UCT_SPECRDV_PEER_CTRL_TX)) {
        ++conns->ctrl_pending;
    }
    peer->flags |= flag;
}

/* Send what was deferred for @a peer, as far as there is room */
static void uct_specrdv_peer_send_deferred(uct_specrdv_conns_t *conns,
                                           uct_specrdv_peer_t *peer)
{
    static const struct {
        uint8_t flag;
        uint8_t op;
    } deferred[] = {
        {UCT_SPECRDV_PEER_REVOKE_TX,  UCT_SPECRDV_CTRL_RING_REVOKE},
        {UCT_SPECRDV_PEER_RELEASE_TX, UCT_SPECRDV_CTRL_RING_RELEASED},
        {UCT_SPECRDV_PEER_CREDIT_TX,  0},
        {UCT_SPECRDV_PEER_WANTED_TX,  UCT_SPECRDV_CTRL_RING_WANTED}
    };
    unsigned i;

    for (i = 0; i < ucs_static_array_size(deferred); ++i) {
        if ((peer->flags & deferred[i].flag) &&
            (uct_specrdv_peer_send_deferrable(conns, peer, deferred[i].op) ==
             UCS_OK)) {
            peer->flags &= ~deferred[i].flag;
            if (!(peer->flags & UCT_SPECRDV_PEER_CTRL_TX)) {
                --conns->ctrl_pending;
            }
        }
    }
}

static void uct_specrdv_conns_send_deferred(uct_specrdv_conns_t *conns)
{
    uct_specrdv_peer_t *peer;

    ucs_list_for_each(peer, &conns->peers, list) {
        if (peer->flags & UCT_SPECRDV_PEER_CTRL_TX) {
            uct_specrdv_peer_send_deferred(conns, peer);
        }
    }
}

/* Ask for a place in the receiver's polling set */
static void uct_specrdv_peer_ring_request(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *peer)
{
    ucs_status_t status = conns->ops->ring_request(conns, peer);

    if (status == UCS_OK) {
        peer->flags |= UCT_SPECRDV_PEER_RING_READY;
        ++peer->tx_epoch;
        UCT_SPECRDV_CONNS_STAT(conns, RING_GRANTED);
        ucs_debug("specrdv: %s gave us a ring", peer->name);
    } else if (status == UCS_ERR_EXCEEDS_LIMIT) {
        /* Tell the receiver, which may take a colder peer's ring back by the
         * time we ask again.  Now or at a later progress call: a streaming
         * sender asks right after its own send filled the fallback channel,
         * and one that dropped the message then would never be heard. */
        peer->fb_sends = -UCT_SPECRDV_RING_RETRY;
        UCT_SPECRDV_CONNS_STAT(conns, RING_REFUSED);
        if (!(peer->flags & UCT_SPECRDV_PEER_WANTED_TX)) {
            UCT_SPECRDV_CONNS_STAT(conns, RING_WANTED);
            uct_specrdv_peer_send_or_defer(conns, peer,
                                           UCT_SPECRDV_CTRL_RING_WANTED,
                                           UCT_SPECRDV_PEER_WANTED_TX);
        }
    }
}

static UCS_F_ALWAYS_INLINE int
uct_specrdv_peer_tx_room(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer)
{
    return (conns->ops->tx_room == NULL) || conns->ops->tx_room(conns, peer);
}

static UCS_F_ALWAYS_INLINE unsigned
uct_specrdv_peer_ring_credits(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer)
{
    if (uct_specrdv_ring_tx_credits(&peer->tx) == 0) {
        uct_specrdv_ring_tx_credits_update(
                &peer->tx, conns->ops->ring_credits(conns, peer));
    }
    return uct_specrdv_ring_tx_credits(&peer->tx);
}

ucs_status_t uct_specrdv_peer_tx_begin(uct_specrdv_conns_t *conns,
                                       uct_specrdv_peer_t *peer,
                                       uct_specrdv_tx_t *tx)
{
    ucs_status_t status;

    if (ucs_unlikely((uct_specrdv_peer_connect(conns, peer) != UCS_OK) ||
                     !uct_specrdv_peer_tx_room(conns, peer))) {
        goto no_resource;
    }

    /* What the connection owes the peer goes first: a streaming sender
     * would otherwise fill every place the fallback channel frees with its
     * own data, and its RING_WANTED would wait for the end of the stream */
    if (ucs_unlikely(peer->flags & UCT_SPECRDV_PEER_CTRL_TX)) {
        uct_specrdv_peer_send_deferred(conns, peer);
        if (peer->flags & UCT_SPECRDV_PEER_CTRL_TX) {
            goto no_resource;
        }
    }

    if (ucs_likely(peer->flags & UCT_SPECRDV_PEER_RING_READY)) {
        if (ucs_likely(uct_specrdv_peer_ring_credits(conns, peer) > 0)) {
            goto ring;
        }
        UCT_SPECRDV_CONNS_STAT(conns, TX_NO_CREDITS);
    } else if (peer->fb_sends >= (int)conns->ring_after) {
        uct_specrdv_peer_ring_request(conns, peer);
        if (peer->flags & UCT_SPECRDV_PEER_RING_READY) {
            goto ring;
        }
    }

    if (ucs_unlikely(!uct_specrdv_peer_fb_window_open(conns, peer))) {
        UCT_SPECRDV_CONNS_STAT(conns, TX_FB_NO_CREDITS);
        goto no_resource;
    }

    tx->ctrl = 0;
    status   = conns->ops->fb_reserve(conns, peer, tx);
    if (ucs_unlikely(status != UCS_OK)) {
        if (status == UCS_ERR_NO_RESOURCE) {
            goto no_resource;
        }
        return status; /* the writer failed the connection */
    }

    ++peer->fb_sends;
    tx->ring = 0;
    UCT_SPECRDV_CONNS_STAT(conns, TX_FALLBACK);
    return UCS_OK;

ring:
    tx->ring    = 1;
    tx->payload = uct_specrdv_ring_tx_payload(&peer->tx);
    UCT_SPECRDV_CONNS_STAT(conns, TX_RING);
    return UCS_OK;

no_resource:
    UCT_SPECRDV_CONNS_STAT(conns, TX_NO_RESOURCE);
    return UCS_ERR_NO_RESOURCE;
}

/* The next message's header, with the credits of our ring from the peer */
static void uct_specrdv_peer_tx_hdr(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *peer, uint8_t type,
                                    uint8_t am_id, uint32_t length,
                                    uct_specrdv_hdr_t *hdr)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->length = length;
    hdr->psn    = peer->seq.tx_psn++;
    hdr->src    = peer->src;
    hdr->am_id  = am_id;
    hdr->type   = type;
    if (peer->rx_ring >= 0) {
        hdr->flags   = UCT_SPECRDV_HDR_FLAG_CREDITS;
        hdr->epoch   = peer->rx_epoch;
        hdr->credits = uct_specrdv_ring_rx_credits_take(
                &conns->rings[peer->rx_ring].rx);
    }
}

void uct_specrdv_peer_tx_end(uct_specrdv_conns_t *conns,
                             uct_specrdv_peer_t *peer, uct_specrdv_tx_t *tx,
                             uint8_t type, uint8_t am_id, uint32_t length)
{
    uct_specrdv_hdr_t hdr;
    uint32_t slot;

    uct_specrdv_peer_tx_hdr(conns, peer, type, am_id, length, &hdr);
    if (!tx->ring) {
        ++peer->fb_sent;
        conns->ops->fb_post(conns, peer, tx, &hdr);
        return;
    }

    ucs_assert(length <= uct_specrdv_ring_max_payload(&peer->tx.geom));
    slot = uct_specrdv_ring_tx_post(&peer->tx, &hdr);
    if (conns->ops->ring_write != NULL) {
        conns->ops->ring_write(conns, peer, slot,
                               peer->tx.geom.payload_offset + length + 1);
    }
}

ucs_status_t uct_specrdv_peer_tx_end_gather(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *peer,
                                            uct_specrdv_tx_t *tx, uint8_t am_id,
                                            uint32_t length,
                                            const uct_specrdv_gather_t *gather,
                                            uct_completion_t *comp)
{
    uct_specrdv_hdr_t hdr;
    uint32_t slot;

    ucs_assert(tx->ring && (conns->ops->ring_write_gather != NULL));
    ucs_assert(length <= uct_specrdv_ring_max_payload(&peer->tx.geom));
    uct_specrdv_peer_tx_hdr(conns, peer, UCT_SPECRDV_MSG_AM, am_id, length,
                            &hdr);
    slot = uct_specrdv_ring_tx_post(&peer->tx, &hdr);
    return conns->ops->ring_write_gather(conns, peer, slot,
                                         peer->tx.geom.payload_offset +
                                         length + 1, gather, comp);
}

int uct_specrdv_peer_can_send(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer)
{
    /* What uct_specrdv_peer_tx_begin refuses: a "yes" here makes
     * pending_add say BUSY, and UCP then retries the send at once, without
     * the progress that would connect or send the deferred control message */
    if ((uct_specrdv_peer_connect(conns, peer) != UCS_OK) ||
        !uct_specrdv_peer_tx_room(conns, peer) ||
        (peer->flags & UCT_SPECRDV_PEER_CTRL_TX)) {
        return 0;
    }

    if ((peer->flags & UCT_SPECRDV_PEER_RING_READY) &&
        (uct_specrdv_peer_ring_credits(conns, peer) > 0)) {
        return 1;
    }

    return uct_specrdv_peer_fb_window_open(conns, peer) &&
           conns->ops->fb_can_send(conns, peer);
}

static void uct_specrdv_conns_poll_set_remove(uct_specrdv_conns_t *conns,
                                              unsigned index)
{
    unsigned i;

    for (i = 0; i < conns->poll_count; ++i) {
        if (conns->poll_set[i] == index) {
            conns->poll_set[i] = conns->poll_set[--conns->poll_count];
            return;
        }
    }
}

void uct_specrdv_peer_fail(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                           ucs_status_t status)
{
    if (peer->flags & UCT_SPECRDV_PEER_FAILED) {
        return;
    }

    ucs_error("specrdv: connection with %s failed: %s", peer->name,
              ucs_status_string(status));
    if (peer->flags & UCT_SPECRDV_PEER_CTRL_TX) {
        --conns->ctrl_pending;
    }
    peer->flags = (peer->flags & ~UCT_SPECRDV_PEER_CTRL_TX) |
                  UCT_SPECRDV_PEER_FAILED;
    if (conns->revoking == peer) {
        /* Nothing more comes from it, RING_RELEASED neither */
        conns->revoking = NULL;
    }
    if (peer->rx_ring >= 0) {
        /* A broken sender may still write: the ring never goes back to the
         * writer, it only leaves the polling set */
        uct_specrdv_conns_poll_set_remove(conns, peer->rx_ring);
    }
    conns->failed(conns, peer, status);
}

ucs_status_t uct_specrdv_conns_rx_ring_open(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *peer,
                                            unsigned index)
{
    if ((index >= conns->num_rings) || (conns->rings[index].peer != NULL) ||
        (peer->rx_ring >= 0)) {
        ucs_error("specrdv: %s announced ring %u, which it cannot have",
                  peer->name, index);
        uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
        return UCS_ERR_IO_ERROR;
    }

    uct_specrdv_ring_rx_init(&conns->rings[index].rx,
                             conns->rx_base + index * conns->ring_bytes,
                             &conns->geom);
    conns->rings[index].peer             = peer;
    conns->rings[index].recent           = 0;
    peer->rx_ring                        = index;
    ++peer->rx_epoch;
    conns->poll_set[conns->poll_count++] = index;
    UCT_SPECRDV_CONNS_STAT(conns, RING_ADMITTED);
    return UCS_OK;
}

void uct_specrdv_conns_rx_ring_close(uct_specrdv_conns_t *conns,
                                     uct_specrdv_peer_t *peer)
{
    unsigned index = peer->rx_ring;

    /* Never from inside a delivery: a consumed slot is released before the
     * next poll of any channel */
    ucs_assert(conns->rings[index].rx.tail == conns->rings[index].rx.head);
    uct_specrdv_conns_poll_set_remove(conns, index);
    peer->rx_ring = -1;
    if (conns->revoking == peer) {
        conns->revoking = NULL;
    }

    /* The next sender starts from a blank mirror of the ring: the ring must
     * be blank too, or a stale tail flag could make its half-landed message
     * look whole */
    memset(conns->rx_base + index * conns->ring_bytes, 0,
           conns->geom.num_slots * conns->geom.slot_size);
    conns->rings[index].peer = NULL;
    conns->ops->ring_free(conns, index);
}

void uct_specrdv_conns_peer_gone(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer)
{
    ucs_debug("specrdv: %s is gone", peer->name);
    uct_specrdv_peer_fail(conns, peer, UCS_ERR_CONNECTION_RESET);
    if (peer->rx_ring >= 0) {
        /* Nobody writes it any more, so unlike a broken peer's, this ring
         * can go back to the writer */
        uct_specrdv_conns_rx_ring_close(conns, peer);
        UCT_SPECRDV_CONNS_STAT(conns, RING_RECLAIMED);
    }
}

/* Receiver: @a wanter was refused a ring.  Revoke the coldest ring of the
 * set if it carried less than half of what the wanter sent through the
 * fallback channel since the last check, so that peers about as busy do not
 * trade a ring back and forth; one eviction at a time. */
static void uct_specrdv_conns_ring_wanted(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *wanter)
{
    uct_specrdv_rx_ring_t *coldest = NULL;
    uct_specrdv_rx_ring_t *ring;
    unsigned i;

    if ((wanter->rx_ring >= 0) || (conns->revoking != NULL)) {
        return;
    }

    for (i = 0; i < conns->poll_count; ++i) {
        ring = &conns->rings[conns->poll_set[i]];
        if ((coldest == NULL) || (ring->recent < coldest->recent)) {
            coldest = ring;
        }
    }

    if ((coldest != NULL) && (2 * coldest->recent < wanter->rx_fb_msgs)) {
        ucs_debug("specrdv: taking the ring of %s (%u messages) back for %s "
                  "(%u)", coldest->peer->name, coldest->recent, wanter->name,
                  wanter->rx_fb_msgs);
        conns->revoking     = coldest->peer;
        conns->revoke_polls = 0;
        uct_specrdv_peer_send_or_defer(conns, coldest->peer,
                                       UCT_SPECRDV_CTRL_RING_REVOKE,
                                       UCT_SPECRDV_PEER_REVOKE_TX);
    }

    for (i = 0; i < conns->poll_count; ++i) {
        conns->rings[conns->poll_set[i]].recent = 0;
    }
    wanter->rx_fb_msgs = 0;
}

static void uct_specrdv_conns_rx_conn_ctrl(uct_specrdv_conns_t *conns,
                                           uct_specrdv_peer_t *peer,
                                           const uct_specrdv_hdr_t *hdr)
{
    switch (hdr->am_id) {
    case UCT_SPECRDV_CTRL_RING_WANTED:
        uct_specrdv_conns_ring_wanted(conns, peer);
        return;
    case UCT_SPECRDV_CTRL_RING_REVOKE:
        /* Every ring message we sent has a PSN before our answer's.  A
         * writer that learns of a grant after the receiver opened the ring
         * may be revoked before it knows: it must not use that grant. */
        if (peer->flags & UCT_SPECRDV_PEER_RING_READY) {
            peer->flags &= ~UCT_SPECRDV_PEER_RING_READY;
            UCT_SPECRDV_CONNS_STAT(conns, RING_REVOKED);
        }
        peer->fb_sends = -UCT_SPECRDV_RING_RETRY;
        conns->ops->ring_release(conns, peer);
        uct_specrdv_peer_send_or_defer(conns, peer,
                                       UCT_SPECRDV_CTRL_RING_RELEASED,
                                       UCT_SPECRDV_PEER_RELEASE_TX);
        return;
    case UCT_SPECRDV_CTRL_RING_RELEASED:
        if (conns->revoking == peer) {
            uct_specrdv_conns_rx_ring_close(conns, peer);
            UCT_SPECRDV_CONNS_STAT(conns, RING_EVICTED);
            return;
        }
        break;
    }

    ucs_error("specrdv: %s sent control message 0x%x out of turn", peer->name,
              hdr->am_id);
    uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
}

/* Deliver one in-order message */
static UCS_F_ALWAYS_INLINE void
uct_specrdv_conns_deliver(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                          const uct_specrdv_hdr_t *hdr, void *payload)
{
    /* A message sent before the receiver opened our ring counts the slots
     * of the one it took back: it may arrive after we obtained this one */
    if ((hdr->flags & UCT_SPECRDV_HDR_FLAG_CREDITS) &&
        (peer->flags & UCT_SPECRDV_PEER_RING_READY) &&
        (hdr->epoch == peer->tx_epoch)) {
        uct_specrdv_ring_tx_credits_update(&peer->tx, hdr->credits);
    }

    if (hdr->type == UCT_SPECRDV_MSG_CTRL) {
        if (hdr->am_id >= UCT_SPECRDV_CTRL_CONN_FIRST) {
            uct_specrdv_conns_rx_conn_ctrl(conns, peer, hdr);
        } else {
            conns->ops->rx_ctrl(conns, peer, hdr, payload);
        }
        return;
    }

    conns->deliver(conns, peer, hdr, payload);
}

static unsigned uct_specrdv_conns_poll_ring(uct_specrdv_conns_t *conns,
                                            unsigned index)
{
    uct_specrdv_rx_ring_t *ring = &conns->rings[index];
    uct_specrdv_peer_t *peer    = ring->peer;
    unsigned count              = 0;
    uct_specrdv_hdr_t *hdr;
    ucs_status_t status;
    int order;

    while (count < UCT_SPECRDV_RX_BATCH) {
        status = uct_specrdv_ring_rx_peek(&ring->rx, &hdr);
        if (ucs_likely(status != UCS_OK)) {
            if (status == UCS_ERR_IO_ERROR) {
                uct_specrdv_peer_fail(conns, peer, status);
                return count;
            }
            break;
        }

        /* Control messages travel only on the fallback channel, which the
         * writer reads whatever the polling set holds */
        if (ucs_unlikely(hdr->type != UCT_SPECRDV_MSG_AM)) {
            ucs_error("specrdv: control message in the ring of %s",
                      peer->name);
            uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
            return count;
        }

        order = uct_specrdv_seq_rx_order(&peer->seq, hdr->psn);
        if (ucs_unlikely(order != 0)) {
            if (order < 0) {
                ucs_error("specrdv: %s repeated psn %u in its ring",
                          peer->name, hdr->psn);
                uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
                return count;
            }
            UCT_SPECRDV_CONNS_STAT(conns, RX_HELD);
            break;
        }

        uct_specrdv_ring_rx_consume(&ring->rx);
        uct_specrdv_conns_deliver(conns, peer, hdr,
                                  UCS_PTR_BYTE_OFFSET(hdr,
                                                      conns->geom.payload_offset));
        uct_specrdv_ring_rx_release(&ring->rx);
        ++count;
    }

    if (uct_specrdv_ring_rx_credits_pending(&ring->rx) >=
        conns->credit_update) {
        conns->ops->credit_push(conns, peer, index,
                                uct_specrdv_ring_rx_credits_take(&ring->rx));
        UCT_SPECRDV_CONNS_STAT(conns, CREDIT_UPDATES);
    }

    ring->recent += count;
    return count;
}

unsigned uct_specrdv_conns_poll_rings(uct_specrdv_conns_t *conns)
{
    unsigned count = 0;
    unsigned i     = 0;
    unsigned index;

    /* A failing peer leaves the set, and the last ring takes its place */
    while (i < conns->poll_count) {
        index = conns->poll_set[i];
        if (ucs_likely(!uct_specrdv_ring_rx_ready(&conns->rings[index].rx) &&
                       (uct_specrdv_ring_rx_credits_pending(
                                &conns->rings[index].rx) <
                        conns->credit_update))) {
            ++i;
            continue;
        }

        count += uct_specrdv_conns_poll_ring(conns, index);
        if ((i < conns->poll_count) && (conns->poll_set[i] == index)) {
            ++i;
        }
    }

    if (ucs_unlikely(conns->ctrl_pending > 0)) {
        uct_specrdv_conns_send_deferred(conns);
    }

    /* A peer that died holding a revoked ring never releases it */
    if (ucs_unlikely(conns->revoking != NULL) &&
        (++conns->revoke_polls % UCT_SPECRDV_REVOKE_POLLS == 0) &&
        !conns->ops->peer_alive(conns, conns->revoking)) {
        uct_specrdv_conns_peer_gone(conns, conns->revoking);
    }
    return count;
}

/* The fallback message is early: the ones before it are in the peer's ring,
 * whole, since the peer wrote them first.  If they are not, the peer is
 * broken, and holding the fallback channel for it would stall every other
 * sender. */
static int uct_specrdv_conns_rx_gap(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *peer)
{
    uct_specrdv_hdr_t *hdr;

    if ((peer->rx_ring >= 0) &&
        (uct_specrdv_ring_rx_peek(&conns->rings[peer->rx_ring].rx, &hdr) ==
         UCS_OK)) {
        return 0;
    }

    ucs_error("specrdv: %s skipped sequence numbers", peer->name);
    uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
    return 1;
}

uct_specrdv_rx_result_t
uct_specrdv_conns_rx_fallback(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer,
                              const uct_specrdv_hdr_t *hdr, void *payload,
                              size_t max_payload)
{
    int order;

    if (ucs_unlikely(peer->flags & UCT_SPECRDV_PEER_FAILED)) {
        return UCT_SPECRDV_RX_DONE;
    }

    if (ucs_unlikely(uct_specrdv_hdr_check(hdr, max_payload) != UCS_OK)) {
        uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
        return UCT_SPECRDV_RX_DONE;
    }

    order = uct_specrdv_seq_rx_order(&peer->seq, hdr->psn);
    if (ucs_unlikely(order != 0)) {
        if (order < 0) {
            ucs_error("specrdv: %s repeated psn %u", peer->name, hdr->psn);
            uct_specrdv_peer_fail(conns, peer, UCS_ERR_IO_ERROR);
            return UCT_SPECRDV_RX_DONE;
        }

        UCT_SPECRDV_CONNS_STAT(conns, RX_HELD);
        return uct_specrdv_conns_rx_gap(conns, peer) ? UCT_SPECRDV_RX_DONE :
                                                        UCT_SPECRDV_RX_HELD;
    }

    ++peer->rx_fb_msgs;
    uct_specrdv_conns_deliver(conns, peer, hdr, payload);
    if ((conns->fb_window != 0) &&
        (++peer->rx_fb_done - peer->rx_fb_pushed >= conns->fb_window / 2) &&
        !(peer->flags & (UCT_SPECRDV_PEER_CREDIT_TX |
                         UCT_SPECRDV_PEER_FAILED))) {
        uct_specrdv_peer_send_or_defer(conns, peer, 0,
                                       UCT_SPECRDV_PEER_CREDIT_TX);
    }

    return UCT_SPECRDV_RX_DONE;
}
