/**
 * ucx-spec: the slot protocol (Liu et al., ICS'03, section 4), written once
 * for every writer.
 *
 * A ring carries one direction of a connection: the receiver owns N slots of
 * S bytes, and sender slot i is only ever written to receiver slot i.  A slot
 * is laid out as
 *
 *     | hdr (16 B, head flag last) | headroom | payload ... | tail flag |
 *     0                            16         payload_offset
 *
 * The sender holds a view of the receiver's slots: a registered mirror that an
 * RDMA write copies out (verbs), or the receiver's slots mapped directly (shm).
 * Because slots are persistently associated, that view shows what the
 * receiver's tail position holds, so the sender picks the flag value that
 * differs from it and slots are never zeroed.  A writer that gathers a
 * payload from the user's buffers (verbs) leaves the view behind the
 * receiver there: the slot records how far, and a later message whose tail
 * falls in that stretch has the writer clear the tail byte first.  The
 * receiver sees the head flag, reads the length, then waits for the tail flag
 * to equal the head flag:
 * bytes land in address order, so a matching tail means the payload is whole.
 *
 * Flow control: the receiver frees slots in any order, but its tail advances
 * only over freed slots.  It returns the tail (free-running, mod 2^16) on every
 * message of the reverse direction and, past a threshold with no reverse
 * traffic, through the writer's explicit credit update.  Sending an absolute
 * count rather than a delta makes the two paths idempotent: the sender keeps
 * the newest value whichever way and in whatever order it arrives.
 *
 * A sender without credits uses the writer's fallback channel; a per-connection
 * packet sequence number (PSN) lets the receiver hold an early message in place
 * until the expected one (ESN) has arrived on the other channel.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SLOT_H_
#define UCT_SPECRDV_SLOT_H_

#include <ucs/arch/cpu.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>


/* Head flag values; a cleared head flag is 0 */
#define UCT_SPECRDV_FLAG_PRIMARY    0x5a
#define UCT_SPECRDV_FLAG_SECONDARY  0xa5

/* Message types */
enum {
    UCT_SPECRDV_MSG_AM   = 0,  /* active message, am_id is the user's id */
    UCT_SPECRDV_MSG_CTRL = 1   /* writer's control message, am_id is its op */
};

/* Header flags */
enum {
    UCT_SPECRDV_HDR_FLAG_CREDITS = UCS_BIT(0)  /* credits field is valid */
};


typedef struct uct_specrdv_hdr {
    uint32_t length;   /* payload bytes */
    uint16_t psn;      /* packet sequence number of the connection */
    uint16_t credits;  /* receiver tail of the reverse ring, mod 2^16 */
    uint16_t src;      /* sender's id at the receiver */
    uint8_t  am_id;
    uint8_t  type;
    uint8_t  flags;
    uint8_t  epoch;    /* with CREDITS: the reverse ring they count, as
                          uct_specrdv_peer_t numbers the rings it obtains */
    uint8_t  reserved;
    uint8_t  flag;     /* head flag: written after the rest of the header */
} UCS_S_PACKED uct_specrdv_hdr_t;


/* Shape of a ring, chosen by its receiver and advertised to the sender */
typedef struct uct_specrdv_ring_geom {
    size_t   slot_size;
    uint32_t payload_offset;
    uint32_t num_slots;
} uct_specrdv_ring_geom_t;


/* Offsets [begin, end) of a slot (begin == end: none) */
typedef struct uct_specrdv_unseen {
    uint32_t begin;
    uint32_t end;
} uct_specrdv_unseen_t;


typedef struct uct_specrdv_ring_tx {
    uint8_t                 *slots;   /* sender's view of the receiver's slots */
    uct_specrdv_ring_geom_t geom;
    uint32_t                head;     /* next slot to write, free-running */
    uint32_t                tail;     /* slots the receiver returned */
    /* per slot, where a writer gathers: the receiver's bytes there may
     * differ from the view */
    uct_specrdv_unseen_t    *unseen;
    int                     clear_tail; /* of the last message posted */
} uct_specrdv_ring_tx_t;


typedef struct uct_specrdv_ring_rx {
    uint8_t                 *slots;
    uct_specrdv_ring_geom_t geom;
    uint8_t                 *next;     /* the head slot, polled when idle */
    uint32_t                next_index;
    uint32_t                head;      /* next slot to poll, free-running */
    uint32_t                tail;      /* oldest slot not yet released */
    uint32_t                announced; /* tail the sender was last told */
} uct_specrdv_ring_rx_t;


/* Sequence numbers of one connection, for both directions */
typedef struct uct_specrdv_seq {
    uint16_t tx_psn;  /* next PSN this side sends */
    uint16_t rx_esn;  /* next PSN this side delivers */
} uct_specrdv_seq_t;


ucs_status_t uct_specrdv_ring_geom_check(const uct_specrdv_ring_geom_t *geom);

static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_ring_max_payload(const uct_specrdv_ring_geom_t *geom)
{
    return geom->slot_size - geom->payload_offset - 1;
}

