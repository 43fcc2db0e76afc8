/**
 * ucx-spec: the shared-memory writer through UCT's public API: messages over
 * the FIFO and the ring in order and intact and never handed to the user to
 * keep, full channels and pending requests, a corrupt slot failing only its
 * sender, and put/get by CMA.
 *
 * See file LICENSE for terms.
 */

#include "specrdv_fixture.h"

#include <uct/specrdv/shm/specrdv_shm_seg.h>
#include <uct/specrdv/specrdv_conn.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>


#define AM_ID     5
#define MAX_MSGS  512


typedef struct {
    uint32_t seq;
    uint32_t length;
} msg_hdr_t;

typedef struct {
    uint32_t  expected;      /* next sequence number */
    uint32_t  bad;           /* messages out of order or corrupt */
    uint32_t  with_desc;     /* messages offered as descriptors to keep */
} receiver_t;

typedef struct {
    uct_ep_h     ep;
    ucs_status_t status;
    unsigned     count;
} err_record_t;


static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 31 + i);
}

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    receiver_t *r      = arg;
    const msg_hdr_t *h = data;
    const uint8_t *p   = (const uint8_t*)(h + 1);
    size_t i;

    if ((length < sizeof(*h)) || (h->seq != r->expected) ||
        (h->length != length - sizeof(*h))) {
        ++r->bad;
        return UCS_OK;
    }

    for (i = 0; i < h->length; ++i) {
        if (p[i] != pattern(h->seq, i)) {
            ++r->bad;
            return UCS_OK;
        }
    }

    ++r->expected;
    if (flags & UCT_CB_PARAM_FLAG_DESC) {
        ++r->with_desc;
    }
    return UCS_OK;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    err_record_t *rec = arg;

    rec->ep     = ep;
    rec->status = status;
    ++rec->count;
    return UCS_OK;
}

/* Progress until the receiver has seen `count` messages; a ring announced
 * in the FIFO is polled from the next call on */
static void progress_until(fixture_t *f, receiver_t *r, uint32_t count)
{
    int i;

    for (i = 0; (i < 1000) && (r->expected < count); ++i) {
        uct_worker_progress(f->worker);
    }
    assert_int_equal(r->expected, count);
}

static void connect_addr(uct_iface_h from, const void *dev_addr,
                         const void *iface_addr, uct_ep_h *ep_p)
{
    uct_ep_params_t params = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE |
                      UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface      = from,
        .dev_addr   = dev_addr,
        .iface_addr = iface_addr
    };

    assert_int_equal(uct_iface_is_reachable(from, dev_addr, iface_addr), 1);
    assert_int_equal(uct_ep_create(&params, ep_p), UCS_OK);
}

static void connect_ep(fixture_t *f, uct_iface_h from, uct_iface_h to,
                       uct_ep_h *ep_p)
{
    uint8_t dev_addr[64], iface_addr[64];

    assert_int_equal(uct_iface_get_device_address(to, (void*)dev_addr), UCS_OK);
    assert_int_equal(uct_iface_get_address(to, (void*)iface_addr), UCS_OK);
    connect_addr(from, dev_addr, iface_addr, ep_p);
}

/* A sender and a receiver with the same ring, ring-after and FIFO settings,
 * the receiver's AMs counted in r, and an endpoint from one to the other */
static void open_pair(fixture_t *f, receiver_t *r, const char *ring_slots,
                      const char *ring_after, const char *fifo_size,
                      uct_iface_h *sender, uct_iface_h *receiver, uct_ep_h *ep)
{
    assert_int_equal(open_iface(f, sender, "RING_SLOTS", ring_slots,
                                "RING_AFTER", ring_after, "SHM_FIFO_SIZE",
                                fifo_size, NULL), UCS_OK);
    assert_int_equal(open_iface(f, receiver, "RING_SLOTS", ring_slots,
                                "RING_AFTER", ring_after, "SHM_FIFO_SIZE",
                                fifo_size, NULL), UCS_OK);
    assert_int_equal(uct_iface_set_am_handler(*receiver, AM_ID, am_handler, r,
                                              0), UCS_OK);
    uct_iface_progress_enable(*receiver, UCT_PROGRESS_RECV);
    connect_ep(f, *sender, *receiver, ep);
}

