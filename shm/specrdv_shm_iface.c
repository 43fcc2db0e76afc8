/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * Progress polls the head slot of every ring in the polling set (one cache
 * line per peer, usually a miss only when a message is there), then the FIFO.
 * A message is delivered only when its PSN is the connection's ESN; an early
 * one stays in place, so the other channel, which holds the missing message,
 * is never blocked behind it.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_ep.h"

#include <uct/sm/base/sm_iface.h>
#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <sys/prctl.h>
#include <sys/uio.h>


/* Messages taken from one channel per progress call */
#define UCT_SPECRDV_SHM_RX_BATCH  16

/* put/get latency through process_vm_writev/readv, measured with
 * ucx_perftest put_lat on the CI machine, rounded up */
#define UCT_SPECRDV_SHM_CMA_LATENCY  1000e-9


ucs_config_field_t uct_specrdv_shm_config_table[] = {
    {"SHM_FIFO_SIZE", "64",
     "Elements in the fallback FIFO, shared by all senders to an interface; a\n"
     "power of 2. Each is SLOT_SIZE bytes.",
     ucs_offsetof(uct_specrdv_shm_config_t, fifo_size), UCS_CONFIG_TYPE_UINT},

    {"SHM_MAX_PEERS", "256",
     "Most processes that can connect to one interface.",
     ucs_offsetof(uct_specrdv_shm_config_t, max_peers), UCS_CONFIG_TYPE_UINT},

    {"SHM_CMA", "try",
     "put/get by cross-memory attach (process_vm_writev/readv). With 'try' an\n"
     "interface on a kernel that forbids it offers no put/get; with 'yes' it\n"
     "fails to open.",
     ucs_offsetof(uct_specrdv_shm_config_t, cma), UCS_CONFIG_TYPE_TERNARY},

    {NULL}
};

#ifdef ENABLE_STATS
static ucs_stats_class_t uct_specrdv_shm_iface_stats_class = {
    .name          = "specrdv_shm",
    .num_counters  = UCT_SPECRDV_SHM_IFACE_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
        [UCT_SPECRDV_SHM_IFACE_STAT_TX_RING]        = "tx_ring",
        [UCT_SPECRDV_SHM_IFACE_STAT_TX_FALLBACK]    = "tx_fallback",
        [UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_CREDITS]  = "tx_no_credits",
        [UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_RESOURCE] = "tx_no_resource",
        [UCT_SPECRDV_SHM_IFACE_STAT_RX_HELD]        = "rx_held",
        [UCT_SPECRDV_SHM_IFACE_STAT_CREDIT_UPDATES] = "credit_updates",
        [UCT_SPECRDV_SHM_IFACE_STAT_RING_CLAIMED]   = "ring_claimed",
        [UCT_SPECRDV_SHM_IFACE_STAT_RING_REFUSED]   = "ring_refused"
    }
};
#endif


