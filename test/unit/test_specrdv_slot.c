/**
 * ucx-spec: the slot protocol, driven through a fake writer.
 *
 * The sender works on a private mirror of the receiver's ring, as the verbs
 * writer does; the fake writer copies a slot's bytes to the receiver, whole
 * or only a prefix of them, which is how a partially landed RDMA write looks.
 *
 * See file LICENSE for terms.
 */

#include <uct/specrdv/specrdv_slot.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>


#define SLOTS   4
#define SLOT    256
#define OFFSET  32

typedef struct {
    uct_specrdv_ring_geom_t geom;
    uint8_t                 mirror[SLOTS * SLOT];
    uint8_t                 remote[SLOTS * SLOT];
    uct_specrdv_unseen_t    unseen[SLOTS];
    uct_specrdv_ring_tx_t   tx;
    uct_specrdv_ring_rx_t   rx;
    uct_specrdv_seq_t      tx_conn;
    uct_specrdv_seq_t      rx_conn;
} fixture_t;


static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));

    f->geom.slot_size      = SLOT;
    f->geom.payload_offset = OFFSET;
    f->geom.num_slots      = SLOTS;
    assert_int_equal(uct_specrdv_ring_geom_check(&f->geom), UCS_OK);
    uct_specrdv_ring_tx_init(&f->tx, f->mirror, &f->geom);
    uct_specrdv_ring_rx_init(&f->rx, f->remote, &f->geom);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

/* Seal the next slot of the mirror for @a length bytes; returns its index */
static uint32_t seal(fixture_t *f, uint32_t length)
{
    uct_specrdv_hdr_t hdr = {
        .length = length,
        .psn    = f->tx_conn.tx_psn++,
        .type   = UCT_SPECRDV_MSG_AM,
        .am_id  = 3
    };

    assert_true(uct_specrdv_ring_tx_credits(&f->tx) > 0);
    return uct_specrdv_ring_tx_post(&f->tx, &hdr);
}

/* Fill the next slot of the mirror; returns its index */
static uint32_t post(fixture_t *f, const void *payload, uint32_t length)
{
    memcpy(uct_specrdv_ring_tx_payload(&f->tx), payload, length);
    return seal(f, length);
}

/* The fake writer: the first `bytes` bytes of the slot land at the receiver */
static void land(fixture_t *f, uint32_t index, size_t bytes)
{
    memcpy(f->remote + index * SLOT, f->mirror + index * SLOT, bytes);
}

static size_t slot_bytes(uint32_t length)
{
    return OFFSET + length + 1;
}

static void send_whole(fixture_t *f, const void *payload, uint32_t length)
{
    land(f, post(f, payload, length), slot_bytes(length));
}

/* Receive the next message, check its payload, release its slot */
static void receive(fixture_t *f, const void *payload, uint32_t length)
{
    uct_specrdv_hdr_t *hdr;

    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_OK);
    assert_int_equal(hdr->length, length);
    assert_int_equal(uct_specrdv_seq_rx_order(&f->rx_conn, hdr->psn), 0);
    assert_memory_equal((uint8_t*)hdr + OFFSET, payload, length);
    uct_specrdv_ring_rx_consume(&f->rx);
    uct_specrdv_ring_rx_release(&f->rx);
}

static void return_credits(fixture_t *f)
{
    uct_specrdv_ring_tx_credits_update(&f->tx,
                                       uct_specrdv_ring_rx_credits_take(&f->rx));
}

static void test_empty_ring(void **state)
{
    fixture_t *f = *state;
    uct_specrdv_hdr_t *hdr;

    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr),
                     UCS_ERR_NO_MESSAGE);
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), SLOTS);
}

/* Head seen, payload still landing: the receiver waits for the tail flag */
static void test_partial_arrival(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[100];
    uct_specrdv_hdr_t *hdr;
    uint32_t index;
    size_t bytes;

    memset(payload, 0x11, sizeof(payload));
    index = post(f, payload, sizeof(payload));
    for (bytes = sizeof(uct_specrdv_hdr_t); bytes < slot_bytes(100); ++bytes) {
        land(f, index, bytes);
        assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_INPROGRESS);
    }

    land(f, index, slot_bytes(100));
    receive(f, payload, sizeof(payload));
}

/* Three times round the ring, sizes varying, every payload checked */
static void test_wraparound(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[SLOT];
    uint32_t i, length;

    for (i = 0; i < 3 * SLOTS + 1; ++i) {
        length = (i * 37) % (SLOT - OFFSET - 1);
        memset(payload, (int)i, length);
        send_whole(f, payload, length);
        receive(f, payload, length);
        return_credits(f);
        assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), SLOTS);
    }
    assert_int_equal(f->rx.head, 3 * SLOTS + 1);
}

/* Same size into the same slot again: the tail position holds the last flag,
 * so the sender must switch to the other value */
