/**
 * ucx-spec: specrdv interface on the verbs writer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_verbs.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>


/* The send CQ, shared by every peer's QP: work requests outstanding at once
 * on all of them (a failed QP completes each, signalled or not) */
#define UCT_SPECRDV_VERBS_TX_CQ_LEN  4096


ucs_config_field_t uct_specrdv_verbs_config_table[] = {
    {"VERBS_TX_QUEUE_LEN", "256",
     "Work requests each RC QP may have outstanding.",
     ucs_offsetof(uct_specrdv_verbs_config_t, tx_queue_len),
     UCS_CONFIG_TYPE_UINT},

    {"VERBS_RX_QUEUE_LEN", "256",
     "Receive buffers of the fallback channel, shared by every peer of an\n"
     "interface (SRQ). Each holds one message (at most a slot).",
     ucs_offsetof(uct_specrdv_verbs_config_t, rx_queue_len),
     UCS_CONFIG_TYPE_UINT},

    {"VERBS_FB_BUFS", "8",
     "Send buffers of the fallback channel per peer, one message each; at\n"
     "least 2.",
     ucs_offsetof(uct_specrdv_verbs_config_t, fb_bufs), UCS_CONFIG_TYPE_UINT},

    {"VERBS_FB_WINDOW", "32",
     "Fallback messages a peer may have sent that this side has not yet\n"
     "delivered: its share of the receive buffers (RX_QUEUE_LEN). Between 1\n"
     "and RX_QUEUE_LEN; with more busy peers than RX_QUEUE_LEN / FB_WINDOW,\n"
     "RC's receiver-not-ready retry paces them.",
     ucs_offsetof(uct_specrdv_verbs_config_t, fb_window),
     UCS_CONFIG_TYPE_UINT},

    {"VERBS_MAX_PEERS", "256",
     "Most interfaces that can connect to one interface.",
     ucs_offsetof(uct_specrdv_verbs_config_t, max_peers),
     UCS_CONFIG_TYPE_UINT},

    {"VERBS_MAX_INLINE", "256",
     "Largest message (with its slot header) written inline in the work\n"
     "request; the device may allow less. At least 8.",
     ucs_offsetof(uct_specrdv_verbs_config_t, max_inline),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"VERBS_GID_INDEX", "auto",
     "GID index of the RoCE port to use; auto: the first IPv4 one.",
     ucs_offsetof(uct_specrdv_verbs_config_t, gid_index),
     UCS_CONFIG_TYPE_ULUNITS},

    {"VERBS_TIMEOUT", "1s",
     "Time an RC QP waits for an acknowledgement before it retransmits.",
     ucs_offsetof(uct_specrdv_verbs_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"VERBS_RETRY_COUNT", "7",
     "Retransmissions before an RC QP gives up and its peer is failed.",
     ucs_offsetof(uct_specrdv_verbs_config_t, retry_count),
     UCS_CONFIG_TYPE_UINT},

    {NULL}
};


/* The wire's latency and bandwidth as UCX's ib interfaces estimate them
 * (uct_ib_iface_query: per lane speed, width x signal rate x encoding, 200 ns
 * more on RoCE), so that UCP weighs specrdv and rc_verbs on one port alike;
 * UCX also takes the packets' headers off the bandwidth (2 % at a 4 KB MTU),
 * which this does not */
static void uct_specrdv_verbs_port_perf(const struct ibv_port_attr *attr,
                                        double *latency_p, double *bw_p)
{
    double signal_rate, encoding = 64.0 / 66.0;
    unsigned lanes;

    switch (attr->active_width) {
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: lanes = 1;  break;
    }

    switch (attr->active_speed) {
    case 2:   *latency_p = 2500e-9; signal_rate = 5e9;   encoding = 0.8; break;
    case 4:   *latency_p = 1300e-9; signal_rate = 10.3125e9;             break;
    case 8:   *latency_p = 700e-9;  signal_rate = 10.3125e9;             break;
    case 16:  *latency_p = 700e-9;  signal_rate = 14.0625e9;             break;
    case 32:  *latency_p = 600e-9;  signal_rate = 25.78125e9;            break;
    case 64:  *latency_p = 600e-9;  signal_rate = 2 * 25.78125e9;        break;
    case 128: *latency_p = 600e-9;  signal_rate = 100e9;                 break;
    default:  *latency_p = 5000e-9; signal_rate = 2.5e9; encoding = 0.8; break;
    }

    *latency_p += 200e-9;
    *bw_p       = lanes * signal_rate * encoding / 8;
}

/* Completions of signalled work requests, as rc's send operations */
static ucs_mpool_ops_t uct_specrdv_verbs_comp_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free
};

