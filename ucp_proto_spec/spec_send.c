/**
 * ucx-spec: speculative rendezvous, sender side.
 *
 * Every tag send of an envelope (endpoint, tag) takes the next index.  An RTR
 * names the index of the send its receive will match, so the sender uses it
 * for that send and no other:
 *  - RTR for a send already gone with an RTS: the two crossed (paper Fig. 7
 *    case 2); dropped.  The receiver takes the RTS as usual.
 *  - RTR for a send already gone eager: the receiver mispredicted (Fig. 10);
 *    dropped.  This replaces the paper's Eager-flag and its stop/resume
 *    handshake, which exist only because the paper cannot tell whose RTR it is.
 *  - RTR for a send not posted yet: queued; the send finds it (Fig. 3).
 * A send that takes an RTR sends RTR-ACK first (Fig. 8 case 1), puts the data
 * through UCX's own RTR path and finishes with UCX's ATP.
 *
 * Deadlock freedom (§3.4): a rendezvous send either finds its RTR or sends an
 * RTS, and the receiver always serves an RTS; dropping an RTR is always safe.
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
#include <ucp/rndv/rndv.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <inttypes.h>
#include <stdio.h>


static uint64_t ucp_proto_spec_tx_pos(const ucp_proto_spec_tx_env_t *env)
{
    return env->epoch | (env->next & UCP_PROTO_SPEC_INDEX_MASK);
}

/* Can this send take an RTR at all?  Otherwise it goes the ordinary way.
 * v2 finds the protocol that moves the data itself, or the send sends its
 * RTS after all (spec_v2.c). */
static int ucp_proto_spec_send_fits(const ucp_proto_spec_worker_t *spec,
                                    const ucp_request_t *sreq)
{
    const ucp_ep_config_t *config = ucp_ep_config(sreq->send.ep);
    const ucp_ep_rndv_zcopy_config_t *put_zcopy = &config->rndv.put_zcopy;

    if (spec->v2) {
        return ucp_proto_spec_v2_sreq_fits(sreq);
    }

    return !(sreq->flags & (UCP_REQUEST_FLAG_SYNC | UCP_REQUEST_FLAG_OFFLOADED)) &&
           UCP_DT_IS_CONTIG(sreq->send.datatype) &&
           UCP_MEM_IS_HOST(sreq->send.mem_type) &&
           (put_zcopy->lanes[0] != UCP_NULL_LANE) &&
           (sreq->send.length >= put_zcopy->min) &&
           ((sreq->send.length <= put_zcopy->max) || put_zcopy->split);
}

/*
 * Beyond the paper.  On shared memory the put of a taken RTR is a CPU copy by
 * the sender, where the RTS path has the receiver copy (get).  When both
 * sides of a pair exchange at once, their RTRs cross: one direction's RTRs
 * come too late and the peer stops them (stop-RTR), while the other
 * direction's are taken, so one process ends up doing both copies and the
 * exchange takes twice as long.  A sender whose own RTRs the peer stopped
 * therefore declines the peer's RTRs too; its usage factor falls and it
 * stops them in turn, and both sides re-probe after their back-off.  The
 * same happens when the RTRs do not cross but the pair falls out of phase
 * (specrdv's ring delivers them in time): the process ahead sends an RTS,
 * the one behind fetches that message in its receive and puts its own
 * into the RTR it holds, both copies again.  So a sender that has just
 * fetched one of the peer's messages declines the peer's next RTRs (two),
 * and each process copies what it receives, as stock UCX does.  With RDMA
 * the NIC moves the data and there is nothing to balance.
 */
static int ucp_proto_spec_decline(ucp_proto_spec_worker_t *spec,
                                  const ucp_request_t *sreq)
{
    ucp_ep_h ep = sreq->send.ep;
    ucp_lane_index_t lane = ucp_ep_config(ep)->rndv.put_zcopy.lanes[0];

    /* v2 picks the lanes per message: the endpoint's own transport says */
    if (lane == UCP_NULL_LANE) {
        lane = ucp_ep_get_am_lane(ep);
    }

    return spec->config.shm_balance && ucp_proto_spec_lane_is_shm(ep, lane) &&
           ucp_proto_spec_peer_declines(spec, ep);
}

