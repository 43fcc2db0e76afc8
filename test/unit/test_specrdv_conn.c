/**
 * ucx-spec: the connection layer, driven through a fake writer.
 *
 * The fake writer behaves as an RC verbs writer does: the sender seals slots
 * in a private mirror and ring_write() copies them to the receiver's ring,
 * now or later, whole or a prefix at a time; a fallback send lands after
 * every ring write posted before it (RC orders the two on one QP).  Control
 * messages (RING) travel through the fallback channel, as the shm writer's
 * do.  Every test checks what was delivered, byte for byte and in order.
 *
 * See file LICENSE for terms.
 */

#include <uct/specrdv/specrdv_conn.h>
#include <uct/api/uct.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>


#define SLOTS      4
#define SLOT       256
#define OFFSET     64
#define RINGS      2
#define FB_CAP     8
#define MAX_MSG    (SLOT - OFFSET - 1)
#define MAX_PEND   64
#define MAX_LOG    4096
#define CTRL_RING  7

typedef struct side side_t;

typedef struct fpeer {
    uct_specrdv_peer_t super;
    side_t             *self;
    side_t             *remote;
    struct fpeer       *twin;       /* the remote side's peer for us */
    int                tx_ring;
    int                gone;        /* its process died */
    uint32_t           fb_word;     /* fallback credits the receiver pushed */
    uint8_t            mirror[SLOTS * SLOT];
} fpeer_t;

typedef struct {
    fpeer_t           *from;
    uct_specrdv_hdr_t hdr;
    uint8_t           payload[SLOT];
} fb_elem_t;

typedef struct {
    uint8_t *dst;
    uint8_t *src;
    size_t  length;
    size_t  landed;
} pending_write_t;

typedef struct {
    fpeer_t  *from;   /* the sender's peer object */
    uint8_t  am_id;
    uint32_t length;
    uint8_t  data[SLOT];
} delivered_t;

struct side {
    uct_specrdv_conns_t conns;
    uint8_t             rx_mem[RINGS * SLOTS * SLOT];
    int                 ring_owner[RINGS];
    uint16_t            credit[RINGS];     /* explicit credit words */
    unsigned            rings_freed;
    fb_elem_t           fb[FB_CAP];
    unsigned            fb_head, fb_tail;
    int                 defer;             /* ring writes wait for land() */
    pending_write_t     pend[MAX_PEND];
    unsigned            npend;
    delivered_t         log[MAX_LOG];
    unsigned            nlog;
    int                 no_push;           /* no room for credit pushes */
    fpeer_t             *failed;
    ucs_status_t        failed_status;
};


static side_t *side_of(uct_specrdv_conns_t *conns)
{
    return ucs_container_of(conns, side_t, conns);
}

static fpeer_t *fpeer(uct_specrdv_peer_t *peer)
{
    return ucs_container_of(peer, fpeer_t, super);
}

/* Ring writes posted to @a dst land, whole, in order (the QP's order) */
static void land_all(side_t *dst)
{
    unsigned i;

    for (i = 0; i < dst->npend; ++i) {
        memcpy(dst->pend[i].dst + dst->pend[i].landed,
               dst->pend[i].src + dst->pend[i].landed,
               dst->pend[i].length - dst->pend[i].landed);
    }
    dst->npend = 0;
}

/* The oldest pending write lands up to @a bytes of it */
static void land_prefix(side_t *dst, size_t bytes)
{
    assert_true(dst->npend > 0);
    memcpy(dst->pend[0].dst, dst->pend[0].src, bytes);
    dst->pend[0].landed = bytes;
}

static ucs_status_t fake_connect(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *peer)
{
    return UCS_OK;
}

static ucs_status_t fake_fb_reserve(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *peer,
                                    uct_specrdv_tx_t *tx)
{
    side_t *dst = fpeer(peer)->remote;

    if (dst->fb_tail - dst->fb_head == FB_CAP) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx->pos     = dst->fb_tail;
    tx->payload = dst->fb[tx->pos % FB_CAP].payload;
    return UCS_OK;
}

static void fake_fb_post(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                         uct_specrdv_tx_t *tx, const uct_specrdv_hdr_t *hdr)
{
    side_t *dst     = fpeer(peer)->remote;
    fb_elem_t *elem = &dst->fb[tx->pos % FB_CAP];

    assert_int_equal(tx->pos, dst->fb_tail);
    land_all(dst);
    elem->from = fpeer(peer);
    elem->hdr  = *hdr;
    ++dst->fb_tail;
}

