/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_ep.h"

#include <uct/sm/base/sm_iface.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <uct/api/v2/uct_v2.h>
#include <sys/prctl.h>
#include <sys/uio.h>


ucs_config_field_t uct_specrdv_shm_config_table[] = {
    {"SHM_FIFO_SIZE", "64",
     "Elements in the fallback FIFO, shared by all senders to an interface; a\n"
     "power of 2. Each holds one message: a slot, and a cache line for its\n"
     "header.",
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


static ucs_status_t uct_specrdv_shm_iface_query(uct_iface_h tl_iface,
                                                uct_iface_attr_t *iface_attr)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);

    uct_specrdv_iface_query(&iface->super, iface_attr);
    iface_attr->device_addr_len = uct_sm_iface_get_device_addr_len();
    iface_attr->iface_addr_len  = sizeof(uct_specrdv_shm_iface_addr_t);
    iface_attr->cap.flags      |= UCT_IFACE_FLAG_EP_CHECK;

    /* A CMA copy gains nothing from alignment, and an alignment above one
     * byte makes UCP's rendezvous split an unaligned buffer's first bytes
     * into a system call of their own (as UCX's scopy interfaces, 1). */
    if (iface->rma) {
        iface_attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT |
                                 UCT_IFACE_FLAG_PUT_BCOPY |
                                 UCT_IFACE_FLAG_PUT_ZCOPY |
                                 UCT_IFACE_FLAG_GET_BCOPY |
                                 UCT_IFACE_FLAG_GET_ZCOPY;

        iface_attr->cap.put.max_short       = iface->super.conns.geom.slot_size;
        iface_attr->cap.put.max_bcopy       = iface->super.conns.geom.slot_size;
        iface_attr->cap.put.min_zcopy       = 0;
        iface_attr->cap.put.max_zcopy       = SIZE_MAX;
        iface_attr->cap.put.opt_zcopy_align = 1;
        iface_attr->cap.put.align_mtu       = 1;
        iface_attr->cap.put.max_iov         = UCT_SM_MAX_IOV;

        iface_attr->cap.get.max_bcopy       = iface->super.conns.geom.slot_size;
        iface_attr->cap.get.min_zcopy       = 0;
        iface_attr->cap.get.max_zcopy       = SIZE_MAX;
        iface_attr->cap.get.opt_zcopy_align = 1;
        iface_attr->cap.get.align_mtu       = 1;
        iface_attr->cap.get.max_iov         = UCT_SM_MAX_IOV;
    }

    /* A ring message costs the receiver two cache-line transfers (header,
     * payload with tail) and the sender none on its own lines.  UCP's v1
     * protocols read one overhead per interface, and use it to place the
     * rendezvous threshold: with an active message's 10 ns it put
     * rendezvous at one slot (8 KB), where a CMA transfer's system call
     * (UCX's cma reports 2 us; 2.2-2.4 us here, ucx_perftest get and
     * put_lat over specrdv) makes it 4-7 times slower than eager through
     * Open MPI.  So the interface reports its RMA's cost, as cma does, and
     * the per-operation estimate gives active messages their own. */
    iface_attr->latency  = ucs_linear_func_make(80e-9, 0);
    iface_attr->overhead = iface->rma ? UCT_SPECRDV_SHM_RMA_OVERHEAD :
                                        UCT_SPECRDV_SHM_AM_OVERHEAD;
    return UCS_OK;
}

/* The transport's bandwidth with the sender's copy in series */
static void uct_specrdv_shm_zcopy_bandwidth(uct_ppn_bandwidth_t *bw)
{
    double wire = ucs_max(bw->dedicated, bw->shared);

    bw->dedicated = 1.0 / ((1.0 / wire) + (1.0 / UCT_SPECRDV_SHM_COPY_BW));
    bw->shared    = 0;
}

