/**
 * ucx-spec: specrdv interface, the part shared by every writer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_ep.h"
#include "specrdv_writer.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>


static ucs_config_field_t uct_specrdv_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_specrdv_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"RING_SLOTS", "15",
     "Number of slots in each per-peer ring (one ring per direction of a\n"
     "connection). Ring memory per peer and direction is RING_SLOTS * SLOT_SIZE:\n"
     "by default 123.75 KiB, under 128 KiB.",
     ucs_offsetof(uct_specrdv_iface_config_t, ring_slots),
     UCS_CONFIG_TYPE_UINT},

    {"SLOT_SIZE", "8448",
     "Size of one ring slot, including the message header and the tail flag.\n"
     "Must be a multiple of the cache line size. The default holds 8 KiB and\n"
     "UCP's eager header in one slot: an 8 KiB MPI message is one ring write,\n"
     "not two fragments.",
     ucs_offsetof(uct_specrdv_iface_config_t, slot_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"POLL_SET", "8",
     "Most peers whose rings this interface polls: its RDMA polling set.\n"
     "Each costs RING_SLOTS * SLOT_SIZE of memory and one cache line read per\n"
     "progress call; peers beyond it use the fallback channel.",
     ucs_offsetof(uct_specrdv_iface_config_t, poll_set), UCS_CONFIG_TYPE_UINT},

    {"RING_AFTER", "8",
     "Messages a peer sends through the fallback channel before it asks for a\n"
     "ring in the receiver's polling set (0: at its first message).",
     ucs_offsetof(uct_specrdv_iface_config_t, ring_after),
     UCS_CONFIG_TYPE_UINT},

    {"CREDIT_UPDATE", "auto",
     "Freed ring slots after which the receiver updates the sender's credits\n"
     "explicitly instead of waiting for a message to piggyback them on.\n"
     "auto: half the ring.",
     ucs_offsetof(uct_specrdv_iface_config_t, credit_update),
     UCS_CONFIG_TYPE_ULUNITS},

    {"BW", "12179MBs",
     "Bandwidth estimate the transport reports to UCP for protocol selection.",
     ucs_offsetof(uct_specrdv_iface_config_t, bandwidth), UCS_CONFIG_TYPE_BW},

    {"REPORT", "n",
     "Print each interface's connection counters (ring and fallback sends,\n"
     "credit stalls, held messages, rings granted, refused, admitted, evicted)\n"
     "to stderr when it is closed.",
     ucs_offsetof(uct_specrdv_iface_config_t, report), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

static ucs_status_t
uct_specrdv_iface_check_config(const uct_specrdv_iface_config_t *config)
{
    if ((config->ring_slots < UCT_SPECRDV_RING_SLOTS_MIN) ||
        (config->ring_slots > UCT_SPECRDV_RING_SLOTS_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_RING_SLOTS=%u is out of range [%u..%u]",
                  config->ring_slots, UCT_SPECRDV_RING_SLOTS_MIN,
                  UCT_SPECRDV_RING_SLOTS_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->slot_size < UCT_SPECRDV_SLOT_SIZE_MIN) ||
        (config->slot_size > UCT_SPECRDV_SLOT_SIZE_MAX) ||
        (config->slot_size % UCS_SYS_CACHE_LINE_SIZE)) {
        ucs_error("specrdv: UCX_SPECRDV_SLOT_SIZE=%zu must be a multiple of %d "
                  "in [%d..%zu]", config->slot_size, UCS_SYS_CACHE_LINE_SIZE,
                  UCT_SPECRDV_SLOT_SIZE_MIN, (size_t)UCT_SPECRDV_SLOT_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->poll_set == 0) || (config->poll_set > UINT16_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_POLL_SET=%u is out of range [1..%u]",
                  config->poll_set, UINT16_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->credit_update != UCS_ULUNITS_AUTO) &&
        ((config->credit_update == 0) ||
         (config->credit_update > config->ring_slots))) {
        ucs_error("specrdv: UCX_SPECRDV_CREDIT_UPDATE=%lu is out of range "
                  "[1..RING_SLOTS=%u]", config->credit_update,
                  config->ring_slots);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

void uct_specrdv_iface_query(uct_specrdv_iface_t *iface,
                             uct_iface_attr_t *iface_attr)
{
    size_t max_payload = uct_specrdv_iface_max_payload(iface);

    uct_base_iface_query(&iface->super, iface_attr);
    iface_attr->ep_addr_len            = 0;
    iface_attr->max_conn_priv          = 0;
    iface_attr->cap.am.max_short       = max_payload;
    iface_attr->cap.am.max_bcopy       = max_payload;
    iface_attr->cap.am.min_zcopy       = 0;
    iface_attr->cap.am.max_zcopy       = max_payload;
    iface_attr->cap.am.max_hdr         = max_payload;
    iface_attr->cap.am.max_iov         = UCT_SPECRDV_MAX_IOV;
    iface_attr->cap.am.opt_zcopy_align = UCS_SYS_CACHE_LINE_SIZE;
    iface_attr->cap.am.align_mtu       = UCS_SYS_CACHE_LINE_SIZE;
    iface_attr->cap.flags              = UCT_IFACE_FLAG_AM_SHORT |
                                         UCT_IFACE_FLAG_AM_BCOPY |
                                         UCT_IFACE_FLAG_AM_ZCOPY |
                                         UCT_IFACE_FLAG_PENDING |
                                         UCT_IFACE_FLAG_CB_SYNC |
                                         UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                         UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    iface_attr->bandwidth.dedicated    = iface->config.bandwidth;
    iface_attr->bandwidth.shared       = 0;
    iface_attr->priority               = 0;
}

/* Without UCT_CB_PARAM_FLAG_DESC (uct_iface_invoke_am asserts the user
 * does not keep it): the user copies what it keeps, and the slot goes back
 * to the sender at once */
