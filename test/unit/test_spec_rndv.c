/**
 * ucx-spec: the speculative rendezvous, each scenario forced.
 *
 * Two UCP workers in one process, so that the test alone decides who makes
 * progress and when: every figure of the paper (Rashti & Afsahi 2009, Figs.
 * 3, 7-11) and every hazard of ucp_proto_spec/README.md is played in a fixed
 * order of posts and progress calls, then the control messages each side counted
 * and every received byte are checked.  Runs over UCX's posix+cma and over
 * specrdv.
 *
 * See file LICENSE for terms.
 */

#include "ucp_pair.h"

#include <ucp/spec/ucp_proto_spec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define TAG       0x1234000000000007ull
#define BIG       (64 * 1024)    /* rendezvous: UCX_RNDV_THRESH is 8k */
#define RNDV_THRESH 8192
#define SMALL     512            /* eager */
#define MAX_MSGS  8
#define SPIN_MAX  1000000
#define MASK_FULL ((ucp_tag_t)-1)

typedef struct {
    side_t                    s, r;    /* sender, receiver */
    side_t                    s2;      /* a second sender, if opened */
    ucp_ep_h                  loop;    /* s to itself, if opened */
    ucp_proto_spec_counters_t s0, r0;  /* counters after the warm-up */
    uint8_t                  *sbuf[MAX_MSGS];
    uint8_t                  *rbuf[MAX_MSGS];
    void                     *sreqs[4 * MAX_MSGS]; /* freed at teardown */
    unsigned                  num_sreqs;
    req_t                     sstate[4 * MAX_MSGS];
    unsigned                  num_sstates;
} fx_t;


static const char *tls;
static unsigned warmup_eager; /* eager messages before the envelope is known */


static void progress(side_t *side, int n)
{
    while (n-- > 0) {
        ucp_worker_progress(side->worker);
    }
}

static void wait_both(fx_t *fx, req_t *req)
{
    int spin;

    for (spin = 0; !req->done && (spin < SPIN_MAX); ++spin) {
        ucp_worker_progress(fx->s.worker);
        ucp_worker_progress(fx->r.worker);
        if (fx->s2.worker != NULL) {
            ucp_worker_progress(fx->s2.worker);
        }
    }
    assert_true(req->done);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

/* every byte of message m in place, and nothing beyond it touched */
static void check_data(fx_t *fx, unsigned slot, unsigned m, size_t len,
                       size_t buflen)
{
    uint8_t expect[BIG * 2];
    size_t i;

    fill(expect, len, m);
    assert_memory_equal(fx->rbuf[slot], expect, len);
    for (i = len; i < buflen; ++i) {
        assert_int_equal(fx->rbuf[slot][i], 0xee);
    }
}

/* The completion state lives in the fixture: a send may complete only in
 * teardown, after its test returned */
static req_t *post_send(fx_t *fx, side_t *s, unsigned m, size_t len, int sync)
{
    req_t *req                = &fx->sstate[fx->num_sstates++];
    ucp_request_param_t param = req_param(req, 0);
    ucs_status_ptr_t sp;

    assert_true(fx->num_sstates <= (4 * MAX_MSGS));
    memset(req, 0, sizeof(*req));
    fill(fx->sbuf[m], len, m);
    sp = sync ? ucp_tag_send_sync_nbx(s->ep, fx->sbuf[m], len, TAG, &param) :
                ucp_tag_send_nbx(s->ep, fx->sbuf[m], len, TAG, &param);
    assert_false(UCS_PTR_IS_ERR(sp));
    if (sp == NULL) {
        req->done = 1;
    } else {
        /* freeing it now would cancel its callback */
        assert_true(fx->num_sreqs < (4 * MAX_MSGS));
        fx->sreqs[fx->num_sreqs++] = sp;
    }
    return req;
}

static void *post_recv_side(fx_t *fx, side_t *side, unsigned slot, size_t len,
                            ucp_tag_t mask, req_t *req)
{
    /* a request even when the receive completes in the call (v2's
     * rendezvous through a mapped key does): the tests free each */
    ucp_request_param_t param = req_param(req, 1);
    ucs_status_ptr_t sp;

    memset(req, 0, sizeof(*req));
    memset(fx->rbuf[slot], 0xee, 2 * BIG);
    sp = ucp_tag_recv_nbx(side->worker, fx->rbuf[slot], len, TAG, mask,
                          &param);
    assert_false(UCS_PTR_IS_ERR(sp));
    assert_non_null(sp);
    return sp;
}

static void *post_recv(fx_t *fx, unsigned slot, size_t len, ucp_tag_t mask,
                       req_t *req)
{
    return post_recv_side(fx, &fx->r, slot, len, mask, req);
}

static ucp_proto_spec_counters_t counters(side_t *side)
{
    ucp_proto_spec_counters_t c;

    assert_int_equal(ucp_proto_spec_worker_counters(side->worker, &c), UCS_OK);
    return c;
}

/* counter deltas since the warm-up */
#define S_DELTA(_fx, _f) (counters(&(_fx)->s)._f - (_fx)->s0._f)
#define R_DELTA(_fx, _f) (counters(&(_fx)->r)._f - (_fx)->r0._f)

static int setup(void **state)
{
    fx_t *fx = calloc(1, sizeof(*fx));
    unsigned i;
    req_t *sr, rr;
    void *rreq;

    for (i = 0; i < MAX_MSGS; ++i) {
        fx->sbuf[i] = malloc(2 * BIG);
        fx->rbuf[i] = malloc(2 * BIG);
    }

    open_side(&fx->s);
    open_side(&fx->r);
    connect_sides(&fx->s, &fx->r);
    connect_sides(&fx->r, &fx->s);

    for (i = 0; i < warmup_eager; ++i) {
        sr   = post_send(fx, &fx->s, 0, SMALL, 0);
        rreq = post_recv(fx, 0, SMALL, MASK_FULL, &rr);
        wait_both(fx, &rr);
        wait_both(fx, sr);
        ucp_request_free(rreq);
        check_data(fx, 0, 0, SMALL, SMALL);
    }

    /* Warm-up, sender first: the RTS teaches the receiver the envelope */
    sr = post_send(fx, &fx->s, 0, BIG, 0);
    progress(&fx->s, 10);
    rreq = post_recv(fx, 0, BIG, MASK_FULL, &rr);
    wait_both(fx, &rr);
    wait_both(fx, sr);
    ucp_request_free(rreq);
    check_data(fx, 0, 0, BIG, BIG);

    fx->s0 = counters(&fx->s);
    fx->r0 = counters(&fx->r);
    assert_int_equal(fx->r0.rtr_sent, 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fx_t *fx = *state;
    unsigned i;
    int spin;

    for (i = 0; i < fx->num_sreqs; ++i) {
        for (spin = 0; (ucp_request_check_status(fx->sreqs[i]) ==
                        UCS_INPROGRESS) && (spin < SPIN_MAX); ++spin) {
            ucp_worker_progress(fx->s.worker);
            ucp_worker_progress(fx->r.worker);
            if (fx->s2.worker != NULL) {
                ucp_worker_progress(fx->s2.worker);
            }
        }
        ucp_request_free(fx->sreqs[i]);
    }

    /* every send of the scenario completed, and completed well */
    for (i = 0; i < fx->num_sstates; ++i) {
        assert_true(fx->sstate[i].done);
        assert_int_equal(fx->sstate[i].status, UCS_OK);
    }

    if (fx->s2.worker != NULL) {
        close_side(&fx->s2, &fx->r);
    }
    if (fx->loop != NULL) {
        close_ep(&fx->s, fx->loop, &fx->r);
    }
    close_side(&fx->s, &fx->r);
    close_side(&fx->r, &fx->s);
    for (i = 0; i < MAX_MSGS; ++i) {
        free(fx->sbuf[i]);
        free(fx->rbuf[i]);
    }
    free(fx);
    return 0;
}


/* Fig. 3: the receiver first.  The sender finds the RTR, writes the data and
 * sends no RTS; the bytes are in place before the receiver calls UCP again. */
static void test_fig3_receiver_first(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    assert_int_equal(R_DELTA(fx, rtr_sent), 1);

    progress(&fx->s, 10);                   /* the RTR arrives */
    sr = post_send(fx, &fx->s, 1, BIG, 0);
    progress(&fx->s, 100);

    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, rtr_ack_sent), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 0);
    assert_true(sr->done);
    check_data(fx, 1, 1, BIG, BIG); /* the receiver has not progressed */

    wait_both(fx, &rr);
    assert_int_equal(rr.status, UCS_OK);
    assert_int_equal(rr.info.length, BIG);
    assert_int_equal(rr.info.sender_tag, TAG);
    assert_int_equal(R_DELTA(fx, rtr_ack_recv), 1);
    ucp_request_free(rreq);
}