static UCS_F_ALWAYS_INLINE uint8_t*
uct_specrdv_ring_slot(uint8_t *slots, const uct_specrdv_ring_geom_t *geom,
                      uint32_t index)
{
    return slots + (size_t)(index % geom->num_slots) * geom->slot_size;
}


void uct_specrdv_ring_tx_init(uct_specrdv_ring_tx_t *tx, void *slots,
                              const uct_specrdv_ring_geom_t *geom);

static UCS_F_ALWAYS_INLINE unsigned
uct_specrdv_ring_tx_credits(const uct_specrdv_ring_tx_t *tx)
{
    return tx->geom.num_slots - (tx->head - tx->tail);
}

/* Where the caller writes the payload of the next message; needs a credit */
static UCS_F_ALWAYS_INLINE void*
uct_specrdv_ring_tx_payload(uct_specrdv_ring_tx_t *tx)
{
    return uct_specrdv_ring_slot(tx->slots, &tx->geom, tx->head) +
           tx->geom.payload_offset;
}

/**
 * Seal the next slot, whose payload the caller has written: header, head flag,
 * then the tail flag with a release store.  Returns the slot's index; the
 * writer transfers bytes [0, payload_offset + hdr->length] of it, after
 * writing a zero at the tail position if tx->clear_tail.
 */
uint32_t uct_specrdv_ring_tx_post(uct_specrdv_ring_tx_t *tx,
                                  const uct_specrdv_hdr_t *hdr);

/* A writer that gathers: @a unseen has a zeroed entry per slot */
void uct_specrdv_ring_tx_set_unseen(uct_specrdv_ring_tx_t *tx,
                                    uct_specrdv_unseen_t *unseen);

/* The bytes [begin, end) of the message just posted in slot @a index went to
 * the receiver from the user's buffers, not from the view */
void uct_specrdv_ring_tx_gathered(uct_specrdv_ring_tx_t *tx, uint32_t index,
                                  uint32_t begin, uint32_t end);

/* The receiver's returned tail arrived (piggybacked or explicit) */
void uct_specrdv_ring_tx_credits_update(uct_specrdv_ring_tx_t *tx,
                                        uint16_t returned);


void uct_specrdv_ring_rx_init(uct_specrdv_ring_rx_t *rx, void *slots,
                              const uct_specrdv_ring_geom_t *geom);

/**
 * Look at the next slot.
 * @return UCS_OK with *hdr_p set when a whole message is there,
 *         UCS_ERR_NO_MESSAGE when the head flag is clear,
 *         UCS_INPROGRESS when the payload is still landing,
 *         UCS_ERR_IO_ERROR when the header is corrupt.
 */
ucs_status_t uct_specrdv_ring_rx_peek(uct_specrdv_ring_rx_t *rx,
                                      uct_specrdv_hdr_t **hdr_p);

/* Whether the head slot's flag is set: the whole idle poll, no division */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_ring_rx_ready(const uct_specrdv_ring_rx_t *rx)
{
    return ((volatile uct_specrdv_hdr_t*)rx->next)->flag != 0;
}

/* Take the message uct_specrdv_ring_rx_peek() found */
void uct_specrdv_ring_rx_consume(uct_specrdv_ring_rx_t *rx);

/**
 * Free the oldest consumed slot once its message was delivered.  Not at
 * consume: a callback that answers would piggyback a tail that lets the
 * sender overwrite the slot the callback is still reading.
 */
static UCS_F_ALWAYS_INLINE void
uct_specrdv_ring_rx_release(uct_specrdv_ring_rx_t *rx)
{
    ucs_assert(rx->tail != rx->head);
    ++rx->tail;
}

/* Tail to piggyback on the next message of the reverse direction */
static UCS_F_ALWAYS_INLINE uint16_t
uct_specrdv_ring_rx_credits_take(uct_specrdv_ring_rx_t *rx)
{
    rx->announced = rx->tail;
    return (uint16_t)rx->tail;
}

/* Slots freed since the sender was last told */
static UCS_F_ALWAYS_INLINE unsigned
uct_specrdv_ring_rx_credits_pending(const uct_specrdv_ring_rx_t *rx)
{
    return rx->tail - rx->announced;
}


/**
 * Order check of an arrived message against the connection's ESN.
 * @return 0 deliver now (ESN advances), > 0 early: leave it in place until
 *         the missing ones arrive on the other channel, < 0 a PSN already
 *         delivered: the peer is broken.
 */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_seq_rx_order(uct_specrdv_seq_t *seq, uint16_t psn)
{
    int16_t diff = (int16_t)(uint16_t)(psn - seq->rx_esn);

    if (ucs_likely(diff == 0)) {
        ++seq->rx_esn;
    }
    return diff;
}

/* Validate a header's fields that do not depend on its channel */
ucs_status_t uct_specrdv_hdr_check(const uct_specrdv_hdr_t *hdr,
                                   size_t max_payload);

#endif