/* §3.6: judge the RTR usage factor before sending an RTS; re-probe after an
 * exponential back-off (beyond the paper) */
static unsigned ucp_proto_spec_adapt(ucp_proto_spec_worker_t *spec,
                                     ucp_proto_spec_tx_env_t *env)
{
    const ucp_proto_spec_config_t *config = &spec->config;
    unsigned flags                        = 0;

    if (env->flags & UCP_PROTO_SPEC_TX_STOPPED) {
        if (++env->stopped_sends < env->backoff) {
            return 0;
        }

        env->flags        &= ~UCP_PROTO_SPEC_TX_STOPPED;
        env->stopped_sends = 0;
        env->rtr_recv      = env->rtr_used = 0;
        env->backoff       = ucs_min(env->backoff * 2,
                                     config->adapt_backoff_max);
        UCP_PROTO_SPEC_COUNT(spec, resume_sent, 1);
        return UCP_PROTO_SPEC_RTS_FLAG_RESUME;
    }

    if ((config->adapt_thresh > 0) &&
        (env->rtr_recv >= config->adapt_min_sample)) {
        if (env->rtr_used < (config->adapt_thresh * env->rtr_recv)) {
            env->flags        |= UCP_PROTO_SPEC_TX_STOPPED;
            env->stopped_sends = 0;
            ucp_proto_spec_tx_env_drop_upto(spec, env,
                                            UCP_PROTO_SPEC_POS_MASK);
            flags = UCP_PROTO_SPEC_RTS_FLAG_STOP;
            UCP_PROTO_SPEC_COUNT(spec, stop_sent, 1);
        } else {
            /* a good window: start a new one, and forgive past stops */
            env->backoff = config->adapt_backoff;
        }
        env->rtr_recv = env->rtr_used = 0;
    }

    return flags;
}

/* UCX's RTR header and key for a send that takes @a entry */
size_t ucp_proto_spec_rtr_build(ucp_request_t *sreq,
                                const ucp_proto_spec_rtrq_entry_t *entry,
                                ucp_rndv_rtr_hdr_t *hdr)
{
    hdr->sreq_id = ucp_send_request_get_id(sreq);
    hdr->rreq_id = entry->rreq_id;
    hdr->address = entry->address;
    hdr->size    = ucp_proto_spec_sreq_length(sreq); /* the receive may be
                                                        larger */
    hdr->offset  = 0;
    memcpy(hdr + 1, entry->rkey, entry->rkey_length);
    return sizeof(*hdr) + entry->rkey_length;
}

void ucp_proto_spec_rtrq_remove(ucp_proto_spec_tx_env_t *env,
                                ucp_proto_spec_rtrq_entry_t *entry)
{
    ucs_list_del(&entry->list);
    --env->rtrq_length;
    ucs_free(entry);
}

/* Runs from the caller's ucp_request_send(), right after the hook chose the
 * RTR: hand the request to UCX's RTR handler, which sets up the put and the
 * ATP exactly as for a UCX rendezvous with a receiver-sent RTR */
static ucs_status_t ucp_proto_spec_progress_rtr_put(uct_pending_req_t *self)
{
    ucp_request_t *sreq = ucs_container_of(self, ucp_request_t, send.uct);
    ucp_worker_h worker = sreq->send.ep->worker;
    ucp_proto_spec_worker_t *spec = worker->spec;
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;
    ucp_rndv_rtr_hdr_t *hdr;
    size_t length;

    env = ucp_proto_spec_tx_env_get(spec, sreq->send.ep,
                                    sreq->send.msg_proto.tag, 0);
    ucs_assert_always(env != NULL);
    entry = ucp_proto_spec_tx_env_find(env, sreq->send.spec_pos);
    ucs_assert_always(entry != NULL);

    hdr    = ucs_alloca(sizeof(*hdr) + entry->rkey_length);
    length = ucp_proto_spec_rtr_build(sreq, entry, hdr);
    ucp_proto_spec_rtrq_remove(env, entry);

    ucp_am_handlers[UCP_AM_ID_RNDV_RTR]->cb(worker, hdr, length, 0);
    return UCS_OK;
}

/* The copy is offered: whoever claims it moves the request on */
static ucs_status_t ucp_proto_spec_progress_offered(uct_pending_req_t *self)
{
    return UCS_OK;
}

