/**
 * ucx-spec: the connection layer (Liu et al., ICS'03, sections 3.3 and
 * 4.4-4.6), written once for every writer.
 *
 * The slot ring (specrdv_slot.h) moves one message; this layer decides how a
 * connection uses it:
 *
 *  - channel choice: a peer sends through the fallback channel until it has
 *    sent UCX_SPECRDV_RING_AFTER messages, then asks for a ring in the
 *    receiver's polling set; a refused peer asks again after a while, and a
 *    ring without credit falls back for that message;
 *  - order: every message of a connection, on either channel, carries the
 *    next PSN; the receiver delivers only the ESN and leaves an early message
 *    where it is, so the channel holding the missing one is never blocked;
 *  - credits: the receiver's tail rides on every message of the reverse
 *    direction, and is pushed explicitly past UCX_SPECRDV_CREDIT_UPDATE
 *    freed slots; a slot is freed as soon as its message is delivered: the
 *    user gets no descriptor of it to keep (UCT_CB_PARAM_FLAG_DESC), since
 *    an application that receives late (an unexpected message an MPI
 *    program matches much later) would otherwise hold the sender's credits
 *    and block the ring's hand-back at eviction;
 *  - fallback credits, for a writer whose fallback channel is shared by
 *    every sender and does not bound itself per sender (an SRQ): a sender
 *    has at most fb_window fallback messages the receiver has not yet
 *    delivered; the receiver pushes how many it delivered, a count that only
 *    grows, after every fb_window / 2, and retries at progress when the
 *    writer has no room for the push;
 *  - the polling set: rings this side polls, one per admitted peer, opened
 *    when the peer says so, returned to the writer when closed;
 *  - eviction (ours: neither MVAPICH2 nor Open MPI's openib takes a ring
 *    back): a refused sender says it still wants a ring (RING_WANTED); the
 *    receiver revokes the coldest ring of its set if it carried less than
 *    half the messages since the last such decision that the newcomer sent
 *    through the fallback channel (RING_REVOKE); the owner stops writing it, falls
 *    back, and answers RING_RELEASED, whose PSN comes after its last ring
 *    message, so the ring is drained once RELEASED is delivered; the ring
 *    goes back to the writer blank, and the evicted peer may ask again; a
 *    peer that cannot answer because it is gone (the writer says so) has
 *    its connection failed and its ring taken back without an answer;
 *  - failure: a corrupt or out-of-order message fails its connection only.
 *
 * A writer supplies the wire acts alone (uct_specrdv_wire_ops_t): how the
 * first message reaches the peer, how a ring is obtained, how a sealed slot
 * travels, the fallback channel, and how credits are pushed and read.  The
 * interface above supplies delivery and error reporting as upcalls, so this
 * layer runs under a fake writer in the unit tests (test_specrdv_conn.c).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_CONN_H_
#define UCT_SPECRDV_CONN_H_

#include "specrdv_slot.h"

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>


/* Counters of one interface's connections: name, meaning */
#define UCT_SPECRDV_CONN_COUNTERS(_) \
    _(TX_RING,        "messages sent through a ring") \
    _(TX_FALLBACK,    "messages sent through the fallback channel") \
    _(TX_NO_CREDITS,  "ring sends that found no credit and fell back") \
    _(TX_NO_RESOURCE, "sends refused: ring and fallback channel both full") \
    _(RX_HELD,        "early messages held until their PSN's turn") \
    _(CREDIT_UPDATES, "explicit credit updates pushed to senders") \
    _(TX_FB_NO_CREDITS, "fallback sends that found the fallback window closed") \
    _(FB_CREDIT_UPDATES, "fallback credit updates pushed to senders") \
    _(RING_GRANTED,   "rings this side obtained in peers' polling sets") \
    _(RING_REFUSED,   "ring requests refused: the peer's polling set was full") \
    _(RING_ADMITTED,  "peers admitted into this side's polling set") \
    _(RING_WANTED,    "refusals this side reported to a full polling set") \
    _(RING_EVICTED,   "rings this side took back from cold peers") \
    _(RING_REVOKED,   "rings peers took back from this side") \
    _(RING_RECLAIMED, "rings taken back from peers that were gone") \
    _(TX_TAIL_CLEARED, "tail bytes cleared where a gathered payload went") \
    _(TX_GATHERED,    "ring messages written from the user's buffers")