static ucs_status_t
uct_specrdv_shm_iface_estimate_perf(uct_iface_h tl_iface,
                                    uct_perf_attr_t *perf_attr)
{
    ucs_status_t status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
    uct_ep_operation_t op;

    if ((status != UCS_OK) ||
        !(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION)) {
        return status;
    }

    op = perf_attr->operation;
    if ((op == UCT_EP_OP_AM_SHORT) || (op == UCT_EP_OP_AM_BCOPY) ||
        (op == UCT_EP_OP_AM_ZCOPY)) {
        if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
            perf_attr->send_pre_overhead = UCT_SPECRDV_SHM_AM_OVERHEAD;
        }
        if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
            perf_attr->recv_overhead = UCT_SPECRDV_SHM_AM_OVERHEAD;
        }
    }

    /* This writer cannot gather: its am_zcopy copies into the slot as bcopy
     * does, then completes.  UCP's v2 prices zero-copy with no sender copy
     * and, from 1.20, without the wait for its completion, so it chose
     * zero-copy over short from 1 byte for a send without fast completion
     * (Open MPI's isend).  The copy goes into the bandwidth, the completion
     * into the post overhead: short then wins up to its limit. */
    if (op == UCT_EP_OP_AM_ZCOPY) {
        if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
            perf_attr->send_post_overhead = UCT_SPECRDV_SHM_AM_OVERHEAD;
        }
        if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
            uct_specrdv_shm_zcopy_bandwidth(&perf_attr->bandwidth);
        }
        uct_specrdv_perf_attr_path_bandwidth(perf_attr,
                                             uct_specrdv_shm_zcopy_bandwidth);
    }
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_shm_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    uct_specrdv_shm_iface_t *iface           = ucs_derived_of(tl_iface,
                                                    uct_specrdv_shm_iface_t);
    uct_specrdv_shm_iface_addr_t *iface_addr = (void*)addr;

    iface_addr->super.writer   = UCT_SPECRDV_WRITER_SHM;
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
    if (!uct_specrdv_iface_addr_is_writer(tl_iface_addr,
                                          &uct_specrdv_shm_writer) ||
        !uct_specrdv_sm_iface_is_reachable(tl_iface, dev_addr,
                                           tl_iface_addr)) {
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
UCT_SPECRDV_IFACE_IS_REACHABLE_DEFINE(uct_specrdv_shm_iface_is_reachable)
UCT_SPECRDV_EP_IS_CONNECTED_DEFINE(uct_specrdv_shm_ep_is_connected)

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
    .ep_am_short              = uct_specrdv_ep_am_short,
    .ep_am_short_iov          = uct_specrdv_ep_am_short_iov,
    .ep_am_bcopy              = uct_specrdv_ep_am_bcopy,
    .ep_am_zcopy              = uct_specrdv_ep_am_zcopy,
    .ep_put_short             = uct_specrdv_shm_ep_put_short,
    .ep_put_bcopy             = uct_specrdv_shm_ep_put_bcopy,
    .ep_put_zcopy             = uct_specrdv_shm_ep_put_zcopy,
    .ep_get_bcopy             = uct_specrdv_shm_ep_get_bcopy,
    .ep_get_zcopy             = uct_specrdv_shm_ep_get_zcopy,
    .ep_pending_add           = uct_specrdv_ep_pending_add,
    .ep_pending_purge         = uct_specrdv_ep_pending_purge,
    .ep_flush                 = uct_specrdv_ep_flush,
    .ep_fence                 = uct_sm_ep_fence,
    .ep_check                 = uct_specrdv_shm_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_specrdv_shm_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_shm_ep_t),
    .iface_flush              = uct_specrdv_iface_flush,
    .iface_fence              = uct_sm_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_specrdv_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_specrdv_shm_iface_t),
    .iface_query              = uct_specrdv_shm_iface_query,
    .iface_get_device_address = uct_sm_iface_get_device_address,
    .iface_get_address        = uct_specrdv_shm_iface_get_address,
    UCT_SPECRDV_IFACE_OPS_IS_REACHABLE(uct_specrdv_shm_iface_is_reachable)
};

static uct_iface_internal_ops_t uct_specrdv_shm_iface_internal_ops = {
    UCT_SPECRDV_INTERNAL_OPS(uct_specrdv_shm_iface_estimate_perf,
                             uct_specrdv_shm_iface_is_reachable,
                             uct_specrdv_shm_ep_is_connected)
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

static UCS_CLASS_INIT_FUNC(uct_specrdv_shm_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_specrdv_md_t *md                   = ucs_derived_of(tl_md,
                                                            uct_specrdv_md_t);
    const uct_specrdv_shm_config_t *config =
            uct_specrdv_writer_config(md->writer, tl_config);
    uct_specrdv_shm_seg_params_t seg_params;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_iface_t,
                              &uct_specrdv_shm_iface_tl_ops,
                              &uct_specrdv_shm_iface_internal_ops,
                              &uct_specrdv_shm_wire_ops, 0, tl_md, worker,
                              params, tl_config);

    if (!ucs_is_pow2(config->fifo_size) || (config->fifo_size < 2)) {
        ucs_error("specrdv: UCX_SPECRDV_SHM_FIFO_SIZE=%u must be a power of 2 "
                  "and at least 2", config->fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->max_peers == 0) || (config->max_peers > UINT16_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_SHM_MAX_PEERS=%u is out of range "
                  "[1..%u]", config->max_peers, UINT16_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_specrdv_shm_iface_setup_rma(self, config->cma);
    if (status != UCS_OK) {
        return status;
    }

    seg_params.geom      = self->super.conns.geom;
    seg_params.num_rings = self->super.conns.num_rings;
    seg_params.fifo_size = config->fifo_size;
    seg_params.max_peers = config->max_peers;
    self->fifo_tail      = 0;
    status = uct_specrdv_shm_seg_create(&seg_params,
                                        ucs_generate_uuid((uintptr_t)self) | 1,
                                        &self->seg);
    if (status != UCS_OK) {
        return status;
    }

    uct_specrdv_conns_set_rx_memory(&self->super.conns, self->seg.rings,
                                    uct_specrdv_shm_seg_ring_bytes(
                                            &seg_params.geom));
    self->by_id  = ucs_calloc(seg_params.max_peers, sizeof(*self->by_id),
                              "specrdv_by_id");
    self->bounce = ucs_malloc(seg_params.geom.slot_size, "specrdv_bounce");
    if ((self->by_id == NULL) || (self->bounce == NULL)) {
        ucs_free(self->bounce);
        ucs_free(self->by_id);
        uct_specrdv_shm_seg_detach(&self->seg);
        return UCS_ERR_NO_MEMORY;
    }

    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_shm_iface_t)
{
    uct_specrdv_peer_t *peer, *tmp;

    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_list_for_each_safe(peer, tmp, &self->super.conns.peers, list) {
        uct_specrdv_shm_peer_destroy(self, ucs_derived_of(peer,
                                                          uct_specrdv_shm_peer_t));
    }

    /* Peers still mapping the segment see that nobody reads it any more */
    self->seg.ctl->closed = 1;
    ucs_free(self->bounce);
    ucs_free(self->by_id);
    uct_specrdv_shm_seg_detach(&self->seg);
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
