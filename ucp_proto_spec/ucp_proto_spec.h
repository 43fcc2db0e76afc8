/**
 * ucx-spec: speculative rendezvous, the hooks UCX calls.
 *
 * contrib/patches/0003-ucp-speculative-rendezvous-hooks.patch adds one call
 * to each of these at the place named beside it; everything else lives in
 * this directory.  Every hook returns at once when speculation is off
 * (worker->spec == NULL).
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PROTO_SPEC_H_
#define UCP_PROTO_SPEC_H_

#include <ucp/core/ucp_types.h>
#include <stddef.h>
#include <stdint.h>

/* Room an RTS needs beyond UCX's header and rkey */
#define UCP_PROTO_SPEC_RTS_TRAILER_SIZE 16

/* Always-on counters (UCS stats are compiled out in Debian's build) */
typedef struct {
    uint64_t rtr_sent;
    uint64_t rtr_recv;
    uint64_t rtr_used;
    uint64_t rtr_drop_crossed;  /* its send had gone with an RTS */
    uint64_t rtr_drop_eager;    /* its send had gone eager (misprediction) */
    uint64_t rtr_drop_stale;    /* old epoch or beyond the bitmap */
    uint64_t rtr_drop_stopped;  /* envelope stopped by adaptation */
    uint64_t rtr_drop_unfit;    /* buffer too small, sync send, not contig */
    uint64_t rtr_drop_overflow; /* RTR queue full */
    uint64_t rtr_declined;      /* shared memory, peer stopped our RTRs */
    uint64_t rtr_ack_sent;
    uint64_t rtr_ack_recv;
    uint64_t rtr_dead;          /* receive matched by eager/RTS: RTR unused */
    uint64_t rts_trailer_sent;
    uint64_t stop_sent;
    uint64_t resume_sent;
    uint64_t stop_recv;
    uint64_t resume_recv;
    uint64_t revoke_sent;
    uint64_t revoke_ack_recv;
    uint64_t cancel_deferred;
    uint64_t cancel_failed;
    uint64_t conflicts;
    uint64_t early_progress;
    uint64_t blocked;           /* no RTR: a receive ahead cannot count */
    uint64_t ctl_bytes;         /* bytes this worker added to the wire:
                                   RTR, RTR-ACK, REVOKE(-ACK), RTS trailers */
} ucp_proto_spec_counters_t;


/* ucp_worker_create / ucp_worker_destroy (after the endpoints are gone) */
void ucp_proto_spec_worker_init(ucp_worker_h worker);
void ucp_proto_spec_worker_cleanup(ucp_worker_h worker);

/* ucp_ep_destroy_base: forget the endpoint's envelopes and queued RTRs */
void ucp_proto_spec_ep_cleanup(ucp_ep_h ep);

/* ucp_tag_recv_nbx, before the unexpected queue is searched: the receiver's
 * early progress pass for a receive predicted to be rendezvous */
void ucp_proto_spec_recv_begin(ucp_worker_h worker, size_t count,
                               const ucp_request_param_t *param,
                               ucp_tag_t tag, ucp_tag_t tag_mask);

/* ucp_tag_recv_common, after the request joined the expected queue: maybe
 * send an RTR */
void ucp_proto_spec_recv_posted(ucp_worker_h worker, ucp_request_t *rreq);

/* Eager and RTS handlers, after the expected queue was searched (rreq is the
 * match or NULL; rts is NULL for eager) */
void ucp_proto_spec_msg_arrived(ucp_worker_h worker, ucp_tag_t tag,
                                ucp_request_t *rreq, const void *rts,
                                size_t rts_length);

/* ucp_request_cancel of an expected tag receive: nonzero if the cancel must
 * wait for the sender to confirm that no RTR behind it can be used */
int ucp_proto_spec_recv_cancel(ucp_worker_h worker, ucp_request_t *rreq);

/* ucp_ep_req_purge of a request that has a super request: nonzero if it was
 * an RTR carrier, now handled */
int ucp_proto_spec_rtr_purge(ucp_request_t *req, ucs_status_t status);

/* ucp_tag_send_start_rndv, after the request id is allocated: nonzero if an
 * RTR was found and the request now puts instead of sending an RTS */
int ucp_proto_spec_send_rndv(ucp_request_t *sreq);

/* ucp_tag_rndv_rts_pack: append the trailer, return the new length */
size_t ucp_proto_spec_rts_pack(ucp_request_t *sreq, void *rts, size_t length);

/* ucp_tag_send_nbx / ucp_tag_send_sync_nbx on return: count the send */
void ucp_proto_spec_send_done(ucp_ep_h ep, ucp_tag_t tag,
                              ucs_status_ptr_t ret);


/* For tests and tools: the worker's counters; UCS_ERR_UNSUPPORTED if
 * speculation is off on this worker */
ucs_status_t ucp_proto_spec_worker_counters(ucp_worker_h worker,
                                            ucp_proto_spec_counters_t *cnt);

#endif