enum {
#define UCT_SPECRDV_CONN_COUNTER_ENUM(_name, _desc) UCT_SPECRDV_CNT_##_name,
    UCT_SPECRDV_CONN_COUNTERS(UCT_SPECRDV_CONN_COUNTER_ENUM)
#undef UCT_SPECRDV_CONN_COUNTER_ENUM
    UCT_SPECRDV_CNT_LAST
};

extern const char *uct_specrdv_conn_counter_names[];

/* For tests and tools: a specrdv interface's counters, UCT_SPECRDV_CNT_LAST
 * of them, whatever its writer (UCS statistics are compiled out of
 * Debian's build) */
struct uct_iface;
const uint64_t *uct_specrdv_iface_counters(struct uct_iface *iface);


enum {
    UCT_SPECRDV_PEER_CONNECTED  = UCS_BIT(0), /* the writer's connect act done */
    UCT_SPECRDV_PEER_RING_READY = UCS_BIT(1), /* sending through a ring */
    UCT_SPECRDV_PEER_FAILED     = UCS_BIT(2), /* broken: nothing more either way */
    UCT_SPECRDV_PEER_REVOKE_TX  = UCS_BIT(3), /* RING_REVOKE still to send */
    UCT_SPECRDV_PEER_RELEASE_TX = UCS_BIT(4), /* RING_RELEASED still to send */
    UCT_SPECRDV_PEER_CREDIT_TX  = UCS_BIT(5), /* fallback credits to push */
    UCT_SPECRDV_PEER_WANTED_TX  = UCS_BIT(6)  /* RING_WANTED still to send */
};

#define UCT_SPECRDV_PEER_CTRL_TX \
    (UCT_SPECRDV_PEER_REVOKE_TX | UCT_SPECRDV_PEER_RELEASE_TX | \
     UCT_SPECRDV_PEER_CREDIT_TX | UCT_SPECRDV_PEER_WANTED_TX)


/* Control operations of the connection layer, in the am_id of a
 * UCT_SPECRDV_MSG_CTRL message with no payload; a writer's own control
 * operations are numbered below them */
enum {
    UCT_SPECRDV_CTRL_CONN_FIRST    = 0x80,
    UCT_SPECRDV_CTRL_RING_WANTED   = 0x80, /* refused, still wants a ring */
    UCT_SPECRDV_CTRL_RING_REVOKE   = 0x81, /* stop writing the ring */
    UCT_SPECRDV_CTRL_RING_RELEASED = 0x82  /* no ring message after this */
};


/* Fallback sends a refused peer waits before it asks for a ring again */
#define UCT_SPECRDV_RING_RETRY  256


/* One connection: both directions with one remote interface.  A writer
 * embeds it first in its own peer. */
typedef struct uct_specrdv_peer {
    ucs_list_link_t       list;      /* in the interface's peers */
    uct_specrdv_seq_t     seq;
    uint8_t               flags;
    /* sending */
    uint16_t              src;       /* our id at the receiver (hdr.src) */
    uint8_t               tx_epoch;  /* rings obtained from it so far */
    int                   fb_sends;  /* fallback sends since a ring request */
    uint32_t              fb_sent;   /* fallback messages sent, and */
    uint32_t              fb_acked;  /* those the receiver said it delivered */
    uct_specrdv_ring_tx_t tx;        /* valid with PEER_RING_READY */
    /* receiving */
    int                   rx_ring;   /* its ring in our polling set, or -1 */
    uint8_t               rx_epoch;  /* rings opened for it so far: a tail
                                        is stamped with it, so a count of a
                                        ring taken back never applies to
                                        the next one */
    uint32_t              rx_fb_msgs; /* fallback messages since RING_WANTED */
    uint32_t              rx_fb_done; /* fallback messages delivered, and */
    uint32_t              rx_fb_pushed; /* how many the sender was told */
    ucs_list_link_t       eps;       /* the interface's endpoints to it */
    char                  name[32];  /* for logs, set by the writer */
} uct_specrdv_peer_t;


