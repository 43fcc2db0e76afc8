/**
 * ucx-spec: speculative rendezvous, receiver side.
 *
 * A receive posted before its send (paper Fig. 3) sends an RTR naming the
 * index of the send it will match: the messages of its envelope that arrived
 * so far plus the receives ahead of it that will take one each.  That count
 * is exact only if every receive ahead that can match the envelope names it
 * fully, so a wildcard ahead blocks RTRs (§3.3.1, Fig. 9).  The envelope and
 * the sender's numbering are learned from an RTS (the only tag message that
 * names its endpoint) and checked again at every RTS: a second sender or a
 * lost count stops speculation for the envelope.
 *
 * The receive stays in the expected queue.  Whatever reaches it first wins:
 *  - eager or RTS: the ordinary path; the RTR is dead at the sender (its
 *    index is taken), so only local state is released;
 *  - RTR-ACK: the sender took the RTR; the receive leaves the queue before
 *    any later message of the envelope can arrive, UCX's ATP completes it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_worker.inl>
#include <ucp/proto/proto_am.inl>
#include <ucp/rndv/rndv.h>
#include <ucp/tag/tag_match.inl>
#include <ucp/tag/tag_rndv.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <inttypes.h>
#include <stdio.h>


/* Carrier of an RTR whose receive went away before the RTR was sent */
static char ucp_proto_spec_dead_carrier;

static void ucp_proto_spec_rtr_state(ucp_proto_spec_rreq_t *sr,
                                     ucp_proto_spec_rtr_state_t state)
{
    static const char *names[] = {
#define UCP_PROTO_SPEC_RTR_STATE_NAME(_name, _desc) _desc,
        UCP_PROTO_SPEC_RTR_STATES(UCP_PROTO_SPEC_RTR_STATE_NAME)
#undef UCP_PROTO_SPEC_RTR_STATE_NAME
    };

    ucp_trace_req(sr->rreq, "spec: pos 0x%" PRIx64 ": %s -> %s", sr->pos,
                  names[sr->state], names[state]);
    sr->state = state;
}

static int ucp_proto_spec_specific(const ucp_proto_spec_worker_t *spec,
                                   ucp_tag_t tag_mask)
{
    return (tag_mask & spec->head.env_mask) == spec->head.env_mask;
}

/* Would a sender use rendezvous for this length (§3.2.1 prediction)?  On
 * v2, where v2 selects "tag/rndv" for a send of it */
static int ucp_proto_spec_predict_rndv(const ucp_proto_spec_worker_t *spec,
                                       ucp_ep_h ep, size_t length)
{
    size_t thresh = spec->config.thresh;

    if (thresh != UCS_MEMUNITS_AUTO) {
        return length >= thresh;
    }

    return spec->v2 ? ucp_proto_spec_v2_predict_rndv(ep, length) :
                      (length >= ucp_ep_config(ep)->tag.rndv.rma_thresh.remote);
}

/* The sender's endpoint of a learned envelope, if it can carry an RTR */
static ucp_ep_h ucp_proto_spec_rx_ep(ucp_proto_spec_worker_t *spec,
                                     const ucp_proto_spec_rx_env_t *env)
{
    const ucp_ep_config_t *config;
    ucp_ep_h ep;

    if (ucp_worker_get_ep_by_id(spec->worker, env->ep_id, &ep) != UCS_OK) {
        return NULL;
    }

    if (ep->flags & (UCP_EP_FLAG_CLOSED | UCP_EP_FLAG_FAILED)) {
        return NULL;
    }

    config = ucp_ep_config(ep);
    if (ucp_ep_config_key_has_tag_lane(&config->key) ||
        (!spec->v2 && (config->rndv.put_zcopy.lanes[0] == UCP_NULL_LANE))) {
        return NULL;
    }

    return ep;
}

void ucp_proto_spec_recv_begin_slow(ucp_worker_h worker, size_t count,
                                    const ucp_request_param_t *param,
                                    ucp_tag_t tag, ucp_tag_t tag_mask)
{
    ucp_proto_spec_worker_t *spec = worker->spec;
    ucp_datatype_t datatype;
    ucp_proto_spec_rx_env_t *env;
    ucp_ep_h ep;

    if (!spec->config.early_progress ||
        !ucp_proto_spec_specific(spec, tag_mask)) {
        return;
    }

    datatype = ucp_request_param_datatype(param);
    if (!UCP_DT_IS_CONTIG(datatype)) {
        return;
    }

    env = ucp_proto_spec_rx_env_get(spec, tag, 0);
    if ((env == NULL) ||
        (env->flags & (UCP_PROTO_SPEC_RX_STOPPED | UCP_PROTO_SPEC_RX_CONFLICT))) {
        return;
    }

    ep = ucp_proto_spec_rx_ep(spec, env);
    if ((ep != NULL) &&
        ucp_proto_spec_predict_rndv(spec, ep,
                                    ucp_contig_dt_length(datatype, count))) {
        /* §3.2.1: an RTS that already arrived must be found, not raced */
        ucp_proto_spec_early_progress(spec);
    }
}

/* Receives ahead of rreq that will take a message of env before it; -1 if
 * one of them cannot be counted (a wildcard, or a cancel in flight) */