/* Bounce buffers for put/get bcopy, as many as the operations in flight;
 * each holds a work request until it completes */
static const uct_iface_mpool_config_t uct_specrdv_verbs_bcopy_mp_config = {
    .max_bufs  = UINT_MAX,
    .bufs_grow = 16,
    UCT_SPECRDV_MPOOL_CONFIG_GROW
};

static ucs_status_t uct_specrdv_verbs_iface_query(uct_iface_h tl_iface,
                                                  uct_iface_attr_t *iface_attr)
{
    uct_specrdv_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                      uct_specrdv_verbs_iface_t);
    uct_specrdv_verbs_md_t *md       = uct_specrdv_verbs_iface_md(iface);
    size_t mtu                       = 128 << iface->path_mtu;
    struct ibv_port_attr port_attr;
    double latency;

    if (ibv_query_port(md->ctx, iface->port_num, &port_attr) != 0) {
        ucs_error("specrdv: ibv_query_port failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    uct_specrdv_iface_query(&iface->super, iface_attr);
    iface_attr->device_addr_len = 0;
    iface_attr->iface_addr_len  = sizeof(uct_specrdv_verbs_iface_addr_t);
    iface_attr->cap.flags      |= UCT_IFACE_FLAG_EP_CHECK |
                                  UCT_IFACE_FLAG_INTER_NODE |
                                  UCT_IFACE_FLAG_PUT_SHORT |
                                  UCT_IFACE_FLAG_PUT_BCOPY |
                                  UCT_IFACE_FLAG_PUT_ZCOPY |
                                  UCT_IFACE_FLAG_GET_BCOPY |
                                  UCT_IFACE_FLAG_GET_ZCOPY;

    iface_attr->cap.put.max_short       = iface->config.max_inline;
    iface_attr->cap.put.max_bcopy       = UCT_SPECRDV_VERBS_BCOPY_SIZE;
    iface_attr->cap.get.max_bcopy       = UCT_SPECRDV_VERBS_BCOPY_SIZE;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = port_attr.max_msg_sz;
    iface_attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.put.align_mtu       = mtu;
    iface_attr->cap.put.max_iov         = UCT_SPECRDV_VERBS_MAX_IOV;

    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = port_attr.max_msg_sz;
    iface_attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    iface_attr->cap.get.align_mtu       = mtu;
    iface_attr->cap.get.max_iov         = UCT_SPECRDV_VERBS_MAX_IOV;

    /* rc_verbs' software overhead; the receiver polls the slot, so there is
     * no completion to add to the wire's latency */
    uct_specrdv_verbs_port_perf(&port_attr, &latency,
                                &iface_attr->bandwidth.shared);
    iface_attr->latency             = ucs_linear_func_make(latency, 0);
    iface_attr->overhead            = 75e-9;
    iface_attr->bandwidth.dedicated = 0;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_verbs_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    uct_specrdv_verbs_iface_t *iface           =
            ucs_derived_of(tl_iface, uct_specrdv_verbs_iface_t);
    uct_specrdv_verbs_iface_addr_t *iface_addr = (void*)addr;

    iface_addr->super.writer = UCT_SPECRDV_WRITER_VERBS;
    iface_addr->nonce        = iface->nonce;
    iface_addr->ip           = iface->ip;
    iface_addr->port         = iface->port;
    iface_addr->slot_size    = iface->super.conns.geom.slot_size;
    return UCS_OK;
}

/* Any RoCE interface with our slots: IP routing decides the rest, and a
 * peer that cannot be reached fails its connection, not the process */
static int
uct_specrdv_verbs_iface_is_reachable(const uct_iface_h tl_iface,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_iface_addr_t *tl_iface_addr)
{
    uct_specrdv_verbs_iface_t *iface                 =
            ucs_derived_of(tl_iface, uct_specrdv_verbs_iface_t);
    const uct_specrdv_verbs_iface_addr_t *iface_addr = (const void*)tl_iface_addr;

    return uct_specrdv_iface_addr_is_writer(tl_iface_addr,
                                            &uct_specrdv_verbs_writer) &&
           (iface_addr->slot_size == iface->super.conns.geom.slot_size);
}
UCT_SPECRDV_IFACE_IS_REACHABLE_DEFINE(uct_specrdv_verbs_iface_is_reachable)
UCT_SPECRDV_EP_IS_CONNECTED_DEFINE(uct_specrdv_verbs_ep_is_connected)

static unsigned uct_specrdv_verbs_iface_progress(uct_iface_h tl_iface)
{
    uct_specrdv_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                      uct_specrdv_verbs_iface_t);
    uct_specrdv_peer_t *peer;
    unsigned count;

    /* completions first: they make room for what waits */
    count  = uct_specrdv_verbs_poll_send(iface);
    count += uct_specrdv_iface_progress(tl_iface);

    if (ucs_unlikely(iface->answers_due > 0)) {
        ucs_list_for_each(peer, &iface->super.conns.peers, list) {
            if (uct_specrdv_verbs_peer(peer)->answer_due) {
                uct_specrdv_verbs_peer_answer(iface,
                                              uct_specrdv_verbs_peer(peer));
            }
        }
    }

    /* cleared first: an event during the poll raises it again */
    if (ucs_unlikely((iface->wireup_count > 0) || iface->wireup_event)) {
        iface->wireup_event = 0;
        uct_specrdv_verbs_conn_progress(iface);
    }
    return count;
}

