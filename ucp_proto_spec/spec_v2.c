/**
 * ucx-spec: the speculative rendezvous on UCP's v2 protocols (UCX >= 1.18).
 *
 * The rules are spec_recv.c's and spec_send.c's; this file is the v2 wire
 * act under them, as the v1 one is UCX's own v1 RTR path.
 *
 * Receiver: the RTR's carrier is a v2 request of protocol "spec/rtr"
 * (ucp_proto_spec_rtr_proto), whose configuration is a copy of the one v2
 * selects for this receive had its RTS come without a key: UCX's "rndv/rtr".
 * So UCX's ATP and RNDV_DATA handlers, which find the carrier by the id the
 * RTR named, treat it as their own RTR request, while an endpoint failure
 * (abort) or reconfiguration (reset) reaches our protocol, which leaves the
 * receive posted.  On v2 a taken RTR's data and ATP travel on the data
 * lanes, unordered with the RTR-ACK (test/model/spec_rndv.pml, -DV2): until
 * the RTR-ACK the carrier holds a copy of the receive's iterator of length
 * SIZE_MAX, so that nothing completes a receive still in the expected queue;
 * at the RTR-ACK it takes the iterator over and becomes UCX's "rndv/rtr".
 *
 * Sender: a send whose v2 protocol is "tag/rndv" takes its RTR in the first
 * call of that protocol, inside ucp_tag_send_nbx, replaying what UCX's RTR
 * handler does for an RTR covering the whole request: v2 selects the
 * protocol that moves the data with the receiver's key, and where that is its
 * active-message rendezvous but the same selection built a put, the put
 * (ucp_proto_spec_v2_put_config says why).  Only once that succeeded does the
 * RTR-ACK go; otherwise the send goes on as "tag/rndv" and sends its RTS.
 *
 * The idle side's copy (spec_claim.c): a send that offers it stays as its
 * RTS would have left it, and the claim's winner moves the rendezvous on
 * through UCX's handlers, the sender's RTR one or the receiver's RTS one.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)

#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_worker.h>
#include <ucp/dt/datatype_iter.inl>
#include <ucp/proto/proto_common.inl>
#include <ucp/proto/proto_perf.h>
#include <ucp/proto/proto_select.inl>
#include <ucp/proto/proto_single.inl>
#include <ucp/rndv/proto_rndv.inl>
#include <ucs/debug/log.h>
#include <inttypes.h>


/* UCX's protocols, declared by UCP_PROTO_REGISTER in proto.c */
extern ucp_proto_t ucp_rndv_rtr_proto;
extern ucp_proto_t ucp_tag_rndv_proto;
extern ucp_proto_t ucp_rndv_am_bcopy_proto;
extern ucp_proto_t ucp_rndv_am_zcopy_proto;
extern ucp_proto_t ucp_rndv_put_zcopy_proto;

/* UCX's choice of a rendezvous data protocol with a peer's key
 * (rndv/proto_rndv.c, defined there without a declaration) */
ucs_status_t ucp_proto_rndv_send_reply(ucp_worker_h worker, ucp_request_t *req,
                                       ucp_operation_id_t op_id,
                                       uint32_t op_attr_mask, size_t length,
                                       const void *rkey_buffer,
                                       size_t rkey_length, uint8_t sg_count);


/* The range v2 selects on @a ep's own protocols (no remote key) for
 * @a length bytes of the operation; at length 0, the first of its ranges */
static const ucp_proto_threshold_elem_t *
ucp_proto_spec_v2_lookup(ucp_ep_h ep, ucp_operation_id_t op_id,
                         uint32_t op_attr_mask, ucp_dt_class_t dt_class,
                         const ucp_memory_info_t *mem_info, size_t length)
{
    ucp_proto_select_param_t sel_param;

    ucp_proto_select_param_init(&sel_param, op_id, op_attr_mask, 0, dt_class,
                                mem_info, 1);
    return ucp_proto_select_lookup(ep->worker,
                                   &ucp_ep_config(ep)->proto_select,
                                   ep->cfg_index, UCP_WORKER_CFG_INDEX_NULL,
                                   &sel_param, length);
}