/* Two interfaces of the fixture's settings and an endpoint from a to b */
static void open_plain_pair(fixture_t *f, uct_iface_h *a, uct_iface_h *b,
                            uct_ep_h *ep)
{
    assert_int_equal(open_iface(f, a, NULL), UCS_OK);
    assert_int_equal(open_iface(f, b, NULL), UCS_OK);
    connect_ep(f, *a, *b, ep);
}

static void fill_pattern(uint8_t *buf, uint32_t seq, size_t length)
{
    size_t i;

    for (i = 0; i < length; ++i) {
        buf[i] = pattern(seq, i);
    }
}

static void fill(uint8_t *buf, uint32_t seq, uint32_t length)
{
    msg_hdr_t *h = (msg_hdr_t*)buf;

    h->seq    = seq;
    h->length = length;
    fill_pattern(buf + sizeof(*h), seq, length);
}

typedef struct {
    const uint8_t *buf;
    size_t        length;
} pack_arg_t;

static size_t pack(void *dest, void *arg)
{
    pack_arg_t *pa = arg;

    memcpy(dest, pa->buf, pa->length);
    return pa->length;
}

/* Send message seq with AM id, by short, bcopy or zcopy in turn;
 * NO_RESOURCE is returned */
static ucs_status_t send_msg_id(uct_ep_h ep, uint8_t id, uint32_t seq,
                                uint32_t length)
{
    static uint8_t buf[16384];
    pack_arg_t pa = {buf, sizeof(msg_hdr_t) + length};
    uct_iov_t iov = {buf + 8, pa.length - 8, UCT_MEM_HANDLE_NULL, 0, 1};
    ssize_t packed;

    fill(buf, seq, length);
    switch (seq % 3) {
    case 0:
        /* an empty payload comes as NULL, as UCP sends a 0-byte message */
        return uct_ep_am_short(ep, id, *(uint64_t*)buf,
                               (pa.length > 8) ? buf + 8 : NULL,
                               pa.length - 8);
    case 1:
        packed = uct_ep_am_bcopy(ep, id, pack, &pa, 0);
        return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
    default:
        return uct_ep_am_zcopy(ep, id, buf, 8, &iov, 1, 0, NULL);
    }
}

static ucs_status_t send_msg(uct_ep_h ep, uint32_t seq, uint32_t length)
{
    return send_msg_id(ep, AM_ID, seq, length);
}

static unsigned length_of(uint32_t seq)
{
    return (seq * 97) % 2000;
}

/* Send `count` messages of length(seq) in bursts of up to `burst`, one
 * progress call after each, until the receiver has them all */
static void send_bursts(fixture_t *f, receiver_t *r, uct_ep_h ep,
                        uint32_t count, int burst,
                        unsigned (*length)(uint32_t seq))
{
    uint32_t seq = 0;
    ucs_status_t status;
    int i;

    while (seq < count) {
        for (i = 0; (i < burst) && (seq < count); ++i) {
            status = send_msg(ep, seq, length(seq));
            if (status == UCS_ERR_NO_RESOURCE) {
                break;
            }
            assert_int_equal(status, UCS_OK);
            ++seq;
        }
        uct_worker_progress(f->worker);
    }

    while (r->expected < count) {
        assert_int_not_equal(uct_worker_progress(f->worker), 0);
    }
}

/* Messages go out in bursts larger than the ring, so they cross between the
 * ring and the FIFO; every one must arrive once, in order and intact, and
 * none as a descriptor the user could keep: a kept slot would hold the
 * sender's credits and the ring's hand-back (the user asks for headroom
 * all the same, as UCP does) */
static void test_order_across_channels(void **state)
{
    fixture_t *f  = *state;
    receiver_t r  = {0};
    uct_iface_h sender, receiver;
    uct_ep_h ep;

    f->rx_headroom = 40;
    open_pair(f, &r, "4", "2", "4", &sender, &receiver, &ep);
    send_bursts(f, &r, ep, MAX_MSGS, 7, length_of);

    assert_int_equal(r.bad, 0);
    assert_int_equal(r.expected, MAX_MSGS);
    assert_int_equal(r.with_desc, 0);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_OK);
    uct_ep_destroy(ep);
    uct_iface_close(sender);
    uct_iface_close(receiver);
}

/* The connection layer's counter of an interface */
static uint64_t counter(uct_iface_h iface, int which)
{
    return uct_specrdv_iface_counters(iface)[which];
}

static unsigned largest_length;

