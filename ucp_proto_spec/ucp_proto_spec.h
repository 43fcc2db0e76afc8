/**
 * ucx-spec: speculative rendezvous, the hooks UCX calls.
 *
 * contrib/patches/VERSION/0003-ucp-speculative-rendezvous-hooks.patch adds one call
 * to each of these at the place named beside it; everything else lives in
 * this directory.  Every hook returns at once when speculation is off
 * (worker->spec == NULL), and those on every tag send, receive and arrival
 * also while no envelope is known: they are inline tests here, so that a
 * stream of small messages pays no call per message (a call each cost a
 * visible share of Open MPI's 8-byte streaming bandwidth on shared memory).
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PROTO_SPEC_H_
#define UCP_PROTO_SPEC_H_

#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_types.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ucp_ep_msg_config;

/* Room an RTS needs beyond UCX's header and rkey, and the word that ends
 * the trailer (spec_int.h has its layout) */
#define UCP_PROTO_SPEC_RTS_TRAILER_SIZE 16
#define UCP_PROTO_SPEC_RTS_MAGIC        0x53504543u /* "SPEC" */

/*
 * The worker's counters, each named once: its field, and the words
 * UCX_SPEC_REPORT prints before its value.  They are always on (UCS stats
 * are compiled out in Debian's build), and with stats compiled in each is
 * also a counter of the "ucp_spec" class under its field's name.
 */
#define UCP_PROTO_SPEC_COUNTERS(_c) \
    _c(rtr_sent,          "rtr sent") \
    _c(rtr_recv,          "received") \
    _c(rtr_used,          "used") \
    /* UCP v2: of those, moved by a put where v2 chose its active-message \
     * rendezvous */ \
    _c(rtr_put,           "by put") \
    /* dropped at the sender: its send had gone with an RTS, had gone eager \
     * (misprediction), an old epoch, an envelope it no longer holds or \
     * beyond the bitmap, the envelope stopped by adaptation, buffer too \
     * small or sync send or not contig, the RTR queue full */ \
    _c(rtr_drop_crossed,  "dropped crossed") \
    _c(rtr_drop_eager,    "eager") \
    _c(rtr_drop_stale,    "stale") \
    _c(rtr_drop_stopped,  "stopped") \
    _c(rtr_drop_unfit,    "unfit") \
    _c(rtr_drop_overflow, "overflow") \
    /* shared memory, the peer stopped our RTRs */ \
    _c(rtr_declined,      "declined") \
    /* the receive matched by eager or RTS: its RTR unused */ \
    _c(rtr_dead,          "dead") \
    _c(rtr_ack_sent,      "; rtr-ack sent") \
    _c(rtr_ack_recv,      "received") \
    _c(rts_trailer_sent,  "; rts trailers sent") \
    _c(stop_sent,         "; stop sent") \
    _c(stop_recv,         "received") \
    _c(resume_sent,       "; resume sent") \
    _c(resume_recv,       "received") \
    _c(revoke_sent,       "; revoke sent") \
    _c(revoke_ack_recv,   "acks received") \
    _c(cancel_deferred,   "; cancel deferred") \
    _c(cancel_failed,     "failed") \
    _c(conflicts,         "; conflicts") \
    /* no RTR: a receive ahead cannot count */ \
    _c(blocked,           "; blocked") \
    _c(early_progress,    "; early progress") \
    /* shared memory: rendezvous copies offered to whichever side is idle \
     * first; those this worker claimed, and those it found claimed */ \
    _c(copy_offered,      "; copies offered") \
    _c(copy_claimed,      "claimed") \
    _c(copy_lost,         "lost") \
    /* bytes this worker added to the wire: RTR, RTR-ACK, REVOKE(-ACK), RTS \
     * trailers */ \
    _c(ctl_bytes,         "; control bytes")

typedef struct {
#define UCP_PROTO_SPEC_COUNTER_FIELD(_name, _words) uint64_t _name;
    UCP_PROTO_SPEC_COUNTERS(UCP_PROTO_SPEC_COUNTER_FIELD)
#undef UCP_PROTO_SPEC_COUNTER_FIELD
} ucp_proto_spec_counters_t;


/* ucp_worker_create / ucp_worker_destroy (after the endpoints are gone) */
void ucp_proto_spec_worker_init(ucp_worker_h worker);
void ucp_proto_spec_worker_cleanup(ucp_worker_h worker);

/* ucp_ep_destroy_base: forget the endpoint's envelopes and queued RTRs */
void ucp_proto_spec_ep_cleanup(ucp_ep_h ep);