static ucs_status_t uct_specrdv_verbs_iface_fence(uct_iface_h tl_iface,
                                                  unsigned flags)
{
    uct_specrdv_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                      uct_specrdv_verbs_iface_t);
    uct_specrdv_peer_t *peer;

    ucs_list_for_each(peer, &iface->super.conns.peers, list) {
        uct_specrdv_verbs_peer(peer)->fence = 1;
    }
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_iface_flush(uct_iface_h tl_iface,
                                                  unsigned flags,
                                                  uct_completion_t *comp)
{
    uct_specrdv_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                      uct_specrdv_verbs_iface_t);
    uct_specrdv_verbs_peer_t *peer;
    uct_specrdv_peer_t *generic;
    ucs_status_t status;
    int busy = 0;

    status = uct_specrdv_iface_flush(tl_iface, flags, comp);
    if (status != UCS_OK) {
        return status;
    }

    ucs_list_for_each(generic, &iface->super.conns.peers, list) {
        peer = uct_specrdv_verbs_peer(generic);
        if (peer->fb_waiting > 0) {
            return UCS_INPROGRESS;
        }
        if ((peer->sn_completed == peer->sn_posted) ||
            (generic->flags & UCT_SPECRDV_PEER_FAILED)) {
            continue;
        }
        if (uct_specrdv_verbs_peer_signal(iface, peer) != UCS_OK) {
            return UCS_INPROGRESS;
        }
        busy = 1;
    }

    return busy ? UCS_INPROGRESS : UCS_OK;
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_verbs_iface_t, uct_iface_t);