static unsigned length_largest(uint32_t seq)
{
    return largest_length;
}

/* The largest message the interface announces, by short, bcopy and zcopy,
 * in bursts larger than the ring: the fallback channel carries what a slot
 * carries, so each arrives intact whichever way it goes */
static void test_largest_message_both_channels(void **state)
{
    fixture_t *f = *state;
    receiver_t r = {0};
    uct_iface_h sender, receiver;
    uct_iface_attr_t attr;
    uct_ep_h ep;

    open_pair(f, &r, "4", "1", "8", &sender, &receiver, &ep);
    assert_int_equal(uct_iface_query(sender, &attr), UCS_OK);
    largest_length = attr.cap.am.max_short - sizeof(msg_hdr_t);
    assert_true(attr.cap.am.max_short <= 16384);
    send_bursts(f, &r, ep, 60, 6, length_largest);

    assert_int_equal(r.bad, 0);
    assert_true(counter(sender, UCT_SPECRDV_CNT_TX_RING) > 0);
    assert_true(counter(sender, UCT_SPECRDV_CNT_TX_FALLBACK) > 3);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_OK);
    uct_ep_destroy(ep);
    uct_iface_close(sender);
    uct_iface_close(receiver);
}

/* Send `count` messages through ep from *seq on, progressing the worker */
static void send_many(fixture_t *f, uct_ep_h ep, uint8_t id, uint32_t *seq,
                      uint32_t count)
{
    uint32_t end = *seq + count;
    ucs_status_t status;

    while (*seq < end) {
        status = send_msg_id(ep, id, *seq, length_of(*seq));
        if (status == UCS_OK) {
            ++*seq;
        } else {
            assert_int_equal(status, UCS_ERR_NO_RESOURCE);
        }
        uct_worker_progress(f->worker);
    }
}

/* An interface with one ring in its polling set, asking for one at a
 * sender's second message */
static void open_one_ring(fixture_t *f, uct_iface_h *iface_p)
{
    assert_int_equal(open_iface(f, iface_p, "POLL_SET", "1", "RING_AFTER", "1",
                                NULL), UCS_OK);
    uct_iface_progress_enable(*iface_p, UCT_PROGRESS_RECV);
}

/* Such an interface receiving from two senders, AM_ID into ra and
 * AM_ID + 1 into rc */
static void open_receiver_of_two(fixture_t *f, uct_iface_h *iface_p,
                                 receiver_t *ra, receiver_t *rc)
{
    open_one_ring(f, iface_p);
    assert_int_equal(uct_iface_set_am_handler(*iface_p, AM_ID, am_handler, ra,
                                              0), UCS_OK);
    assert_int_equal(uct_iface_set_am_handler(*iface_p, AM_ID + 1, am_handler,
                                              rc, 0), UCS_OK);
}

/* One ring at the receiver: a quiet peer's ring is taken back, drained and
 * given to a busy newcomer, and later the other way round; every message of
 * both senders arrives in order and intact */
static void test_eviction_and_readmission(void **state)
{
    fixture_t *f   = *state;
    receiver_t ra  = {0}, rc = {0};
    uct_iface_h a, c, b;
    uint32_t sa = 0, sc = 0;
    uct_ep_h epa, epc;

    open_one_ring(f, &a);
    open_one_ring(f, &c);
    open_receiver_of_two(f, &b, &ra, &rc);
    connect_ep(f, a, b, &epa);
    connect_ep(f, c, b, &epc);

    send_many(f, epa, AM_ID, &sa, 40);
    assert_int_equal(counter(a, UCT_SPECRDV_CNT_RING_GRANTED), 1);

    /* refused while a is busier: nothing is taken */
    send_many(f, epc, AM_ID + 1, &sc, 2);
    assert_int_equal(counter(c, UCT_SPECRDV_CNT_RING_WANTED), 1);
    assert_int_equal(counter(b, UCT_SPECRDV_CNT_RING_EVICTED), 0);

    /* a is quiet: its ring goes to c */
    send_many(f, epc, AM_ID + 1, &sc, 3 * UCT_SPECRDV_RING_RETRY);
    assert_int_equal(counter(b, UCT_SPECRDV_CNT_RING_EVICTED), 1);
    assert_int_equal(counter(a, UCT_SPECRDV_CNT_RING_REVOKED), 1);
    assert_int_equal(counter(c, UCT_SPECRDV_CNT_RING_GRANTED), 1);
    assert_true(counter(c, UCT_SPECRDV_CNT_TX_RING) > 0);

    /* c is quiet: a has it again, once a whole window of
     * UCT_SPECRDV_RING_RETRY sends has seen c quiet */
    send_many(f, epa, AM_ID, &sa, 4 * UCT_SPECRDV_RING_RETRY);
    assert_int_equal(counter(b, UCT_SPECRDV_CNT_RING_EVICTED), 2);
    assert_int_equal(counter(c, UCT_SPECRDV_CNT_RING_REVOKED), 1);
    assert_int_equal(counter(a, UCT_SPECRDV_CNT_RING_GRANTED), 2);

    progress_until(f, &ra, sa);
    progress_until(f, &rc, sc);
    assert_int_equal(ra.bad, 0);
    assert_int_equal(rc.bad, 0);
    uct_ep_destroy(epa);
    uct_ep_destroy(epc);
    uct_iface_close(a);
    uct_iface_close(c);
    uct_iface_close(b);
}