/* The configuration v2 selects for @a length bytes of the operation, if it
 * is of protocol @a proto */
static const ucp_proto_config_t *
ucp_proto_spec_v2_select(ucp_ep_h ep, ucp_operation_id_t op_id,
                         uint32_t op_attr_mask, ucp_dt_class_t dt_class,
                         const ucp_memory_info_t *mem_info, size_t length,
                         const ucp_proto_t *proto)
{
    const ucp_proto_threshold_elem_t *thresh;

    thresh = ucp_proto_spec_v2_lookup(ep, op_id, op_attr_mask, dt_class,
                                      mem_info, length);
    if ((thresh == NULL) || (thresh->proto_config.proto != proto)) {
        return NULL;
    }

    return &thresh->proto_config;
}

const ucp_proto_config_t *
ucp_proto_spec_v2_rtr_config(ucp_ep_h ep, ucp_request_t *rreq, size_t length)
{
    return ucp_proto_spec_v2_select(ep, UCP_OP_ID_RNDV_RECV,
                                    rreq->recv.op_attr,
                                    rreq->recv.dt_iter.dt_class,
                                    &rreq->recv.dt_iter.mem_info, length,
                                    &ucp_rndv_rtr_proto);
}

/* The range v2 selects for a tag send of @a length from host memory, with
 * fast completion asked or not, as our side would select it (the peer's
 * configuration is the same but for its own devices) */
static const ucp_proto_threshold_elem_t *
ucp_proto_spec_v2_send_lookup(ucp_ep_h ep, unsigned fast_cmpl, size_t length)
{
    ucp_memory_info_t mem_info = {};

    mem_info.type    = UCS_MEMORY_TYPE_HOST;
    mem_info.sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    return ucp_proto_spec_v2_lookup(ep, UCP_OP_ID_TAG_SEND,
                                    fast_cmpl ? UCP_OP_ATTR_FLAG_FAST_CMPL : 0,
                                    UCP_DATATYPE_CONTIG, &mem_info, length);
}

/* The first run of such sends v2 makes "tag/rndv", from its ranges in
 * order; start SIZE_MAX if none */
static void ucp_proto_spec_v2_rndv_learn(ucp_ep_h ep, unsigned fast_cmpl,
                                         ucp_proto_spec_v2_run_t *run)
{
    const ucp_proto_threshold_elem_t *thresh;

    run->start = run->end = SIZE_MAX;
    thresh     = ucp_proto_spec_v2_send_lookup(ep, fast_cmpl, 0);
    if (thresh == NULL) {
        return;
    }

    for (run->start = 0; thresh->proto_config.proto != &ucp_tag_rndv_proto;
         ++thresh) {
        if (thresh->max_msg_length == SIZE_MAX) {
            run->start = SIZE_MAX;
            return;
        }
        run->start = thresh->max_msg_length + 1;
    }

    while ((thresh->max_msg_length != SIZE_MAX) &&
           (thresh[1].proto_config.proto == &ucp_tag_rndv_proto)) {
        ++thresh;
    }
    run->end = thresh->max_msg_length;
}

/*
 * Whether v2 selects "tag/rndv" for such a send.  A lookup of another
 * selection key than the last one misses UCX's one-entry cache and evicts
 * the key of UCX's own next send or RTS reply, and even a hit costs a range
 * search on every receive: so the first run of rendezvous lengths on the
 * configuration, learned once, answers for every length up to its end, and
 * only a longer one is looked up.
 */
static int ucp_proto_spec_v2_send_is_rndv(ucp_ep_h ep, unsigned fast_cmpl,
                                          size_t length)
{
    ucp_proto_spec_v2_run_t *run =
            &ep->worker->spec->v2_rndv[ep->cfg_index][fast_cmpl];
    const ucp_proto_threshold_elem_t *thresh;

    if (ucs_unlikely(run->end == 0)) {
        ucp_proto_spec_v2_rndv_learn(ep, fast_cmpl, run);
    }

    if (length < run->start) {
        return 0;
    }

    if (length <= run->end) {
        return 1;
    }

    thresh = ucp_proto_spec_v2_send_lookup(ep, fast_cmpl, length);
    return (thresh != NULL) &&
           (thresh->proto_config.proto == &ucp_tag_rndv_proto);
}