/* The start of a worker's speculation state: what the inline hooks test */
typedef struct ucp_proto_spec_worker_head {
    unsigned      tx_count; /* send envelopes counted, from a rendezvous send
                               on */
    unsigned      rx_count; /* receive envelopes learned from an RTS */
    uint64_t      env_mask; /* tag bits that name an envelope */
    uint64_t      tx_filter; /* a bit of every send and receive envelope */
    uint64_t      rx_filter; /* known: ucp_proto_spec_env_bit() */
    ucp_request_t *cur_send; /* UCP v2: the send ucp_tag_send_nbx posts */
} ucp_proto_spec_worker_head_t;

static UCS_F_ALWAYS_INLINE ucp_proto_spec_worker_head_t *
ucp_proto_spec_head(ucp_worker_h worker)
{
    return (ucp_proto_spec_worker_head_t*)worker->spec;
}

/* A tag's bit in the filters: a hook whose tag's bit is clear knows that no
 * envelope of the tag is known, and returns before any table lookup.  Once
 * one rendezvous taught the worker an envelope, every message on every other
 * tag would otherwise pay them: three lookups a receive, two a send. */
static UCS_F_ALWAYS_INLINE unsigned
ucp_proto_spec_env_bit(const ucp_proto_spec_worker_head_t *head, ucp_tag_t tag)
{
    return ((tag & head->env_mask) * 0x9e3779b97f4a7c15ull) >> 58;
}

static UCS_F_ALWAYS_INLINE int
ucp_proto_spec_rx_known(ucp_worker_h worker, ucp_tag_t tag)
{
    ucp_proto_spec_worker_head_t *head = ucp_proto_spec_head(worker);

    return (head->rx_filter >> ucp_proto_spec_env_bit(head, tag)) & 1;
}

static UCS_F_ALWAYS_INLINE int
ucp_proto_spec_tx_known(ucp_worker_h worker, ucp_tag_t tag)
{
    ucp_proto_spec_worker_head_t *head = ucp_proto_spec_head(worker);

    return (head->tx_filter >> ucp_proto_spec_env_bit(head, tag)) & 1;
}

void ucp_proto_spec_recv_begin_slow(ucp_worker_h worker, size_t count,
                                    const ucp_request_param_t *param,
                                    ucp_tag_t tag, ucp_tag_t tag_mask);
void ucp_proto_spec_recv_posted_slow(ucp_worker_h worker, ucp_request_t *rreq);
void ucp_proto_spec_msg_arrived_slow(ucp_worker_h worker, ucp_tag_t tag,
                                     ucp_request_t *rreq, const void *rts,
                                     size_t rts_length);
void ucp_proto_spec_send_done_slow(ucp_ep_h ep, ucp_tag_t tag);

/* ucp_tag_recv_nbx, before the unexpected queue is searched: the receiver's
 * early progress pass for a receive predicted to be rendezvous */
static UCS_F_ALWAYS_INLINE void
ucp_proto_spec_recv_begin(ucp_worker_h worker, size_t count,
                          const ucp_request_param_t *param, ucp_tag_t tag,
                          ucp_tag_t tag_mask)
{
    if ((worker->spec != NULL) && ucp_proto_spec_rx_known(worker, tag)) {
        ucp_proto_spec_recv_begin_slow(worker, count, param, tag, tag_mask);
    }
}

/* ucp_tag_recv_common, after the request joined the expected queue: maybe
 * send an RTR */
static UCS_F_ALWAYS_INLINE void
ucp_proto_spec_recv_posted(ucp_worker_h worker, ucp_request_t *rreq)
{
    rreq->recv.spec = NULL;
    if ((worker->spec != NULL) &&
        ucp_proto_spec_rx_known(worker, rreq->recv.tag.tag)) {
        ucp_proto_spec_recv_posted_slow(worker, rreq);
    }
}

/* Eager and RTS handlers, after the expected queue was searched (rreq is the
 * match or NULL; rts is NULL for eager).  Returns the RTS's length without
 * our trailer, which UCP's v2 receive path would read as key bytes: taken
 * off whether speculation is on here or not. */
static UCS_F_ALWAYS_INLINE size_t
ucp_proto_spec_msg_arrived(ucp_worker_h worker, ucp_tag_t tag,
                           ucp_request_t *rreq, const void *rts,
                           size_t rts_length)
{
    uint32_t magic;

    if ((worker->spec != NULL) &&
        ((rts != NULL) || ucp_proto_spec_rx_known(worker, tag) ||
         ((rreq != NULL) && (rreq->recv.spec != NULL)))) {
        ucp_proto_spec_msg_arrived_slow(worker, tag, rreq, rts, rts_length);
    }

    if ((rts == NULL) || (rts_length < UCP_PROTO_SPEC_RTS_TRAILER_SIZE)) {
        return rts_length;
    }

    memcpy(&magic, UCS_PTR_BYTE_OFFSET(rts, rts_length - 2 * sizeof(magic)),
           sizeof(magic));
    return (magic == UCP_PROTO_SPEC_RTS_MAGIC) ?
           (rts_length - UCP_PROTO_SPEC_RTS_TRAILER_SIZE) : rts_length;
}