static const char *self_path;   /* this program, for the child to run */

static void to_hex(char *out, const uint8_t *in, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        sprintf(out + 2 * i, "%02x", in[i]);
    }
}

static void from_hex(uint8_t *out, const char *in)
{
    unsigned byte;

    for (; sscanf(in, "%2x", &byte) == 1; in += 2) {
        *out++ = byte;
    }
}

/* The child of test_dead_owner_ring_reclaimed, a fresh process (a forked
 * copy would inherit UCS's async state without its thread): `count`
 * messages to the parent's interface, then, once the parent has read them
 * (a byte on stdin), SIGKILL while it holds a ring there.  A failing child
 * only sends less, which the parent sees; it never outlives 30 s. */
static int child_send_and_die(const char *dev_hex, const char *iface_hex)
{
    uint8_t dev_addr[64], iface_addr[64];
    void *state;
    fixture_t *f;
    uct_iface_h iface;
    uint32_t seq = 0;
    uct_ep_h ep;
    char byte;

    alarm(30);
    from_hex(dev_addr, dev_hex);
    from_hex(iface_addr, iface_hex);
    setup(&state);
    f = state;
    if (open_iface(f, &iface, "POLL_SET", "1", "RING_AFTER", "1", NULL) !=
        UCS_OK) {
        return 1;
    }
    connect_addr(iface, dev_addr, iface_addr, &ep);
    while (seq < 40) {
        if (send_msg_id(ep, AM_ID, seq, length_of(seq)) == UCS_OK) {
            ++seq;
        }
        uct_worker_progress(f->worker);
    }
    while (read(0, &byte, 1) < 0) {
    }
    raise(SIGKILL);
    return 1;
}

/* A process killed while it holds a ring never releases it when revoked:
 * the receiver finds it gone, fails its connection and gives the ring to a
 * newcomer; the dead process's messages that arrived are all delivered */
static void test_dead_owner_ring_reclaimed(void **state)
{
    fixture_t *f  = *state;
    receiver_t ra = {0}, rc = {0};
    uint8_t dev_addr[64], iface_addr[64];
    char dev_hex[129], iface_hex[129];
    uct_iface_attr_t attr;
    uct_iface_h b, c;
    uint32_t sc = 0;
    int status, i, go[2];
    uct_ep_h epc;
    pid_t child;

    open_receiver_of_two(f, &b, &ra, &rc);
    assert_int_equal(uct_iface_get_device_address(b, (void*)dev_addr), UCS_OK);
    assert_int_equal(uct_iface_get_address(b, (void*)iface_addr), UCS_OK);
    assert_int_equal(uct_iface_query(b, &attr), UCS_OK);
    to_hex(dev_hex, dev_addr, attr.device_addr_len);
    to_hex(iface_hex, iface_addr, attr.iface_addr_len);

    assert_int_equal(pipe(go), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(go[0], 0);
        execl(self_path, self_path, "--send-and-die", dev_hex, iface_hex,
              (char*)NULL);
        _exit(127);
    }
    for (i = 0; (i < 10000) && (ra.expected < 40); ++i) {
        uct_worker_progress(f->worker);
        usleep(100);
    }
    assert_int_equal(ra.expected, 40);
    assert_int_equal(ra.bad, 0);
    assert_int_equal(write(go[1], "k", 1), 1);
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    close(go[0]);
    close(go[1]);

    open_one_ring(f, &c);
    connect_ep(f, c, b, &epc);
    send_many(f, epc, AM_ID + 1, &sc, 2 * UCT_SPECRDV_RING_RETRY + 10);
    assert_int_equal(counter(c, UCT_SPECRDV_CNT_RING_WANTED), 3);
    for (i = 0; i < 5000; ++i) {
        uct_worker_progress(f->worker);
    }
    assert_int_equal(counter(b, UCT_SPECRDV_CNT_RING_RECLAIMED), 1);

    send_many(f, epc, AM_ID + 1, &sc, UCT_SPECRDV_RING_RETRY + 10);
    assert_int_equal(counter(c, UCT_SPECRDV_CNT_RING_GRANTED), 1);
    assert_true(counter(c, UCT_SPECRDV_CNT_TX_RING) > 0);
    progress_until(f, &rc, sc);
    assert_int_equal(rc.bad, 0);
    uct_ep_destroy(epc);
    uct_iface_close(c);
    uct_iface_close(b);
}