static void uct_specrdv_iface_deliver(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *peer,
                                      const uct_specrdv_hdr_t *hdr,
                                      void *payload)
{
    uct_specrdv_iface_t *iface = ucs_container_of(conns, uct_specrdv_iface_t,
                                                  conns);

    uct_iface_trace_am(&iface->super, UCT_AM_TRACE_TYPE_RECV, hdr->am_id,
                       payload, hdr->length, "RX: AM psn %u", hdr->psn);
    uct_iface_invoke_am(&iface->super, hdr->am_id, payload, hdr->length, 0);
}

static void uct_specrdv_iface_peer_failed(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *peer,
                                          ucs_status_t status)
{
    uct_specrdv_iface_t *iface = ucs_container_of(conns, uct_specrdv_iface_t,
                                                  conns);
    uct_specrdv_ep_t *ep;

    ucs_list_for_each(ep, &peer->eps, list) {
        uct_iface_handle_ep_err(&iface->super.super, &ep->super.super, status);
    }
}

/*
 * An operation a writer finished inside its call (a CMA copy) still reports
 * UCS_INPROGRESS and completes from the next progress, as UCX's own CMA
 * does.  UCP (1.18.1, 1.22.0) calls the user's callback of a rendezvous
 * receive that completes inside ucp_am_recv_data_nbx or
 * ucp_tag_msg_recv_nbx before that call returns, which the API rules out:
 * MPICH 4.2.1's RMA, whose callback finds its request not yet set up, then
 * crashes (MPICH's test/mpi rma/win_dynamic_rma_flush_get over specrdv).
 */
