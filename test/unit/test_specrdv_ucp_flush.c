/**
 * ucx-spec: UCP's worker flush over specrdv while sends wait in the
 * transport's pending queue, the case of one-sided MPI (Open MPI's osc/ucx:
 * MPICH's rma/rget_unlock failed "specrdv/shm flush failed: No resources")
 * and OpenSHMEM's quiet.  The receiver makes no progress until the flush
 * has been asked, so the sender's ring and fallback channel are full and
 * the interface has pending requests when UCP flushes it.
 *
 * See file LICENSE for terms.
 */

#include "ucp_pair.h"

#include <string.h>


#define MSG_SIZE 1024
#define NUM_MSGS 256     /* several times what a ring and a FIFO hold */

static uint8_t send_bufs[NUM_MSGS][MSG_SIZE];
static uint8_t recv_bufs[NUM_MSGS][MSG_SIZE];

static void *start_send(side_t *s, unsigned i, req_t *r)
{
    ucp_request_param_t param = req_param(r, 0);

    memset(send_bufs[i], (int)(i * 7 + 1), MSG_SIZE);
    return ucp_tag_send_nbx(s->ep, send_bufs[i], MSG_SIZE, i, &param);
}

static void *start_recv(side_t *s, unsigned i, req_t *r)
{
    ucp_request_param_t param = req_param(r, 1);

    return ucp_tag_recv_nbx(s->worker, recv_bufs[i], MSG_SIZE, i,
                            (ucp_tag_t)-1, &param);
}

/* The request's state, once it is complete; @a sp freed */
static void wait_req(void *sp, req_t *r, side_t *a, side_t *b)
{
    if (!UCS_PTR_IS_PTR(sp)) {
        r->done   = 1;
        r->status = UCS_PTR_STATUS(sp);
        return;
    }
    while (!r->done) {
        ucp_worker_progress(a->worker);
        ucp_worker_progress(b->worker);
    }
    ucp_request_free(sp);
}

static void test_worker_flush_with_pending(void **state)
{
    static req_t sreq[NUM_MSGS], rreq[NUM_MSGS], freq;
    static void *ssp[NUM_MSGS];
    ucp_request_param_t fparam = req_param(&freq, 0);
    side_t a = {0}, b = {0};
    unsigned i, queued = 0;
    void *fsp, *rsp;

    open_side(&a);
    open_side(&b);
    connect_sides(&a, &b);
    connect_sides(&b, &a);

    for (i = 0; i < NUM_MSGS; ++i) {
        ssp[i] = start_send(&a, i, &sreq[i]);
        assert_false(UCS_PTR_IS_ERR(ssp[i]));
        queued += UCS_PTR_IS_PTR(ssp[i]) && !sreq[i].done;
    }
    /* without this the test would prove nothing */
    assert_true(queued > 0);

    fsp = ucp_worker_flush_nbx(a.worker, &fparam);
    assert_false(UCS_PTR_IS_ERR(fsp));

    for (i = 0; i < NUM_MSGS; ++i) {
        rsp = start_recv(&b, i, &rreq[i]);
        assert_false(UCS_PTR_IS_ERR(rsp));
        wait_req(rsp, &rreq[i], &b, &a);
        assert_int_equal(rreq[i].status, UCS_OK);
        assert_int_equal(rreq[i].info.length, MSG_SIZE);
        assert_memory_equal(recv_bufs[i], send_bufs[i], MSG_SIZE);
    }

    wait_req(fsp, &freq, &a, &b);
    assert_int_equal(freq.status, UCS_OK);
    for (i = 0; i < NUM_MSGS; ++i) {
        wait_req(ssp[i], &sreq[i], &a, &b);
        assert_int_equal(sreq[i].status, UCS_OK);
    }

    close_side(&a, &b);
    close_side(&b, &a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_flush_with_pending)
    };

    setenv("UCX_TLS", "specrdv", 1);
    setenv("UCX_SPEC_RNDV", "n", 1);
    return cmocka_run_group_tests_name("specrdv_ucp_flush", tests, NULL, NULL);
}