static int pending_runs;

static ucs_status_t pending_cb(uct_pending_req_t *req)
{
    ++pending_runs;
    return UCS_OK;
}

/* With the ring and the FIFO full a send fails with NO_RESOURCE; a pending
 * request then waits, and runs once the receiver has made room */
static void test_full_channels_and_pending(void **state)
{
    fixture_t *f          = *state;
    receiver_t r          = {0};
    uct_pending_req_t req = {.func = pending_cb};
    uct_iface_h sender, receiver;
    unsigned sent = 0;
    ucs_status_t status;
    uct_ep_h ep;

    open_pair(f, &r, "2", "0", "2", &sender, &receiver, &ep);
    uct_iface_progress_enable(sender, UCT_PROGRESS_SEND);

    assert_int_equal(uct_ep_pending_add(ep, &req, 0), UCS_ERR_BUSY);
    while ((status = send_msg(ep, sent, 16)) == UCS_OK) {
        ++sent;
        assert_true(sent < 16);
    }
    assert_int_equal(status, UCS_ERR_NO_RESOURCE);
    /* CONNECT and RING take FIFO elements, the rest fill ring and FIFO */
    assert_true(sent >= 2);

    assert_int_equal(uct_ep_pending_add(ep, &req, 0), UCS_OK);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_ERR_NO_RESOURCE);
    /* an interface says OK or INPROGRESS: UCP's worker flush takes
     * anything else for an error */
    assert_int_equal(uct_iface_flush(sender, 0, NULL), UCS_INPROGRESS);
    while (pending_runs == 0) {
        uct_worker_progress(f->worker);
    }
    assert_int_equal(pending_runs, 1);
    progress_until(f, &r, sent);
    assert_int_equal(r.bad, 0);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_OK);
    assert_int_equal(uct_iface_flush(sender, 0, NULL), UCS_OK);

    uct_ep_destroy(ep);
    uct_iface_close(sender);
    uct_iface_close(receiver);
}

/* A quarter of the receiver's FIFO is kept for control messages: one
 * sender's data never fills it, so another's CONNECT still goes in (as a
 * RING_WANTED or RING_RELEASED would, which a hot sender would otherwise
 * starve) */
static void test_fifo_room_for_control(void **state)
{
    fixture_t *f = *state;
    receiver_t r = {0};
    uct_iface_h a, c, b;
    uct_ep_h epa, epc;
    uint32_t sa = 0;
    unsigned taken = 0, count;

    assert_int_equal(open_iface(f, &a, "RING_AFTER", "1000000", NULL), UCS_OK);
    assert_int_equal(open_iface(f, &c, "RING_AFTER", "1000000", NULL), UCS_OK);
    assert_int_equal(open_iface(f, &b, "SHM_FIFO_SIZE", "8", NULL), UCS_OK);
    assert_int_equal(uct_iface_set_am_handler(b, AM_ID, am_handler, &r, 0),
                     UCS_OK);
    uct_iface_progress_enable(b, UCT_PROGRESS_RECV);
    connect_ep(f, a, b, &epa);
    connect_ep(f, c, b, &epc);

    /* a's CONNECT and 5 messages: 2 of the 8 places stay free */
    while (send_msg(epa, sa, 16) == UCS_OK) {
        ++sa;
    }
    assert_int_equal(sa, 8 - 1 - 2);
    /* c's CONNECT goes in, its message does not */
    assert_int_equal(send_msg(epc, 0, 16), UCS_ERR_NO_RESOURCE);

    /* b takes both CONNECTs and a's messages, nothing else */
    while ((count = uct_worker_progress(f->worker)) > 0) {
        taken += count;
    }
    assert_int_equal(taken, 1 + sa + 1);
    assert_int_equal(r.expected, sa);
    assert_int_equal(r.bad, 0);
    uct_ep_destroy(epa);
    uct_ep_destroy(epc);
    uct_iface_close(a);
    uct_iface_close(c);
    uct_iface_close(b);
}