static uct_iface_ops_t uct_specrdv_verbs_iface_tl_ops = {
    .ep_am_short              = uct_specrdv_ep_am_short,
    .ep_am_short_iov          = uct_specrdv_ep_am_short_iov,
    .ep_am_bcopy              = uct_specrdv_ep_am_bcopy,
    .ep_am_zcopy              = uct_specrdv_ep_am_zcopy,
    .ep_put_short             = uct_specrdv_verbs_ep_put_short,
    .ep_put_bcopy             = uct_specrdv_verbs_ep_put_bcopy,
    .ep_put_zcopy             = uct_specrdv_verbs_ep_put_zcopy,
    .ep_get_bcopy             = uct_specrdv_verbs_ep_get_bcopy,
    .ep_get_zcopy             = uct_specrdv_verbs_ep_get_zcopy,
    .ep_pending_add           = uct_specrdv_verbs_ep_pending_add,
    .ep_pending_purge         = uct_specrdv_ep_pending_purge,
    .ep_flush                 = uct_specrdv_verbs_ep_flush,
    .ep_fence                 = uct_specrdv_verbs_ep_fence,
    .ep_check                 = uct_specrdv_verbs_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_verbs_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_verbs_ep_t),
    .iface_flush              = uct_specrdv_verbs_iface_flush,
    .iface_fence              = uct_specrdv_verbs_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_specrdv_verbs_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_verbs_iface_t),
    .iface_query              = uct_specrdv_verbs_iface_query,
    .iface_get_device_address = (uct_iface_get_device_address_func_t)ucs_empty_function_return_success,
    .iface_get_address        = uct_specrdv_verbs_iface_get_address,
    UCT_SPECRDV_IFACE_OPS_IS_REACHABLE(uct_specrdv_verbs_iface_is_reachable)
};

static uct_iface_internal_ops_t uct_specrdv_verbs_iface_internal_ops = {
    UCT_SPECRDV_INTERNAL_OPS(uct_base_iface_estimate_perf,
                             uct_specrdv_verbs_iface_is_reachable,
                             uct_specrdv_verbs_ep_is_connected)
};