/* Fig. 7/8 case 1: the first send takes the RTR, the second sends an RTS;
 * the RTR-ACK takes the first receive out of matching, so the RTS matches
 * the second receive. */
static void test_fig7_case1(void **state)
{
    fx_t *fx = *state;
    req_t *sr2, rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, BIG, 0);   /* takes RTR 1 */
    sr2 = post_send(fx, &fx->s, 2, BIG, 0);   /* RTS: no RTR for it yet */
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2); /* RTR 2 */

    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    wait_both(fx, sr2);
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(R_DELTA(fx, rtr_sent), 2);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 1);
    assert_int_equal(S_DELTA(fx, rtr_drop_crossed), 1);
    assert_int_equal(R_DELTA(fx, rtr_dead), 1);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* Fig. 7/8 case 2: the first send sent its RTS before the RTR came (they
 * cross); the second send takes the second RTR. */
static void test_fig7_case2(void **state)
{
    fx_t *fx = *state;
    req_t *sr1, rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);
    sr1 = post_send(fx, &fx->s, 1, BIG, 0);   /* before RTR 1 is seen */
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    progress(&fx->s, 10);                     /* RTR 1 dropped, RTR 2 kept */
    post_send(fx, &fx->s, 2, BIG, 0);   /* takes RTR 2 */

    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    wait_both(fx, sr1);
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_drop_crossed), 1);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 1);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* Fig. 9: a wildcard receive ahead may take any message, so the receive
 * behind it cannot know its index and sends no RTR. */
static void test_fig9_wildcard_ahead(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, 0, &rr1);                  /* any tag */
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    assert_int_equal(R_DELTA(fx, rtr_sent), 0);
    assert_int_equal(R_DELTA(fx, blocked), 1);

    post_send(fx, &fx->s, 1, BIG, 0);
    post_send(fx, &fx->s, 2, BIG, 0);
    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 2);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* Fig. 9 case 2, done better than the paper: a receive ahead that predicted
 * eager sent no RTR but still counts as one message, so the receive behind
 * it may speculate. */
static void test_fig9_eager_predicted_ahead(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, SMALL, MASK_FULL, &rr1);
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    assert_int_equal(R_DELTA(fx, rtr_sent), 1);

    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, SMALL, 0);
    post_send(fx, &fx->s, 2, BIG, 0);
    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    check_data(fx, 1, 1, SMALL, SMALL);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* The sender counts an envelope from its first rendezvous send on, and the
 * receiver learns that numbering from the RTS: eager messages before it are
 * counted by neither side, those after it by both */
static int setup_eager_first(void **state)
{
    int ret;

    warmup_eager = 3;
    ret          = setup(state);
    warmup_eager = 0;
    return ret;
}

static void test_eager_before_envelope(void **state)
{
    test_fig9_eager_predicted_ahead(state);
}

/* Fig. 10 case 2 / Fig. 11: the receiver predicted rendezvous, the sender
 * went eager.  The RTR names that eager send, so it is dropped and cannot be
 * taken by the next send (the paper needs its Eager-flag for this). */
static void test_fig10_mispredicted(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);  /* RTR 1 */
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);  /* RTR 2 */
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, SMALL, 0);   /* eager: drops RTR 1 */
    post_send(fx, &fx->s, 2, BIG, 0);     /* takes RTR 2, not 1 */

    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    assert_int_equal(rr1.info.length, SMALL);
    check_data(fx, 1, 1, SMALL, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 0);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* Fig. 10 with the RTR late: the eager message went first, the RTR arrives
 * for an index already sent and is dropped as a misprediction. */