/* Senders a and b both reach the receiver through rings.  A corrupt header
 * in a's ring fails the receiver's endpoint to a, and b goes on working. */
static void test_corrupt_slot_fails_only_its_sender(void **state)
{
    fixture_t *f     = *state;
    receiver_t ra    = {0};
    err_record_t rec = {0};
    uct_iface_h a, b, rcv;
    uct_ep_h ep_a, ep_b, back_a, back_b;
    uct_specrdv_shm_iface_addr_t addr;
    uct_specrdv_shm_seg_t seg;
    uct_specrdv_hdr_t *hdr;
    uint32_t seq;

    assert_int_equal(open_iface(f, &a, "RING_AFTER", "0", NULL), UCS_OK);
    assert_int_equal(open_iface(f, &b, "RING_AFTER", "0", NULL), UCS_OK);
    f->err_handler = err_handler;
    f->err_arg     = &rec;
    assert_int_equal(open_iface(f, &rcv, "RING_AFTER", "0", NULL), UCS_OK);
    assert_int_equal(uct_iface_set_am_handler(rcv, AM_ID, am_handler, &ra, 0),
                     UCS_OK);
    uct_iface_progress_enable(rcv, UCT_PROGRESS_RECV);
    connect_ep(f, a, rcv, &ep_a);
    connect_ep(f, b, rcv, &ep_b);
    connect_ep(f, rcv, a, &back_a);
    connect_ep(f, rcv, b, &back_b);

    /* a connects first and gets ring 0 */
    assert_int_equal(send_msg(ep_a, 0, 8), UCS_OK);
    progress_until(f, &ra, 1);

    assert_int_equal(uct_iface_get_address(rcv, (void*)&addr), UCS_OK);
    assert_int_equal(uct_specrdv_shm_seg_attach(addr.shmid, addr.nonce, &seg),
                     UCS_OK);
    assert_int_equal(seg.ring_ctl[0].owner, 1);
    hdr         = (uct_specrdv_hdr_t*)(uct_specrdv_shm_seg_ring(&seg, 0) +
                                       seg.ctl->geom.slot_size);
    hdr->length = 1u << 30;
    hdr->flag   = UCT_SPECRDV_FLAG_PRIMARY;
    uct_specrdv_shm_seg_detach(&seg);

    uct_worker_progress(f->worker);
    assert_int_equal(rec.count, 1);
    assert_ptr_equal(rec.ep, back_a);
    assert_int_equal(rec.status, UCS_ERR_IO_ERROR);
    assert_int_equal(uct_ep_am_short(back_a, AM_ID, 0, NULL, 0),
                     UCS_ERR_CONNECTION_RESET);

    /* b's messages still arrive, in order */
    ra.expected = 0;
    for (seq = 0; seq < 40; ++seq) {
        while (send_msg(ep_b, seq, length_of(seq)) == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(f->worker);
        }
    }
    progress_until(f, &ra, 40);
    assert_int_equal(ra.bad, 0);
    assert_int_equal(rec.count, 1);

    uct_ep_destroy(back_a);
    uct_ep_destroy(back_b);
    uct_ep_destroy(ep_a);
    uct_ep_destroy(ep_b);
    uct_iface_close(rcv);
    uct_iface_close(b);
    uct_iface_close(a);
    f->err_handler = NULL;
}

/* A FIFO element whose sequence runs ahead of a head that never moves is no
 * producer's doing: the sender fails that connection instead of waiting for
 * the head for ever */