int ucp_proto_spec_v2_send_predict_rndv(ucp_ep_h ep,
                                        const ucp_request_param_t *param,
                                        size_t length)
{
    return ucp_proto_spec_v2_send_is_rndv(
            ep, !!(param->op_attr_mask & UCP_OP_ATTR_FLAG_FAST_CMPL), length);
}

/* A blocking MPI send asks for fast completion, for which v2 begins its
 * rendezvous later: predict it only where both kinds of send take it, so
 * that a blocking sender's eager messages draw no RTR */
int ucp_proto_spec_v2_predict_rndv(ucp_ep_h ep, size_t length)
{
    return ucp_proto_spec_v2_send_is_rndv(ep, 0, length) &&
           ucp_proto_spec_v2_send_is_rndv(ep, 1, length);
}

static ucs_status_t ucp_proto_spec_v2_rtr_progress(uct_pending_req_t *self)
{
    ucp_request_t *carrier = ucs_container_of(self, ucp_request_t, send.uct);
    const void *rpriv      = carrier->send.proto_config->priv;
    ucp_lane_index_t lane;

    /* no configuration left: a dead carrier, which the call frees */
    if (rpriv == NULL) {
        return ucp_proto_spec_rtr_send(carrier, UCP_NULL_LANE);
    }

    /* UCX keeps protocols' private parts unaligned */
    memcpy(&lane, UCS_PTR_BYTE_OFFSET(rpriv, ucs_offsetof(
                   ucp_proto_rndv_ctrl_priv_t, lane)), sizeof(lane));
    return ucp_proto_spec_rtr_send(carrier, lane);
}

/* The endpoint failed (UCX purges the requests it tracks) or its pending
 * queue is purged: the receive stays posted for another sender */
static void ucp_proto_spec_v2_rtr_abort(ucp_request_t *carrier,
                                        ucs_status_t status)
{
    ucp_proto_spec_carrier_purge(carrier, status, 0);
}

/* The endpoint was reconfigured while the RTR waited on its lane: dropped
 * rather than sent on the new one (dropping an RTR is always safe), which
 * also stops UCX's restart from selecting another protocol for it */
static ucs_status_t ucp_proto_spec_v2_rtr_reset(ucp_request_t *carrier)
{
    ucp_proto_spec_carrier_purge(carrier, UCS_ERR_CANCELED, 0);
    return UCS_ERR_CANCELED;
}

ucp_proto_t ucp_proto_spec_rtr_proto = {
    .name     = "spec/rtr",
    .desc     = "speculative RTR",
    .flags    = 0,
    UCP_PROTO_SPEC_PROTO_DT_MASK
    .probe    = NULL, /* never selected: the carrier sets it itself */
    .query    = NULL,
    .progress = {ucp_proto_spec_v2_rtr_progress},
    .abort    = ucp_proto_spec_v2_rtr_abort,
    .reset    = ucp_proto_spec_v2_rtr_reset
};

/* A carrier whose receive went while its RTR waited on the lane: its
 * configuration went with the receive's state, so it points here until its
 * progress or a purge frees it */
static ucp_proto_config_t ucp_proto_spec_v2_dead_cfg = {
    .proto = &ucp_proto_spec_rtr_proto
};

void ucp_proto_spec_v2_carrier_dead(ucp_request_t *carrier)
{
    carrier->send.proto_config = &ucp_proto_spec_v2_dead_cfg;
}

ucs_status_t ucp_proto_spec_v2_am_send(ucp_request_t *carrier,
                                       ucp_lane_index_t lane,
                                       uct_pack_callback_t pack, size_t length)
{
    ucs_status_t status;

    status = ucp_proto_am_bcopy_single_send(carrier, UCP_AM_ID_SPEC, lane,
                                            pack, carrier, length, 0);
    if (status == UCS_ERR_NO_RESOURCE) {
        carrier->send.lane = lane; /* where ucp_request_send queues it */
    }

    return status;
}