static void test_flag_alternation(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t flags[3];
    uint32_t round, i;

    for (round = 0; round < 3; ++round) {
        for (i = 0; i < SLOTS; ++i) {
            send_whole(f, payload, sizeof(payload));
            if (i == 0) {
                flags[round] = ((uct_specrdv_hdr_t*)f->remote)->flag;
            }
            receive(f, payload, sizeof(payload));
        }
        return_credits(f);
    }

    assert_int_equal(flags[0], UCT_SPECRDV_FLAG_PRIMARY);
    assert_int_equal(flags[1], UCT_SPECRDV_FLAG_SECONDARY);
    assert_int_equal(flags[2], UCT_SPECRDV_FLAG_PRIMARY);
}

/* An old payload left the primary flag's value where the new message's tail
 * goes: with only the header landed, the receiver must not take the message */
static void test_stale_flag_collision(void **state)
{
    fixture_t *f = *state;
    uint8_t old_payload[100], payload[10];
    uct_specrdv_hdr_t *hdr;
    uint32_t i, index;

    memset(old_payload, UCT_SPECRDV_FLAG_PRIMARY, sizeof(old_payload));
    memset(payload, 0x22, sizeof(payload));
    for (i = 0; i < SLOTS; ++i) {
        send_whole(f, old_payload, sizeof(old_payload));
        receive(f, old_payload, sizeof(old_payload));
    }
    return_credits(f);

    index = post(f, payload, sizeof(payload));
    assert_int_equal(index, 0);
    assert_int_equal(((uct_specrdv_hdr_t*)f->mirror)->flag,
                     UCT_SPECRDV_FLAG_SECONDARY);
    land(f, index, sizeof(uct_specrdv_hdr_t));
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_INPROGRESS);
    land(f, index, slot_bytes(sizeof(payload)));
    receive(f, payload, sizeof(payload));
}

/* The verbs writer's gather: header and tail from the mirror, the payload
 * from the user's buffer straight to the receiver; the mirror keeps what it
 * had there */
static void send_gathered(fixture_t *f, const void *payload, uint32_t length)
{
    uint32_t index = seal(f, length);

    if (f->tx.clear_tail) {
        f->remote[index * SLOT + OFFSET + length] = 0;
    }
    memcpy(f->remote + index * SLOT, f->mirror + index * SLOT, OFFSET);
    memcpy(f->remote + index * SLOT + OFFSET, payload, length);
    f->remote[index * SLOT + OFFSET + length] =
            f->mirror[index * SLOT + OFFSET + length];
    uct_specrdv_ring_tx_gathered(&f->tx, index, OFFSET, OFFSET + length);
}

/* Gathered payloads full of the primary flag's value went to every slot,
 * which the mirror does not show; gathered again at the same size they need
 * nothing (their tails are the mirror's flags).  A shorter message's tail
 * falls on one of those bytes: the writer is told to clear it first, and
 * with only the header landed the receiver waits.  That write leaves the
 * slot known up to its tail: a short message there needs no clear again, a
 * longer one does. */
static void test_gathered_payload_unseen(void **state)
{
    fixture_t *f = *state;
    uint8_t old_payload[100], payload[10];
    uct_specrdv_hdr_t *hdr;
    uint32_t i, index;

    uct_specrdv_ring_tx_set_unseen(&f->tx, f->unseen);
    memset(old_payload, UCT_SPECRDV_FLAG_PRIMARY, sizeof(old_payload));
    memset(payload, 0x22, sizeof(payload));
    for (i = 0; i < 2 * SLOTS; ++i) {
        send_gathered(f, old_payload, sizeof(old_payload));
        assert_false(f->tx.clear_tail);
        receive(f, old_payload, sizeof(old_payload));
        return_credits(f);
    }

    index = post(f, payload, sizeof(payload));
    assert_int_equal(index, 0);
    assert_true(f->tx.clear_tail);
    assert_int_equal(((uct_specrdv_hdr_t*)f->mirror)->flag,
                     UCT_SPECRDV_FLAG_PRIMARY);
    f->remote[slot_bytes(sizeof(payload)) - 1] = 0;  /* the writer's clear */
    land(f, index, sizeof(uct_specrdv_hdr_t));
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_INPROGRESS);
    land(f, index, slot_bytes(sizeof(payload)));
    receive(f, payload, sizeof(payload));

    for (i = 1; i < SLOTS; ++i) {
        send_whole(f, payload, sizeof(payload));
        assert_true(f->tx.clear_tail);
        receive(f, payload, sizeof(payload));
    }
    return_credits(f);

    send_whole(f, payload, sizeof(payload));
    assert_false(f->tx.clear_tail);
    receive(f, payload, sizeof(payload));
    post(f, old_payload, sizeof(old_payload) - 1);
    assert_true(f->tx.clear_tail);
}

/* A consumed slot being delivered is no credit yet: a callback that
 * answers piggybacks a tail that does not free the slot it is reading */
