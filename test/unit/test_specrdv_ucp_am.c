/**
 * ucx-spec: a UCP active message sent by rendezvous over specrdv, its data
 * fetched with ucp_am_recv_data_nbx from inside the message's handler, as
 * MPICH 4.2.1's RMA fetches it.  The fetch's callback must come after that
 * call returns: UCP 1.18.1 and 1.22.0 call it inside the call when the
 * transport completes the copy there, and MPICH's callback, whose request
 * was not yet set up, crashed (MPICH's test/mpi rma over specrdv).
 *
 * See file LICENSE for terms.
 */

#include "ucp_pair.h"

#include <string.h>


#define AM_ID    3
#define MSG_SIZE (512 * 1024)   /* rendezvous, and asked for too */

typedef struct {
    side_t       *side;
    int          in_call;      /* inside ucp_am_recv_data_nbx */
    int          cb_in_call;   /* its callback came while in_call */
    int          done;
    ucs_status_t status;
    void         *sp;
} am_fetch_t;

static uint8_t send_buf[MSG_SIZE], recv_buf[MSG_SIZE];

static void fetch_cb(void *request, ucs_status_t status, size_t length,
                     void *user_data)
{
    am_fetch_t *f = user_data;

    f->cb_in_call |= f->in_call;
    f->done        = 1;
    f->status      = status;
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    am_fetch_t *f              = arg;
    ucp_request_param_t fparam = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.recv_am   = fetch_cb,
        .user_data    = f
    };

    assert_true(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    assert_int_equal(length, MSG_SIZE);
    f->in_call = 1;
    f->sp      = ucp_am_recv_data_nbx(f->side->worker, data, recv_buf, length,
                                      &fparam);
    f->in_call = 0;
    if (!UCS_PTR_IS_PTR(f->sp)) {
        /* completed in its call, and said so: no callback */
        f->done   = 1;
        f->status = UCS_PTR_STATUS(f->sp);
        f->sp     = NULL;
    }
    return UCS_OK;
}

static void run_fetch(const char *proto)
{
    req_t sreq                 = {0};
    ucp_request_param_t sparam = req_param(&sreq, 0);
    am_fetch_t f               = {0};
    side_t a = {0}, b = {0};
    ucp_am_handler_param_t hparam = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id         = AM_ID,
        .cb         = am_cb,
        .arg        = &f
    };
    void *ssp;
    size_t i;

    setenv("T_PROTO_ENABLE", proto, 1);
    open_side_features(&a, UCP_FEATURE_AM);
    open_side_features(&b, UCP_FEATURE_AM);
    connect_sides(&a, &b);
    connect_sides(&b, &a);
    f.side = &b;
    assert_int_equal(ucp_worker_set_am_recv_handler(b.worker, &hparam),
                     UCS_OK);

    for (i = 0; i < MSG_SIZE; ++i) {
        send_buf[i] = (uint8_t)(i * 13 + 5);
    }
    memset(recv_buf, 0, sizeof(recv_buf));
    sparam.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    sparam.flags         = UCP_AM_SEND_FLAG_RNDV;
    ssp = ucp_am_send_nbx(a.ep, AM_ID, NULL, 0, send_buf, MSG_SIZE, &sparam);
    assert_false(UCS_PTR_IS_ERR(ssp));

    while (!f.done || (UCS_PTR_IS_PTR(ssp) && !sreq.done)) {
        ucp_worker_progress(a.worker);
        ucp_worker_progress(b.worker);
    }

    assert_false(f.cb_in_call);
    assert_int_equal(f.status, UCS_OK);
    assert_memory_equal(recv_buf, send_buf, MSG_SIZE);
    if (f.sp != NULL) {
        ucp_request_free(f.sp);
    }
    if (UCS_PTR_IS_PTR(ssp)) {
        assert_int_equal(sreq.status, UCS_OK);
        ucp_request_free(ssp);
    }

    close_side(&a, &b);
    close_side(&b, &a);
}

static void test_am_fetch_v1(void **state)
{
    run_fetch("n");
}

static void test_am_fetch_v2(void **state)
{
    run_fetch("y");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_am_fetch_v1),
        cmocka_unit_test(test_am_fetch_v2)
    };

    setenv("UCX_TLS", "specrdv", 1);
    return cmocka_run_group_tests_name("specrdv_ucp_am", tests, NULL, NULL);
}