/* Room for the key ucp_proto_spec_sreq_key_pack packs */
static size_t ucp_proto_spec_sreq_key_size(const ucp_proto_spec_worker_t *spec,
                                           const ucp_request_t *sreq)
{
    return spec->v2 ? ucp_proto_spec_v2_sreq_key_size(sreq) :
                      ucp_ep_config(sreq->send.ep)->rndv.rkey_size;
}

/* The key the receiver gets @a sreq's buffer with, and its address, as the
 * RTS would carry them; negative if there is none */
static ssize_t ucp_proto_spec_sreq_key_pack(ucp_proto_spec_worker_t *spec,
                                            ucp_request_t *sreq, void *buffer,
                                            uint64_t *address_p)
{
    ucp_ep_h ep = sreq->send.ep;

    if (spec->v2) {
        return ucp_proto_spec_v2_sreq_key_pack(sreq, buffer, address_p);
    }

    if (ucp_proto_spec_sreq_user_memh(sreq) ||
        (ucp_request_send_buffer_reg(sreq, ucp_ep_config(ep)->key.rma_bw_md_map,
                                     UCT_MD_MEM_FLAG_HIDE_ERRORS) != UCS_OK)) {
        return UCS_ERR_UNSUPPORTED;
    }

    *address_p = (uintptr_t)sreq->send.buffer;
    return ucp_proto_spec_rkey_pack(ep, ucp_proto_spec_sreq_md_map(sreq),
                                    ucp_proto_spec_sreq_memh(sreq),
                                    sreq->send.buffer, sreq->send.length,
                                    buffer);
}

int ucp_proto_spec_send_offer(ucp_proto_spec_worker_t *spec,
                              ucp_request_t *sreq,
                              ucp_proto_spec_tx_env_t *env,
                              ucp_proto_spec_rtrq_entry_t *entry,
                              const ucp_proto_spec_rtr_ack_hdr_t *ack)
{
    ucp_ep_h ep = sreq->send.ep;
    ucp_proto_spec_rtr_ack_offer_t *offer;
    ucp_proto_spec_claim_ref_t ref;
    ucp_rndv_rtr_hdr_t *rtr;
    size_t rtr_length;
    uint64_t address;
    ssize_t packed;
    void *msg;

    if (!ucp_proto_spec_idle_copy_usable(spec, ep)) {
        return 0;
    }

    msg    = ucs_alloca(sizeof(*ack) + sizeof(*offer) +
                        ucp_proto_spec_sreq_key_size(spec, sreq));
    offer  = UCS_PTR_BYTE_OFFSET(msg, sizeof(*ack));
    packed = ucp_proto_spec_sreq_key_pack(spec, sreq, offer + 1, &address);
    if ((packed < 0) || (ucp_proto_spec_claim_open(spec, &ref) != UCS_OK)) {
        return 0;
    }

    rtr        = ucs_alloca(sizeof(*rtr) + entry->rkey_length);
    rtr_length = ucp_proto_spec_rtr_build(sreq, entry, rtr);
    if (ucp_proto_spec_offer_put(spec, ep, &ref, 1, rtr, rtr + 1,
                                 rtr_length - sizeof(*rtr)) != UCS_OK) {
        ucp_proto_spec_claim_close(spec, &ref);
        return 0;
    }

    memcpy(msg, ack, sizeof(*ack));
    offer->sreq_id = ucp_send_request_get_id(sreq);
    offer->address = address;
    offer->claim   = ref;
    if (ucp_proto_spec_ctl_send(ep, UCP_PROTO_SPEC_MSG_RTR_ACK, msg,
                                sizeof(*ack) + sizeof(*offer) + packed) !=
        UCS_OK) {
        ucp_proto_spec_claim_close(spec, &ref);
        return 0;
    }

    ucp_proto_spec_rtrq_remove(env, entry);
    UCP_PROTO_SPEC_COUNT(spec, copy_offered, 1);
    return 1;
}

/* §3.2.2: whether the pass may find an RTR that already arrived: on an
 * envelope whose receiver sends them (where it does not, as for sizes it
 * predicts eager, the pass only moves UCP's work into the send: 9 % slower
 * in an exchange of 128 KB over posix+cma on v2), unless adaptation stopped
 * them */