static int ucp_proto_spec_count_ahead(ucp_proto_spec_worker_t *spec,
                                      ucp_request_t *rreq,
                                      const ucp_proto_spec_rx_env_t *env)
{
    ucp_tag_match_t *tm            = &spec->worker->tm;
    ucp_request_queue_t *queues[2] = {
        ucp_tag_exp_get_queue_for_tag(tm, rreq->recv.tag.tag),
        &tm->expected.wildcard
    };
    ucp_request_t *req;
    unsigned i;
    int ahead;

    /* A fully specified receive that differs from env only in ignored bits
     * lives in another hash bucket; MPICH, the user of ignored bits, never
     * posts a full mask, and Open MPI ignores none. */
    ahead = 0;
    for (i = 0; i < ucs_static_array_size(queues); ++i) {
        ucs_queue_for_each(req, &queues[i]->queue, recv.queue) {
            if ((req == rreq) ||
                (((req->recv.tag.tag ^ env->tag) & req->recv.tag.tag_mask &
                  spec->head.env_mask) != 0)) {
                continue;
            }

            if (!ucp_proto_spec_specific(spec, req->recv.tag.tag_mask) ||
                ((req->recv.spec != NULL) &&
                 ((ucp_proto_spec_rreq_t*)req->recv.spec)->cancel)) {
                return -1;
            }

            ++ahead;
        }
    }

    return ahead;
}

static void ucp_proto_spec_rtr_dead(ucp_proto_spec_worker_t *spec,
                                    ucp_proto_spec_rreq_t *sr,
                                    int id_released);

static size_t ucp_proto_spec_rtr_pack(void *dest, void *arg)
{
    ucp_request_t *carrier        = arg;
    ucp_proto_spec_rreq_t *sr     = carrier->send.buffer;
    ucp_request_t *rreq           = sr->rreq;
    ucp_proto_spec_rtr_hdr_t *hdr = dest;
    ucp_ep_h ep                   = carrier->send.ep;

    hdr->ep_id   = ucp_ep_remote_id(ep);
    hdr->rreq_id = ucp_send_request_get_id(carrier);
    hdr->tag     = sr->env->tag;
    hdr->pos     = sr->pos;
    hdr->address = (uintptr_t)ucp_proto_spec_rreq_buffer(rreq);
    hdr->length  = ucp_proto_spec_rreq_length(rreq);
    memcpy(hdr + 1, sr->rkey.buffer, sr->rkey.size);
    return ucp_proto_spec_msg_seal(dest, sizeof(*hdr) + sr->rkey.size,
                                   UCP_PROTO_SPEC_MSG_RTR);
}

ucs_status_t ucp_proto_spec_rtr_send(ucp_request_t *carrier,
                                     ucp_lane_index_t lane)
{
    ucp_proto_spec_rreq_t *sr = carrier->send.buffer;
    ucp_worker_h worker       = carrier->send.ep->worker;
    ucp_proto_spec_worker_t *spec = worker->spec;
    size_t rkey_size, length;
    ucs_status_t status;
    ssize_t packed;

    if (carrier->send.buffer == &ucp_proto_spec_dead_carrier) {
        ucp_send_request_id_release(carrier);
        ucp_request_put(carrier);
        return UCS_OK;
    }

    /* The key first, so that a failure drops the RTR before it is sent
     * rather than inside the transport's pack callback */
    rkey_size        = ucp_proto_spec_rkey_packed_size(
                               worker->context,
                               ucp_proto_spec_rreq_md_map(sr->rreq));
    sr->rkey.buffer  = ucs_alloca(rkey_size);
    packed           = ucp_proto_spec_rkey_pack(
                               carrier->send.ep,
                               ucp_proto_spec_rreq_md_map(sr->rreq),
                               ucp_proto_spec_rreq_memh(sr->rreq),
                               ucp_proto_spec_rreq_buffer(sr->rreq),
                               ucp_proto_spec_rreq_length(sr->rreq),
                               sr->rkey.buffer);
    if (packed < 0) {
        ucs_diag("spec: cannot pack the key of receive %p (%s): no RTR",
                 sr->rreq, ucs_status_string((ucs_status_t)packed));
        ucp_proto_spec_rtr_dead(spec, sr, 0);
        ucp_send_request_id_release(carrier);
        ucp_request_put(carrier);
        return UCS_OK;
    }

    sr->rkey.size   = packed;
    length          = sizeof(ucp_proto_spec_rtr_hdr_t) + packed + 1;
    status          = spec->v2 ?
                      ucp_proto_spec_v2_am_send(carrier, lane,
                                                ucp_proto_spec_rtr_pack,
                                                length) :
                      ucp_do_am_single(&carrier->send.uct, UCP_AM_ID_SPEC,
                                       ucp_proto_spec_rtr_pack, length);
    sr->rkey.buffer = NULL;
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }

    if (status != UCS_OK) {
        /* the endpoint is failing: its purge releases the RTR */
        ucs_diag("spec: RTR to %s failed: %s",
                 ucp_ep_peer_name(carrier->send.ep), ucs_status_string(status));
    }

    ucp_proto_spec_rtr_state(sr, UCP_PROTO_SPEC_RTR_OUT);
    UCP_PROTO_SPEC_COUNT(spec, ctl_bytes, length);
    return UCS_OK;
}