/* One message between uct_specrdv_peer_tx_begin() and _tx_end() */
typedef struct uct_specrdv_tx {
    void     *payload;  /* where the caller writes the message */
    uint64_t pos;       /* the writer's: where its fallback message sits */
    int      ring;      /* through the ring, else through the fallback */
    int      ctrl;      /* a control message: a writer whose fallback channel
                           every sender shares keeps room for these, or one
                           hot sender's data would starve them */
} uct_specrdv_tx_t;


/* A zero-copy active message: the first @a offset bytes of its payload are
 * in the sender's view of the slot, the rest in the user's buffers */
typedef struct uct_specrdv_gather {
    size_t          offset;
    const uct_iov_t *iov;
    size_t          iovcnt;
} uct_specrdv_gather_t;


/* A ring of our polling set */
typedef struct uct_specrdv_rx_ring {
    uct_specrdv_ring_rx_t rx;
    uct_specrdv_peer_t    *peer;     /* NULL while the writer has it */
    uint32_t              recent;    /* messages since the last eviction check */
} uct_specrdv_rx_ring_t;


/* What comes of a message offered to uct_specrdv_conns_rx_fallback() */
typedef enum {
    UCT_SPECRDV_RX_DONE,  /* delivered or dropped: the writer reuses it */
    UCT_SPECRDV_RX_HELD   /* early: offer it again after the rings' turn */
} uct_specrdv_rx_result_t;


typedef struct uct_specrdv_conns uct_specrdv_conns_t;


/**
 * The wire acts of a writer.  Sender side, then receiver side.
 */
typedef struct uct_specrdv_wire_ops {
    /* Before the first message to a peer: make it know us.  UCS_OK, or
     * UCS_ERR_NO_RESOURCE to be asked again at the next send. */
    ucs_status_t (*connect)(uct_specrdv_conns_t *conns,
                            uct_specrdv_peer_t *peer);

    /* Whether the medium takes a message to the peer now, through either
     * channel; NULL where it always does */
    int          (*tx_room)(uct_specrdv_conns_t *conns,
                            uct_specrdv_peer_t *peer);

    /* Obtain a ring in the peer's polling set and set peer->tx over the
     * sender's view of it (uct_specrdv_ring_tx_init).  UCS_OK: usable now;
     * UCS_ERR_EXCEEDS_LIMIT: the polling set is full; UCS_ERR_NO_RESOURCE:
     * ask again at the next send. */
    ucs_status_t (*ring_request)(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer);

    /* The receiver's tail as its last explicit credit update left it */
    uint16_t     (*ring_credits)(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer);

    /* Carry bytes [0, length) of the sealed slot to the receiver; NULL where
     * the sender's view is the receiver's memory */
    void         (*ring_write)(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *peer, uint32_t slot,
                               size_t length);

    /* The same, the payload past gather->offset taken from the user's
     * buffers (Rashti & Afsahi's zero-copy eager: one write gathers the
     * header, the buffers and the tail flag into the receiver's slot).
     * UCS_INPROGRESS: @a comp completes when the buffers may be reused;
     * UCS_OK: the writer copied them into its view.  NULL where the
     * sender's view is the receiver's memory, and the caller copies. */
    ucs_status_t (*ring_write_gather)(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *peer, uint32_t slot,
                                      size_t length,
                                      const uct_specrdv_gather_t *gather,
                                      uct_completion_t *comp);

    /* Fallback channel: room for one message of up to the ring's payload
     * (tx->payload, tx->pos), or UCS_ERR_NO_RESOURCE, or another error once
     * the writer failed the connection (a channel only a broken peer can
     * leave in that state); then send it */
    ucs_status_t (*fb_reserve)(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *peer, uct_specrdv_tx_t *tx);
    void         (*fb_post)(uct_specrdv_conns_t *conns,
                            uct_specrdv_peer_t *peer, uct_specrdv_tx_t *tx,
                            const uct_specrdv_hdr_t *hdr);
    int          (*fb_can_send)(uct_specrdv_conns_t *conns,
                                uct_specrdv_peer_t *peer);

    /* With a fallback window (else NULL).  Sender: the count of our fallback
     * messages the receiver last pushed.  Receiver: push @a delivered, the
     * count of the peer's fallback messages delivered so far; UCS_OK, or
     * UCS_ERR_NO_RESOURCE to be asked again at a later progress call. */
    uint32_t     (*fb_credits)(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *peer);
    ucs_status_t (*fb_credit_push)(uct_specrdv_conns_t *conns,
                                   uct_specrdv_peer_t *peer,
                                   uint32_t delivered);

    /* Receiver: tell the sender of ring @a ring our tail */
    void         (*credit_push)(uct_specrdv_conns_t *conns,
                                uct_specrdv_peer_t *peer, unsigned ring,
                                uint16_t tail);

    /* Sender: the receiver took back our ring, or the one it granted us
     * that we may not have learnt of yet; forget it */
    void         (*ring_release)(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer);

    /* Receiver: whether @a peer may still write to us; asked now and then
     * while a ring revoked from it has not been released */
    int          (*peer_alive)(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *peer);

    /* Receiver: ring @a ring is closed, idle and blank; the writer may give
     * it to another sender */
    void         (*ring_free)(uct_specrdv_conns_t *conns, unsigned ring);

    /* Receiver: a writer's control message arrived from @a peer, in order */
    void         (*rx_ctrl)(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                            const uct_specrdv_hdr_t *hdr, const void *payload);

    /* Receiver: read the fallback channel, offering each message to
     * uct_specrdv_conns_rx_fallback(); returns how many were taken */
    unsigned     (*poll_fallback)(uct_specrdv_conns_t *conns);
} uct_specrdv_wire_ops_t;