static ucs_status_t uct_specrdv_shm_iface_query(uct_iface_h tl_iface,
                                                uct_iface_attr_t *iface_attr)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);
    size_t max_payload             = uct_specrdv_shm_iface_max_payload(iface);

    uct_specrdv_iface_query(&iface->super, iface_attr);
    iface_attr->device_addr_len = uct_sm_iface_get_device_addr_len();
    iface_attr->iface_addr_len  = sizeof(uct_specrdv_shm_iface_addr_t);
    iface_attr->ep_addr_len     = 0;
    iface_attr->max_conn_priv   = 0;

    iface_attr->cap.am.max_short       = max_payload;
    iface_attr->cap.am.max_bcopy       = max_payload;
    iface_attr->cap.am.min_zcopy       = 0;
    iface_attr->cap.am.max_zcopy       = max_payload;
    iface_attr->cap.am.max_hdr         = max_payload;
    iface_attr->cap.am.max_iov         = UCT_SM_MAX_IOV;
    iface_attr->cap.am.opt_zcopy_align = UCS_SYS_CACHE_LINE_SIZE;
    iface_attr->cap.am.align_mtu       = UCS_SYS_CACHE_LINE_SIZE;

    iface_attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            UCT_IFACE_FLAG_AM_ZCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                            UCT_IFACE_FLAG_EP_CHECK;

    if (iface->rma) {
        iface_attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT |
                                 UCT_IFACE_FLAG_PUT_BCOPY |
                                 UCT_IFACE_FLAG_PUT_ZCOPY |
                                 UCT_IFACE_FLAG_GET_BCOPY |
                                 UCT_IFACE_FLAG_GET_ZCOPY;

        iface_attr->cap.put.max_short       = iface->super.config.slot_size;
        iface_attr->cap.put.max_bcopy       = iface->super.config.slot_size;
        iface_attr->cap.put.min_zcopy       = 0;
        iface_attr->cap.put.max_zcopy       = SIZE_MAX;
        iface_attr->cap.put.opt_zcopy_align = UCS_SYS_CACHE_LINE_SIZE;
        iface_attr->cap.put.align_mtu       = UCS_SYS_CACHE_LINE_SIZE;
        iface_attr->cap.put.max_iov         = UCT_SM_MAX_IOV;

        iface_attr->cap.get.max_bcopy       = iface->super.config.slot_size;
        iface_attr->cap.get.min_zcopy       = 0;
        iface_attr->cap.get.max_zcopy       = SIZE_MAX;
        iface_attr->cap.get.opt_zcopy_align = UCS_SYS_CACHE_LINE_SIZE;
        iface_attr->cap.get.align_mtu       = UCS_SYS_CACHE_LINE_SIZE;
        iface_attr->cap.get.max_iov         = UCT_SM_MAX_IOV;
    }

    /* A ring message costs the receiver two cache-line transfers (header,
     * payload with tail) and the sender none on its own lines */
    iface_attr->latency             = ucs_linear_func_make(80e-9, 0);
    iface_attr->overhead            = 10e-9;
    iface_attr->bandwidth.dedicated = iface->super.config.bandwidth;
    iface_attr->bandwidth.shared    = 0;
    iface_attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_shm_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    uct_specrdv_shm_iface_t *iface           = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);
    uct_specrdv_shm_iface_addr_t *iface_addr = (void*)addr;

    iface_addr->nonce          = iface->seg.ctl->nonce;
    iface_addr->shmid          = iface->seg.shmid;
    iface_addr->pid            = iface->seg.ctl->pid;
    iface_addr->pid_ns         = ucs_sys_get_ns(UCS_SYS_NS_TYPE_PID);
    iface_addr->slot_size      = iface->seg.ctl->geom.slot_size;
    iface_addr->payload_offset = iface->seg.ctl->geom.payload_offset;
    return UCS_OK;
}

static int
uct_specrdv_shm_iface_is_reachable(const uct_iface_h tl_iface,
                                   const uct_device_addr_t *dev_addr,
                                   const uct_iface_addr_t *tl_iface_addr)
{
    uct_specrdv_shm_iface_t *iface                 = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);
    const uct_specrdv_shm_iface_addr_t *iface_addr = (const void*)tl_iface_addr;

    /* Same host and IPC namespace (System V ids), same PID namespace (CMA
     * addresses processes by pid), and the same slots: a message that fits
     * ours fits theirs */
    if ((iface_addr == NULL) ||
        !uct_sm_iface_is_reachable(tl_iface, dev_addr, tl_iface_addr)) {
        return 0;
    }

    if ((iface_addr->pid_ns != ucs_sys_get_ns(UCS_SYS_NS_TYPE_PID)) ||
        (iface_addr->slot_size != iface->seg.ctl->geom.slot_size) ||
        (iface_addr->payload_offset != iface->seg.ctl->geom.payload_offset)) {
        ucs_debug("specrdv: pid %d is on this host but uses another PID "
                  "namespace or slot layout", iface_addr->pid);
        return 0;
    }

    return 1;
}

static void uct_specrdv_shm_iface_release_desc(uct_recv_desc_t *self,
                                               void *desc)
{
    uct_specrdv_shm_iface_t *iface = ucs_container_of(self,
                                                      uct_specrdv_shm_iface_t,
                                                      release_desc);
    const uct_specrdv_ring_geom_t *geom = &iface->seg.ctl->geom;
    size_t ring_bytes   = uct_specrdv_shm_seg_ring_bytes(geom);
    size_t offset       = UCS_PTR_BYTE_DIFF(iface->seg.rings, desc);
    unsigned index      = offset / ring_bytes;
    uct_specrdv_shm_rx_ring_t *ring = &iface->rings[index];

    uct_specrdv_ring_rx_release(&ring->rx,
                                (offset % ring_bytes) / geom->slot_size);
    if (ucs_unlikely(ring->closing)) {
        uct_specrdv_shm_peer_rx_ring_reclaim(iface, index);
    }
}