static ucs_status_t
uct_specrdv_verbs_iface_check_config(const uct_specrdv_verbs_config_t *config)
{
    if (config->fb_bufs < 2) {
        ucs_error("specrdv: UCX_SPECRDV_VERBS_FB_BUFS=%u must be at least 2",
                  config->fb_bufs);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->tx_queue_len <= config->fb_bufs +
                                 UCT_SPECRDV_VERBS_TX_RESERVE) ||
        (config->rx_queue_len == 0) || (config->max_peers == 0) ||
        (config->max_peers > UINT16_MAX) || (config->max_inline < 8) ||
        (config->retry_count > 7) ||
        (config->fb_window == 0) || (config->fb_window > config->rx_queue_len)) {
        ucs_error("specrdv: invalid UCX_SPECRDV_VERBS_* value: TX_QUEUE_LEN "
                  "> FB_BUFS + %u, RX_QUEUE_LEN > 0, MAX_PEERS <= %u, "
                  "MAX_INLINE >= 8, RETRY_COUNT <= 7, "
                  "1 <= FB_WINDOW <= RX_QUEUE_LEN",
                  UCT_SPECRDV_VERBS_TX_RESERVE, UINT16_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

/* ibv_qp_attr.timeout: 4.096 us * 2^timeout */
static uint8_t uct_specrdv_verbs_timeout_exp(double timeout)
{
    double t  = 4.096e-6;
    uint8_t e = 1;

    while ((t * 2 <= timeout) && (e < 31)) {
        t *= 2;
        ++e;
    }
    return e;
}

/* How much the device writes inline: what a QP gets when it asks for ours */
static ucs_status_t uct_specrdv_verbs_iface_probe_inline(uct_specrdv_verbs_iface_t *iface)
{
    unsigned max_inline;
    struct ibv_qp *qp;

    qp = uct_specrdv_verbs_conn_create_qp(iface, &max_inline);
    if (qp == NULL) {
        return UCS_ERR_IO_ERROR;
    }

    ibv_destroy_qp(qp);
    iface->config.max_inline = ucs_min(iface->config.max_inline, max_inline);
    if (iface->config.max_inline < sizeof(uint32_t)) {
        ucs_error("specrdv: the device writes no data inline");
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_iface_rx_init(uct_specrdv_verbs_iface_t *iface)
{
    uct_specrdv_verbs_md_t *md = uct_specrdv_verbs_iface_md(iface);
    uct_specrdv_conns_t *conns = &iface->super.conns;
    size_t ring_bytes, rings_bytes, rx_bytes, words_bytes;
    struct ibv_srq_init_attr srq_attr = {
        .attr.max_wr  = iface->config.rx_queue_len,
        .attr.max_sge = 1
    };
    unsigned i;

    ring_bytes        = (size_t)conns->geom.num_slots * conns->geom.slot_size;
    /* Rounded up so that every buffer's payload is as aligned as a ring
     * slot's: writers store the AM header there as a uint64_t */
    iface->fb_size    = ucs_align_up_pow2(sizeof(uct_specrdv_hdr_t) +
                                          uct_specrdv_conns_max_payload(conns),
                                          UCS_SYS_CACHE_LINE_SIZE);
    rings_bytes       = conns->num_rings * ring_bytes;
    rx_bytes          = rings_bytes + (size_t)iface->config.rx_queue_len *
                                      iface->fb_size;
    words_bytes       = iface->config.max_peers * sizeof(*iface->words);

    if ((ucs_posix_memalign(&iface->rx_mem, ucs_get_page_size(), rx_bytes,
                            "specrdv_verbs_rx") != 0) ||
        (ucs_posix_memalign((void**)&iface->words, ucs_get_page_size(),
                            words_bytes, "specrdv_verbs_words") != 0)) {
        return UCS_ERR_NO_MEMORY;
    }

    memset(iface->rx_mem, 0, rx_bytes);
    memset(iface->words, 0, words_bytes);
    iface->fb_rx    = UCS_PTR_BYTE_OFFSET(iface->rx_mem, rings_bytes);
    iface->rx_mr    = ibv_reg_mr(md->pd, iface->rx_mem, rx_bytes,
                                 IBV_ACCESS_LOCAL_WRITE |
                                 IBV_ACCESS_REMOTE_WRITE);
    iface->words_mr = ibv_reg_mr(md->pd, iface->words, words_bytes,
                                 IBV_ACCESS_LOCAL_WRITE |
                                 IBV_ACCESS_REMOTE_WRITE);
    if ((iface->rx_mr == NULL) || (iface->words_mr == NULL)) {
        ucs_error("specrdv: cannot register %zu bytes of rings and receive "
                  "buffers: %m", rx_bytes);
        return UCS_ERR_IO_ERROR;
    }

    uct_specrdv_conns_set_rx_memory(conns, iface->rx_mem, ring_bytes);

    iface->by_id      = ucs_calloc(iface->config.max_peers,
                                   sizeof(*iface->by_id), "specrdv_by_id");
    iface->free_rings = ucs_calloc(conns->num_rings,
                                   sizeof(*iface->free_rings),
                                   "specrdv_free_rings");
    iface->held       = ucs_calloc(iface->config.rx_queue_len,
                                   sizeof(*iface->held), "specrdv_held");
    if ((iface->by_id == NULL) || (iface->free_rings == NULL) ||
        (iface->held == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < conns->num_rings; ++i) {
        iface->free_rings[i] = conns->num_rings - 1 - i;
    }
    iface->num_free_rings = conns->num_rings;

    iface->send_cq = ibv_create_cq(md->ctx, UCT_SPECRDV_VERBS_TX_CQ_LEN, NULL,
                                   NULL, 0);
    iface->recv_cq = ibv_create_cq(md->ctx, iface->config.rx_queue_len, NULL,
                                   NULL, 0);
    iface->srq     = ibv_create_srq(md->pd, &srq_attr);
    if ((iface->send_cq == NULL) || (iface->recv_cq == NULL) ||
        (iface->srq == NULL)) {
        ucs_error("specrdv: cannot create CQs and SRQ on %s: %m",
                  ibv_get_device_name(md->ctx->device));
        return UCS_ERR_IO_ERROR;
    }

    iface->tx_cq_avail = UCT_SPECRDV_VERBS_TX_CQ_LEN;
    return uct_specrdv_verbs_post_recvs(iface);
}

static void uct_specrdv_verbs_iface_rx_cleanup(uct_specrdv_verbs_iface_t *iface)
{
    if (iface->srq != NULL) {
        ibv_destroy_srq(iface->srq);
    }
    if (iface->recv_cq != NULL) {
        ibv_destroy_cq(iface->recv_cq);
    }
    if (iface->send_cq != NULL) {
        ibv_destroy_cq(iface->send_cq);
    }
    ucs_free(iface->held);
    ucs_free(iface->free_rings);
    ucs_free(iface->by_id);
    if (iface->words_mr != NULL) {
        ibv_dereg_mr(iface->words_mr);
    }
    if (iface->rx_mr != NULL) {
        ibv_dereg_mr(iface->rx_mr);
    }
    ucs_free(iface->words);
    ucs_free(iface->rx_mem);
}

static const uct_specrdv_wire_ops_t uct_specrdv_verbs_wire_ops = {
    .connect        = uct_specrdv_verbs_conn_start,
    .tx_room        = uct_specrdv_verbs_tx_room,
    .ring_request   = uct_specrdv_verbs_ring_request,
    .ring_credits   = uct_specrdv_verbs_ring_credits,
    .ring_write     = uct_specrdv_verbs_ring_write,
    .ring_write_gather = uct_specrdv_verbs_ring_write_gather,
    .fb_reserve     = uct_specrdv_verbs_fb_reserve,
    .fb_post        = uct_specrdv_verbs_fb_post,
    .fb_can_send    = uct_specrdv_verbs_fb_can_send,
    .fb_credits     = uct_specrdv_verbs_fb_credits,
    .fb_credit_push = uct_specrdv_verbs_fb_credit_push,
    .credit_push    = uct_specrdv_verbs_credit_push,
    .ring_release   = uct_specrdv_verbs_ring_release,
    .peer_alive     = uct_specrdv_verbs_conn_alive,
    .ring_free      = uct_specrdv_verbs_ring_free,
    .rx_ctrl        = uct_specrdv_verbs_rx_ctrl,
    .poll_fallback  = uct_specrdv_verbs_poll_recv
};

static UCS_CLASS_INIT_FUNC(uct_specrdv_verbs_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_specrdv_verbs_md_t *md = ucs_derived_of(tl_md, uct_specrdv_verbs_md_t);
    const uct_specrdv_verbs_config_t *config =
            uct_specrdv_writer_config(&uct_specrdv_verbs_writer, tl_config);
    const char *dev_name = params->mode.device.dev_name;
    struct ibv_port_attr port_attr;
    const char *colon;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_iface_t,
                              &uct_specrdv_verbs_iface_tl_ops,
                              &uct_specrdv_verbs_iface_internal_ops,
                              &uct_specrdv_verbs_wire_ops, config->fb_window,
                              tl_md, worker, params, tl_config);

    /* what a failed open releases is what it got */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));

    status = uct_specrdv_verbs_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    colon = strchr(dev_name, ':');
    if ((colon == NULL) || (atoi(colon + 1) <= 0) ||
        (atoi(colon + 1) > md->dev_attr.phys_port_cnt)) {
        ucs_error("specrdv: invalid device name '%s'", dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    self->port_num = atoi(colon + 1);
    status         = uct_specrdv_verbs_port_gid(
            md->ctx, self->port_num,
            (config->gid_index == UCS_ULUNITS_AUTO) ? -1 : config->gid_index,
            &self->gid_index, &self->gid, &self->ip);
    if ((status != UCS_OK) ||
        (ibv_query_port(md->ctx, self->port_num, &port_attr) != 0)) {
        ucs_error("specrdv: %s is not an active RoCE port with an IPv4 GID%s",
                  dev_name, (config->gid_index == UCS_ULUNITS_AUTO) ? "" :
                  " at UCX_SPECRDV_VERBS_GID_INDEX");
        return UCS_ERR_NO_DEVICE;
    }

    self->path_mtu                  = port_attr.active_mtu;
    self->nonce                     = ucs_generate_uuid((uintptr_t)self);
    self->config.tx_queue_len       = config->tx_queue_len;
    self->config.rx_queue_len       = config->rx_queue_len;
    self->config.fb_bufs            = config->fb_bufs;
    self->config.max_peers          = config->max_peers;
    self->config.max_inline         = ucs_min(config->max_inline, UINT_MAX);
    self->config.timeout            =
            uct_specrdv_verbs_timeout_exp(config->timeout);
    self->config.retry_count        = config->retry_count;
    /* a fallback buffer's last send is signalled before its turn comes
     * again, and the send queue never fills with nothing signalled */
    self->config.moderation         = ucs_max(ucs_min(config->fb_bufs / 2,
                                                      config->tx_queue_len / 4),
                                              1);

    status = uct_iface_mpool_init(&self->super.super, &self->bcopy_mp,
                                  sizeof(uct_specrdv_verbs_bcopy_desc_t) +
                                  UCT_SPECRDV_VERBS_BCOPY_SIZE,
                                  sizeof(uct_specrdv_verbs_bcopy_desc_t),
                                  UCS_SYS_CACHE_LINE_SIZE,
                                  &uct_specrdv_verbs_bcopy_mp_config,
                                  uct_specrdv_verbs_bcopy_mp_config.bufs_grow,
                                  uct_specrdv_verbs_bcopy_desc_init,
                                  "specrdv_verbs_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    status = uct_specrdv_mpool_init(&self->comp_mp,
                                    sizeof(uct_specrdv_verbs_comp_t),
                                    UCS_SYS_CACHE_LINE_SIZE, 128,
                                    &uct_specrdv_verbs_comp_mp_ops,
                                    "specrdv_verbs_comp");
    if (status != UCS_OK) {
        goto err_bcopy_mp;
    }

    status = uct_specrdv_verbs_iface_rx_init(self);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_specrdv_verbs_iface_probe_inline(self);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_specrdv_verbs_conn_listen(self);
    if (status != UCS_OK) {
        goto err;
    }

    return UCS_OK;

err:
    uct_specrdv_verbs_iface_rx_cleanup(self);
    ucs_mpool_cleanup(&self->comp_mp, 1);
err_bcopy_mp:
    ucs_mpool_cleanup(&self->bcopy_mp, 1);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_verbs_iface_t)
{
    uct_specrdv_peer_t *peer, *tmp;

    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_list_for_each_safe(peer, tmp, &self->super.conns.peers, list) {
        uct_specrdv_verbs_conn_peer_destroy(self, uct_specrdv_verbs_peer(peer));
    }

    uct_specrdv_verbs_conn_cleanup(self);
    uct_specrdv_verbs_iface_rx_cleanup(self);
    ucs_mpool_cleanup(&self->comp_mp, 1);
    ucs_mpool_cleanup(&self->bcopy_mp, 1);
}

UCS_CLASS_DEFINE(uct_specrdv_verbs_iface_t, uct_specrdv_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_verbs_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_verbs_iface_t, uct_iface_t);

ucs_status_t uct_specrdv_verbs_iface_open(uct_md_h md, uct_worker_h worker,
                                          const uct_iface_params_t *params,
                                          const uct_iface_config_t *config,
                                          uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_verbs_iface_t)(md, worker,
                                                              params, config,
                                                              iface_p);
}