static ucs_status_t ucp_proto_spec_progress_rtr(uct_pending_req_t *self)
{
    ucp_request_t *carrier = ucs_container_of(self, ucp_request_t, send.uct);

    return ucp_proto_spec_rtr_send(carrier, carrier->send.lane);
}

static void ucp_proto_spec_rreq_free(ucp_proto_spec_worker_t *spec,
                                     ucp_proto_spec_rreq_t *sr)
{
    ucs_assert(sr->state == UCP_PROTO_SPEC_RTR_NONE);
    if (sr->cancel) {
        ucs_list_del(&sr->cancel_list);
    }

    sr->rreq->recv.spec = NULL;
    ucs_free(sr);
}

/* The receive no longer has an RTR out: the envelope stops counting it */
static void ucp_proto_spec_rtr_detach(ucp_proto_spec_rreq_t *sr)
{
    ucs_list_del(&sr->rtr_list);
    --sr->env->rtr_count;
    if (sr->state == UCP_PROTO_SPEC_RTR_REVOKING) {
        --sr->env->revokes;
    }

    ucp_proto_spec_rtr_state(sr, UCP_PROTO_SPEC_RTR_NONE);
}

/* The RTR is dead at the sender, or never left: release what it held.  With
 * id_released the carrier's id is already gone (endpoint purge). */
static void ucp_proto_spec_rtr_release(ucp_proto_spec_worker_t *spec,
                                       ucp_proto_spec_rreq_t *sr,
                                       int id_released)
{
    ucp_request_t *carrier = sr->rtr_req;

    ucs_assert(sr->state != UCP_PROTO_SPEC_RTR_NONE);

    if (sr->state == UCP_PROTO_SPEC_RTR_QUEUED) {
        /* still queued on the lane: its progress frees it */
        ucs_assert(!id_released);
        ucp_request_reset_super(carrier);
        carrier->send.buffer = &ucp_proto_spec_dead_carrier;
        if (spec->v2) {
            ucp_proto_spec_v2_carrier_dead(carrier);
        }
    } else {
        if (!id_released) {
            ucp_send_request_id_release(carrier);
        }
        ucp_request_put(carrier);
    }

    ucp_proto_spec_rreq_dereg(sr->rreq);
    sr->rtr_req = NULL;
    ucp_proto_spec_rtr_detach(sr);
}

/* The RTR is dead and the receive stays posted; its state goes too unless a
 * deferred cancel still needs it */
static void ucp_proto_spec_rtr_dead(ucp_proto_spec_worker_t *spec,
                                    ucp_proto_spec_rreq_t *sr, int id_released)
{
    ucp_proto_spec_rtr_release(spec, sr, id_released);
    if (!sr->cancel) {
        ucp_proto_spec_rreq_free(spec, sr);
    }
}

/* The carrier is what UCX's ATP handler finds by id and whose super request
 * it completes, as for UCX's own RTR */
static void ucp_proto_spec_carrier_init(ucp_request_t *carrier, ucp_ep_h ep,
                                        ucp_request_t *rreq,
                                        ucp_proto_spec_rreq_t *sr)
{
    carrier->flags             = 0;
    carrier->send.ep           = ep;
    carrier->send.buffer       = sr;
    carrier->send.rndv.mdesc   = NULL;
    carrier->send.lane         = ucp_ep_get_am_lane(ep);
    carrier->send.pending_lane = UCP_NULL_LANE;
    carrier->send.uct.func     = ucp_proto_spec_progress_rtr;
    ucp_request_send_state_reset(carrier, NULL,
                                 UCP_REQUEST_SEND_PROTO_BCOPY_AM);
    ucp_request_set_super(carrier, rreq);
    ucp_send_request_id_alloc(carrier);
}