static void test_fig10_rtr_late(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);
    post_send(fx, &fx->s, 1, SMALL, 0);
    progress(&fx->s, 10);
    assert_int_equal(S_DELTA(fx, rtr_drop_eager), 1);

    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 2, BIG, 0);

    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    check_data(fx, 1, 1, SMALL, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* MPI lets the receive be larger: the RTR-ACK carries the real length and
 * the bytes beyond the message stay untouched. */
static void test_buffer_larger(void **state)
{
    fx_t *fx = *state;
    req_t rr;
    void *rreq;

    rreq = post_recv(fx, 1, 2 * BIG, MASK_FULL, &rr);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(rr.info.length, BIG);
    check_data(fx, 1, 1, BIG, 2 * BIG);
    ucp_request_free(rreq);
}

/* A receive smaller than the message: the RTR is unfit, the RTS path reports
 * the truncation as stock UCX does. */
static void test_buffer_smaller(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    rreq = post_recv(fx, 1, BIG / 2, MASK_FULL, &rr);
    progress(&fx->s, 10);
    sr = post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr);
    wait_both(fx, sr);
    assert_int_equal(S_DELTA(fx, rtr_drop_unfit), 1);
    assert_int_equal(S_DELTA(fx, rtr_used), 0);
    assert_int_equal(rr.status, UCS_ERR_MESSAGE_TRUNCATED);
    ucp_request_free(rreq);
}

/* Synchronous sends never take an RTR */
static void test_sync_send(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    progress(&fx->s, 10);
    sr = post_send(fx, &fx->s, 1, BIG, 1);
    wait_both(fx, &rr);
    wait_both(fx, sr);
    assert_int_equal(S_DELTA(fx, rtr_drop_unfit), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 1);
    check_data(fx, 1, 1, BIG, BIG);
    ucp_request_free(rreq);
}

/* Non-contiguous receives send no RTR */
static void test_iov_recv(void **state)
{
    fx_t *fx = *state;
    ucp_dt_iov_t iov[2];
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE,
        .cb.recv      = recv_cb,
        .datatype     = ucp_dt_make_iov()
    };
    uint8_t expect[BIG];
    req_t rr;
    void *rreq;

    memset(&rr, 0, sizeof(rr));
    param.user_data = &rr;
    iov[0].buffer   = fx->rbuf[1];
    iov[0].length   = BIG / 2;
    iov[1].buffer   = fx->rbuf[2];
    iov[1].length   = BIG / 2;
    rreq = ucp_tag_recv_nbx(fx->r.worker, iov, 2, TAG, MASK_FULL,
                            &param);
    assert_false(UCS_PTR_IS_ERR(rreq));
    assert_int_equal(R_DELTA(fx, rtr_sent), 0);

    post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr);
    fill(expect, BIG, 1);
    assert_memory_equal(fx->rbuf[1], expect, BIG / 2);
    assert_memory_equal(fx->rbuf[2], expect + BIG / 2, BIG / 2);
    ucp_request_free(rreq);
}

/* Cancel with RTRs out: the cancel waits until the sender confirms the RTRs
 * of this receive and of the one behind it are dead; the receive behind then
 * takes the first message through the ordinary path. */
static void test_cancel_revokes(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    ucp_request_cancel(fx->r.worker, rreq1);
    assert_false(rr1.done);
    assert_int_equal(R_DELTA(fx, revoke_sent), 2);
    assert_int_equal(R_DELTA(fx, cancel_deferred), 1);

    progress(&fx->s, 10);               /* RTRs queued, then revoked */
    progress(&fx->r, 10);               /* REVOKE-ACKs */
    assert_true(rr1.done);
    assert_int_equal(rr1.status, UCS_ERR_CANCELED);

    post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr2);
    check_data(fx, 2, 1, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_used), 0);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* Cancel too late: both RTRs were taken before the revokes arrived; the
 * cancel fails and each receive gets its own message. */
static void test_cancel_too_late(void **state)
{
    fx_t *fx = *state;
    req_t rr1, rr2;
    void *rreq1, *rreq2;

    rreq1 = post_recv(fx, 1, BIG, MASK_FULL, &rr1);
    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, BIG, 0);
    post_send(fx, &fx->s, 2, BIG, 0);
    ucp_request_cancel(fx->r.worker, rreq1);

    wait_both(fx, &rr1);
    wait_both(fx, &rr2);
    assert_int_equal(rr1.status, UCS_OK);
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_used), 2);
    assert_true(R_DELTA(fx, cancel_failed) >= 1);
    ucp_request_free(rreq1);
    ucp_request_free(rreq2);
}

/* The receiver's worker goes away with an RTR out and a cancel waiting for
 * its revoke: teardown must release both (valgrind and ASan check it). */
static void test_destroy_with_rtr(void **state)
{
    fx_t *fx = *state;
    req_t rr;
    void *rreq;

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    assert_int_equal(R_DELTA(fx, rtr_sent), 1);
    ucp_request_cancel(fx->r.worker, rreq);
    assert_false(rr.done);
    assert_int_equal(R_DELTA(fx, cancel_deferred), 1);
    ucp_request_free(rreq); /* released at completion, which never comes */
}

/* Two endpoints sending one tag break the contract: the second RTS is seen
 * and speculation stops for the tag.  (An RTR already out when the second
 * sender's message takes its receive cannot be saved; that is why
 * UCX_SPEC_RNDV=auto waits for a sender mask.) */
static void test_second_sender(void **state)
{
    fx_t *fx = *state;
    req_t rr;
    void *rreq;
    int spin;

    open_side(&fx->s2);
    connect_sides(&fx->s2, &fx->r);
    post_send(fx, &fx->s2, 1, BIG, 0);
    /* the second sender's RTS arrives unexpected (after its wireup) */
    for (spin = 0; (R_DELTA(fx, conflicts) == 0) && (spin < 10000); ++spin) {
        progress(&fx->s2, 1);
        progress(&fx->r, 1);
    }
    assert_int_equal(R_DELTA(fx, conflicts), 1);
    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    wait_both(fx, &rr);
    ucp_request_free(rreq);
    check_data(fx, 1, 1, BIG, BIG);

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    assert_int_equal(R_DELTA(fx, rtr_sent), 0);
    post_send(fx, &fx->s, 2, BIG, 0);
    wait_both(fx, &rr);
    check_data(fx, 1, 2, BIG, BIG);
    ucp_request_free(rreq);
}

