/**
 * ucx-spec: the slot protocol.  See specrdv_slot.h.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_slot.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


ucs_status_t uct_specrdv_ring_geom_check(const uct_specrdv_ring_geom_t *geom)
{
    UCS_STATIC_ASSERT(sizeof(uct_specrdv_hdr_t) == 16);

    /* free-running 16-bit credit counts are unambiguous below 2^15 slots */
    if ((geom->num_slots < 2) || (geom->num_slots > INT16_MAX) ||
        (geom->payload_offset < sizeof(uct_specrdv_hdr_t)) ||
        (geom->slot_size < geom->payload_offset + 2)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

void uct_specrdv_ring_tx_init(uct_specrdv_ring_tx_t *tx, void *slots,
                              const uct_specrdv_ring_geom_t *geom)
{
    tx->slots      = slots;
    tx->geom       = *geom;
    tx->head       = 0;
    tx->tail       = 0;
    tx->unseen     = NULL;
    tx->clear_tail = 0;
}

void uct_specrdv_ring_tx_set_unseen(uct_specrdv_ring_tx_t *tx,
                                    uct_specrdv_unseen_t *unseen)
{
    tx->unseen = unseen;
}

void uct_specrdv_ring_tx_gathered(uct_specrdv_ring_tx_t *tx, uint32_t index,
                                  uint32_t begin, uint32_t end)
{
    uct_specrdv_unseen_t *unseen = &tx->unseen[index];

    /* one stretch per slot: the known bytes between two are counted in */
    if (unseen->begin != unseen->end) {
        begin = ucs_min(begin, unseen->begin);
        end   = ucs_max(end, unseen->end);
    }
    unseen->begin = begin;
    unseen->end   = end;
}

uint32_t uct_specrdv_ring_tx_post(uct_specrdv_ring_tx_t *tx,
                                  const uct_specrdv_hdr_t *hdr)
{
    uint32_t index        = tx->head;
    uint8_t *slot         = uct_specrdv_ring_slot(tx->slots, &tx->geom, index);
    volatile uint8_t *tail = slot + tx->geom.payload_offset + hdr->length;
    uct_specrdv_hdr_t *slot_hdr = (uct_specrdv_hdr_t*)slot;
    uct_specrdv_unseen_t *unseen;
    uint32_t offset;
    uint8_t flag;

    ucs_assert(uct_specrdv_ring_tx_credits(tx) > 0);
    ucs_assert(hdr->length <= uct_specrdv_ring_max_payload(&tx->geom));

    /* The view mirrors the receiver's slot, so this byte is what the receiver
     * holds at the tail position; a stale flag there must not look new.
     * Where a gathered payload went past the view, the receiver's byte is
     * the user's, and may be either flag: the writer clears it first, and
     * this message's write brings the view level again up to its tail. */
    if (tx->unseen != NULL) {
        unseen         = &tx->unseen[index % tx->geom.num_slots];
        offset         = tx->geom.payload_offset + hdr->length;
        tx->clear_tail = (offset >= unseen->begin) && (offset < unseen->end);
        unseen->begin  = ucs_max(unseen->begin, offset + 1);
        if (unseen->begin >= unseen->end) {
            unseen->begin = unseen->end = 0;
        }
    }
    flag = (*tail == UCT_SPECRDV_FLAG_PRIMARY) ? UCT_SPECRDV_FLAG_SECONDARY :
                                                 UCT_SPECRDV_FLAG_PRIMARY;

    slot_hdr->length  = hdr->length;
    slot_hdr->psn     = hdr->psn;
    slot_hdr->credits = hdr->credits;
    slot_hdr->src     = hdr->src;
    slot_hdr->am_id   = hdr->am_id;
    slot_hdr->type    = hdr->type;
    slot_hdr->flags   = hdr->flags;
    slot_hdr->epoch   = hdr->epoch;
    ucs_memory_cpu_store_fence();
    *(volatile uint8_t*)&slot_hdr->flag = flag;
    ucs_memory_cpu_store_fence();
    *tail = flag;

    ++tx->head;
    return index % tx->geom.num_slots;
}

void uct_specrdv_ring_tx_credits_update(uct_specrdv_ring_tx_t *tx,
                                        uint16_t returned)
{
    uint16_t advance = returned - (uint16_t)tx->tail;

    /* An older count than one already applied arrives after a newer one when
     * piggybacked and explicit updates cross; it is behind, so it is dropped */
    if (advance <= (tx->head - tx->tail)) {
        tx->tail += advance;
    }
}

void uct_specrdv_ring_rx_init(uct_specrdv_ring_rx_t *rx, void *slots,
                              const uct_specrdv_ring_geom_t *geom)
{
    rx->slots      = slots;
    rx->next       = slots;
    rx->next_index = 0;
    rx->geom      = *geom;
    rx->head      = 0;
    rx->tail      = 0;
    rx->announced = 0;
}

ucs_status_t uct_specrdv_hdr_check(const uct_specrdv_hdr_t *hdr,
                                   size_t max_payload)
{
    if (hdr->length > max_payload) {
        ucs_error("specrdv: message of %u bytes exceeds slot payload %zu",
                  hdr->length, max_payload);
        return UCS_ERR_IO_ERROR;
    }

    if ((hdr->type != UCT_SPECRDV_MSG_AM) &&
        (hdr->type != UCT_SPECRDV_MSG_CTRL)) {
        ucs_error("specrdv: unknown message type %u", hdr->type);
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

ucs_status_t uct_specrdv_ring_rx_peek(uct_specrdv_ring_rx_t *rx,
                                      uct_specrdv_hdr_t **hdr_p)
{
    uint8_t *slot          = rx->next;
    uct_specrdv_hdr_t *hdr = (uct_specrdv_hdr_t*)slot;
    uint8_t flag           = *(volatile uint8_t*)&hdr->flag;
    uint32_t length;

    if (flag == 0) {
        return UCS_ERR_NO_MESSAGE;
    }

    ucs_memory_cpu_load_fence();
    if ((flag != UCT_SPECRDV_FLAG_PRIMARY) &&
        (flag != UCT_SPECRDV_FLAG_SECONDARY)) {
        ucs_error("specrdv: slot %u has head flag 0x%x", rx->head, flag);
        return UCS_ERR_IO_ERROR;
    }

    /* Read the length once: a corrupt sender may still be changing it */
    length = ((volatile uct_specrdv_hdr_t*)hdr)->length;
    if (length > uct_specrdv_ring_max_payload(&rx->geom)) {
        ucs_error("specrdv: slot %u claims %u bytes, a slot holds %zu",
                  rx->head, length, uct_specrdv_ring_max_payload(&rx->geom));
        return UCS_ERR_IO_ERROR;
    }

    if (*(volatile uint8_t*)(slot + rx->geom.payload_offset + length) != flag) {
        return UCS_INPROGRESS;
    }

    ucs_memory_cpu_load_fence();
    if ((hdr->length != length) ||
        (uct_specrdv_hdr_check(hdr, uct_specrdv_ring_max_payload(&rx->geom)) !=
         UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }

    *hdr_p = hdr;
    return UCS_OK;
}

void uct_specrdv_ring_rx_consume(uct_specrdv_ring_rx_t *rx)
{
    /* Clear now rather than at release: the slot must not look full when the
     * head comes round again, and nothing else writes the head flag */
    ((uct_specrdv_hdr_t*)rx->next)->flag = 0;
    ++rx->head;
    if (++rx->next_index == rx->geom.num_slots) {
        rx->next_index = 0;
        rx->next       = rx->slots;
    } else {
        rx->next      += rx->geom.slot_size;
    }
}