void ucp_proto_spec_recv_posted_slow(ucp_worker_h worker, ucp_request_t *rreq)
{
    ucp_proto_spec_worker_t *spec = worker->spec;
    ucp_proto_spec_rx_env_t *env;
    const ucp_proto_config_t *rtr_cfg;
    ucp_proto_spec_rreq_t *sr;
    ucp_request_t *carrier;
    ucs_status_t status;
    ucp_ep_h ep;
    int ahead;

    /* Sync sends, non-contiguous and non-host memory: ordinary path */
    if (!ucp_proto_spec_rreq_is_contig(rreq) ||
        !UCP_MEM_IS_HOST(ucp_proto_spec_rreq_mem_type(rreq)) ||
        ucp_proto_spec_rreq_user_memh(rreq) ||
        (rreq->flags & UCP_REQUEST_FLAG_OFFLOADED) ||
        !ucp_proto_spec_specific(spec, rreq->recv.tag.tag_mask)) {
        return;
    }

    env = ucp_proto_spec_rx_env_get(spec, rreq->recv.tag.tag, 0);
    if ((env == NULL) ||
        (env->flags & (UCP_PROTO_SPEC_RX_STOPPED | UCP_PROTO_SPEC_RX_CONFLICT |
                       UCP_PROTO_SPEC_RX_REVOKING))) {
        return;
    }

    ep = ucp_proto_spec_rx_ep(spec, env);
    if ((ep == NULL) ||
        !ucp_proto_spec_predict_rndv(spec, ep,
                                     ucp_proto_spec_rreq_length(rreq))) {
        return;
    }

    /* v2: the RTR stands for UCX's own, which this receive must have */
    rtr_cfg = NULL;
    if (spec->v2) {
        rtr_cfg = ucp_proto_spec_v2_rtr_config(
                ep, rreq, ucp_proto_spec_rreq_length(rreq));
        if (rtr_cfg == NULL) {
            return;
        }
    }

    ahead = ucp_proto_spec_count_ahead(spec, rreq, env);
    if (ahead < 0) {
        UCP_PROTO_SPEC_COUNT(spec, blocked, 1);
        return;
    }

    /* Lives until the RTR is known dead or the ATP completes the receive.
     * An empty map is right for transports without rkeys (CMA). */
    status = ucp_proto_spec_rreq_reg(rreq, ucp_ep_config(ep)->key.rma_bw_md_map,
                                     ucp_proto_spec_rreq_length(rreq));
    if (status != UCS_OK) {
        ucp_proto_spec_rreq_dereg(rreq);
        return;
    }

    sr      = ucs_malloc(sizeof(*sr), "spec_rreq");
    carrier = ucp_request_get(worker);
    if ((sr == NULL) || (carrier == NULL)) {
        ucs_free(sr);
        if (carrier != NULL) {
            ucp_request_put(carrier);
        }
        ucp_proto_spec_rreq_dereg(rreq);
        return;
    }

    sr->rreq    = rreq;
    sr->rtr_req = carrier;
    sr->env     = env;
    sr->pos     = env->epoch | ((env->arrivals + ahead) &
                                UCP_PROTO_SPEC_INDEX_MASK);
    sr->state   = UCP_PROTO_SPEC_RTR_NONE;
    sr->cancel  = 0;
    rreq->recv.spec = sr;
    ucs_list_add_tail(&env->rtrs, &sr->rtr_list);
    ++env->rtr_count;
    ucp_proto_spec_rtr_state(sr, UCP_PROTO_SPEC_RTR_QUEUED);

    if (spec->v2) {
        ucp_proto_spec_v2_carrier_init(carrier, ep, rreq, sr, rtr_cfg);
    } else {
        ucp_proto_spec_carrier_init(carrier, ep, rreq, sr);
    }

    UCP_PROTO_SPEC_COUNT(spec, rtr_sent, 1);
    ucp_trace_req(rreq, "spec: RTR pos 0x%" PRIx64 " to %s", sr->pos,
                  ucp_ep_peer_name(ep));
    ucp_request_send(carrier);
}

/* An RTS of a sender with speculation on: learn or check the envelope */
static void ucp_proto_spec_rts_arrived(ucp_proto_spec_worker_t *spec,
                                       ucp_proto_spec_rx_env_t *env,
                                       ucp_tag_t tag, const void *rts,
                                       size_t rts_length)
{
    const ucp_rndv_rts_hdr_t *hdr = rts;
    ucp_proto_spec_rts_trailer_t trailer;
    uint64_t epoch, index;
    unsigned flags;
    ucp_ep_h old_ep;

    if (rts_length < (sizeof(*hdr) + sizeof(trailer))) {
        return;
    }

    memcpy(&trailer, UCS_PTR_BYTE_OFFSET(rts, rts_length - sizeof(trailer)),
           sizeof(trailer));
    if (trailer.magic != UCP_PROTO_SPEC_RTS_MAGIC) {
        return; /* the sender has speculation off */
    }

    epoch = trailer.pos & UCP_PROTO_SPEC_POS_MASK & ~UCP_PROTO_SPEC_INDEX_MASK;
    index = trailer.pos & UCP_PROTO_SPEC_INDEX_MASK;
    flags = trailer.pos >> UCP_PROTO_SPEC_FLAGS_SHIFT;

    if (env == NULL) {
        env = ucp_proto_spec_rx_env_get(spec, tag, 1);
        if (env == NULL) {
            return;
        }
        env->ep_id = hdr->sreq.ep_id;
        env->epoch = epoch;
    } else if (env->ep_id != hdr->sreq.ep_id) {
        if ((ucp_worker_get_ep_by_id(spec->worker, env->ep_id, &old_ep) ==
             UCS_OK) && !(env->flags & UCP_PROTO_SPEC_RX_CONFLICT)) {
            /* two senders, one tag: no index can be trusted any more */
            ucs_diag("spec: tag 0x%" PRIx64 " sent by two endpoints; "
                     "speculation stops for it (tags must name the sender)",
                     env->tag);
            env->flags |= UCP_PROTO_SPEC_RX_CONFLICT;
            UCP_PROTO_SPEC_COUNT(spec, conflicts, 1);
        }
        env->ep_id = hdr->sreq.ep_id;
        env->epoch = epoch;
    } else if (env->epoch != epoch) {
        /* the sender forgot the envelope; RTRs of the old epoch are dropped
         * there, so just renumber */
        env->epoch = epoch;
    } else if ((env->arrivals != index) &&
               !(env->flags & UCP_PROTO_SPEC_RX_CONFLICT)) {
        ucs_diag("spec: tag 0x%" PRIx64 " message %" PRIu64 " arrived, %"
                 PRIu64 " expected; speculation stops for it", env->tag,
                 index, env->arrivals);
        env->flags |= UCP_PROTO_SPEC_RX_CONFLICT;
        UCP_PROTO_SPEC_COUNT(spec, conflicts, 1);
    }

    env->arrivals = index + 1;
    ucs_trace("spec: tag 0x%" PRIx64 " from ep id 0x%" PRIx64 " message %"
              PRIu64, env->tag, env->ep_id, index);

    if (flags & UCP_PROTO_SPEC_RTS_FLAG_STOP) {
        env->flags |= UCP_PROTO_SPEC_RX_STOPPED;
        UCP_PROTO_SPEC_COUNT(spec, stop_recv, 1);
    }

    if (flags & UCP_PROTO_SPEC_RTS_FLAG_RESUME) {
        env->flags &= ~UCP_PROTO_SPEC_RX_STOPPED;
        UCP_PROTO_SPEC_COUNT(spec, resume_recv, 1);
    }

    /* the sender side's decline rule (spec_send.c) looks at these: we fetch
     * this message, and the peer may have stopped or resumed our RTRs */
    if (ucp_worker_get_ep_by_id(spec->worker, hdr->sreq.ep_id, &old_ep) !=
        UCS_OK) {
        return;
    }
    ucp_proto_spec_peer_fetched(spec, old_ep);
    if (flags & (UCP_PROTO_SPEC_RTS_FLAG_STOP |
                 UCP_PROTO_SPEC_RTS_FLAG_RESUME)) {
        ucp_proto_spec_peer_stopped(spec, old_ep,
                                    flags & UCP_PROTO_SPEC_RTS_FLAG_STOP);
    }
}