/* Adaptation: RTRs that always cross are useless; after the minimum sample
 * the sender piggybacks stop-RTR, the receiver stops, and after the back-off
 * the sender re-probes with resume-RTR. */
static void test_adaptation(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;
    unsigned i;

    for (i = 0; i < 4 + 2 + 1; ++i) {
        rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
        sr = post_send(fx, &fx->s, 1, BIG, 0); /* before the RTR: crosses */
        wait_both(fx, &rr);
        wait_both(fx, sr);
        progress(&fx->s, 10);
        check_data(fx, 1, 1, BIG, BIG);
        ucp_request_free(rreq);
    }

    /* MIN_SAMPLE=4: stop after 4 crossed RTRs; BACKOFF=2: resume 2 later */
    assert_int_equal(S_DELTA(fx, stop_sent), 1);
    assert_int_equal(R_DELTA(fx, stop_recv), 1);
    assert_int_equal(S_DELTA(fx, resume_sent), 1);
    assert_int_equal(R_DELTA(fx, resume_recv), 1);
    assert_int_equal(R_DELTA(fx, rtr_sent), 4 + 1);
}

/* Shared memory, both directions busy: the receiver side stopped the
 * sender's own RTRs (they always crossed), so the sender declines the
 * receiver's RTRs instead of doing the copy of both directions itself. */
static void test_decline_when_stopped_back(void **state)
{
    fx_t *fx = *state;
    req_t rr;
    void *rreq;
    unsigned i;

    /* reverse direction, r -> s: s's RTRs always cross r's RTS; after 4 of
     * them r stops them, and its next RTS tells s so */
    for (i = 0; i < 4 + 2; ++i) {
        rreq = post_recv_side(fx, &fx->s, 3, BIG, MASK_FULL, &rr);
        post_send(fx, &fx->r, 3, BIG, 0);
        wait_both(fx, &rr);
        check_data(fx, 3, 3, BIG, BIG);
        ucp_request_free(rreq);
    }
    assert_int_equal(counters(&fx->s).stop_recv, 1);

    /* forward direction: an RTR is waiting, but the sender declines it */
    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr);
    check_data(fx, 1, 1, BIG, BIG);
    assert_int_equal(S_DELTA(fx, rtr_declined), 1);
    assert_int_equal(S_DELTA(fx, rtr_used), 0);
    ucp_request_free(rreq);
}

/* Shared memory, the pair out of phase: the sender has just fetched one of
 * the receiver's messages (its RTS came first), so it declines the
 * receiver's next two RTRs rather than copying both directions itself, and
 * takes the third.  Each time an RTR is waiting when the send is posted. */
static void test_decline_after_fetch(void **state)
{
    fx_t *fx = *state;
    req_t rr, back;
    void *rreq;
    unsigned i;

    /* r -> s, sender first: s fetches it when its receive matches the RTS */
    post_send(fx, &fx->r, 3, BIG, 0);
    progress(&fx->s, 10);
    rreq = post_recv_side(fx, &fx->s, 3, BIG, MASK_FULL, &back);
    wait_both(fx, &back);
    assert_int_equal(back.status, UCS_OK);
    check_data(fx, 3, 3, BIG, BIG);
    ucp_request_free(rreq);
    assert_int_equal(S_DELTA(fx, rtr_used), 0);

    for (i = 0; i < 3; ++i) {
        rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
        progress(&fx->s, 10);               /* the RTR arrives */
        post_send(fx, &fx->s, 1, BIG, 0);
        wait_both(fx, &rr);
        assert_int_equal(rr.status, UCS_OK);
        check_data(fx, 1, 1, BIG, BIG);
        ucp_request_free(rreq);
        assert_int_equal(S_DELTA(fx, rtr_declined), (i < 2) ? i + 1 : 2);
        assert_int_equal(S_DELTA(fx, rtr_used), (i < 2) ? 0 : 1);
    }
}

static int setup_no_balance(void **state)
{
    int ret;

    setenv("UCX_SPEC_SHM_BALANCE", "n", 1);
    ret = setup(state);
    unsetenv("UCX_SPEC_SHM_BALANCE");
    return ret;
}

/* The same with UCX_SPEC_SHM_BALANCE=n: the RTR is taken at once */
static void test_no_decline_unbalanced(void **state)
{
    fx_t *fx = *state;
    req_t rr;
    void *rreq;

    post_send(fx, &fx->r, 3, BIG, 0);
    progress(&fx->s, 10);
    rreq = post_recv_side(fx, &fx->s, 3, BIG, MASK_FULL, &rr);
    wait_both(fx, &rr);
    check_data(fx, 3, 3, BIG, BIG);
    ucp_request_free(rreq);

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    progress(&fx->s, 10);
    post_send(fx, &fx->s, 1, BIG, 0);
    wait_both(fx, &rr);
    check_data(fx, 1, 1, BIG, BIG);
    ucp_request_free(rreq);
    assert_int_equal(S_DELTA(fx, rtr_declined), 0);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
}

/* The receive buffer still untouched: nobody copied yet */
static void check_untouched(fx_t *fx, unsigned slot)
{
    size_t i;

    for (i = 0; i < 2 * BIG; ++i) {
        assert_int_equal(fx->rbuf[slot][i], 0xee);
    }
}

/*
 * The idle side copies (spec_claim.c).  Receiver first: the send that takes
 * the RTR offers the copy and copies nothing.  Each test decides who enters
 * UCP next with it pending; exactly one side claims and copies, the other
 * completes on the ATS or ATP, and the peer that never comes back delays
 * nothing.
 */