static int fake_fb_can_send(uct_specrdv_conns_t *conns,
                            uct_specrdv_peer_t *peer)
{
    side_t *dst = fpeer(peer)->remote;

    return dst->fb_tail - dst->fb_head < FB_CAP;
}

static ucs_status_t fake_ring_request(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *peer)
{
    fpeer_t *p  = fpeer(peer);
    side_t *dst = p->remote;
    uct_specrdv_tx_t tx;
    int i;

    if (p->tx_ring < 0) {
        for (i = 0; (i < dst->conns.num_rings) && dst->ring_owner[i]; ++i) {
        }
        if (i == dst->conns.num_rings) {
            return UCS_ERR_EXCEEDS_LIMIT;
        }
        dst->ring_owner[i] = 1;
        p->tx_ring         = i;
    }

    if (uct_specrdv_peer_fb_reserve(conns, peer, &tx) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx.ring                 = 0;
    *(uint32_t*)tx.payload  = p->tx_ring;
    uct_specrdv_peer_tx_end(conns, peer, &tx, UCT_SPECRDV_MSG_CTRL, CTRL_RING,
                            sizeof(uint32_t));
    memset(p->mirror, 0, sizeof(p->mirror));
    uct_specrdv_ring_tx_init(&peer->tx, p->mirror, &dst->conns.geom);
    return UCS_OK;
}

static uint16_t fake_ring_credits(uct_specrdv_conns_t *conns,
                                  uct_specrdv_peer_t *peer)
{
    return fpeer(peer)->remote->credit[fpeer(peer)->tx_ring];
}

static void fake_ring_write(uct_specrdv_conns_t *conns,
                            uct_specrdv_peer_t *peer, uint32_t slot,
                            size_t length)
{
    fpeer_t *p       = fpeer(peer);
    side_t *dst      = p->remote;
    pending_write_t *w;

    assert_true(length <= SLOT);
    assert_true(dst->npend < MAX_PEND);
    w         = &dst->pend[dst->npend++];
    w->dst    = dst->rx_mem + (p->tx_ring * SLOTS + slot) * SLOT;
    w->src    = p->mirror + slot * SLOT;
    w->length = length;
    w->landed = 0;
    if (!p->self->defer && !dst->defer) {
        land_all(dst);
    }
}

static void fake_ring_release(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *peer)
{
    fpeer(peer)->tx_ring = -1;
}

static int fake_peer_alive(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer)
{
    return !fpeer(peer)->twin->gone;
}

static void fake_credit_push(uct_specrdv_conns_t *conns,
                             uct_specrdv_peer_t *peer, unsigned ring,
                             uint16_t tail)
{
    side_of(conns)->credit[ring] = tail;
}

static uint32_t fake_fb_credits(uct_specrdv_conns_t *conns,
                                uct_specrdv_peer_t *peer)
{
    return fpeer(peer)->fb_word;
}

static ucs_status_t fake_fb_credit_push(uct_specrdv_conns_t *conns,
                                        uct_specrdv_peer_t *peer,
                                        uint32_t delivered)
{
    if (side_of(conns)->no_push) {
        return UCS_ERR_NO_RESOURCE;
    }

    fpeer(peer)->twin->fb_word = delivered;
    return UCS_OK;
}

static void fake_ring_free(uct_specrdv_conns_t *conns, unsigned ring)
{
    side_t *s = side_of(conns);

    s->ring_owner[ring] = 0;
    s->credit[ring]     = 0;
    ++s->rings_freed;
}

static void fake_rx_ctrl(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                         const uct_specrdv_hdr_t *hdr, const void *payload)
{
    assert_int_equal(hdr->am_id, CTRL_RING);
    uct_specrdv_conns_rx_ring_open(conns, peer, *(const uint32_t*)payload);
}

static unsigned fake_poll_fallback(uct_specrdv_conns_t *conns)
{
    side_t *s      = side_of(conns);
    unsigned count = 0;
    fb_elem_t *elem;

    while (s->fb_head != s->fb_tail) {
        elem = &s->fb[s->fb_head % FB_CAP];
        if (uct_specrdv_conns_rx_fallback(conns, &elem->from->twin->super,
                                          &elem->hdr, elem->payload,
                                          MAX_MSG) == UCT_SPECRDV_RX_HELD) {
            break;
        }
        ++s->fb_head;
        ++count;
    }
    return count;
}

static const uct_specrdv_wire_ops_t fake_ops = {
    .connect        = fake_connect,
    .ring_request   = fake_ring_request,
    .ring_credits   = fake_ring_credits,
    .ring_write     = fake_ring_write,
    .fb_reserve     = fake_fb_reserve,
    .fb_post        = fake_fb_post,
    .fb_can_send    = fake_fb_can_send,
    .fb_credits     = fake_fb_credits,
    .fb_credit_push = fake_fb_credit_push,
    .credit_push    = fake_credit_push,
    .ring_release   = fake_ring_release,
    .peer_alive     = fake_peer_alive,
    .ring_free      = fake_ring_free,
    .rx_ctrl        = fake_rx_ctrl,
    .poll_fallback  = fake_poll_fallback
};

static void fake_deliver(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                         const uct_specrdv_hdr_t *hdr, void *payload)
{
    side_t *s = side_of(conns);
    delivered_t *d;

    assert_true(s->nlog < MAX_LOG);
    d         = &s->log[s->nlog++];
    d->from   = fpeer(peer)->twin;
    d->am_id  = hdr->am_id;
    d->length = hdr->length;
    memcpy(d->data, payload, hdr->length);
}

static void fake_failed(uct_specrdv_conns_t *conns, uct_specrdv_peer_t *peer,
                        ucs_status_t status)
{
    side_of(conns)->failed        = fpeer(peer);
    side_of(conns)->failed_status = status;
}


static side_t *side_new(unsigned num_rings, unsigned ring_after,
                        unsigned credit_update, unsigned fb_window)
{
    side_t *s                         = calloc(1, sizeof(*s));
    uct_specrdv_conns_params_t params = {
        .ops           = &fake_ops,
        .deliver       = fake_deliver,
        .failed        = fake_failed,
        .geom          = {.slot_size      = SLOT,
                          .payload_offset = OFFSET,
                          .num_slots      = SLOTS},
        .num_rings     = num_rings,
        .ring_after    = ring_after,
        .credit_update = credit_update,
        .fb_window     = fb_window
    };

    assert_non_null(s);
    assert_int_equal(uct_specrdv_conns_init(&s->conns, &params), UCS_OK);
    uct_specrdv_conns_set_rx_memory(&s->conns, s->rx_mem, SLOTS * SLOT);
    return s;
}

static void side_free(side_t *s)
{
    uct_specrdv_conns_cleanup(&s->conns);
    free(s);
}

static void peer_init(fpeer_t *p, side_t *self, side_t *remote, fpeer_t *twin,
                      uint16_t src, const char *name)
{
    memset(p, 0, sizeof(*p));
    uct_specrdv_peer_init(&self->conns, &p->super);
    snprintf(p->super.name, sizeof(p->super.name), "%s", name);
    p->super.src = src;
    p->self      = self;
    p->remote    = remote;
    p->twin      = twin;
    p->tx_ring   = -1;
}

/* A connection a -> b: pa is a's peer for b, pb b's peer for a */
static void link_peers(side_t *a, fpeer_t *pa, side_t *b, fpeer_t *pb,
                       uint16_t src)
{
    peer_init(pa, a, b, pb, src, "fake a");
    peer_init(pb, b, a, pa, 0, "fake b");
}

static void unlink_peer(side_t *s, fpeer_t *p)
{
    uct_specrdv_peer_cleanup(&s->conns, &p->super);
}

/* Three sides: a and c send to b; pa and pc are their peers for b, pb and
 * pbc b's peers for them */
typedef struct {
    side_t  *a, *b, *c;
    fpeer_t pa, pb, pc, pbc;
} trio_t;

static trio_t *trio_new_window(unsigned num_rings, unsigned ring_after,
                               unsigned credit_update, unsigned fb_window)
{
    trio_t *t = calloc(1, sizeof(*t));

    assert_non_null(t);
    t->a = side_new(num_rings, ring_after, credit_update, fb_window);
    t->b = side_new(num_rings, ring_after, credit_update, fb_window);
    t->c = side_new(num_rings, ring_after, credit_update, fb_window);
    link_peers(t->a, &t->pa, t->b, &t->pb, 1);
    link_peers(t->c, &t->pc, t->b, &t->pbc, 2);
    return t;
}

/* Whose fallback channel bounds each sender itself, as the shm writer's */
static trio_t *trio_new(unsigned num_rings, unsigned ring_after,
                        unsigned credit_update)
{
    return trio_new_window(num_rings, ring_after, credit_update, 0);
}

static void trio_free(trio_t *t)
{
    unlink_peer(t->a, &t->pa);
    unlink_peer(t->c, &t->pc);
    unlink_peer(t->b, &t->pb);
    unlink_peer(t->b, &t->pbc);
    side_free(t->a);
    side_free(t->b);
    side_free(t->c);
    free(t);
}

static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 131 + i * 7 + 1);
}

