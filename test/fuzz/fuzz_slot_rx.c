/**
 * ucx-spec: libFuzzer target for the receive side of the slot protocol.
 *
 * The input is what a broken or hostile sender could leave in a ring: the
 * bytes of every slot.  The receiver polls, checks order and releases as the
 * shm writer does; whatever the bytes, it must only read inside the ring,
 * report a corrupt slot rather than deliver it, and never deliver a message
 * longer than a slot holds.
 *
 * See file LICENSE for terms.
 */

#include <uct/specrdv/specrdv_slot.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS   4
#define SLOT    256
#define OFFSET  32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uct_specrdv_ring_geom_t geom = {SLOT, OFFSET, SLOTS};
    uct_specrdv_seq_t conn            = {0};
    uct_specrdv_ring_rx_t rx;
    uct_specrdv_hdr_t *hdr;
    uint8_t *ring;
    ucs_status_t status;
    int polls;

    /* exactly the ring, so that ASan sees a read past it */
    ring = malloc(SLOTS * SLOT);
    memset(ring, 0, SLOTS * SLOT);
    memcpy(ring, data, (size < SLOTS * SLOT) ? size : SLOTS * SLOT);
    uct_specrdv_ring_rx_init(&rx, ring, &geom);

    for (polls = 0; polls < 3 * SLOTS; ++polls) {
        status = uct_specrdv_ring_rx_peek(&rx, &hdr);
        if (status != UCS_OK) {
            break;
        }
        if (hdr->length > uct_specrdv_ring_max_payload(&geom)) {
            abort();
        }
        if (uct_specrdv_seq_rx_order(&conn, hdr->psn) != 0) {
            break;
        }
        uct_specrdv_ring_rx_consume(&rx);
        uct_specrdv_ring_rx_release(&rx);
    }

    free(ring);
    return 0;
}