void ucp_proto_spec_v2_carrier_init(ucp_request_t *carrier, ucp_ep_h ep,
                                    ucp_request_t *rreq,
                                    ucp_proto_spec_rreq_t *sr,
                                    const ucp_proto_config_t *rtr_cfg)
{
    ucp_proto_request_send_init(carrier, ep, 0);
    carrier->send.buffer               = sr;
    carrier->send.rndv.remote_req_id   = UCS_PTR_MAP_KEY_INVALID;
    carrier->send.rndv.remote_address  = 0;
    carrier->send.rndv.offset          = 0;
    carrier->send.rndv.rkey            = NULL;
    carrier->send.rndv.rkey_buffer     = NULL;
    ucp_request_set_super(carrier, rreq);

    /* UCX's ATP and RNDV_DATA handlers complete the carrier once the data
     * they count reaches its length: none may, before the RTR-ACK */
    carrier->send.state.dt_iter        = rreq->recv.dt_iter;
    carrier->send.state.dt_iter.length = SIZE_MAX;
    carrier->send.state.completed_size = 0;

    sr->v2.rtr_cfg   = rtr_cfg;
    sr->v2.cfg       = *rtr_cfg;
    sr->v2.cfg.proto = &ucp_proto_spec_rtr_proto;
    ucp_proto_spec_v2_cfg_init(ep->worker, &sr->v2.cfg);
    ucp_proto_request_set_proto(carrier, &sr->v2.cfg,
                                ucp_proto_spec_rreq_length(rreq));
    ucp_send_request_id_alloc(carrier);
}

void ucp_proto_spec_v2_carrier_own(ucp_request_t *carrier, ucp_request_t *rreq,
                                   const ucp_proto_config_t *rtr_cfg,
                                   size_t length)
{
    size_t received = carrier->send.state.completed_size;
    uint8_t sg_count;

    ucp_datatype_iter_move(&carrier->send.state.dt_iter, &rreq->recv.dt_iter,
                           length, &sg_count);
    carrier->send.state.completed_size = received;
    carrier->send.proto_config         = rtr_cfg;
}

int ucp_proto_spec_v2_rtr_taken(ucp_request_t *carrier, ucp_request_t *rreq,
                                const ucp_proto_config_t *rtr_cfg,
                                size_t length)
{
    ucp_worker_h worker = carrier->send.ep->worker;
    ucp_rndv_ack_hdr_t atp;

    ucp_proto_spec_v2_carrier_own(carrier, rreq, rtr_cfg, length);
    if (carrier->send.state.completed_size < length) {
        return 0; /* UCX's ATP or data handler completes it */
    }

    /* Every ATP came first: complete it as UCX's ATP handler does */
    atp.super.req_id = ucp_send_request_get_id(carrier);
    atp.super.status = UCS_OK;
    atp.size         = 0;
    ucp_proto_rndv_rtr_handle_atp(worker, &atp, sizeof(atp), 0);
    return 1;
}


/* --- the idle side's copy (spec_claim.c) -------------------------------- */

/*
 * A receive that matched an RTS at its post offers the copy.  Its carrier is
 * the request UCX's receive start would make for that RTS without a key,
 * "rndv/rtr", so that the ATP of a put names it, but it sends no RTR: the
 * OFFER stands for it.  Allocated (with the id the OFFER names) before the
 * OFFER goes, it owns the receive's iterator once it went
 * (ucp_proto_spec_v2_carrier_own).
 */
void ucp_proto_spec_v2_offer_carrier_init(ucp_request_t *carrier, ucp_ep_h ep,
                                          ucp_request_t *rreq,
                                          const ucp_rndv_rts_hdr_t *rts)
{
    ucp_proto_request_send_init(carrier, ep, 0);
    carrier->send.buffer               = NULL;
    carrier->send.rndv.remote_req_id   = rts->sreq.req_id;
    carrier->send.rndv.remote_address  = rts->address;
    carrier->send.rndv.offset          = 0;
    carrier->send.rndv.rkey            = NULL;
    carrier->send.rndv.rkey_buffer     = NULL;
    carrier->send.state.completed_size = 0;
    ucp_request_set_super(carrier, rreq);
    ucp_send_request_id_alloc(carrier);
}