/* Deliver one in-order message; returns whether the slot is kept by UCT's
 * user (a ring slot only) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_specrdv_shm_iface_deliver(uct_specrdv_shm_iface_t *iface,
                              uct_specrdv_shm_peer_t *peer,
                              const uct_specrdv_hdr_t *hdr, void *payload,
                              unsigned am_flags)
{
    if ((hdr->flags & UCT_SPECRDV_HDR_FLAG_CREDITS) &&
        (peer->flags & UCT_SPECRDV_SHM_PEER_RING_READY)) {
        uct_specrdv_ring_tx_credits_update(&peer->tx, hdr->credits);
    }

    if (hdr->type == UCT_SPECRDV_MSG_CTRL) {
        uct_specrdv_shm_peer_rx_ctrl(iface, peer, hdr, payload);
        return UCS_OK;
    }

    if (am_flags & UCT_CB_PARAM_FLAG_DESC) {
        uct_recv_desc(UCS_PTR_BYTE_OFFSET(payload,
                                          -(ptrdiff_t)iface->rx_headroom)) =
                &iface->release_desc;
    }

    uct_iface_trace_am(&iface->super.super, UCT_AM_TRACE_TYPE_RECV, hdr->am_id,
                       payload, hdr->length, "RX: AM psn %u", hdr->psn);
    return uct_iface_invoke_am(&iface->super.super, hdr->am_id, payload,
                               hdr->length, am_flags);
}

static unsigned uct_specrdv_shm_iface_poll_ring(uct_specrdv_shm_iface_t *iface,
                                                unsigned index)
{
    uct_specrdv_shm_rx_ring_t *ring = &iface->rings[index];
    uct_specrdv_shm_peer_t *peer    = ring->peer;
    unsigned count                  = 0;
    uct_specrdv_hdr_t *hdr;
    ucs_status_t status;
    uint32_t slot;
    int order;

    while (count < UCT_SPECRDV_SHM_RX_BATCH) {
        status = uct_specrdv_ring_rx_peek(&ring->rx, &hdr);
        if (ucs_likely(status != UCS_OK)) {
            if (status == UCS_ERR_IO_ERROR) {
                uct_specrdv_shm_peer_fail(iface, peer, status);
                return count;
            }
            break;
        }

        if (ucs_unlikely(hdr->type != UCT_SPECRDV_MSG_AM)) {
            ucs_error("specrdv: control message in the ring of pid %d",
                      peer->pid);
            uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
            return count;
        }

        order = uct_specrdv_conn_rx_order(&peer->conn, hdr->psn);
        if (ucs_unlikely(order != 0)) {
            if (order < 0) {
                ucs_error("specrdv: pid %d repeated psn %u in its ring",
                          peer->pid, hdr->psn);
                uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
                return count;
            }
            UCS_STATS_UPDATE_COUNTER(iface->stats,
                                     UCT_SPECRDV_SHM_IFACE_STAT_RX_HELD, 1);
            break;
        }

        slot   = uct_specrdv_ring_rx_consume(&ring->rx);
        status = uct_specrdv_shm_iface_deliver(
                iface, peer, hdr,
                UCS_PTR_BYTE_OFFSET(hdr, ring->rx.geom.payload_offset),
                iface->ring_am_flags);
        if (status != UCS_INPROGRESS) {
            uct_specrdv_ring_rx_release(&ring->rx, slot);
        }
        ++count;
    }

    if (uct_specrdv_ring_rx_credits_pending(&ring->rx) >=
        iface->super.config.credit_update) {
        iface->seg.ring_ctl[index].returned =
                uct_specrdv_ring_rx_credits_take(&ring->rx);
        UCS_STATS_UPDATE_COUNTER(iface->stats,
                                 UCT_SPECRDV_SHM_IFACE_STAT_CREDIT_UPDATES, 1);
    }

    return count;
}

static unsigned uct_specrdv_shm_iface_poll_rings(uct_specrdv_shm_iface_t *iface)
{
    unsigned count = 0;
    unsigned i     = 0;
    unsigned index;

    /* A failing peer leaves the set, and the last ring takes its place */
    while (i < iface->poll_count) {
        index  = iface->poll_set[i];
        count += uct_specrdv_shm_iface_poll_ring(iface, index);
        if ((i < iface->poll_count) && (iface->poll_set[i] == index)) {
            ++i;
        }
    }
    return count;
}