void ucp_proto_spec_msg_arrived_slow(ucp_worker_h worker, ucp_tag_t tag,
                                     ucp_request_t *rreq, const void *rts,
                                     size_t rts_length)
{
    ucp_proto_spec_worker_t *spec = worker->spec;
    ucp_proto_spec_rreq_t *sr;
    ucp_proto_spec_rx_env_t *env;

    if ((rreq != NULL) && (rreq->recv.spec != NULL)) {
        /* The message is this receive's match, so its index is the RTR's:
         * the sender drops that RTR (Fig. 7 case 2, Fig. 10 case 2) */
        sr = rreq->recv.spec;
        if (sr->state != UCP_PROTO_SPEC_RTR_NONE) {
            UCP_PROTO_SPEC_COUNT(spec, rtr_dead, 1);
            ucp_proto_spec_rtr_release(spec, sr, 0);
        }
        if (sr->cancel) {
            UCP_PROTO_SPEC_COUNT(spec, cancel_failed, 1);
        }
        ucp_proto_spec_rreq_free(spec, sr);
    }

    env = ucp_proto_spec_rx_env_get(spec, tag, 0);
    if (rts != NULL) {
        ucp_proto_spec_rts_arrived(spec, env, tag, rts, rts_length);
    } else if (env != NULL) {
        ++env->arrivals;
    }
}

/*
 * Shared memory, a receive that matches an RTS at its post: offer the copy
 * (spec_claim.c) rather than get it in this call.  The sender may put it
 * while we compute; whichever side is next in the library copies.
 */