/* Upcalls to the interface: an active message to deliver (the user copies
 * what it keeps), a connection that failed */
typedef void (*uct_specrdv_deliver_func_t)(uct_specrdv_conns_t *conns,
                                           uct_specrdv_peer_t *peer,
                                           const uct_specrdv_hdr_t *hdr,
                                           void *payload);
typedef void (*uct_specrdv_failed_func_t)(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *peer,
                                          ucs_status_t status);


typedef struct uct_specrdv_conns_params {
    const uct_specrdv_wire_ops_t *ops;
    uct_specrdv_deliver_func_t   deliver;
    uct_specrdv_failed_func_t    failed;
    uct_specrdv_ring_geom_t      geom;          /* of the rings we receive on */
    unsigned                     num_rings;     /* the polling set's bound */
    unsigned                     ring_after;
    unsigned                     credit_update;
    unsigned                     fb_window;     /* 0: the writer's fallback
                                                   channel bounds each sender */
} uct_specrdv_conns_params_t;


/* The connections of one interface, and its polling set */
struct uct_specrdv_conns {
    const uct_specrdv_wire_ops_t *ops;
    uct_specrdv_deliver_func_t   deliver;
    uct_specrdv_failed_func_t    failed;
    unsigned                     ring_after;
    unsigned                     credit_update;
    unsigned                     fb_window;
    ucs_list_link_t              peers;
    /* receiving: rings at rx_base, ring_bytes apart, set by the writer */
    uct_specrdv_ring_geom_t      geom;
    uint8_t                      *rx_base;
    size_t                       ring_bytes;
    unsigned                     num_rings;
    uct_specrdv_rx_ring_t        *rings;
    unsigned                     *poll_set;     /* indexes of open rings */
    unsigned                     poll_count;
    unsigned                     ctrl_pending;  /* peers with PEER_CTRL_TX */
    uct_specrdv_peer_t           *revoking;     /* its ring is revoked: its
                                                   RELEASED is awaited, and
                                                   no other ring is revoked */
    unsigned                     revoke_polls;  /* progress calls since */
    uint64_t                     counters[UCT_SPECRDV_CNT_LAST];
};


ucs_status_t uct_specrdv_conns_init(uct_specrdv_conns_t *conns,
                                    const uct_specrdv_conns_params_t *params);