ucs_status_t uct_specrdv_iface_complete_later(uct_specrdv_iface_t *iface,
                                              uct_completion_t *comp)
{
    uct_completion_t **comps;
    unsigned size;

    if (iface->done.count == iface->done.size) {
        size  = ucs_max(2 * iface->done.size, 16);
        comps = ucs_realloc(iface->done.comps, size * sizeof(*comps),
                            "specrdv_done");
        if (comps == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        iface->done.comps = comps;
        iface->done.size  = size;
    }

    iface->done.comps[iface->done.count++] = comp;
    return UCS_INPROGRESS;
}

/* Those queued before this call: a callback may queue more */
static unsigned uct_specrdv_iface_complete_done(uct_specrdv_iface_t *iface)
{
    unsigned i, count = iface->done.count;

    for (i = 0; i < count; ++i) {
        uct_invoke_completion(iface->done.comps[i], UCS_OK);
    }
    iface->done.count -= count;
    memmove(iface->done.comps, iface->done.comps + count,
            iface->done.count * sizeof(*iface->done.comps));
    return count;
}

unsigned uct_specrdv_iface_progress(uct_iface_h tl_iface)
{
    uct_specrdv_iface_t *iface = ucs_derived_of(tl_iface, uct_specrdv_iface_t);
    unsigned count;

    if (ucs_unlikely(iface->done.count > 0)) {
        count = uct_specrdv_iface_complete_done(iface);
    } else {
        count = 0;
    }

    count += uct_specrdv_conns_poll_rings(&iface->conns);
    count += iface->conns.ops->poll_fallback(&iface->conns);
    if (ucs_unlikely(iface->invalidated > 0)) {
        uct_specrdv_ep_report_invalidated(iface);
    }
    if (ucs_unlikely(!ucs_arbiter_is_empty(&iface->arbiter))) {
        ucs_arbiter_dispatch(&iface->arbiter, 1, uct_specrdv_ep_process_pending,
                             &count);
    }
    return count;
}

ucs_status_t uct_specrdv_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp)
{
    uct_specrdv_iface_t *iface = ucs_derived_of(tl_iface, uct_specrdv_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* UCT's contract: OK or INPROGRESS; UCP's worker flush takes anything
     * else for an error */
    if (!ucs_arbiter_is_empty(&iface->arbiter) || (iface->done.count > 0)) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
        return UCS_INPROGRESS;
    }

    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    return UCS_OK;
}

/* No slot is ever the user's descriptor, so the alignment asked for is never
 * applied; a request UCT calls invalid is refused all the same */