/* The receive claimed the copy: nothing reached its carrier, whose iterator
 * goes back to the receive for UCX's own RTS path */
void ucp_proto_spec_v2_carrier_return(ucp_request_t *carrier,
                                      ucp_request_t *rreq)
{
    uint8_t sg_count;

    ucs_assert(carrier->send.state.completed_size == 0);
    ucp_datatype_iter_move(&rreq->recv.dt_iter, &carrier->send.state.dt_iter,
                           carrier->send.state.dt_iter.length, &sg_count);
}

size_t ucp_proto_spec_v2_sreq_key_size(const ucp_request_t *sreq)
{
    const void *rpriv = sreq->send.proto_config->priv;
    size_t size;

    memcpy(&size, UCS_PTR_BYTE_OFFSET(rpriv, ucs_offsetof(
                   ucp_proto_rndv_ctrl_priv_t, packed_rkey_size)),
           sizeof(size));
    return size;
}

/* The send's key and address exactly as its RTS would carry them: UCX's
 * "tag/rndv" registered the buffer for that before our hook ran */
ssize_t ucp_proto_spec_v2_sreq_key_pack(ucp_request_t *sreq, void *buffer,
                                        uint64_t *address_p)
{
    ucp_rndv_rts_hdr_t *rts;
    size_t length;

    rts    = ucs_alloca(sizeof(*rts) +
                        ucp_proto_spec_v2_sreq_key_size(sreq));
    length = ucp_proto_rndv_rts_pack(sreq, rts, sizeof(*rts)) - sizeof(*rts);
    if ((rts->address == 0) || (length == 0)) {
        return UCS_ERR_UNSUPPORTED; /* nothing to get with */
    }

    memcpy(buffer, rts + 1, length);
    *address_p = rts->address;
    return length;
}


/* --- sender ------------------------------------------------------------- */

int ucp_proto_spec_v2_sreq_fits(const ucp_request_t *sreq)
{
    /* "tag/rndv" serves synchronous sends too: those wait for the RTS's
     * answer, as on v1 */
    return (ucp_proto_select_op_id(&sreq->send.proto_config->select_param) ==
            UCP_OP_ID_TAG_SEND) &&
           (sreq->send.state.dt_iter.dt_class == UCP_DATATYPE_CONTIG) &&
           UCP_MEM_IS_HOST(sreq->send.state.dt_iter.mem_info.type);
}

/* Another protocol's configuration in place of @a selected, made once from
 * the selection element that chose @a selected: its probe kept every
 * protocol it built, each with its private part, for the worker's life; only
 * the configuration that names one is ours.  Cached in @a cache. */
ucp_proto_spec_v2_alt_t *
ucp_proto_spec_v2_alt_get(ucs_list_link_t *cache, ucp_worker_h worker,
                          const ucp_proto_select_elem_t *select_elem,
                          const ucp_proto_config_t *selected,
                          const ucp_proto_t *proto)
{
    const ucp_proto_init_elem_t *init_elem;
    ucp_proto_spec_v2_alt_t *alt;

    ucs_list_for_each(alt, cache, list) {
        if ((alt->selected == selected) && (alt->proto == proto)) {
            return alt;
        }
    }

    if (select_elem == NULL) {
        return NULL;
    }

    alt = ucs_calloc(1, sizeof(*alt), "spec_v2_alt");
    if (alt == NULL) {
        return NULL;
    }

    alt->selected = selected;
    alt->proto    = proto;
    ucs_array_for_each(init_elem, &select_elem->proto_init.protocols) {
        if (ucp_protocols[init_elem->proto_id] != proto) {
            continue;
        }

        alt->cfg           = *selected;
        alt->cfg.proto     = proto;
        alt->cfg.priv      = &ucs_array_elem(&select_elem->proto_init.priv_buf,
                                             init_elem->priv_offset);
        alt->cfg.init_elem = init_elem;
        ucp_proto_spec_v2_cfg_init(worker, &alt->cfg);
        break;
    }

    ucs_list_add_tail(cache, &alt->list);
    return alt;
}