int ucp_proto_spec_rts_matched(ucp_worker_h worker, ucp_request_t *rreq,
                               const void *rts_buf, size_t rts_length)
{
    ucp_proto_spec_worker_t *spec = worker->spec;
    const ucp_rndv_rts_hdr_t *rts = rts_buf;
    const ucp_proto_config_t *rtr_cfg = NULL;
    ucp_proto_spec_offer_hdr_t *offer;
    ucp_proto_spec_claim_ref_t ref;
    ucp_request_t *carrier;
    ucs_status_t status;
    size_t rkey_length;
    ssize_t packed;
    ucp_ep_h ep;

    if ((spec == NULL) || (rts->address == 0) ||
        (ucp_proto_spec_rreq_length(rreq) < rts->size) ||
        !ucp_proto_spec_rreq_is_contig(rreq) ||
        !UCP_MEM_IS_HOST(ucp_proto_spec_rreq_mem_type(rreq)) ||
        ucp_proto_spec_rreq_user_memh(rreq) ||
        (ucp_worker_get_ep_by_id(worker, rts->sreq.ep_id, &ep) != UCS_OK) ||
        (ep->flags & (UCP_EP_FLAG_CLOSED | UCP_EP_FLAG_FAILED)) ||
        !ucp_proto_spec_idle_copy_usable(spec, ep)) {
        return 0;
    }

    /* v2: the put's ATP completes the carrier as UCX's own RTR request */
    if (spec->v2) {
        rtr_cfg = ucp_proto_spec_v2_rtr_config(ep, rreq, rts->size);
        if (rtr_cfg == NULL) {
            return 0;
        }
    }

    status = ucp_proto_spec_rreq_reg(rreq, ucp_ep_config(ep)->key.rma_bw_md_map,
                                     rts->size);
    if (status != UCS_OK) {
        goto err_dereg;
    }

    offer  = ucs_alloca(sizeof(*offer) + ucp_ep_config(ep)->rndv.rkey_size);
    packed = ucp_proto_spec_rkey_pack(ep, ucp_proto_spec_rreq_md_map(rreq),
                                      ucp_proto_spec_rreq_memh(rreq),
                                      ucp_proto_spec_rreq_buffer(rreq),
                                      rts->size, offer + 1);
    if (packed < 0) {
        goto err_dereg;
    }

    carrier = ucp_request_get(worker);
    if (carrier == NULL) {
        goto err_dereg;
    }

    if (ucp_proto_spec_claim_open(spec, &ref) != UCS_OK) {
        goto err_put_carrier;
    }

    if (spec->v2) {
        ucp_proto_spec_v2_offer_carrier_init(carrier, ep, rreq, rts);
    } else {
        ucp_proto_spec_carrier_init(carrier, ep, rreq, NULL);
    }
    rkey_length = rts_length - sizeof(*rts);
    if (ucp_proto_spec_offer_get(spec, ep, &ref, 1, rreq, carrier, rts,
                                 rts + 1, rkey_length) != UCS_OK) {
        goto err_close;
    }

    offer->ep_id   = ucp_ep_remote_id(ep);
    offer->sreq_id = rts->sreq.req_id;
    offer->rreq_id = ucp_send_request_get_id(carrier);
    offer->address = (uintptr_t)ucp_proto_spec_rreq_buffer(rreq);
    offer->length  = rts->size;
    offer->claim   = ref;
    if (ucp_proto_spec_ctl_send(ep, UCP_PROTO_SPEC_MSG_OFFER, offer,
                                sizeof(*offer) + packed) != UCS_OK) {
        goto err_close;
    }

    if (spec->v2) {
        ucp_proto_spec_v2_carrier_own(carrier, rreq, rtr_cfg, rts->size);
    }

    /* as ucp_tag_rndv_matched and ucp_rndv_receive would */
    rreq->recv.tag.info.sender_tag = ucp_tag_hdr_from_rts(rts)->tag;
    rreq->recv.tag.info.length     = rts->size;
    rreq->status                   = UCS_OK;
    rreq->recv.remaining           = rts->size;
    UCP_PROTO_SPEC_COUNT(spec, copy_offered, 1);
    ucp_trace_req(rreq, "spec: offers the copy of %zu bytes to %s", rts->size,
                  ucp_ep_peer_name(ep));
    return 1;

err_close:
    ucp_proto_spec_claim_close(spec, &ref);
    ucp_send_request_id_release(carrier);
err_put_carrier:
    ucp_request_put(carrier);
err_dereg:
    ucp_proto_spec_rreq_dereg(rreq);
    return 0;
}

/* An RTR-ACK's offer of the copy: claimed, the receive gets it */
static void ucp_proto_spec_rtr_ack_offer(ucp_proto_spec_worker_t *spec,
                                         ucp_request_t *carrier,
                                         ucp_request_t *rreq,
                                         const ucp_proto_spec_rtr_ack_hdr_t *hdr,
                                         size_t length)
{
    const ucp_proto_spec_rtr_ack_offer_t *offer = (const void*)(hdr + 1);
    ucp_ep_h ep                                 = carrier->send.ep;
    ucp_rndv_rts_hdr_t rts                      = {};

    if (length < (sizeof(*hdr) + sizeof(*offer))) {
        return;
    }

    /* what ucp_rndv_receive needs of the RTS that was never sent */
    ucp_tag_hdr_from_rts(&rts)->tag = hdr->tag;
    rts.sreq.ep_id                  = ucp_ep_local_id(ep);
    rts.sreq.req_id                 = offer->sreq_id;
    rts.address                     = offer->address;
    rts.size                        = hdr->length;
    rts.opcode                      = UCP_RNDV_RTS_TAG_OK;
    ucp_proto_spec_offer_get(spec, ep, &offer->claim, 0, rreq, carrier, &rts,
                             offer + 1,
                             length - sizeof(*hdr) - sizeof(*offer));
}

ucs_status_t
ucp_proto_spec_rtr_ack_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    ucp_worker_h worker                     = arg;
    ucp_proto_spec_worker_t *spec           = worker->spec;
    const ucp_proto_spec_rtr_ack_hdr_t *hdr = data;
    const ucp_proto_config_t *rtr_cfg;
    ucp_proto_spec_rreq_t *sr;
    ucp_request_t *carrier, *rreq;

    UCP_SEND_REQUEST_GET_BY_ID(&carrier, worker, hdr->rreq_id, 0,
                               return UCS_OK, "SPEC_RTR_ACK %p", hdr);

    sr = carrier->send.buffer;
    if ((spec == NULL) || (sr == NULL) ||
        (sr == (void*)&ucp_proto_spec_dead_carrier)) {
        ucs_error("spec: RTR-ACK 0x%" PRIx64 " for a receive that has gone",
                  hdr->rreq_id);
        return UCS_OK;
    }

    rreq = sr->rreq;
    if (!ucp_tag_exp_remove(&worker->tm, rreq)) {
        ucs_error("spec: RTR-ACK for receive %p that is not posted", rreq);
        return UCS_OK;
    }

    rreq->recv.tag.info.sender_tag = hdr->tag;
    rreq->recv.tag.info.length     = hdr->length;
    rreq->status                   = UCS_OK;
    if (!spec->v2) {
        rreq->recv.remaining = hdr->length;
    }

    /* The RTR-ACK stands for the message in the envelope's order */
    ++sr->env->arrivals;
    if (sr->state == UCP_PROTO_SPEC_RTR_REVOKING) {
        /* taken before the revoke reached the sender: a cancel ahead fails */
        sr->env->flags |= UCP_PROTO_SPEC_RX_TAKEN;
    }
    if (sr->cancel) {
        UCP_PROTO_SPEC_COUNT(spec, cancel_failed, 1);
    }

    ucp_proto_spec_rtr_detach(sr);
    carrier->send.buffer = NULL; /* UCX's ATP or purge finishes the carrier */
    rtr_cfg              = ucp_proto_spec_v2_rreq_rtr_config(sr);
    ucp_proto_spec_rreq_free(spec, sr);
    UCP_PROTO_SPEC_COUNT(spec, rtr_ack_recv, 1);
    ucp_trace_req(rreq, "spec: RTR taken, length %" PRIu64, hdr->length);
    /* v2: the receive may be complete now, its data came first */
    if (!spec->v2 ||
        !ucp_proto_spec_v2_rtr_taken(carrier, rreq, rtr_cfg, hdr->length)) {
        ucp_proto_spec_rtr_ack_offer(spec, carrier, rreq, hdr, length);
    }
    return UCS_OK;
}