static void test_corrupt_fifo_fails_sender(void **state)
{
    fixture_t *f     = *state;
    receiver_t r     = {0};
    err_record_t rec = {0};
    uct_specrdv_shm_iface_addr_t addr;
    uct_specrdv_shm_seg_t seg;
    uct_iface_h a, rcv;
    uct_ep_h ep;
    uint64_t head;

    f->err_handler = err_handler;
    f->err_arg     = &rec;
    assert_int_equal(open_iface(f, &a, "RING_AFTER", "1000000", NULL), UCS_OK);
    f->err_handler = NULL;
    assert_int_equal(open_iface(f, &rcv, NULL), UCS_OK);
    assert_int_equal(uct_iface_set_am_handler(rcv, AM_ID, am_handler, &r, 0),
                     UCS_OK);
    uct_iface_progress_enable(rcv, UCT_PROGRESS_RECV);
    connect_ep(f, a, rcv, &ep);
    assert_int_equal(send_msg(ep, 0, 16), UCS_OK);
    progress_until(f, &r, 1);

    assert_int_equal(uct_iface_get_address(rcv, (void*)&addr), UCS_OK);
    assert_int_equal(uct_specrdv_shm_seg_attach(addr.shmid, addr.nonce, &seg),
                     UCS_OK);
    head = seg.ctl->fifo_head;
    uct_specrdv_shm_fifo_elem(&seg, head)->seq = head + 3;

    assert_int_equal(send_msg(ep, 1, 16), UCS_ERR_IO_ERROR);
    assert_int_equal(rec.count, 1);
    assert_ptr_equal(rec.ep, ep);
    assert_int_equal(rec.status, UCS_ERR_IO_ERROR);
    assert_int_equal(send_msg(ep, 1, 16), UCS_ERR_CONNECTION_RESET);
    assert_int_equal(seg.ctl->fifo_head, head);

    uct_specrdv_shm_fifo_elem(&seg, head)->seq = head;
    uct_specrdv_shm_seg_detach(&seg);
    uct_ep_destroy(ep);
    uct_iface_close(rcv);
    uct_iface_close(a);
}

/* put and get reach the peer's memory by address (here this process's) */
static void test_cma_put_get(void **state)
{
    fixture_t *f = *state;
    static uint8_t src[300000], dst[300000];
    uct_iov_t iov[2];
    uct_iface_attr_t attr;
    uct_iface_h a, b;
    uct_ep_h ep;

    open_plain_pair(f, &a, &b, &ep);
    assert_int_equal(uct_iface_query(a, &attr), UCS_OK);
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY);
    fill_pattern(src, 7, sizeof(src));

    /* two pieces, the second not page aligned */
    iov[0] = (uct_iov_t){src, 4097, UCT_MEM_HANDLE_NULL, 0, 1};
    iov[1] = (uct_iov_t){src + 4097, sizeof(src) - 4097, UCT_MEM_HANDLE_NULL,
                         0, 1};
    assert_int_equal(uct_ep_put_zcopy(ep, iov, 2, (uintptr_t)dst, 0, NULL),
                     UCS_OK);
    assert_memory_equal(src, dst, sizeof(src));

    memset(src, 0, sizeof(src));
    iov[0] = (uct_iov_t){src, sizeof(src), UCT_MEM_HANDLE_NULL, 0, 1};
    assert_int_equal(uct_ep_get_zcopy(ep, iov, 1, (uintptr_t)dst, 0, NULL),
                     UCS_OK);
    assert_memory_equal(src, dst, sizeof(src));

    assert_int_equal(uct_ep_put_short(ep, "specrdv", 8, (uintptr_t)dst, 0),
                     UCS_OK);
    assert_string_equal((char*)dst, "specrdv");

    uct_ep_destroy(ep);
    uct_iface_close(b);
    uct_iface_close(a);
}

typedef struct {
    uct_completion_t comp;
    int              calls;
} counted_comp_t;

static void count_completion(uct_completion_t *self)
{
    ++ucs_container_of(self, counted_comp_t, comp)->calls;
}

static void unpack_copy(void *arg, const void *data, size_t length)
{
    memcpy(arg, data, length);
}

/* A copy done inside its call (put/get zero-copy, get bcopy) reports
 * INPROGRESS and completes from the next progress, never inside the call:
 * UCP (1.18.1, 1.22.0) would call its user's callback before the user's call
 * returns.  A flush waits for it and completes after it. */