static void idle_rtr_offered(fx_t *fx, req_t **sr, req_t *rr, void **rreq)
{
    *rreq = post_recv(fx, 1, BIG, MASK_FULL, rr);
    progress(&fx->s, 10);                   /* the RTR arrives */
    *sr = post_send(fx, &fx->s, 1, BIG, 0); /* offers, copies nothing */
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, copy_offered), 1);
    assert_false((*sr)->done);
    check_untouched(fx, 1);
}

/* One side enters UCP first with the offer pending and copies (the receive
 * buffer was untouched until then); the other, which did not call UCP
 * meanwhile, finds the claim lost and completes on the ATP or ATS */
static void idle_claimed(fx_t *fx, req_t *sr, req_t *rr, int receiver_claims)
{
    side_t *winner = receiver_claims ? &fx->r : &fx->s;
    side_t *loser  = receiver_claims ? &fx->s : &fx->r;
    req_t *won     = receiver_claims ? rr : sr;
    req_t *lost    = receiver_claims ? sr : rr;

    progress(winner, 10);
    assert_true(won->done);
    assert_int_equal(won->status, UCS_OK);
    check_data(fx, 1, 1, BIG, BIG);
    assert_false(lost->done);

    progress(loser, 10);
    assert_true(lost->done);
    assert_int_equal(lost->status, UCS_OK);
    assert_int_equal(rr->info.length, BIG);
    assert_int_equal(rr->info.sender_tag, TAG);
    assert_int_equal(S_DELTA(fx, copy_claimed), !receiver_claims);
    assert_int_equal(R_DELTA(fx, copy_claimed), receiver_claims);
    assert_int_equal(S_DELTA(fx, copy_lost), receiver_claims);
    assert_int_equal(R_DELTA(fx, copy_lost), !receiver_claims);
}

/* The receiver is next (it waits, the sender computes): it gets the data,
 * and the sender, which never copied, completes on the ATS */
static void test_idle_rtr_receiver_claims(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    idle_rtr_offered(fx, &sr, &rr, &rreq);
    idle_claimed(fx, sr, &rr, 1);
    ucp_request_free(rreq);
}

/* The sender is next (the receiver computes for ever): it puts the data at
 * its own next call; the receiver's claim, later, fails and the ATP that
 * was already there completes it */
static void test_idle_rtr_sender_claims(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    idle_rtr_offered(fx, &sr, &rr, &rreq);
    idle_claimed(fx, sr, &rr, 0);
    ucp_request_free(rreq);
}

/* Sender first: the receive that matches the RTS at its post offers the
 * copy (OFFER) and copies nothing */
static void idle_rts_offered(fx_t *fx, req_t **sr, req_t *rr, void **rreq)
{
    *sr = post_send(fx, &fx->s, 1, BIG, 0);  /* RTS */
    progress(&fx->r, 10);                    /* the RTS arrives, unexpected */
    *rreq = post_recv(fx, 1, BIG, MASK_FULL, rr);
    assert_int_equal(R_DELTA(fx, copy_offered), 1);
    assert_false(rr->done);
    assert_false((*sr)->done);
    check_untouched(fx, 1);
}

/* The sender is next (it waits, the receiver computes): it puts the data
 * into the receive buffer; the receiver completes on the ATP */
static void test_idle_rts_sender_claims(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    idle_rts_offered(fx, &sr, &rr, &rreq);
    idle_claimed(fx, sr, &rr, 0);
    ucp_request_free(rreq);
}

/* The receiver is next (the sender computes for ever): it gets the data at
 * its own next call; the sender's claim fails and the ATS completes it */
static void test_idle_rts_receiver_claims(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    idle_rts_offered(fx, &sr, &rr, &rreq);
    idle_claimed(fx, sr, &rr, 1);
    ucp_request_free(rreq);
}

/* Several offers out at once, claimed by both sides in turn: each copied
 * once, into its own buffer */
static void test_idle_many(void **state)
{
    fx_t *fx = *state;
    req_t *sr[4], rr[4];
    void *rreq[4];
    unsigned i;

    for (i = 0; i < 4; ++i) {
        rreq[i] = post_recv(fx, i + 1, BIG, MASK_FULL, &rr[i]);
    }
    progress(&fx->s, 10);
    for (i = 0; i < 4; ++i) {
        sr[i] = post_send(fx, &fx->s, i + 1, BIG, 0);
    }
    assert_int_equal(S_DELTA(fx, copy_offered), 4);
    progress(&fx->r, 10);
    for (i = 0; i < 4; ++i) {
        wait_both(fx, &rr[i]);
        wait_both(fx, sr[i]);
        check_data(fx, i + 1, i + 1, BIG, BIG);
        ucp_request_free(rreq[i]);
    }
    assert_int_equal(S_DELTA(fx, copy_claimed) + R_DELTA(fx, copy_claimed), 4);
    assert_int_equal(S_DELTA(fx, copy_lost) + R_DELTA(fx, copy_lost), 4);
}

/* A loopback endpoint (MPI's send to its own rank): the receive that matches
 * the RTS at post offers the copy to itself, so the offer and the peer's
 * record of it name one word of one page.  The slot is freed once; a second
 * release (both records taken as the page's owner) hands it to the next two
 * offers at once, and one of those is then never copied. */
static void test_idle_loopback(void **state)
{
    fx_t *fx = *state;
    side_t loop;
    req_t *sr[3], rr[3];
    void *rreq[3];
    unsigned i;

    loop = fx->s;
    connect_sides(&loop, &fx->s);
    fx->loop = loop.ep;

    sr[0] = post_send(fx, &loop, 1, BIG, 0); /* RTS to itself */
    progress(&fx->s, 10);
    rreq[0] = post_recv_side(fx, &fx->s, 1, BIG, MASK_FULL, &rr[0]);
    assert_int_equal(S_DELTA(fx, copy_offered), 1);
    wait_both(fx, &rr[0]);
    wait_both(fx, sr[0]);
    check_data(fx, 1, 1, BIG, BIG);
    ucp_request_free(rreq[0]);
    assert_int_equal(S_DELTA(fx, copy_claimed), 1);
    assert_int_equal(S_DELTA(fx, copy_lost), 1);

    /* two offers out at once after it: two slots */
    for (i = 1; i < 3; ++i) {
        sr[i] = post_send(fx, &loop, i + 1, BIG, 0);
    }
    progress(&fx->s, 10);
    for (i = 1; i < 3; ++i) {
        rreq[i] = post_recv_side(fx, &fx->s, i + 1, BIG, MASK_FULL, &rr[i]);
    }
    assert_int_equal(S_DELTA(fx, copy_offered), 3);
    for (i = 1; i < 3; ++i) {
        wait_both(fx, &rr[i]);
        wait_both(fx, sr[i]);
        check_data(fx, i + 1, i + 1, BIG, BIG);
        ucp_request_free(rreq[i]);
    }
    assert_int_equal(S_DELTA(fx, copy_claimed), 3);
}