static size_t msg_length(uint32_t seq)
{
    return 4 + (seq * 37) % (MAX_MSG - 4 + 1);
}

/* Send message @a seq from @a a through @a p; 0 when there is no room */
static int send_msg(side_t *a, fpeer_t *p, uint32_t seq)
{
    size_t length = msg_length(seq);
    uct_specrdv_tx_t tx;
    size_t i;

    if (uct_specrdv_peer_tx_begin(&a->conns, &p->super, &tx) != UCS_OK) {
        return 0;
    }

    memcpy(tx.payload, &seq, sizeof(seq));
    for (i = sizeof(seq); i < length; ++i) {
        ((uint8_t*)tx.payload)[i] = pattern(seq, i);
    }
    uct_specrdv_peer_tx_end(&a->conns, &p->super, &tx, UCT_SPECRDV_MSG_AM,
                            seq & 0x1f, length);
    return 1;
}

static unsigned progress(side_t *s)
{
    return uct_specrdv_conns_poll_rings(&s->conns) +
           s->conns.ops->poll_fallback(&s->conns);
}

/* Messages of @a from in @a s's log are first..first+count-1, in order, every
 * byte right */
static void check_delivered(side_t *s, fpeer_t *from, uint32_t first,
                            uint32_t count)
{
    uint32_t seq = first;
    unsigned i;
    size_t j;

    for (i = 0; i < s->nlog; ++i) {
        if (s->log[i].from != from) {
            continue;
        }
        assert_int_equal(*(uint32_t*)s->log[i].data, seq);
        assert_int_equal(s->log[i].length, msg_length(seq));
        assert_int_equal(s->log[i].am_id, seq & 0x1f);
        for (j = sizeof(seq); j < s->log[i].length; ++j) {
            assert_int_equal(s->log[i].data[j], pattern(seq, j));
        }
        ++seq;
    }
    assert_int_equal(seq, first + count);
}