/* The FIFO's head is early: the messages before it are in the peer's ring,
 * whole, since the peer wrote them first.  If they are not, the peer is
 * broken, and holding the FIFO for it would stall every other sender. */
static int uct_specrdv_shm_iface_fifo_gap(uct_specrdv_shm_iface_t *iface,
                                          uct_specrdv_shm_peer_t *peer)
{
    uct_specrdv_hdr_t *hdr;

    if ((peer->rx_ring >= 0) &&
        (uct_specrdv_ring_rx_peek(&iface->rings[peer->rx_ring].rx, &hdr) ==
         UCS_OK)) {
        return 0;
    }

    ucs_error("specrdv: pid %d skipped sequence numbers", peer->pid);
    uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
    return 1;
}

static unsigned uct_specrdv_shm_iface_poll_fifo(uct_specrdv_shm_iface_t *iface)
{
    size_t max_payload = uct_specrdv_shm_fifo_max_payload(&iface->seg);
    unsigned count     = 0;
    uct_specrdv_shm_fifo_elem_t *elem;
    uct_specrdv_shm_peer_t *peer;
    uct_specrdv_hdr_t *hdr;
    void *payload;
    unsigned src;
    int order;

    while (count < UCT_SPECRDV_SHM_RX_BATCH) {
        elem = uct_specrdv_shm_fifo_peek(&iface->seg, iface->fifo_tail);
        if (elem == NULL) {
            break;
        }

        hdr     = &elem->hdr;
        payload = elem + 1;
        src     = hdr->src;
        if (ucs_unlikely(src >= iface->seg.ctl->max_peers)) {
            ucs_error("specrdv: dropped a message from sender id %u", src);
            goto next;
        }

        peer = iface->by_id[src];
        if (ucs_unlikely(peer == NULL)) {
            if (hdr->length <= max_payload) {
                uct_specrdv_shm_peer_rx_connect(iface, src, hdr, payload);
            }
            goto next;
        }

        if (ucs_unlikely(peer->flags & UCT_SPECRDV_SHM_PEER_FAILED)) {
            goto next;
        }

        if (ucs_unlikely(uct_specrdv_hdr_check(hdr, max_payload) != UCS_OK)) {
            uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
            goto next;
        }

        order = uct_specrdv_conn_rx_order(&peer->conn, hdr->psn);
        if (ucs_unlikely(order != 0)) {
            if (order > 0) {
                UCS_STATS_UPDATE_COUNTER(iface->stats,
                                         UCT_SPECRDV_SHM_IFACE_STAT_RX_HELD, 1);
                if (!uct_specrdv_shm_iface_fifo_gap(iface, peer)) {
                    break;
                }
            } else {
                ucs_error("specrdv: pid %d repeated psn %u", peer->pid,
                          hdr->psn);
                uct_specrdv_shm_peer_fail(iface, peer, UCS_ERR_IO_ERROR);
            }
            goto next;
        }

        uct_specrdv_shm_iface_deliver(iface, peer, hdr, payload, 0);
next:
        uct_specrdv_shm_fifo_pop(&iface->seg, iface->fifo_tail++);
        ++count;
    }

    return count;
}

static unsigned uct_specrdv_shm_iface_progress(uct_iface_h tl_iface)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);
    unsigned count;

    count  = uct_specrdv_shm_iface_poll_rings(iface);
    count += uct_specrdv_shm_iface_poll_fifo(iface);
    if (ucs_unlikely(iface->invalidated > 0)) {
        uct_specrdv_shm_ep_report_invalidated(iface);
    }
    if (ucs_unlikely(!ucs_arbiter_is_empty(&iface->arbiter))) {
        ucs_arbiter_dispatch(&iface->arbiter, 1,
                             uct_specrdv_shm_ep_process_pending, &count);
    }
    return count;
}

static ucs_status_t uct_specrdv_shm_iface_flush(uct_iface_h tl_iface,
                                                unsigned flags,
                                                uct_completion_t *comp)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super.super);
        return UCS_ERR_NO_RESOURCE;
    }

    UCT_TL_IFACE_STAT_FLUSH(&iface->super.super);
    return UCS_OK;
}

/* What ucx_cma does: Yama's ptrace_scope decides whether a process of the
 * same user may reach this one's memory */