static int setup_early(void **state)
{
    int ret;

    setenv("UCX_SPEC_EARLY_PROGRESS", "y", 1);
    ret = setup(state);
    setenv("UCX_SPEC_EARLY_PROGRESS", "n", 1);
    return ret;
}

/* §3.2.2: the RTR reached the sender while it computed; the send's early
 * pass finds it, so the send takes it instead of sending its RTS.  The pass
 * runs on an envelope that RTRs reach: not before the first one came. */
static void test_early_pass_takes_rtr(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr[2];
    void *rreq[2];
    unsigned i;

    rreq[0] = post_recv(fx, 1, BIG, MASK_FULL, &rr[0]);
    sr      = post_send(fx, &fx->s, 1, BIG, 0); /* RTS: no RTR came yet */
    assert_int_equal(S_DELTA(fx, early_progress), 0);
    assert_int_equal(S_DELTA(fx, rtr_used), 0);
    wait_both(fx, &rr[0]);
    wait_both(fx, sr);

    rreq[1] = post_recv(fx, 2, BIG, MASK_FULL, &rr[1]);
    assert_int_equal(R_DELTA(fx, rtr_sent), 2);
    sr = post_send(fx, &fx->s, 2, BIG, 0);
    assert_int_equal(S_DELTA(fx, early_progress), 1);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(S_DELTA(fx, rts_trailer_sent), 1);
    wait_both(fx, &rr[1]);
    wait_both(fx, sr);

    for (i = 0; i < 2; ++i) {
        assert_int_equal(rr[i].status, UCS_OK);
        check_data(fx, i + 1, i + 1, BIG, BIG);
        ucp_request_free(rreq[i]);
    }
}

/* The lanes priced at 4 MB/s: a claimed copy of BIG bytes keeps its
 * process busy for 16 ms by UCX's estimate, longer than any progress call
 * here takes, even under valgrind */
static const char *slow_bw_vars[] = {"UCX_CMA_BW", "UCX_POSIX_BW",
                                     "UCX_SPECRDV_BW"};

static int setup_slow_bw(void **state)
{
    unsigned i;
    int ret;

    for (i = 0; i < ucs_static_array_size(slow_bw_vars); ++i) {
        setenv(slow_bw_vars[i], "4MBs", 1);
    }
    ret = setup(state);
    for (i = 0; i < ucs_static_array_size(slow_bw_vars); ++i) {
        unsetenv(slow_bw_vars[i]);
    }
    return ret;
}

/* An exchange (both send, then both receive): the side in UCP first claims
 * its own copy and leaves the peer's, which it would put, while its own
 * copy keeps it busy (UCX_SPEC_IDLE_COPY_DELAY is 0 here), so that each
 * gets its own data, in parallel, instead of one copying both ways while
 * the other waits */
static void test_idle_exchange(void **state)
{
    fx_t *fx = *state;
    req_t *sr[2], rr[2];
    void *rreq[2];
    unsigned i;
    int spin;

    sr[0] = post_send(fx, &fx->s, 1, BIG, 0); /* RTS to r */
    sr[1] = post_send(fx, &fx->r, 2, BIG, 0); /* RTS to s */
    progress(&fx->s, 10);
    progress(&fx->r, 10);
    rreq[0] = post_recv(fx, 1, BIG, MASK_FULL, &rr[0]); /* OFFER to s */
    rreq[1] = post_recv_side(fx, &fx->s, 2, BIG, MASK_FULL, &rr[1]);
    assert_int_equal(R_DELTA(fx, copy_offered), 1);
    assert_int_equal(S_DELTA(fx, copy_offered), 1);

    /* s first: both offers are there for its pass, r's as a put */
    progress(&fx->s, 1);
    assert_int_equal(S_DELTA(fx, copy_claimed), 1);
    assert_int_equal(S_DELTA(fx, copy_lost), 0);
    progress(&fx->r, 1);
    assert_int_equal(R_DELTA(fx, copy_claimed), 1);

    for (i = 0; i < 2; ++i) {
        wait_both(fx, &rr[i]);
        wait_both(fx, sr[i]);
    }
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);

    /* each tries the other's copy once its own is done by the estimate,
     * and loses */
    for (spin = 0; ((S_DELTA(fx, copy_lost) == 0) ||
                    (R_DELTA(fx, copy_lost) == 0)) && (spin < 100 * SPIN_MAX);
         ++spin) {
        ucp_worker_progress(fx->s.worker);
        ucp_worker_progress(fx->r.worker);
    }
    assert_int_equal(S_DELTA(fx, copy_claimed), 1);
    assert_int_equal(R_DELTA(fx, copy_claimed), 1);
    assert_int_equal(S_DELTA(fx, copy_lost), 1);
    assert_int_equal(R_DELTA(fx, copy_lost), 1);
    for (i = 0; i < 2; ++i) {
        ucp_request_free(rreq[i]);
    }
}

/* The early progress pass of a later post is not idle: it claims nothing */
static void test_idle_not_in_early_pass(void **state)
{
    fx_t *fx = *state;
    req_t *sr, *sr2, rr, rr2;
    void *rreq, *rreq2;

    idle_rtr_offered(fx, &sr, &rr, &rreq);
    sr2 = post_send(fx, &fx->s, 2, BIG, 0);   /* its pass runs progress */
    assert_true(S_DELTA(fx, early_progress) >= 1);
    assert_int_equal(S_DELTA(fx, copy_claimed), 0);
    check_untouched(fx, 1);

    rreq2 = post_recv(fx, 2, BIG, MASK_FULL, &rr2);
    wait_both(fx, &rr);
    wait_both(fx, &rr2);
    wait_both(fx, sr);
    wait_both(fx, sr2);
    check_data(fx, 1, 1, BIG, BIG);
    check_data(fx, 2, 2, BIG, BIG);
    ucp_request_free(rreq);
    ucp_request_free(rreq2);
}