#define CNT(_side, _name) ((_side)->conns.counters[UCT_SPECRDV_CNT_##_name])


/* A stream that runs out of ring credits over and over, with ring writes
 * landing late, arrives whole and in order across the two channels */
static void test_order_across_channels(void **state)
{
    trio_t *t = trio_new(RINGS, 2, 2);
    side_t *a = t->a, *b = t->b;
    fpeer_t *pa = &t->pa;
    const uint32_t total = 3000;
    uint32_t seq   = 0;

    srand(1);
    while (seq < total) {
        a->defer = rand() % 2;
        if ((rand() % 4) && send_msg(a, pa, seq)) {
            ++seq;
            continue;
        }
        if (rand() % 3 == 0) {
            land_all(b);
        }
        /* the receiver's two channels are read one after the other, and a
         * sender on another core goes on in between */
        switch (rand() % 3) {
        case 0:
            uct_specrdv_conns_poll_rings(&b->conns);
            break;
        case 1:
            b->conns.ops->poll_fallback(&b->conns);
            break;
        default:
            progress(b);
        }
    }

    land_all(b);
    while (progress(b) > 0) {
    }

    check_delivered(b, pa, 0, total);
    assert_null(b->failed);
    assert_true(CNT(a, TX_RING) > total / 2);
    assert_true(CNT(a, TX_FALLBACK) > 2);
    assert_true(CNT(a, TX_NO_CREDITS) > 0);
    assert_true(CNT(b, RX_HELD) > 0);
    assert_true(CNT(b, CREDIT_UPDATES) > 0);
    assert_int_equal(CNT(a, RING_GRANTED), 1);
    assert_int_equal(CNT(b, RING_ADMITTED), 1);
    trio_free(t);
}

/* A slot whose header landed but not its payload is not delivered, even
 * when the ring was used before by another sender whose flags are there */