/* Once every revoked RTR of the envelope is known dead, none behind the
 * cancelled receives can be used any more, unless one was taken meanwhile,
 * in which case the cancels fail (the receives stay posted, MPI allows it) */
static void ucp_proto_spec_finish_cancels(ucp_proto_spec_worker_t *spec,
                                          ucp_proto_spec_rx_env_t *env)
{
    int taken = !!(env->flags & UCP_PROTO_SPEC_RX_TAKEN);
    ucp_proto_spec_rreq_t *sr, *tmp;
    ucp_request_t *rreq;

    if ((env->revokes != 0) || !(env->flags & UCP_PROTO_SPEC_RX_REVOKING)) {
        return;
    }

    env->flags &= ~(UCP_PROTO_SPEC_RX_REVOKING | UCP_PROTO_SPEC_RX_TAKEN);
    ucs_list_for_each_safe(sr, tmp, &env->cancels, cancel_list) {
        rreq = sr->rreq;
        ucs_assert(sr->state == UCP_PROTO_SPEC_RTR_NONE);
        ucp_proto_spec_rreq_free(spec, sr);
        if (taken) {
            UCP_PROTO_SPEC_COUNT(spec, cancel_failed, 1);
        } else if (ucp_tag_exp_remove(&spec->worker->tm, rreq)) {
            ucp_request_complete_tag_recv(rreq, UCS_ERR_CANCELED);
        }
    }
}

ucs_status_t
ucp_proto_spec_revoke_ack_handler(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    ucp_worker_h worker                        = arg;
    ucp_proto_spec_worker_t *spec              = worker->spec;
    const ucp_proto_spec_revoke_ack_hdr_t *hdr = data;
    ucp_proto_spec_rx_env_t *env;
    ucp_proto_spec_rreq_t *sr;

    if (spec == NULL) {
        return UCS_OK;
    }

    UCP_PROTO_SPEC_COUNT(spec, revoke_ack_recv, 1);
    env = ucp_proto_spec_rx_env_get(spec, hdr->tag, 0);
    if (env == NULL) {
        return UCS_OK;
    }

    /* By position, not by id: the RTR may have been taken or found dead
     * meanwhile, and its id reused */
    ucs_list_for_each(sr, &env->rtrs, rtr_list) {
        if ((sr->pos == hdr->pos) &&
            (sr->state == UCP_PROTO_SPEC_RTR_REVOKING)) {
            ucp_proto_spec_rtr_dead(spec, sr, 0);
            break;
        }
    }

    ucp_proto_spec_finish_cancels(spec, env);

    return UCS_OK;
}

/* A cancel that cannot be made safe fails, as MPI allows: the receive
 * stays posted and completes when its message comes, which is what an RTR
 * still out at the sender may deliver.  REVOKEs already sent still end
 * their RTRs, and no new RTR leaves meanwhile. */
static int ucp_proto_spec_cancel_fail(ucp_proto_spec_worker_t *spec,
                                      ucp_proto_spec_rx_env_t *env,
                                      ucp_request_t *rreq, const char *why)
{
    ucs_diag("spec: %s: receive %p is not cancelled", why, rreq);
    if (env->revokes > 0) {
        env->flags |= UCP_PROTO_SPEC_RX_REVOKING;
    }
    UCP_PROTO_SPEC_COUNT(spec, cancel_failed, 1);
    return 1;
}