static ucs_status_t
uct_specrdv_iface_check_am_alignment(const uct_iface_params_t *params,
                                     size_t slot_size)
{
    size_t align, align_offset;
    ucs_status_t status;

    status = uct_iface_param_am_alignment(params, slot_size, 0, 0, &align,
                                          &align_offset);
    if (status != UCS_OK) {
        return status;
    }

    if ((align == 0) || !ucs_is_pow2(align) ||
        ((params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) &&
         (params->am_align_offset >= align))) {
        ucs_error("specrdv: invalid AM alignment %zu, offset %zu", align,
                  align_offset);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

UCS_CLASS_INIT_FUNC(uct_specrdv_iface_t, uct_iface_ops_t *ops,
                    uct_iface_internal_ops_t *internal_ops,
                    const uct_specrdv_wire_ops_t *wire_ops, unsigned fb_window,
                    uct_md_h md, uct_worker_h worker,
                    const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config)
{
    const uct_specrdv_iface_config_t *config =
            ucs_derived_of(tl_config, uct_specrdv_iface_config_t);
    uct_specrdv_conns_params_t conns_params;
    ucs_status_t status;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("specrdv: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_specrdv_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_specrdv_iface_check_am_alignment(params, config->slot_size);
    if (status != UCS_OK) {
        return status;
    }

    conns_params.ops                 = wire_ops;
    conns_params.deliver             = uct_specrdv_iface_deliver;
    conns_params.failed              = uct_specrdv_iface_peer_failed;
    conns_params.geom.slot_size      = config->slot_size;
    conns_params.geom.payload_offset = UCT_SPECRDV_PAYLOAD_OFFSET;
    conns_params.geom.num_slots      = config->ring_slots;
    conns_params.num_rings           = config->poll_set;
    conns_params.ring_after          = config->ring_after;
    conns_params.fb_window           = fb_window;
    conns_params.credit_update       =
            (config->credit_update == UCS_ULUNITS_AUTO) ?
            ucs_max(config->ring_slots / 2, 1) : config->credit_update;
    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, ops, internal_ops, md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
                    UCS_STATS_ARG(params->mode.device.dev_name));

    status = uct_specrdv_conns_init(&self->conns, &conns_params);
    if (status != UCS_OK) {
        return status;
    }

    self->config.bandwidth = config->bandwidth;
    self->config.report    = config->report;
    self->invalidated      = 0;
    self->done.comps       = NULL;
    self->done.count       = 0;
    self->done.size        = 0;
    ucs_arbiter_init(&self->arbiter);
    return UCS_OK;
}

static void uct_specrdv_iface_report(uct_specrdv_iface_t *iface)
{
    char line[1024];
    size_t len;
    int i;

    len = snprintf(line, sizeof(line), "[%s] ucx-spec: specrdv %s iface %p",
                   ucs_get_host_name(),
                   ucs_derived_of(iface->super.md, uct_specrdv_md_t)->writer->name,
                   iface);
    for (i = 0; (i < UCT_SPECRDV_CNT_LAST) && (len < sizeof(line)); ++i) {
        len += snprintf(line + len, sizeof(line) - len, " %s %" PRIu64,
                        uct_specrdv_conn_counter_names[i],
                        iface->conns.counters[i]);
    }

    /* asked for explicitly, so printed whatever UCX_LOG_LEVEL says */
    fprintf(stderr, "%s\n", line);
}

const uint64_t *uct_specrdv_iface_counters(struct uct_iface *tl_iface)
{
    return ucs_derived_of(tl_iface, uct_specrdv_iface_t)->conns.counters;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_iface_t)
{
    if (self->config.report) {
        uct_specrdv_iface_report(self);
    }
    /* UCP purged the requests those completions name */
    ucs_free(self->done.comps);
    ucs_arbiter_cleanup(&self->arbiter);
    uct_specrdv_conns_cleanup(&self->conns);
}

UCS_CLASS_DEFINE(uct_specrdv_iface_t, uct_base_iface_t);

static ucs_status_t
uct_specrdv_query_tl_devices(uct_md_h tl_md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p)
{
    uct_specrdv_md_t *md = ucs_derived_of(tl_md, uct_specrdv_md_t);

    return md->writer->query_devices(tl_md, tl_devices_p, num_tl_devices_p);
}

/* One transport name for every device: the memory domain picks the writer */
static ucs_status_t
uct_specrdv_iface_open(uct_md_h tl_md, uct_worker_h worker,
                       const uct_iface_params_t *params,
                       const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    uct_specrdv_md_t *md = ucs_derived_of(tl_md, uct_specrdv_md_t);

    return md->writer->iface_open(tl_md, worker, params, config, iface_p);
}

/* One transport, so one configuration: the slot protocol's table first, then
 * each writer's table nested after it at an offset the writer is told, then
 * the end */
static ucs_config_field_t
uct_specrdv_tl_config_table[1 + UCT_SPECRDV_MAX_WRITERS + 1] = {
    [0] = {"", "", NULL, 0,
           UCS_CONFIG_TYPE_TABLE(uct_specrdv_iface_config_table)}
};

uct_tl_t UCT_TL_NAME(specrdv) = {
    .name          = "specrdv",
    .query_devices = uct_specrdv_query_tl_devices,
    .iface_open    = uct_specrdv_iface_open,
    .config        = {
        .name      = "specrdv transport",
        .prefix    = "SPECRDV_",
        .table     = uct_specrdv_tl_config_table,
        .size      = sizeof(uct_specrdv_iface_config_t),
    }
};

static void uct_specrdv_tl_config_init(void)
{
    ucs_config_field_t *field = &uct_specrdv_tl_config_table[1];
    uct_specrdv_writer_t **writer;
    size_t size;

    size = sizeof(uct_specrdv_iface_config_t);
    for (writer = uct_specrdv_writers; *writer != NULL; ++writer, ++field) {
        (*writer)->config_offset = ucs_align_up(size, UCS_SYS_CACHE_LINE_SIZE);
        size                     = (*writer)->config_offset +
                                   (*writer)->config_size;
        *field                   = uct_specrdv_tl_config_table[0];
        field->offset            = (*writer)->config_offset;
        field->parser.arg        = (*writer)->config_table;
    }

    UCT_TL_NAME(specrdv).config.size = size;
}

UCT_SINGLE_TL_INIT(&uct_specrdv_component, specrdv, ctor,
                   uct_specrdv_tl_config_init(),)