static int under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");

    return (preload != NULL) && (strstr(preload, "vgpreload") != NULL);
}

static int setup_delay(void **state)
{
    int ret;

    setenv("UCX_SPEC_IDLE_COPY_DELAY", "50ms", 1);
    ret = setup(state);
    setenv("UCX_SPEC_IDLE_COPY_DELAY", "0", 1);
    return ret;
}

/* The sender claims a copy it would put only once the offer is
 * UCX_SPEC_IDLE_COPY_DELAY old: a waiting receiver gets its own first */
static void test_idle_sender_delay(void **state)
{
    fx_t *fx = *state;
    struct timespec t0, t1;
    req_t *sr, rr;
    void *rreq;
    double ms;
    int spin;

    idle_rtr_offered(fx, &sr, &rr, &rreq);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    progress(&fx->s, 10);
    assert_int_equal(S_DELTA(fx, copy_claimed), 0);
    check_untouched(fx, 1);

    /* the receiver never comes: the sender still finishes, after the delay */
    for (spin = 0; !sr->done && (spin < 100 * SPIN_MAX); ++spin) {
        ucp_worker_progress(fx->s.worker);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(sr->done);
    ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (!under_valgrind()) {
        /* UCX's clock is the TSC, calibrated at start: under valgrind's
         * emulation it runs off, and on a loaded machine its calibration
         * can be tens of percent off (seen in the Debian 13 root: under
         * 45 ms of the 50).  Without the delay the copy comes at once */
        assert_true(ms >= 25);
    }
    assert_int_equal(S_DELTA(fx, copy_claimed), 1);
    check_data(fx, 1, 1, BIG, BIG);

    wait_both(fx, &rr);
    assert_int_equal(R_DELTA(fx, copy_lost), 1);
    ucp_request_free(rreq);
}

static int setup_no_idle_copy(void **state)
{
    int ret;

    setenv("UCX_SPEC_IDLE_COPY", "n", 1);
    ret = setup(state);
    unsetenv("UCX_SPEC_IDLE_COPY");
    return ret;
}

/* UCX_SPEC_IDLE_COPY=n: the sender copies, nothing is offered */
static void test_no_idle_copy(void **state)
{
    fx_t *fx = *state;
    req_t *sr, rr;
    void *rreq;

    rreq = post_recv(fx, 1, BIG, MASK_FULL, &rr);
    progress(&fx->s, 10);
    sr = post_send(fx, &fx->s, 1, BIG, 0);
    progress(&fx->s, 10);
    assert_true(sr->done);
    check_data(fx, 1, 1, BIG, BIG);
    wait_both(fx, &rr);
    ucp_request_free(rreq);
    assert_int_equal(S_DELTA(fx, copy_offered), 0);
    assert_int_equal(R_DELTA(fx, copy_offered), 0);
}

/* The envelope filters (ucp_proto_spec_env_bit): an envelope forgotten
 * (beyond UCX_SPEC_ENV_MAX) clears its bit only when no envelope still known
 * shares it; were it cleared, a known envelope's receive would send no RTR
 * and its send would not count its index, so no RTR would be used. */
#define FILTER_ENV_MAX 8

static int setup_env_max(void **state)
{
    char value[16];
    int ret;

    snprintf(value, sizeof(value), "%u", FILTER_ENV_MAX);
    setenv("UCX_SPEC_ENV_MAX", value, 1);
    setenv("UCX_SPEC_TAG_IGNORE_MASK", "0x0", 1); /* every bit names */
    ret = setup(state);
    unsetenv("UCX_SPEC_ENV_MAX");
    unsetenv("UCX_SPEC_TAG_IGNORE_MASK");
    return ret;
}

/* One BIG message on @a tag, the receive posted first or last; its
 * requests freed before return */
static void filter_round(fx_t *fx, ucp_tag_t tag, int recv_first)
{
    req_t sr = {}, rr = {};
    ucp_request_param_t sparam = req_param(&sr, 0);
    ucp_request_param_t rparam = req_param(&rr, 1);
    void *sreq = NULL, *rreq = NULL;

    fill(fx->sbuf[0], BIG, 5);
    memset(fx->rbuf[0], 0xee, 2 * BIG);
    if (recv_first) {
        rreq = ucp_tag_recv_nbx(fx->r.worker, fx->rbuf[0], BIG, tag, MASK_FULL,
                                &rparam);
        progress(&fx->s, 10);
    }
    sreq = ucp_tag_send_nbx(fx->s.ep, fx->sbuf[0], BIG, tag, &sparam);
    assert_false(UCS_PTR_IS_ERR(sreq));
    sr.done = (sreq == NULL);
    if (!recv_first) {
        progress(&fx->s, 10);
        rreq = ucp_tag_recv_nbx(fx->r.worker, fx->rbuf[0], BIG, tag, MASK_FULL,
                                &rparam);
    }
    assert_false(UCS_PTR_IS_ERR(rreq));
    assert_non_null(rreq);

    wait_both(fx, &rr);
    wait_both(fx, &sr);
    assert_int_equal(rr.status, UCS_OK);
    assert_int_equal(sr.status, UCS_OK);
    assert_int_equal(rr.info.sender_tag, tag);
    check_data(fx, 0, 5, BIG, BIG);
    ucp_request_free(rreq);
    if (sreq != NULL) {
        ucp_request_free(sreq);
    }
}

static ucp_tag_t filter_tag(unsigned i)
{
    return TAG + ((ucp_tag_t)i << 16);
}

static void test_env_filter(void **state)
{
    fx_t *fx = *state;
    /* the library's hash, with setup_env_max's mask (the test cannot see
     * into a worker: UCP's structures differ with its build options) */
    const ucp_proto_spec_worker_head_t mask = {.env_mask = UINT64_MAX};
    const ucp_proto_spec_worker_head_t *head = &mask;
    ucp_tag_t tags[FILTER_ENV_MAX + 1];
    unsigned bit, i, n;

    /* tags[0] is forgotten first and shares its bit with tags[1]; the rest
     * have bits of their own */
    tags[0] = filter_tag(1);
    bit     = ucp_proto_spec_env_bit(head, tags[0]);
    for (i = 2; ucp_proto_spec_env_bit(head, filter_tag(i)) != bit; ++i) {
    }
    tags[1] = filter_tag(i);
    for (n = 2, i = 2; n < FILTER_ENV_MAX + 1; ++i) {
        if (ucp_proto_spec_env_bit(head, filter_tag(i)) != bit) {
            tags[n++] = filter_tag(i);
        }
    }

    /* the sender first: each RTS teaches the receiver one envelope, and the
     * last one makes both sides forget tags[0] */
    for (i = 0; i < FILTER_ENV_MAX + 1; ++i) {
        filter_round(fx, tags[i], 0);
    }
    assert_int_equal(R_DELTA(fx, rtr_sent), 0);

    filter_round(fx, tags[1], 1);
    assert_int_equal(R_DELTA(fx, rtr_sent), 1);
    assert_int_equal(S_DELTA(fx, rtr_used), 1);
    assert_int_equal(R_DELTA(fx, rtr_ack_recv), 1);

    /* tags[0] was forgotten indeed: its receive sends no RTR */
    filter_round(fx, tags[0], 1);
    assert_int_equal(R_DELTA(fx, rtr_sent), 1);
}

/* §3.2.1's prediction at UCP's rendezvous threshold: a receive one byte
 * short of it sends no RTR, one of its length does, each twice.  On v2 the
 * answer below it comes from the shortest rendezvous length, learned once
 * per endpoint configuration: a bound one byte high misses the RTRs. */
static void test_predict_boundary(void **state)
{
    static const size_t lengths[] = {RNDV_THRESH - 1, RNDV_THRESH,
                                     RNDV_THRESH - 1, RNDV_THRESH};
    fx_t *fx = *state;
    uint64_t rtr_sent;
    req_t *sr, rr;
    unsigned i;
    void *rreq;

    for (i = 0; i < ucs_static_array_size(lengths); ++i) {
        rtr_sent = R_DELTA(fx, rtr_sent);
        rreq     = post_recv(fx, 1, lengths[i], MASK_FULL, &rr);
        assert_int_equal(R_DELTA(fx, rtr_sent) - rtr_sent,
                         lengths[i] >= RNDV_THRESH);
        progress(&fx->s, 10);
        sr = post_send(fx, &fx->s, 1, lengths[i], 0);
        wait_both(fx, &rr);
        wait_both(fx, sr);
        assert_int_equal(rr.status, UCS_OK);
        assert_int_equal(rr.info.length, lengths[i]);
        check_data(fx, 1, 1, lengths[i], lengths[i]);
        ucp_request_free(rreq);
    }
}

static int run_group(const char *transports)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fig3_receiver_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fig7_case1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fig7_case2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fig9_wildcard_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fig9_eager_predicted_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eager_before_envelope, setup_eager_first, teardown),
        cmocka_unit_test_setup_teardown(test_fig10_mispredicted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fig10_rtr_late, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffer_larger, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffer_smaller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_predict_boundary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iov_recv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_revokes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_too_late, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_with_rtr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_sender, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decline_when_stopped_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decline_after_fetch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_decline_unbalanced, setup_no_balance, teardown),
        cmocka_unit_test_setup_teardown(test_idle_rtr_receiver_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_rtr_sender_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_rts_sender_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_rts_receiver_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_loopback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_exchange, setup_slow_bw, teardown),
        cmocka_unit_test_setup_teardown(test_early_pass_takes_rtr, setup_early, teardown),
        cmocka_unit_test_setup_teardown(test_idle_not_in_early_pass, setup_early, teardown),
        cmocka_unit_test_setup_teardown(test_idle_sender_delay, setup_delay, teardown),
        cmocka_unit_test_setup_teardown(test_no_idle_copy, setup_no_idle_copy, teardown),
        cmocka_unit_test_setup_teardown(test_env_filter, setup_env_max, teardown),
    };
    size_t count = sizeof(tests) / sizeof(tests[0]);
    char name[64];

    tls = transports;
    setenv("UCX_TLS", transports, 1);
    snprintf(name, sizeof(name), "spec_rndv[%s%s]", transports,
             strcmp(getenv("T_PROTO_ENABLE"), "y") ? "" : ",v2");
    return _cmocka_run_group_tests(name, tests, count, NULL, NULL);
}