static int ucp_proto_spec_send_early_pays(const ucp_proto_spec_tx_env_t *env)
{
    return (env != NULL) &&
           ((env->flags & (UCP_PROTO_SPEC_TX_RTRS |
                           UCP_PROTO_SPEC_TX_STOPPED)) ==
            UCP_PROTO_SPEC_TX_RTRS);
}

/*
 * v2: the pass runs before the protocol starts, since inside "tag/rndv" the
 * request is one UCX tracks, which a failure found by progress would purge
 * under its own call.  Whether v2 will make the send a rendezvous takes a
 * selection lookup, asked only on an envelope that RTRs reach.
 */
void ucp_proto_spec_send_begin_slow(ucp_ep_h ep, ucp_request_t *req,
                                    size_t count,
                                    const ucp_request_param_t *param)
{
    ucp_proto_spec_worker_t *spec = ep->worker->spec;
    ucp_datatype_t datatype       = ucp_request_param_datatype(param);
    ucp_proto_spec_tx_env_t *env;

    if (!spec->config.early_progress || !UCP_DT_IS_CONTIG(datatype)) {
        return;
    }

    env = ucp_proto_spec_tx_env_get(spec, ep, req->send.msg_proto.tag, 0);
    if (ucp_proto_spec_send_early_pays(env) &&
        ucp_proto_spec_v2_send_predict_rndv(ep, param,
                                            ucp_contig_dt_length(datatype,
                                                                 count))) {
        ucp_proto_spec_early_progress(spec);
    }
}

ucp_proto_spec_rtrq_entry_t *
ucp_proto_spec_send_take(ucp_proto_spec_worker_t *spec, ucp_request_t *sreq,
                         ucp_proto_spec_tx_env_t **env_p)
{
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;
    uint64_t pos;

    /* After any progress pass: callbacks in it may have sent on this
     * envelope */
    env = ucp_proto_spec_tx_env_get(spec, sreq->send.ep,
                                    sreq->send.msg_proto.tag, 1);
    *env_p = env;
    if (env == NULL) {
        sreq->send.spec_pos = 0;
        return NULL;
    }

    pos                 = ucp_proto_spec_tx_pos(env);
    sreq->send.spec_pos = pos;
    env->rndv_mark      = env->next + 1;

    /* RTRs for earlier sends can never be used now */
    if (pos > env->epoch) {
        ucp_proto_spec_tx_env_drop_upto(spec, env, pos - 1);
    }

    entry = ucp_proto_spec_tx_env_find(env, pos);
    if (entry == NULL) {
        ucp_proto_spec_send_rts(spec, sreq, env, NULL);
        return NULL;
    }

    if ((entry->length < ucp_proto_spec_sreq_length(sreq)) ||
        !ucp_proto_spec_send_fits(spec, sreq)) {
        /* a short receive buffer is truncation: the RTS path reports it */
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_unfit, 1);
        ucp_proto_spec_send_rts(spec, sreq, env, entry);
        return NULL;
    }

    if (ucp_proto_spec_decline(spec, sreq)) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_declined, 1);
        ucp_proto_spec_send_rts(spec, sreq, env, entry);
        return NULL;
    }

    ucp_trace_req(sreq, "spec: takes RTR pos 0x%" PRIx64 " rreq_id 0x%" PRIx64,
                  pos, entry->rreq_id);
    return entry;
}

/* The send goes with an RTS after all: @a entry (if any) is dead, and the
 * RTS carries adaptation's word */
void ucp_proto_spec_send_rts(ucp_proto_spec_worker_t *spec,
                             ucp_request_t *sreq, ucp_proto_spec_tx_env_t *env,
                             ucp_proto_spec_rtrq_entry_t *entry)
{
    if (entry != NULL) {
        ucp_proto_spec_tx_env_drop_upto(spec, env, entry->pos);
    }

    sreq->send.spec_pos |= (uint64_t)ucp_proto_spec_adapt(spec, env)
                           << UCP_PROTO_SPEC_FLAGS_SHIFT;
}