static int uct_specrdv_shm_iface_cma_allowed(const char **why)
{
    char buffer[32];
    ssize_t nread;
    uint64_t src = 1, dst = 0;
    struct iovec local  = {&src, sizeof(src)};
    struct iovec remote = {&dst, sizeof(dst)};

    if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) != sizeof(dst)) {
        *why = "process_vm_writev is not permitted";
        return 0;
    }

    nread = ucs_read_file(buffer, sizeof(buffer) - 1, 1,
                          "/proc/sys/kernel/yama/ptrace_scope");
    if (nread <= 0) {
        return 1;
    }

    buffer[nread] = '\0';
    switch (atoi(buffer)) {
    case 0:
        return 1;
    case 1:
        if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0) {
            return 1;
        }
        *why = "ptrace_scope is 1 and PR_SET_PTRACER failed";
        return 0;
    default:
        *why = "ptrace_scope forbids it";
        return 0;
    }
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_shm_iface_t, uct_iface_t);

static uct_iface_ops_t uct_specrdv_shm_iface_tl_ops = {
    .ep_am_short              = uct_specrdv_shm_ep_am_short,
    .ep_am_short_iov          = uct_specrdv_shm_ep_am_short_iov,
    .ep_am_bcopy              = uct_specrdv_shm_ep_am_bcopy,
    .ep_am_zcopy              = uct_specrdv_shm_ep_am_zcopy,
    .ep_put_short             = uct_specrdv_shm_ep_put_short,
    .ep_put_bcopy             = uct_specrdv_shm_ep_put_bcopy,
    .ep_put_zcopy             = uct_specrdv_shm_ep_put_zcopy,
    .ep_get_bcopy             = uct_specrdv_shm_ep_get_bcopy,
    .ep_get_zcopy             = uct_specrdv_shm_ep_get_zcopy,
    .ep_pending_add           = uct_specrdv_shm_ep_pending_add,
    .ep_pending_purge         = uct_specrdv_shm_ep_pending_purge,
    .ep_flush                 = uct_specrdv_shm_ep_flush,
    .ep_fence                 = uct_sm_ep_fence,
    .ep_check                 = uct_specrdv_shm_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_shm_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_shm_ep_t),
    .iface_flush              = uct_specrdv_shm_iface_flush,
    .iface_fence              = uct_sm_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_specrdv_shm_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_shm_iface_t),
    .iface_query              = uct_specrdv_shm_iface_query,
    .iface_get_device_address = uct_sm_iface_get_device_address,
    .iface_get_address        = uct_specrdv_shm_iface_get_address,
    .iface_is_reachable       = uct_specrdv_shm_iface_is_reachable
};

static uct_iface_internal_ops_t uct_specrdv_shm_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)ucs_empty_function_return_unsupported,
    .ep_invalidate       = uct_specrdv_shm_ep_invalidate
};