int main(void)
{
    int rc = 0;

    setenv("UCX_SPEC_RNDV", getenv("T_SPEC") ? getenv("T_SPEC") : "y", 1);
    setenv("UCX_RNDV_THRESH", UCS_PP_MAKE_STRING(RNDV_THRESH), 1);
    setenv("UCX_SPEC_ADAPT_MIN_SAMPLE", "4", 1);
    setenv("UCX_SPEC_ADAPT_BACKOFF", "2", 1);
    setenv("UCX_SPEC_EARLY_PROGRESS", "n", 1); /* the test owns progress */
    setenv("UCX_SPEC_IDLE_COPY_DELAY", "0", 1); /* and time */

    setenv("T_PROTO_ENABLE", "n", 1);
#if UCP_API_VERSION >= UCP_VERSION(1, 22)
    /* UCX 1.22's cma registers no memory, so UCP's v1 rendezvous has no
     * zero-copy lane on posix,cma and an RTR nothing to put with */
    print_message("spec_rndv[posix,cma]: SKIPPED on UCX 1.22 (no v1 zero-copy "
                  "rendezvous lane)\n");
#else
    rc |= run_group("posix,cma");
#endif
    rc |= run_group("specrdv");

#if UCP_API_VERSION >= UCP_VERSION(1, 18)
    /* the same scenarios on UCP's v2 protocols */
    setenv("T_PROTO_ENABLE", "y", 1);
    rc |= run_group("posix,cma");
    rc |= run_group("specrdv");
#endif
    return rc;
}