static void test_cma_completion_from_progress(void **state)
{
    fixture_t *f = *state;
    static uint8_t src[70000], dst[70000];
    counted_comp_t put = {{count_completion, 1, UCS_OK}, 0};
    counted_comp_t get = {{count_completion, 1, UCS_OK}, 0};
    counted_comp_t flush = {{count_completion, 1, UCS_OK}, 0};
    counted_comp_t bget = {{count_completion, 1, UCS_OK}, 0};
    uint8_t small[64];
    uct_iov_t iov;
    uct_iface_h a, b;
    uct_ep_h ep;

    open_plain_pair(f, &a, &b, &ep);
    fill_pattern(src, 9, sizeof(src));

    iov = (uct_iov_t){src, sizeof(src), UCT_MEM_HANDLE_NULL, 0, 1};
    assert_int_equal(uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst, 0,
                                      &put.comp), UCS_INPROGRESS);
    assert_memory_equal(src, dst, sizeof(src));
    assert_int_equal(put.calls, 0);
    assert_int_equal(uct_iface_flush(a, 0, NULL), UCS_INPROGRESS);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_INPROGRESS);
    assert_int_equal(uct_ep_flush(ep, 0, &flush.comp), UCS_INPROGRESS);

    memset(dst, 0, sizeof(dst));
    iov = (uct_iov_t){dst, sizeof(dst), UCT_MEM_HANDLE_NULL, 0, 1};
    assert_int_equal(uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)src, 0,
                                      &get.comp), UCS_INPROGRESS);
    assert_memory_equal(src, dst, sizeof(src));
    assert_int_equal(get.calls + flush.calls, 0);

    memset(small, 0, sizeof(small));
    assert_int_equal(uct_ep_get_bcopy(ep, unpack_copy, small, sizeof(small),
                                      (uintptr_t)src, 0, &bget.comp),
                     UCS_INPROGRESS);
    assert_memory_equal(small, src, sizeof(small));
    assert_int_equal(bget.calls, 0);

    /* one progress delivers all four, in order, each once */
    assert_true(uct_iface_progress(a) >= 4);
    assert_int_equal(put.calls, 1);
    assert_int_equal(flush.calls, 1);
    assert_int_equal(get.calls, 1);
    assert_int_equal(bget.calls, 1);
    /* a second delivery would take a count below zero, calling nothing */
    assert_int_equal(put.comp.count + flush.comp.count + get.comp.count +
                     bget.comp.count, 0);
    assert_int_equal(put.comp.status, UCS_OK);
    assert_int_equal(get.comp.status, UCS_OK);
    assert_int_equal(uct_iface_flush(a, 0, NULL), UCS_OK);
    assert_int_equal(uct_ep_flush(ep, 0, NULL), UCS_OK);
    uct_iface_progress(a);
    assert_int_equal(put.calls + flush.calls + get.calls + bget.calls, 4);
    assert_int_equal(put.comp.count + flush.comp.count + get.comp.count +
                     bget.comp.count, 0);

    uct_ep_destroy(ep);
    uct_iface_close(b);
    uct_iface_close(a);
}

/* An interface with other slots cannot be reached: its messages would not fit */
static void test_other_slot_size_unreachable(void **state)
{
    fixture_t *f = *state;
    uint8_t dev_addr[64], iface_addr[64];
    uct_iface_h a, b;

    assert_int_equal(open_iface(f, &a, NULL), UCS_OK);
    assert_int_equal(open_iface(f, &b, "SLOT_SIZE", "4k", NULL), UCS_OK);
    assert_int_equal(uct_iface_get_device_address(b, (void*)dev_addr), UCS_OK);
    assert_int_equal(uct_iface_get_address(b, (void*)iface_addr), UCS_OK);
    assert_int_equal(uct_iface_is_reachable(a, (void*)dev_addr,
                                            (void*)iface_addr), 0);
    uct_iface_close(b);
    uct_iface_close(a);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eviction_and_readmission,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_owner_ring_reclaimed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_across_channels, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_largest_message_both_channels,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_room_for_control, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_channels_and_pending, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_slot_fails_only_its_sender,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_fifo_fails_sender, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cma_put_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cma_completion_from_progress,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_slot_size_unreachable,
                                        setup, teardown),
    };

    if ((argc == 4) && !strcmp(argv[1], "--send-and-die")) {
        return child_send_and_die(argv[2], argv[3]);
    }

    self_path = argv[0];
    return cmocka_run_group_tests_name("specrdv shm writer", tests, NULL, NULL);
}