/* The RTR-ACK of @a sreq taking @a entry */
void ucp_proto_spec_rtr_ack_init(ucp_proto_spec_rtr_ack_hdr_t *ack,
                                 const ucp_request_t *sreq,
                                 const ucp_proto_spec_rtrq_entry_t *entry)
{
    ack->rreq_id = entry->rreq_id;
    ack->tag     = sreq->send.msg_proto.tag;
    ack->length  = ucp_proto_spec_sreq_length(sreq);
}

/* The RTR-ACK of a taken RTR went: count it */
void ucp_proto_spec_taken(ucp_proto_spec_worker_t *spec,
                          ucp_proto_spec_tx_env_t *env)
{
    ++env->rtr_used;
    UCP_PROTO_SPEC_COUNT(spec, rtr_used, 1);
    UCP_PROTO_SPEC_COUNT(spec, rtr_ack_sent, 1);
}

int ucp_proto_spec_send_rndv(ucp_request_t *sreq)
{
    ucp_ep_h ep                   = sreq->send.ep;
    ucp_proto_spec_worker_t *spec = ep->worker->spec;
    ucp_proto_spec_rtr_ack_hdr_t ack;
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;

    if (spec == NULL) {
        return 0;
    }

    if (ucp_proto_spec_send_early_pays(
                ucp_proto_spec_tx_env_get(spec, ep, sreq->send.msg_proto.tag,
                                          0))) {
        ucp_proto_spec_early_progress(spec);
    }

    entry = ucp_proto_spec_send_take(spec, sreq, &env);
    if (entry == NULL) {
        return 0;
    }

    ucp_proto_spec_rtr_ack_init(&ack, sreq, entry);
    if (ucp_proto_spec_send_offer(spec, sreq, env, entry, &ack)) {
        sreq->send.uct.func = ucp_proto_spec_progress_offered;
    } else if (ucp_proto_spec_ctl_send(ep, UCP_PROTO_SPEC_MSG_RTR_ACK, &ack,
                                       sizeof(ack)) == UCS_OK) {
        sreq->send.uct.func = ucp_proto_spec_progress_rtr_put;
    } else {
        ucp_proto_spec_send_rts(spec, sreq, env, entry);
        return 0;
    }

    ucp_proto_spec_taken(spec, env);
    return 1;
}

size_t ucp_proto_spec_rts_pack(ucp_request_t *sreq, void *rts, size_t length)
{
    ucp_proto_spec_worker_t *spec = sreq->send.ep->worker->spec;
    ucp_proto_spec_rts_trailer_t trailer;

    UCS_STATIC_ASSERT(sizeof(trailer) == UCP_PROTO_SPEC_RTS_TRAILER_SIZE);

    if ((spec == NULL) || (sreq->send.spec_pos == 0)) {
        return length;
    }

    trailer.pos      = sreq->send.spec_pos;
    trailer.magic    = UCP_PROTO_SPEC_RTS_MAGIC;
    trailer.reserved = 0;
    memcpy(UCS_PTR_BYTE_OFFSET(rts, length), &trailer, sizeof(trailer));
    UCP_PROTO_SPEC_COUNT(spec, rts_trailer_sent, 1);
    UCP_PROTO_SPEC_COUNT(spec, ctl_bytes, sizeof(trailer));
    return length + sizeof(trailer);
}

/*
 * An envelope is counted from its first rendezvous send on, whose RTS tells
 * the receiver the numbering: before it the receiver knows no envelope and
 * sends no RTR, so the eager sends of a stream need no count.  Not counting
 * them is the forgetting that epochs already make safe (spec_env.c).
 */
void ucp_proto_spec_send_done_slow(ucp_ep_h ep, ucp_tag_t tag)
{
    ucp_proto_spec_worker_t *spec = ep->worker->spec;
    ucp_proto_spec_tx_env_t *env;
    uint64_t bit;

    env = ucp_proto_spec_tx_env_get(spec, ep, tag, 0);
    if (env == NULL) {
        return;
    }

    bit = UCS_BIT(env->next % 64);
    if (env->rndv_mark == env->next + 1) {
        env->rndv_bits |= bit;
    } else {
        env->rndv_bits &= ~bit;
        /* an eager send: an RTR queued for it was a misprediction */
        ucp_proto_spec_tx_env_drop_upto(spec, env, ucp_proto_spec_tx_pos(env));
    }

    env->rndv_mark = 0;
    ++env->next;
}

