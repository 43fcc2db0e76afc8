/**
 * ucx-spec: what the UCP-level unit tests share: UCP workers in one process,
 * each side with its endpoint to the other, and request states that the
 * callbacks fill, so that a test alone decides who makes progress and when.
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PAIR_H_
#define UCP_PAIR_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ucp/api/ucp.h>


typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;      /* to the other side */
} side_t;

typedef struct {
    int                 done;
    ucs_status_t        status;
    ucp_tag_recv_info_t info;
} req_t;


static inline void send_cb(void *request, ucs_status_t status,
                           void *user_data)
{
    req_t *r  = user_data;
    r->done   = 1;
    r->status = status;
}

static inline void recv_cb(void *request, ucs_status_t status,
                           const ucp_tag_recv_info_t *info, void *user_data)
{
    req_t *r  = user_data;
    r->done   = 1;
    r->status = status;
    r->info   = *info;
}

/* What an operation reports into @a r: a send (@a recv 0) through send_cb,
 * a receive through recv_cb, and always as a request, even when it
 * completes in its call (one returned complete would leave r's info unset) */
static inline ucp_request_param_t req_param(req_t *r, int recv)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA,
        .user_data    = r
    };

    if (recv) {
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.recv       = recv_cb;
    } else {
        param.cb.send = send_cb;
    }
    return param;
}

/* A context with @a features and a worker of their own, configured from
 * the environment */
static inline void open_side_features(side_t *side, uint64_t features)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = features
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    ucp_config_t *config;

    assert_int_equal(ucp_config_read(NULL, NULL, &config), UCS_OK);
    /* UCP's v1 protocols (the default before 1.16) unless a test asks for
     * v2 (T_PROTO_ENABLE=y), whatever UCX_PROTO_ENABLE says */
    assert_int_equal(ucp_config_modify(config, "PROTO_ENABLE",
                                       getenv("T_PROTO_ENABLE") ?
                                       getenv("T_PROTO_ENABLE") : "n"),
                     UCS_OK);
    assert_int_equal(ucp_init(&params, config, &side->ctx), UCS_OK);
    ucp_config_release(config);
    assert_int_equal(ucp_worker_create(side->ctx, &wparams, &side->worker),
                     UCS_OK);
}

static inline void open_side(side_t *side)
{
    open_side_features(side, UCP_FEATURE_TAG);
}

/* a's endpoint to b.  Error mode none: with peer failure handling UCX
 * 1.13.1 selects RMA lanes only on MDs that can invalidate memory, which no
 * shared-memory transport can, and speculation needs put on those lanes */
static inline void connect_sides(side_t *a, side_t *b)
{
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
    };
    ucp_address_t *addr;
    size_t len;

    assert_int_equal(ucp_worker_get_address(b->worker, &addr, &len), UCS_OK);
    params.address = addr;
    assert_int_equal(ucp_ep_create(a->worker, &params, &a->ep), UCS_OK);
    ucp_worker_release_address(b->worker, addr);
}

/* Closes @a ep of @a side, progressing the peer too (it may be gone) */
static inline void close_ep(side_t *side, ucp_ep_h ep, side_t *peer)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE
    };
    ucs_status_ptr_t sp;

    sp = ucp_ep_close_nbx(ep, &param);
    while (UCS_PTR_IS_PTR(sp) &&
           (ucp_request_check_status(sp) == UCS_INPROGRESS)) {
        ucp_worker_progress(side->worker);
        if (peer->worker != NULL) {
            ucp_worker_progress(peer->worker);
        }
    }
    if (UCS_PTR_IS_PTR(sp)) {
        ucp_request_free(sp);
    }
}

/* Its endpoint, worker and context */
static inline void close_side(side_t *side, side_t *peer)
{
    if (side->ep != NULL) {
        close_ep(side, side->ep, peer);
    }
    ucp_worker_destroy(side->worker);
    ucp_cleanup(side->ctx);
    side->worker = NULL;
}

#endif