int ucp_proto_spec_recv_cancel(ucp_worker_h worker, ucp_request_t *rreq)
{
    ucp_proto_spec_worker_t *spec = worker->spec;
    ucp_proto_spec_revoke_hdr_t revoke;
    ucp_proto_spec_rreq_t *sr, *tmp;
    ucp_proto_spec_rx_env_t *env;
    ucp_request_t *carrier;

    /* Only a fully specified receive can have RTRs behind it (a wildcard
     * ahead blocks them) */
    if ((spec == NULL) ||
        !ucp_proto_spec_specific(spec, rreq->recv.tag.tag_mask)) {
        return 0;
    }

    sr = rreq->recv.spec;
    if ((sr != NULL) && sr->cancel) {
        return 1; /* already waiting */
    }

    env = ucp_proto_spec_rx_env_get(spec, rreq->recv.tag.tag, 0);
    if (env == NULL) {
        return 0;
    }

    /* Every RTR of this receive and of the receives behind it counted this
     * receive; once it is gone their indices are wrong.  Revoke them. */
    ucs_list_for_each_safe(sr, tmp, &env->rtrs, rtr_list) {
        if ((sr->rreq->recv.tag.sn < rreq->recv.tag.sn) ||
            (sr->state == UCP_PROTO_SPEC_RTR_REVOKING)) {
            continue;
        }

        if (sr->state == UCP_PROTO_SPEC_RTR_QUEUED) {
            /* never left: nothing to ask the sender */
            ucp_proto_spec_rtr_dead(spec, sr, 0);
            continue;
        }

        carrier        = sr->rtr_req;
        revoke.ep_id   = ucp_ep_remote_id(carrier->send.ep);
        revoke.rreq_id = ucp_send_request_get_id(carrier);
        revoke.tag     = env->tag;
        revoke.pos     = sr->pos;
        if (ucp_proto_spec_ctl_send(carrier->send.ep, UCP_PROTO_SPEC_MSG_REVOKE,
                                    &revoke, sizeof(revoke)) != UCS_OK) {
            return ucp_proto_spec_cancel_fail(spec, env, rreq,
                                              "cannot send REVOKE");
        }

        ucp_proto_spec_rtr_state(sr, UCP_PROTO_SPEC_RTR_REVOKING);
        ++env->revokes;
        UCP_PROTO_SPEC_COUNT(spec, revoke_sent, 1);
    }

    sr = rreq->recv.spec;
    if (env->revokes == 0) {
        /* nothing had left: the ordinary cancel is safe */
        if (sr != NULL) {
            ucp_proto_spec_rreq_free(spec, sr);
        }
        return 0;
    }

    if (sr == NULL) {
        sr = ucs_calloc(1, sizeof(*sr), "spec_rreq");
        if (sr == NULL) {
            return ucp_proto_spec_cancel_fail(spec, env, rreq, "no memory");
        }
        sr->rreq        = rreq;
        sr->env         = env;
        rreq->recv.spec = sr;
    }

    sr->cancel  = 1;
    env->flags |= UCP_PROTO_SPEC_RX_REVOKING;
    ucs_list_add_tail(&env->cancels, &sr->cancel_list);
    UCP_PROTO_SPEC_COUNT(spec, cancel_deferred, 1);
    ucp_trace_req(rreq, "spec: cancel waits for %u revokes", env->revokes);
    return 1;
}

/* An RTR carrier's endpoint failed, or the lane it waited on was purged:
 * nonzero if handled.  With @a id_released UCX released its id already, as
 * its v1 purge does. */
int ucp_proto_spec_carrier_purge(ucp_request_t *req, ucs_status_t status,
                                 int id_released)
{
    ucp_proto_spec_worker_t *spec;
    ucp_proto_spec_rreq_t *sr;
    ucp_proto_spec_rx_env_t *env;

    if (req->send.buffer == &ucp_proto_spec_dead_carrier) {
        if (!id_released) {
            ucp_send_request_id_release(req);
        }
        ucp_request_put(req);
        return 1;
    }

    sr = req->send.buffer;
    if (sr == NULL) {
        return 0; /* taken: UCX fails the receive as for its own RTR */
    }

    /* The peer is gone with the RTR: the receive stays posted for another
     * sender, as a stock UCX receive would */
    spec = req->send.ep->worker->spec;
    env  = sr->env;
    ucs_debug("spec: RTR of receive %p dropped with its endpoint: %s",
              sr->rreq, ucs_status_string(status));
    if (sr->state == UCP_PROTO_SPEC_RTR_QUEUED) {
        /* purged from the lane: released as an RTR that left */
        ucp_proto_spec_rtr_state(sr, UCP_PROTO_SPEC_RTR_OUT);
    }
    ucp_proto_spec_rtr_dead(spec, sr, id_released);
    ucp_proto_spec_finish_cancels(spec, env);
    return 1;
}

int ucp_proto_spec_rtr_purge(ucp_request_t *req, ucs_status_t status)
{
    return (req->send.uct.func == ucp_proto_spec_progress_rtr) &&
           ucp_proto_spec_carrier_purge(req, status, 1);
}

void ucp_proto_spec_recv_ep_cleanup(ucp_proto_spec_worker_t *spec, ucp_ep_h ep)
{
    ucp_proto_spec_rreq_t *sr, *tmp;
    ucp_proto_spec_rx_env_t *env;

    /* The endpoint goes with RTRs out (close, or worker destroy): their
     * receives stay posted for the ordinary path, as with a failed peer.
     * Unsent carriers were purged with the lanes' pending queues. */
    ucs_list_for_each(env, &spec->rx_lru, lru) {
        ucs_list_for_each_safe(sr, tmp, &env->rtrs, rtr_list) {
            if (sr->rtr_req->send.ep != ep) {
                continue;
            }

            ucs_debug("spec: RTR of receive %p dropped with endpoint %p",
                      sr->rreq, ep);
            ucp_proto_spec_rtr_dead(spec, sr, 0);
        }

        ucp_proto_spec_finish_cancels(spec, env);
    }
}