/* Why an RTR for an index already sent is dead, for the counters */
static void ucp_proto_spec_count_late_rtr(ucp_proto_spec_worker_t *spec,
                                          const ucp_proto_spec_tx_env_t *env,
                                          uint64_t index)
{
    if ((env->next - index) > 64) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_stale, 1);
    } else if (env->rndv_bits & UCS_BIT(index % 64)) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_crossed, 1);
    } else {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_eager, 1);
    }
}

ucs_status_t
ucp_proto_spec_rtr_handler(void *arg, void *data, size_t length,
                           unsigned flags)
{
    ucp_worker_h worker                = arg;
    ucp_proto_spec_worker_t *spec      = worker->spec;
    const ucp_proto_spec_rtr_hdr_t *hdr = data;
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;
    size_t rkey_length;
    uint64_t index;
    ucp_ep_h ep;

    if (spec == NULL) {
        return UCS_OK; /* a peer with speculation on, we with it off */
    }

    UCP_PROTO_SPEC_COUNT(spec, rtr_recv, 1);
    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, hdr->ep_id,
                                  {
                                      UCP_PROTO_SPEC_COUNT(spec, rtr_drop_stale, 1);
                                      return UCS_OK;
                                  },
                                  "SPEC_RTR");

    /* no envelope: it was forgotten, and so the RTR's numbering with it */
    env   = ucp_proto_spec_tx_env_get(spec, ep, hdr->tag, 0);
    index = hdr->pos & UCP_PROTO_SPEC_INDEX_MASK;
    if ((env == NULL) ||
        ((hdr->pos & ~UCP_PROTO_SPEC_INDEX_MASK) != env->epoch)) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_stale, 1);
        return UCS_OK;
    }

    if (env->flags & UCP_PROTO_SPEC_TX_STOPPED) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_stopped, 1);
        return UCS_OK;
    }

    ++env->rtr_recv;
    env->flags |= UCP_PROTO_SPEC_TX_RTRS;
    if (index < env->next) {
        ucp_proto_spec_count_late_rtr(spec, env, index);
        return UCS_OK;
    }

    if (env->rtrq_length >= spec->config.rtr_queue_max) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_overflow, 1);
        return UCS_OK;
    }

    rkey_length = length - sizeof(*hdr);
    entry       = ucs_malloc(sizeof(*entry) + rkey_length, "spec_rtrq");
    if (entry == NULL) {
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_overflow, 1);
        return UCS_OK;
    }

    entry->pos         = hdr->pos;
    entry->rreq_id     = hdr->rreq_id;
    entry->address     = hdr->address;
    entry->length      = hdr->length;
    entry->rkey_length = rkey_length;
    memcpy(entry->rkey, hdr + 1, rkey_length);
    ucs_list_add_tail(&env->rtrq, &entry->list);
    ++env->rtrq_length;
    return UCS_OK;
}

ucs_status_t
ucp_proto_spec_revoke_handler(void *arg, void *data, size_t length,
                              unsigned flags)
{
    ucp_worker_h worker                    = arg;
    ucp_proto_spec_worker_t *spec          = worker->spec;
    const ucp_proto_spec_revoke_hdr_t *hdr = data;
    ucp_proto_spec_revoke_ack_hdr_t ack;
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;
    ucp_ep_h ep;

    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, hdr->ep_id, return UCS_OK,
                                  "SPEC_REVOKE");

    /* The RTR arrived before this on the same lane: it is queued, used (its
     * RTR-ACK is already on the way back) or dropped.  After this, dead. */
    if (spec != NULL) {
        env = ucp_proto_spec_tx_env_get(spec, ep, hdr->tag, 0);
        if (env != NULL) {
            entry = ucp_proto_spec_tx_env_find(env, hdr->pos);
            if (entry != NULL) {
                ucs_list_del(&entry->list);
                --env->rtrq_length;
                ucs_free(entry);
            }
        }
    }

    ack.rreq_id = hdr->rreq_id;
    ack.tag     = hdr->tag;
    ack.pos     = hdr->pos;
    ucp_proto_spec_ctl_send(ep, UCP_PROTO_SPEC_MSG_REVOKE_ACK, &ack, sizeof(ack));
    return UCS_OK;
}