static void test_release_after_delivery(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[4] = {9, 9, 9, 9};
    uct_specrdv_hdr_t *hdr;

    send_whole(f, payload, sizeof(payload));
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_OK);
    uct_specrdv_ring_rx_consume(&f->rx);
    assert_int_equal(uct_specrdv_ring_rx_credits_take(&f->rx), 0);
    uct_specrdv_ring_rx_release(&f->rx);
    assert_int_equal(uct_specrdv_ring_rx_credits_pending(&f->rx), 1);
    assert_int_equal(uct_specrdv_ring_rx_credits_take(&f->rx), 1);
}

/* A full ring has no credit until the receiver returns some; a count that
 * arrives late, behind a newer one, changes nothing */
static void test_credit_exhaustion(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[4] = {1, 2, 3, 4};
    uint16_t early, late;
    int i;

    for (i = 0; i < SLOTS; ++i) {
        send_whole(f, payload, sizeof(payload));
    }
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), 0);

    receive(f, payload, sizeof(payload));
    early = uct_specrdv_ring_rx_credits_take(&f->rx);
    receive(f, payload, sizeof(payload));
    late  = uct_specrdv_ring_rx_credits_take(&f->rx);

    uct_specrdv_ring_tx_credits_update(&f->tx, late);
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), 2);
    uct_specrdv_ring_tx_credits_update(&f->tx, early);
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), 2);
    uct_specrdv_ring_tx_credits_update(&f->tx, late);
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), 2);

    /* a count the receiver cannot have sent (beyond what was written) */
    uct_specrdv_ring_tx_credits_update(&f->tx, late + 5);
    assert_int_equal(uct_specrdv_ring_tx_credits(&f->tx), 2);
}

/* Two channels: the fallback message with the lower PSN arrives after the
 * ring message; the ring message waits in place */
static void test_sequence_reordering(void **state)
{
    fixture_t *f = *state;
    uct_specrdv_seq_t conn = {0};
    uint16_t fallback_psn   = f->tx_conn.tx_psn++;
    uint8_t payload[4]      = {5, 6, 7, 8};
    uct_specrdv_hdr_t *hdr;

    send_whole(f, payload, sizeof(payload));
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &hdr), UCS_OK);
    assert_true(uct_specrdv_seq_rx_order(&f->rx_conn, hdr->psn) > 0);
    assert_int_equal(f->rx_conn.rx_esn, 0);

    assert_int_equal(uct_specrdv_seq_rx_order(&f->rx_conn, fallback_psn), 0);
    receive(f, payload, sizeof(payload));
    assert_true(uct_specrdv_seq_rx_order(&f->rx_conn, fallback_psn) < 0);

    /* across the 16-bit wrap */
    conn.rx_esn = UINT16_MAX;
    assert_true(uct_specrdv_seq_rx_order(&conn, 0) > 0);
    assert_int_equal(uct_specrdv_seq_rx_order(&conn, UINT16_MAX), 0);
    assert_int_equal(uct_specrdv_seq_rx_order(&conn, 0), 0);
    assert_true(uct_specrdv_seq_rx_order(&conn, UINT16_MAX) < 0);
}

static void test_corrupt_header(void **state)
{
    fixture_t *f = *state;
    uint8_t payload[4] = {0};
    uct_specrdv_hdr_t *hdr = (uct_specrdv_hdr_t*)f->remote;
    uct_specrdv_hdr_t *found;

    send_whole(f, payload, sizeof(payload));

    hdr->length = SLOT;
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &found), UCS_ERR_IO_ERROR);
    hdr->length = sizeof(payload);
    hdr->type   = 7;
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &found), UCS_ERR_IO_ERROR);
    hdr->type   = UCT_SPECRDV_MSG_AM;
    hdr->flag   = 0x33;
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &found), UCS_ERR_IO_ERROR);
    hdr->flag   = ((uct_specrdv_hdr_t*)f->mirror)->flag;
    assert_int_equal(uct_specrdv_ring_rx_peek(&f->rx, &found), UCS_OK);
}

static void test_geom_check(void **state)
{
    uct_specrdv_ring_geom_t geom = {256, 32, 4};

    assert_int_equal(uct_specrdv_ring_geom_check(&geom), UCS_OK);
    geom.num_slots = 1;
    assert_int_not_equal(uct_specrdv_ring_geom_check(&geom), UCS_OK);
    geom.num_slots = 40000;
    assert_int_not_equal(uct_specrdv_ring_geom_check(&geom), UCS_OK);
    geom.num_slots      = 4;
    geom.payload_offset = 8;
    assert_int_not_equal(uct_specrdv_ring_geom_check(&geom), UCS_OK);
    geom.payload_offset = 255;
    assert_int_not_equal(uct_specrdv_ring_geom_check(&geom), UCS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_arrival, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gathered_payload_unseen, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wraparound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flag_alternation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_flag_collision, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_release_after_delivery, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_credit_exhaustion, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sequence_reordering, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_header, setup, teardown),
        cmocka_unit_test(test_geom_check),
    };

    return cmocka_run_group_tests_name("specrdv slot protocol", tests, NULL,
                                       NULL);
}