static void test_ring_reuse_starts_blank(void **state)
{
    trio_t *t = trio_new(1, 0, 1);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pb = &t->pb, *pc = &t->pc;
    uint32_t seq;

    for (seq = 0; seq < 3 * SLOTS; ++seq) {
        assert_true(send_msg(a, pa, seq));
        progress(b);
    }
    check_delivered(b, pa, 0, 3 * SLOTS);
    assert_int_equal(pa->tx_ring, 0);

    /* a leaves: its ring goes back to the pool, blank */
    uct_specrdv_conns_rx_ring_close(&b->conns, &pb->super);
    assert_int_equal(b->rings_freed, 1);

    /* c takes the same ring.  Its first ring message has the length of
     * a's last one in slot 0, whose tail flag c's blank mirror cannot see:
     * with only the header landed, the slot must not look whole */
    c->defer = 1;
    b->nlog  = 0;
    assert_true(send_msg(c, pc, 2 * SLOTS));
    assert_int_equal(pc->tx_ring, 0);
    land_prefix(b, OFFSET);
    progress(b);
    progress(b);
    assert_int_equal(b->nlog, 0);
    land_all(b);
    progress(b);
    check_delivered(b, pc, 2 * SLOTS, 1);
    assert_null(b->failed);

    trio_free(t);
}

/* With one ring, the second sender is refused, keeps to the fallback channel
 * and asks again only after UCT_SPECRDV_RING_RETRY more messages; the first,
 * as busy, keeps its ring */