/* ucp_tag_recv_common, when the receive matched an unexpected RTS: nonzero
 * if the copy was offered to the sender instead of being made now (the
 * caller then skips ucp_tag_rndv_matched) */
int ucp_proto_spec_rts_matched(ucp_worker_h worker, ucp_request_t *rreq,
                               const void *rts, size_t rts_length);

/* ucp_request_cancel of an expected tag receive: nonzero if the cancel must
 * wait for the sender to confirm that no RTR behind it can be used */
int ucp_proto_spec_recv_cancel(ucp_worker_h worker, ucp_request_t *rreq);

/* ucp_ep_req_purge of a request that has a super request: nonzero if it was
 * an RTR carrier, now handled */
int ucp_proto_spec_rtr_purge(ucp_request_t *req, ucs_status_t status);

/* ucp_tag_send_start_rndv, after the request id is allocated: nonzero if an
 * RTR was found and the request now puts instead of sending an RTS */
int ucp_proto_spec_send_rndv(ucp_request_t *sreq);

/* ucp_tag_rndv_rts_pack (v1) and ucp_tag_rndv_proto_rts_pack (v2): append
 * the trailer, return the new length */
size_t ucp_proto_spec_rts_pack(ucp_request_t *sreq, void *rts, size_t length);

/* ucp_tag_send_nbx and ucp_tag_send_sync_nbx on UCP v2, before the protocol
 * starts: the send that the first call of "tag/rndv" may number, after the
 * early progress pass of a send v2 will make a rendezvous */
void ucp_proto_spec_send_begin_slow(ucp_ep_h ep, ucp_request_t *req,
                                    size_t count,
                                    const ucp_request_param_t *param);
static UCS_F_ALWAYS_INLINE void
ucp_proto_spec_send_begin(ucp_ep_h ep, ucp_request_t *req, size_t count,
                          const ucp_request_param_t *param)
{
    req->send.spec_pos = 0;
    if (ep->worker->spec != NULL) {
        if (ucp_proto_spec_tx_known(ep->worker, req->send.msg_proto.tag)) {
            ucp_proto_spec_send_begin_slow(ep, req, count, param);
        }
        ucp_proto_spec_head(ep->worker)->cur_send = req;
    }
}

/* ucp_tag_rndv_rts_progress (v2), once the request has its id: nonzero if
 * an RTR was found and the request now moves the data instead of sending an
 * RTS (or failed) */
int ucp_proto_spec_send_rndv_v2(ucp_request_t *sreq);

/* ucp_tag_send_nbx / ucp_tag_send_sync_nbx on return: count the send on its
 * envelope, if a rendezvous send made it known (an error takes no index) */
static UCS_F_ALWAYS_INLINE void
ucp_proto_spec_send_done(ucp_ep_h ep, ucp_tag_t tag, ucs_status_ptr_t ret)
{
    if (ep->worker->spec == NULL) {
        return;
    }

    ucp_proto_spec_head(ep->worker)->cur_send = NULL;
    if (ucp_proto_spec_tx_known(ep->worker, tag) && !UCS_PTR_IS_ERR(ret)) {
        ucp_proto_spec_send_done_slow(ep, tag);
    }
}


/* Hot-buffer zero-copy eager (spec_eager.c), independent of speculation:
 * ucp_proto_spec_worker_init / _cleanup call the first two */
void ucp_proto_spec_hotbuf_worker_init(ucp_worker_h worker);
void ucp_proto_spec_hotbuf_worker_cleanup(ucp_worker_h worker);

/* ucp_tag_send_req, after the zcopy threshold is chosen: the threshold for
 * this send, its own length if its buffer is hot */
size_t ucp_proto_spec_hotbuf_zcopy_thresh(ucp_request_t *req,
                                          const struct ucp_ep_msg_config *msg_config,
                                          size_t zcopy_thresh);

/* ucp_proto_request_send_op_common (v2, UCX >= 1.18), between selection and
 * start: a tag send goes by the other of the eager copy and zero-copy
 * protocols of @a select_elem (the selection element it was chosen from)
 * where its buffer's use says so */
void ucp_proto_spec_hotbuf_v2_send(ucp_request_t *req, const void *select_elem,
                                   size_t length);


/* For tests and tools: the worker's counters; UCS_ERR_UNSUPPORTED if
 * speculation is off on this worker */
ucs_status_t ucp_proto_spec_worker_counters(ucp_worker_h worker,
                                            ucp_proto_spec_counters_t *cnt);

#endif