/* @a alt's configuration if its protocol takes @a length with lanes whose
 * interfaces @a ep's selection made progress */
const ucp_proto_config_t *
ucp_proto_spec_v2_alt_config(const ucp_proto_spec_v2_alt_t *alt, ucp_ep_h ep,
                             size_t length)
{
    const ucp_proto_perf_segment_t *seg;
    ucp_proto_query_attr_t attr;

    if ((alt == NULL) || (alt->cfg.proto == NULL)) {
        return NULL;
    }

    seg = ucp_proto_perf_find_segment_lb(alt->cfg.init_elem->perf, length);
    if ((seg == NULL) || (ucp_proto_perf_segment_start(seg) > length)) {
        return NULL;
    }

    ucp_proto_config_query(ep->worker, &alt->cfg, length, &attr);
    if (attr.lane_map & ~ucp_ep_config(ep)->proto_lane_map) {
        return NULL;
    }

    return &alt->cfg;
}

void ucp_proto_spec_v2_alt_cleanup(ucs_list_link_t *cache)
{
    ucp_proto_spec_v2_alt_t *alt, *tmp;

    ucs_list_for_each_safe(alt, tmp, cache, list) {
        ucs_free(alt);
    }
}

/* The put that the selection of @a selected built beside it, if the put
 * takes @a length.  v2 weighs its active-message rendezvous against a put as
 * if the receiver were inside UCP when the data comes; after a taken RTR it
 * seldom is, and the fragments wait in its receive queue until it calls UCP
 * again (rc_verbs, guest, 1.22.0: none of 1 MB in place when the receiver
 * began to wait, against 98 % by v1's put).  A put needs nobody there. */
static const ucp_proto_config_t *
ucp_proto_spec_v2_put_config(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                             const ucp_proto_config_t *selected,
                             ucp_rkey_h rkey, size_t length)
{
    ucp_worker_h worker = ep->worker;
    ucp_proto_spec_v2_alt_t *alt;

    alt = ucp_proto_spec_v2_alt_get(&spec->v2_puts, worker, NULL, selected,
                                    &ucp_rndv_put_zcopy_proto);
    if (alt == NULL) {
        alt = ucp_proto_spec_v2_alt_get(
                &spec->v2_puts, worker,
                ucp_proto_select_lookup_slow(
                        worker, &ucp_rkey_config(worker, rkey)->proto_select,
                        1, selected->ep_cfg_index, selected->rkey_cfg_index,
                        &selected->select_param),
                selected, &ucp_rndv_put_zcopy_proto);
    }

    return ucp_proto_spec_v2_alt_config(alt, ep, length);
}

/* Starts @a sreq's data protocol on the RTR @a rtr (key after it), as UCX's
 * RTR handler does for an RTR that covers the whole request (its
 * ucp_proto_rndv_send_start), but with the status returned: that handler
 * fails the send where we send the RTS.  On failure the request is
 * "tag/rndv" again, with a new id. */