static void test_polling_set_full(void **state)
{
    trio_t *t = trio_new(1, 1, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pc = &t->pc;
    const uint32_t total = UCT_SPECRDV_RING_RETRY + 50;
    uint32_t sa = 0, sc = 0;

    while ((sa < total) || (sc < total)) {
        if ((sa < total) && send_msg(a, pa, sa)) {
            ++sa;
        }
        if ((sc < total) && send_msg(c, pc, sc)) {
            ++sc;
        }
        progress(b);
    }
    while (progress(b) > 0) {
    }

    check_delivered(b, pa, 0, total);
    check_delivered(b, pc, 0, total);
    assert_int_equal(CNT(a, RING_GRANTED), 1);
    assert_int_equal(CNT(c, RING_GRANTED), 0);
    assert_int_equal(CNT(c, RING_REFUSED), 2);
    assert_int_equal(CNT(c, RING_WANTED), 2);
    assert_int_equal(CNT(b, RING_EVICTED), 0);   /* a is as busy as c */
    assert_int_equal(CNT(c, TX_RING), 0);
    assert_int_equal(CNT(b, RING_ADMITTED), 1);
    trio_free(t);
}

/* Send messages *seq.. of one sender while everyone progresses */
static void send_many(side_t *s, fpeer_t *p, uint32_t *seq, uint32_t count,
                      side_t *x, side_t *y, side_t *z)
{
    uint32_t end = *seq + count;

    while (*seq < end) {
        if (send_msg(s, p, *seq)) {
            ++*seq;
        }
        progress(x);
        progress(y);
        progress(z);
    }
}

/* A full polling set gives a cold peer's ring to a hot newcomer, and back */
static void test_eviction_and_readmission(void **state)
{
    trio_t *t = trio_new(1, 1, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pc = &t->pc;
    uint32_t sa = 0, sc = 0;


    /* a is admitted and busy */
    send_many(a, pa, &sa, 40, b, a, c);
    assert_int_equal(CNT(a, RING_GRANTED), 1);

    /* c is refused while a is hotter: no eviction */
    send_many(c, pc, &sc, 2, b, a, c);
    assert_int_equal(CNT(c, RING_WANTED), 1);
    assert_int_equal(CNT(b, RING_EVICTED), 0);
    assert_true(pa->super.flags & UCT_SPECRDV_PEER_RING_READY);

    /* a goes quiet, c goes on: at its next refusal a's ring is revoked,
     * drained and handed to c */
    send_many(c, pc, &sc, 3 * UCT_SPECRDV_RING_RETRY, b, a, c);
    assert_int_equal(CNT(c, RING_WANTED), 2);
    assert_int_equal(CNT(b, RING_EVICTED), 1);
    assert_int_equal(CNT(a, RING_REVOKED), 1);
    assert_false(pa->super.flags & UCT_SPECRDV_PEER_RING_READY);
    assert_int_equal(CNT(c, RING_GRANTED), 1);
    assert_true(CNT(c, TX_RING) > 0);

    /* now c is quiet and a hot again: a is re-admitted, once a whole window of
     * UCT_SPECRDV_RING_RETRY sends has seen c quiet */
    send_many(a, pa, &sa, 4 * UCT_SPECRDV_RING_RETRY, b, a, c);
    assert_int_equal(CNT(b, RING_EVICTED), 2);
    assert_int_equal(CNT(c, RING_REVOKED), 1);
    assert_int_equal(CNT(a, RING_GRANTED), 2);
    assert_int_equal(CNT(b, RING_ADMITTED), 3);
    assert_int_equal(b->rings_freed, 2);

    while (progress(a) + progress(b) + progress(c) > 0) {
    }
    check_delivered(b, pa, 0, sa);
    check_delivered(b, pc, 0, sc);
    assert_null(a->failed);
    assert_null(b->failed);
    assert_null(c->failed);
    trio_free(t);
}

/* A refused sender that finds the fallback channel full (a streaming sender
 * does, right after its own send filled it) still says it wants a ring: the
 * RING_WANTED waits, and goes before the sender's next data, without the
 * sender's progress */
static void test_wanted_waits_for_room(void **state)
{
    trio_t *t = trio_new(1, FB_CAP, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pc = &t->pc;
    uint32_t sa = 0, sc = 0;

    /* a's last message goes through the ring it obtained */
    send_many(a, pa, &sa, FB_CAP + 1, b, a, c);
    assert_int_equal(CNT(a, RING_GRANTED), 1);

    /* c fills b's fallback channel, b not looking, and is then refused */
    for (; sc < FB_CAP; ++sc) {
        assert_true(send_msg(c, pc, sc));
    }
    assert_false(send_msg(c, pc, sc));
    assert_int_equal(CNT(c, RING_REFUSED), 1);
    assert_int_equal(CNT(c, RING_WANTED), 1);
    assert_true(pc->super.flags & UCT_SPECRDV_PEER_WANTED_TX);

    /* b drains; c's RING_WANTED takes the first place, its data the rest */
    while (progress(b) > 0) {
    }
    while (send_msg(c, pc, sc)) {
        ++sc;
    }
    assert_int_equal(sc, 2 * FB_CAP - 1);
    assert_false(pc->super.flags & UCT_SPECRDV_PEER_WANTED_TX);

    /* a's ring carried one message, c's fallback eight: b takes it back */
    while (progress(b) + progress(a) > 0) {
    }
    assert_int_equal(CNT(a, RING_REVOKED), 1);
    assert_int_equal(CNT(b, RING_EVICTED), 1);

    while (progress(a) + progress(b) + progress(c) > 0) {
    }
    check_delivered(b, pa, 0, sa);
    check_delivered(b, pc, 0, sc);
    assert_null(b->failed);
    trio_free(t);
}

/* An owner that died never releases its revoked ring: once the writer says
 * it is gone, its connection fails and the ring goes to the newcomer */
static void test_dead_owner_ring_reclaimed(void **state)
{
    trio_t *t = trio_new(1, 1, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pb = &t->pb, *pc = &t->pc;
    uint32_t sa = 0, sc = 0;
    int i;

    send_many(a, pa, &sa, 40, b, a, c);
    assert_int_equal(CNT(a, RING_GRANTED), 1);

    /* a dies: it progresses no more */
    pa->gone = 1;
    send_many(c, pc, &sc, 2 * UCT_SPECRDV_RING_RETRY + 10, b, c, c);
    assert_int_equal(CNT(c, RING_WANTED), 3);   /* at sends 2, 259, 516 */
    assert_ptr_equal(b->conns.revoking, &pb->super);
    assert_int_equal(CNT(b, RING_RECLAIMED), 0);

    for (i = 0; i < 5000; ++i) {
        progress(b);
    }
    assert_int_equal(CNT(b, RING_RECLAIMED), 1);
    assert_int_equal(CNT(b, RING_EVICTED), 0);
    assert_ptr_equal(b->failed, pb);
    assert_int_equal(b->failed_status, UCS_ERR_CONNECTION_RESET);
    assert_int_equal(b->rings_freed, 1);

    send_many(c, pc, &sc, UCT_SPECRDV_RING_RETRY + 10, b, c, c);
    assert_int_equal(CNT(c, RING_GRANTED), 1);
    assert_true(CNT(c, TX_RING) > 0);
    while (progress(b) + progress(c) > 0) {
    }
    check_delivered(b, pa, 0, sa);
    check_delivered(b, pc, 0, sc);
    trio_free(t);
}

/* A revoke ends however the revoked ring closes: the owner disconnects (its
 * ring closes without RELEASED), or it turns out broken */
static void test_revoke_ends_with_the_ring(void **state)
{
    trio_t *t = trio_new(1, 1, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pb = &t->pb, *pc = &t->pc;
    uint32_t sa = 0, sc = 0;

    send_many(a, pa, &sa, 40, b, a, c);
    send_many(c, pc, &sc, 2 * UCT_SPECRDV_RING_RETRY + 10, b, c, c);
    assert_ptr_equal(b->conns.revoking, &pb->super);

    /* a's ring closes as a disconnect closes it */
    uct_specrdv_conns_rx_ring_close(&b->conns, &pb->super);
    assert_null(b->conns.revoking);
    assert_int_equal(b->rings_freed, 1);

    /* c gets the ring; a revoke of c's ring ends when c is found broken */
    send_many(c, pc, &sc, UCT_SPECRDV_RING_RETRY + 10, b, c, c);
    assert_int_equal(CNT(c, RING_GRANTED), 1);
    b->conns.revoking = &t->pbc.super;
    uct_specrdv_peer_fail(&b->conns, &t->pbc.super, UCS_ERR_IO_ERROR);
    assert_null(b->conns.revoking);
    trio_free(t);
}

/* A tail piggybacked for the ring b took back from a arrives after a got
 * its next ring: it counts none of the new ring's slots */
static void test_stale_tail_of_an_earlier_ring(void **state)
{
    trio_t *t = trio_new(1, 0, SLOTS);
    side_t *a = t->a;
    fpeer_t *pa = &t->pa;
    uct_specrdv_hdr_t hdr = {0};
    uint8_t payload[1];
    uint32_t seq;

    for (seq = 0; seq < 3; ++seq) {
        assert_true(send_msg(a, pa, seq));
    }
    assert_int_equal(pa->super.tx_epoch, 1);
    assert_int_equal(uct_specrdv_ring_tx_credits(&pa->super.tx), SLOTS - 3);

    hdr.type    = UCT_SPECRDV_MSG_AM;
    hdr.am_id   = 1;
    hdr.flags   = UCT_SPECRDV_HDR_FLAG_CREDITS;
    hdr.credits = 3;
    hdr.epoch   = 0;           /* the ring before this one */
    hdr.psn     = pa->super.seq.rx_esn;
    assert_int_equal(uct_specrdv_conns_rx_fallback(&a->conns, &pa->super,
                                                   &hdr, payload, MAX_MSG),
                     UCT_SPECRDV_RX_DONE);
    assert_int_equal(uct_specrdv_ring_tx_credits(&pa->super.tx), SLOTS - 3);

    hdr.epoch = 1;             /* this one's */
    hdr.psn   = pa->super.seq.rx_esn;
    assert_int_equal(uct_specrdv_conns_rx_fallback(&a->conns, &pa->super,
                                                   &hdr, payload, MAX_MSG),
                     UCT_SPECRDV_RX_DONE);
    assert_int_equal(uct_specrdv_ring_tx_credits(&pa->super.tx), SLOTS);
    while (progress(t->b) > 0) {
    }
    check_delivered(t->b, pa, 0, 3);
    trio_free(t);
}

/* Credits ride back on a message of the reverse direction, without an
 * explicit update; a slot is free once delivered, the user keeps nothing */
static void test_credits_piggybacked(void **state)
{
    trio_t *t = trio_new(1, 0, SLOTS);
    side_t *a = t->a, *b = t->b;
    fpeer_t *pa = &t->pa, *pb = &t->pb;
    uint32_t seq;

    for (seq = 0; seq < 2; ++seq) {
        assert_true(send_msg(a, pa, seq));
    }
    assert_int_equal(uct_specrdv_ring_tx_credits(&pa->super.tx), SLOTS - 2);
    while (progress(b) > 0) {
    }
    assert_int_equal(b->nlog, 2);
    assert_int_equal(CNT(b, CREDIT_UPDATES), 0);
    assert_int_equal(b->credit[0], 0);

    /* b -> a carries b's tail for a's ring */
    assert_true(send_msg(b, pb, 100));
    while (progress(a) > 0) {
    }
    assert_int_equal(uct_specrdv_ring_tx_credits(&pa->super.tx), SLOTS);
    check_delivered(b, pa, 0, seq);
    check_delivered(a, pb, 100, 1);
    trio_free(t);
}

/* A corrupt fallback message fails its sender's connection only */
static void test_corrupt_fallback_fails_one_peer(void **state)
{
    trio_t *t = trio_new(1, 100, 2);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pc = &t->pc, *pbc = &t->pbc;
    uct_specrdv_tx_t tx;
    uint32_t seq;

    assert_true(send_msg(a, pa, 0));
    assert_int_equal(uct_specrdv_peer_tx_begin(&c->conns, &pc->super, &tx),
                     UCS_OK);
    uct_specrdv_peer_tx_end(&c->conns, &pc->super, &tx, UCT_SPECRDV_MSG_AM, 1,
                            MAX_MSG + 1);
    assert_true(send_msg(a, pa, 1));
    assert_true(send_msg(c, pc, 1));
    while (progress(b) > 0) {
    }

    assert_ptr_equal(b->failed, pbc);
    assert_int_equal(b->failed_status, UCS_ERR_IO_ERROR);
    assert_true(pbc->super.flags & UCT_SPECRDV_PEER_FAILED);
    for (seq = 2; seq < 20; ++seq) {
        assert_true(send_msg(a, pa, seq));
        progress(b);
    }
    check_delivered(b, pa, 0, 20);
    check_delivered(b, pc, 0, 0);
    trio_free(t);
}

/* With a fallback window, a sender has at most that many fallback messages
 * the receiver has not delivered, whatever room the channel has; delivery
 * returns them every half window, and a push that finds no room is made at
 * a later progress call, or the sender would wait for ever.  Until it is
 * made, the receiver sends nothing of its own to that peer, and says so to
 * whoever asks (pending_add would otherwise answer BUSY to a send that
 * fails, and UCP retry it without progress) */
static void test_fallback_window(void **state)
{
    trio_t *t = trio_new_window(1, 1000, 2, 4);
    side_t *a = t->a, *b = t->b, *c = t->c;
    fpeer_t *pa = &t->pa, *pb = &t->pb, *pc = &t->pc;
    uint32_t seq;

    for (seq = 0; seq < 4; ++seq) {
        assert_true(send_msg(a, pa, seq));
    }
    assert_false(send_msg(a, pa, seq));
    assert_false(uct_specrdv_peer_can_send(&a->conns, &pa->super));
    assert_int_equal(CNT(a, TX_FB_NO_CREDITS), 1);
    assert_int_equal(b->fb_tail - b->fb_head, 4);   /* of FB_CAP */
    assert_true(send_msg(c, pc, 0));                 /* a window per sender */

    b->no_push = 1;
    while (progress(b) > 0) {
    }
    progress(b);
    assert_int_equal(b->nlog, 5);
    assert_int_equal(CNT(b, FB_CREDIT_UPDATES), 0);
    assert_false(send_msg(a, pa, seq));
    assert_true(pb->super.flags & UCT_SPECRDV_PEER_CREDIT_TX);
    assert_false(uct_specrdv_peer_can_send(&b->conns, &pb->super));
    assert_false(send_msg(b, pb, 0));

    b->no_push = 0;
    progress(b);
    assert_int_equal(CNT(b, FB_CREDIT_UPDATES), 1);
    assert_true(uct_specrdv_peer_can_send(&b->conns, &pb->super));
    assert_int_equal(pa->fb_word, 4);
    for (; seq < 8; ++seq) {
        assert_true(send_msg(a, pa, seq));
    }
    assert_false(send_msg(a, pa, seq));

    while (progress(b) > 0) {
    }
    assert_int_equal(CNT(b, FB_CREDIT_UPDATES), 3);  /* at 6 and at 8 */
    assert_int_equal(pa->fb_word, 8);
    assert_true(send_msg(a, pa, seq++));
    while (progress(b) > 0) {
    }
    check_delivered(b, pa, 0, seq);
    check_delivered(b, pc, 0, 1);
    assert_null(b->failed);
    trio_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_across_channels),
        cmocka_unit_test(test_ring_reuse_starts_blank),
        cmocka_unit_test(test_polling_set_full),
        cmocka_unit_test(test_eviction_and_readmission),
        cmocka_unit_test(test_wanted_waits_for_room),
        cmocka_unit_test(test_dead_owner_ring_reclaimed),
        cmocka_unit_test(test_revoke_ends_with_the_ring),
        cmocka_unit_test(test_stale_tail_of_an_earlier_ring),
        cmocka_unit_test(test_credits_piggybacked),
        cmocka_unit_test(test_corrupt_fallback_fails_one_peer),
        cmocka_unit_test(test_fallback_window),
    };

    return cmocka_run_group_tests_name("specrdv_conn", tests, NULL, NULL);
}