static ucs_status_t
uct_specrdv_shm_iface_setup_rma(uct_specrdv_shm_iface_t *iface,
                                ucs_ternary_auto_value_t cma)
{
    const char *why = NULL;

    if (cma == UCS_NO) {
        iface->rma = 0;
        return UCS_OK;
    }

    iface->rma = uct_specrdv_shm_iface_cma_allowed(&why);
    if (iface->rma) {
        return UCS_OK;
    }

    if (cma == UCS_YES) {
        ucs_error("specrdv: UCX_SPECRDV_SHM_CMA=y but CMA is unavailable: %s",
                  why);
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_warn("specrdv: CMA is unavailable (%s): shm interface offers no "
             "put/get; set UCX_SPECRDV_SHM_CMA=n to silence", why);
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_specrdv_shm_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_specrdv_iface_config_t *config =
            ucs_derived_of(tl_config, uct_specrdv_iface_config_t);
    uct_specrdv_shm_seg_params_t seg_params;
    size_t headroom, align, align_offset;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_iface_t,
                              &uct_specrdv_shm_iface_tl_ops,
                              &uct_specrdv_shm_iface_internal_ops, md, worker,
                              params, tl_config);

    headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
               params->rx_headroom : 0;
    if (!ucs_is_pow2(config->shm.fifo_size) || (config->shm.fifo_size < 2)) {
        ucs_error("specrdv: UCX_SPECRDV_SHM_FIFO_SIZE=%u must be a power of 2 "
                  "and at least 2", config->shm.fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->shm.max_peers == 0) || (config->shm.max_peers > UINT16_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_SHM_MAX_PEERS=%u is out of range "
                  "[1..%u]", config->shm.max_peers, UINT16_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    seg_params.geom.payload_offset = UCT_SPECRDV_PAYLOAD_OFFSET;
    seg_params.geom.slot_size      = self->super.config.slot_size;
    seg_params.geom.num_slots      = self->super.config.ring_slots;
    seg_params.num_rings           = self->super.config.poll_set;
    seg_params.fifo_size           = config->shm.fifo_size;
    seg_params.max_peers           = config->shm.max_peers;
    if (sizeof(uct_specrdv_hdr_t) + sizeof(uct_recv_desc_t*) + headroom >
        UCT_SPECRDV_PAYLOAD_OFFSET) {
        ucs_error("specrdv: rx headroom %zu exceeds the %zu bytes a slot "
                  "reserves", headroom, UCT_SPECRDV_PAYLOAD_OFFSET -
                  sizeof(uct_specrdv_hdr_t) - sizeof(uct_recv_desc_t*));
        return UCS_ERR_INVALID_PARAM;
    }

    /* A kept slot is the user's descriptor only where it has the alignment
     * the user asked for; elsewhere the user copies the data out */
    status = uct_iface_param_am_alignment(params, seg_params.geom.slot_size,
                                          0, 0, &align, &align_offset);
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

    self->ring_am_flags = ((align <= UCS_SYS_CACHE_LINE_SIZE) &&
                           ((UCT_SPECRDV_PAYLOAD_OFFSET + align_offset) %
                            align == 0)) ? UCT_CB_PARAM_FLAG_DESC : 0;

    status = uct_specrdv_shm_iface_setup_rma(self, config->shm.cma);
    if (status != UCS_OK) {
        return status;
    }

    self->rx_headroom         = headroom;
    self->release_desc.cb     = uct_specrdv_shm_iface_release_desc;
    self->fifo_tail           = 0;
    self->poll_count          = 0;
    self->invalidated         = 0;
    ucs_list_head_init(&self->peers);
    ucs_arbiter_init(&self->arbiter);

    status = uct_specrdv_shm_seg_create(&seg_params,
                                        ucs_generate_uuid((uintptr_t)self) | 1,
                                        &self->seg);
    if (status != UCS_OK) {
        goto err_cleanup_arbiter;
    }

    self->by_id    = ucs_calloc(seg_params.max_peers, sizeof(*self->by_id),
                                "specrdv_by_id");
    self->rings    = ucs_calloc(seg_params.num_rings, sizeof(*self->rings),
                                "specrdv_rings");
    self->poll_set = ucs_calloc(seg_params.num_rings, sizeof(*self->poll_set),
                                "specrdv_poll_set");
    self->released = ucs_calloc(seg_params.num_rings,
                                seg_params.geom.num_slots, "specrdv_released");
    self->bounce   = ucs_malloc(seg_params.geom.slot_size, "specrdv_bounce");
    if ((self->by_id == NULL) || (self->rings == NULL) ||
        (self->poll_set == NULL) || (self->released == NULL) ||
        (self->bounce == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    status = UCS_STATS_NODE_ALLOC(&self->stats,
                                  &uct_specrdv_shm_iface_stats_class,
                                  self->super.super.stats, "-%p", self);
    if (status != UCS_OK) {
        goto err_free;
    }

    return UCS_OK;

err_free:
    ucs_free(self->bounce);
    ucs_free(self->released);
    ucs_free(self->poll_set);
    ucs_free(self->rings);
    ucs_free(self->by_id);
    uct_specrdv_shm_seg_detach(&self->seg);
err_cleanup_arbiter:
    ucs_arbiter_cleanup(&self->arbiter);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_shm_iface_t)
{
    uct_specrdv_shm_peer_t *peer, *tmp;

    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_list_for_each_safe(peer, tmp, &self->peers, list) {
        uct_specrdv_shm_peer_destroy(self, peer);
    }

    /* Peers still mapping the segment see that nobody reads it any more */
    self->seg.ctl->closed = 1;
    UCS_STATS_NODE_FREE(self->stats);
    ucs_free(self->bounce);
    ucs_free(self->released);
    ucs_free(self->poll_set);
    ucs_free(self->rings);
    ucs_free(self->by_id);
    uct_specrdv_shm_seg_detach(&self->seg);
    ucs_arbiter_cleanup(&self->arbiter);
}

UCS_CLASS_DEFINE(uct_specrdv_shm_iface_t, uct_specrdv_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_shm_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_shm_iface_t, uct_iface_t);

ucs_status_t uct_specrdv_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_shm_iface_t)(md, worker, params,
                                                            config, iface_p);
}