static ucs_status_t ucp_proto_spec_v2_send_start(ucp_proto_spec_worker_t *spec,
                                                 ucp_request_t *sreq,
                                                 const ucp_rndv_rtr_hdr_t *rtr,
                                                 size_t rkey_length)
{
    const ucp_proto_select_param_t *select_param =
            &sreq->send.proto_config->select_param;
    const ucp_proto_config_t *put_cfg;
    const ucp_proto_t *proto;
    ucs_status_t status;

    ucp_send_request_id_release(sreq);
    ucp_datatype_iter_rewind(&sreq->send.state.dt_iter, UCP_DT_MASK_ALL);
    sreq->flags &= ~UCP_REQUEST_FLAG_PROTO_INITIALIZED;

    sreq->send.rndv.remote_address = rtr->address;
    sreq->send.rndv.remote_req_id  = rtr->rreq_id;
    sreq->send.rndv.offset         = rtr->offset;
    status = ucp_proto_rndv_send_reply(
            sreq->send.ep->worker, sreq, UCP_OP_ID_RNDV_SEND,
            ucp_proto_select_op_attr_unpack(select_param->op_attr), rtr->size,
            rtr + 1, rkey_length, select_param->sg_count);
    if (status != UCS_OK) {
        /* the lookup did not replace the protocol */
        return ucp_proto_rndv_rts_request_init(sreq);
    }

    proto = sreq->send.proto_config->proto;
    if ((sreq->send.rndv.rkey != NULL) &&
        ((proto == &ucp_rndv_am_zcopy_proto) ||
         (proto == &ucp_rndv_am_bcopy_proto))) {
        put_cfg = ucp_proto_spec_v2_put_config(spec, sreq->send.ep,
                                               sreq->send.proto_config,
                                               sreq->send.rndv.rkey,
                                               rtr->size);
        if (put_cfg != NULL) {
            ucp_proto_request_set_proto(sreq, put_cfg, rtr->size);
            UCP_PROTO_SPEC_COUNT(spec, rtr_put, 1);
        }
    }

    ucp_request_send(sreq);
    return UCS_OK;
}

void ucp_proto_spec_v2_cleanup(ucp_proto_spec_worker_t *spec)
{
    ucp_proto_spec_v2_alt_cleanup(&spec->v2_puts);
}

int ucp_proto_spec_send_rndv_v2(ucp_request_t *sreq)
{
    ucp_ep_h ep                   = sreq->send.ep;
    ucp_proto_spec_worker_t *spec = ep->worker->spec;
    ucp_proto_spec_rtr_ack_hdr_t ack;
    ucp_proto_spec_rtrq_entry_t *entry;
    ucp_proto_spec_tx_env_t *env;
    ucp_request_t *ack_req;
    ucp_rndv_rtr_hdr_t *rtr;
    size_t rtr_length;
    ucs_status_t status;

    /* A send is numbered in the ucp_tag_send_nbx that posts it, by the
     * first call of its protocol; later calls (from a lane's pending queue,
     * after a restart) send the RTS with the position it has.  The early
     * pass ran before the protocol started (ucp_proto_spec_send_begin). */
    if ((spec == NULL) || (spec->head.cur_send != sreq)) {
        return 0;
    }

    spec->head.cur_send = NULL;
    entry               = ucp_proto_spec_send_take(spec, sreq, &env);
    if (entry == NULL) {
        return 0;
    }

    ucp_proto_spec_rtr_ack_init(&ack, sreq, entry);
    if (ucp_proto_spec_send_offer(spec, sreq, env, entry, &ack)) {
        /* as after its RTS: the claim's winner sends the put or the get */
        ucp_proto_spec_taken(spec, env);
        return 1;
    }

    /* the RTR-ACK follows the data's start, and must not fail after it */
    ack_req = ucp_proto_spec_ctl_prepare(ep, UCP_PROTO_SPEC_MSG_RTR_ACK, &ack,
                                         sizeof(ack));
    if (ack_req == NULL) {
        ucp_proto_spec_send_rts(spec, sreq, env, entry);
        return 0;
    }

    rtr        = ucs_alloca(sizeof(*rtr) + entry->rkey_length);
    rtr_length = ucp_proto_spec_rtr_build(sreq, entry, rtr);
    status     = ucp_proto_spec_v2_send_start(spec, sreq, rtr,
                                              rtr_length - sizeof(*rtr));
    if (status != UCS_OK) {
        ucp_proto_spec_ctl_discard(ack_req);
        UCP_PROTO_SPEC_COUNT(spec, rtr_drop_unfit, 1);
        ucp_proto_spec_send_rts(spec, sreq, env, entry);
        if (!(sreq->flags & UCP_REQUEST_FLAG_PROTO_INITIALIZED)) {
            /* not even an RTS can go */
            ucp_proto_request_abort(sreq, status);
            return 1;
        }
        return 0;
    }

    ucp_proto_spec_rtrq_remove(env, entry);
    ucp_proto_spec_ctl_post(ack_req);
    ucp_proto_spec_taken(spec, env);
    return 1;
}

#endif