void uct_specrdv_conns_cleanup(uct_specrdv_conns_t *conns);

/* The writer's receive rings: num_rings of them, ring_bytes apart */
static UCS_F_ALWAYS_INLINE void
uct_specrdv_conns_set_rx_memory(uct_specrdv_conns_t *conns, void *base,
                                size_t ring_bytes)
{
    conns->rx_base    = base;
    conns->ring_bytes = ring_bytes;
}

static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_conns_max_payload(const uct_specrdv_conns_t *conns)
{
    return uct_specrdv_ring_max_payload(&conns->geom);
}

#define UCT_SPECRDV_CONNS_STAT(_conns, _name) \
    (++(_conns)->counters[UCT_SPECRDV_CNT_##_name])


void uct_specrdv_peer_init(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer);

void uct_specrdv_peer_cleanup(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer);

/**
 * Find room for one message of up to the ring's payload: a ring slot when the
 * peer has a ring with a credit, else the fallback channel.
 * @return UCS_OK, or UCS_ERR_NO_RESOURCE when neither has room.
 */
ucs_status_t uct_specrdv_peer_tx_begin(uct_specrdv_conns_t *conns,
                                       uct_specrdv_peer_t *peer,
                                       uct_specrdv_tx_t *tx);

/* Room in the fallback channel for one control message of up to the ring's
 * payload, within the peer's fallback window; a writer sends its control
 * messages with this and uct_specrdv_peer_tx_end() */
ucs_status_t uct_specrdv_peer_fb_reserve(uct_specrdv_conns_t *conns,
                                         uct_specrdv_peer_t *peer,
                                         uct_specrdv_tx_t *tx);

/* Send the message whose payload the caller wrote; @a type and @a am_id as in
 * uct_specrdv_hdr_t */
void uct_specrdv_peer_tx_end(uct_specrdv_conns_t *conns,
                             uct_specrdv_peer_t *peer, uct_specrdv_tx_t *tx,
                             uint8_t type, uint8_t am_id, uint32_t length);

/* The same for an active message through a ring whose writer gathers
 * (ring_write_gather); its status */
ucs_status_t uct_specrdv_peer_tx_end_gather(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *peer,
                                            uct_specrdv_tx_t *tx, uint8_t am_id,
                                            uint32_t length,
                                            const uct_specrdv_gather_t *gather,
                                            uct_completion_t *comp);

/* Sender: a ring the receiver granted and took back before we learnt of it
 * (a writer whose grants arrive after the ring is opened); it counts among
 * the rings obtained, as the receiver counted it among those opened */
static UCS_F_ALWAYS_INLINE void
uct_specrdv_peer_ring_voided(uct_specrdv_peer_t *peer)
{
    ++peer->tx_epoch;
}

/* Whether a message could be sent now */
int uct_specrdv_peer_can_send(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer);

/* Peer that can no longer write to us (its process or connection is gone):
 * fail the connection and take its ring back */
void uct_specrdv_conns_peer_gone(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer);

/* Broken peer: stop reading it and tell the interface; idempotent */
void uct_specrdv_peer_fail(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                           ucs_status_t status);


/* Receiver: the peer announced ring @a index, which the writer checked is
 * its to use; it joins the polling set */
ucs_status_t uct_specrdv_conns_rx_ring_open(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *peer,
                                            unsigned index);

/* Receiver: the peer's ring leaves the polling set and goes back to the
 * writer, blank */
void uct_specrdv_conns_rx_ring_close(uct_specrdv_conns_t *conns,
                                     uct_specrdv_peer_t *peer);

/* Receiver: poll every ring of the polling set; returns messages taken */
unsigned uct_specrdv_conns_poll_rings(uct_specrdv_conns_t *conns);

/* Receiver: a message of @a peer read from the fallback channel, validated
 * against @a max_payload and delivered in its PSN's order */
uct_specrdv_rx_result_t
uct_specrdv_conns_rx_fallback(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer,
                              const uct_specrdv_hdr_t *hdr, void *payload,
                              size_t max_payload);

#endif
