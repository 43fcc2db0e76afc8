/**
 * ucx-spec: specrdv endpoint on the shared-memory writer.
 *
 * put/get are copied by the kernel (CMA) before they return, so their
 * zero-copy forms never call their completion.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_ep.h"

#include <uct/base/uct_iov.inl>
#include <uct/sm/base/sm_iface.h>
#include <ucs/debug/log.h>
#include <sys/uio.h>
#include <errno.h>


static UCS_CLASS_INIT_FUNC(uct_specrdv_shm_ep_t, const uct_ep_params_t *params)
{
    uct_specrdv_shm_iface_t *iface = ucs_derived_of(params->iface,
                                                    uct_specrdv_shm_iface_t);
    const uct_specrdv_shm_iface_addr_t *addr;
    uct_specrdv_shm_peer_t *peer;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);

    addr   = (const void*)params->iface_addr;
    status = uct_specrdv_shm_peer_get(iface, addr, &peer);
    if (status != UCS_OK) {
        ucs_error("specrdv: cannot reach pid %d (shmid %d): %s", addr->pid,
                  addr->shmid, ucs_status_string(status));
        return status;
    }

    status = uct_specrdv_shm_peer_claim_id(iface, peer);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_ep_keepalive_init(&self->keepalive, peer->pid);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_specrdv_ep_t, &iface->super, &peer->super);
    ucs_debug("specrdv: ep %p to pid %d, our id there %d", self, peer->pid,
              peer->remote_id);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_shm_ep_t)
{
}

UCS_CLASS_DEFINE(uct_specrdv_shm_ep_t, uct_specrdv_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_specrdv_shm_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_specrdv_shm_ep_t, uct_ep_t);


static UCS_F_ALWAYS_INLINE uct_specrdv_shm_iface_t*
uct_specrdv_shm_ep_iface(uct_specrdv_shm_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, uct_specrdv_shm_iface_t);
}

static UCS_F_ALWAYS_INLINE uct_specrdv_shm_peer_t*
uct_specrdv_shm_ep_peer(uct_specrdv_shm_ep_t *ep)
{
    return ucs_derived_of(ep->super.peer, uct_specrdv_shm_peer_t);
}

static ucs_status_t
uct_specrdv_shm_ep_cma(uct_specrdv_shm_ep_t *ep, const uct_iov_t *iov,
                       size_t iovcnt, uint64_t remote_addr, int is_put)
{
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    size_t local_cnt               = UCT_SM_MAX_IOV;
    size_t first                   = 0;
    size_t done                    = 0;
    struct iovec local[UCT_SM_MAX_IOV], remote;
    ucs_iov_iter_t iov_iter;
    ucs_status_t status;
    size_t total;
    ssize_t ret;

    status = uct_specrdv_ep_status(&ep->super);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    ucs_iov_iter_init(&iov_iter);
    total = uct_iov_to_iovec(local, &local_cnt, iov, iovcnt, SIZE_MAX,
                             &iov_iter);
    while (done < total) {
        remote.iov_base = (void*)(uintptr_t)(remote_addr + done);
        remote.iov_len  = total - done;
        ret = is_put ? process_vm_writev(uct_specrdv_shm_ep_peer(ep)->pid, local + first,
                                         local_cnt - first, &remote, 1, 0) :
                       process_vm_readv(uct_specrdv_shm_ep_peer(ep)->pid, local + first,
                                        local_cnt - first, &remote, 1, 0);
        if (ucs_unlikely(ret <= 0)) {
            if ((ret < 0) && (errno == EINTR)) {
                continue;
            }
            status = uct_iface_handle_ep_err(&iface->super.super.super,
                                             &ep->super.super.super,
                                             UCS_ERR_CONNECTION_RESET);
            ucs_log(uct_base_iface_failure_log_level(&iface->super.super,
                                                     status,
                                                     UCS_ERR_CONNECTION_RESET),
                    "specrdv: %s(pid=%d, %zu bytes at 0x%" PRIx64 ") failed: %m",
                    is_put ? "process_vm_writev" : "process_vm_readv",
                    uct_specrdv_shm_ep_peer(ep)->pid, total - done, remote_addr + done);
            return UCS_ERR_CONNECTION_RESET;
        }

        /* A partial copy stops at a page boundary: drop what was copied */
        done += ret;
        while (ret > 0) {
            if ((size_t)ret >= local[first].iov_len) {
                ret -= local[first++].iov_len;
            } else {
                local[first].iov_base = UCS_PTR_BYTE_OFFSET(
                        local[first].iov_base, ret);
                local[first].iov_len -= ret;
                ret                   = 0;
            }
        }
    }

    return UCS_OK;
}

/* Copied: the completion comes from progress (uct_specrdv_iface_complete_later) */
static ucs_status_t uct_specrdv_shm_ep_copied(uct_specrdv_shm_ep_t *ep,
                                              uct_completion_t *comp)
{
    if (comp == NULL) {
        return UCS_OK;
    }

    return uct_specrdv_iface_complete_later(uct_specrdv_ep_iface(&ep->super),
                                            comp);
}

ucs_status_t uct_specrdv_shm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SM_MAX_IOV, "specrdv_put_zcopy");
    status = uct_specrdv_shm_ep_cma(ep, iov, iovcnt, remote_addr, 1);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super.super, PUT, ZCOPY,
                      uct_iov_total_length(iov, iovcnt));
    return uct_specrdv_shm_ep_copied(ep, comp);
}

ucs_status_t uct_specrdv_shm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_SM_MAX_IOV, "specrdv_get_zcopy");
    status = uct_specrdv_shm_ep_cma(ep, iov, iovcnt, remote_addr, 0);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super.super, GET, ZCOPY,
                      uct_iov_total_length(iov, iovcnt));
    return uct_specrdv_shm_ep_copied(ep, comp);
}

static ucs_status_t
uct_specrdv_shm_ep_cma_buffer(uct_specrdv_shm_ep_t *ep, void *buffer,
                              size_t length, uint64_t remote_addr, int is_put)
{
    uct_iov_t iov = {
        .buffer = buffer,
        .length = length,
        .memh   = UCT_MEM_HANDLE_NULL,
        .stride = 0,
        .count  = 1
    };

    return uct_specrdv_shm_ep_cma(ep, &iov, 1, remote_addr, is_put);
}

ucs_status_t uct_specrdv_shm_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                          unsigned length,
                                          uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    uct_specrdv_shm_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0,
                     uct_specrdv_shm_ep_iface(ep)->super.conns.geom.slot_size,
                     "put_short");
    status = uct_specrdv_shm_ep_cma_buffer(ep, (void*)buffer, length,
                                           remote_addr, 1);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_OP(&ep->super.super, PUT, SHORT, length);
    }
    return status;
}

ssize_t uct_specrdv_shm_ep_put_bcopy(uct_ep_h tl_ep,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    ucs_status_t status;
    size_t length;

    length = pack_cb(iface->bounce, arg);
    ucs_assert(length <= iface->super.conns.geom.slot_size);
    status = uct_specrdv_shm_ep_cma_buffer(ep, iface->bounce, length,
                                           remote_addr, 1);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super.super, PUT, BCOPY, length);
    return length;
}

ucs_status_t uct_specrdv_shm_ep_get_bcopy(uct_ep_h tl_ep,
                                          uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep       = ucs_derived_of(tl_ep,
                                                    uct_specrdv_shm_ep_t);
    uct_specrdv_shm_iface_t *iface = uct_specrdv_shm_ep_iface(ep);
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->super.conns.geom.slot_size, "get_bcopy");
    status = uct_specrdv_shm_ep_cma_buffer(ep, iface->bounce, length,
                                           remote_addr, 0);
    if (status != UCS_OK) {
        return status;
    }

    unpack_cb(arg, iface->bounce, length);
    UCT_TL_EP_STAT_OP(&ep->super.super, GET, BCOPY, length);
    return uct_specrdv_shm_ep_copied(ep, comp);
}

/* Whether the endpoint's peer is the interface instance at @a iface_addr */
int uct_specrdv_shm_ep_is_connected(const uct_ep_h tl_ep,
                                    const uct_iface_addr_t *iface_addr)
{
    const uct_specrdv_shm_iface_addr_t *addr = (const void*)iface_addr;
    uct_specrdv_ep_t *ep = ucs_derived_of(tl_ep, uct_specrdv_ep_t);

    return uct_specrdv_iface_addr_is_writer(iface_addr,
                                            &uct_specrdv_shm_writer) &&
           (ucs_derived_of(ep->peer, uct_specrdv_shm_peer_t)->nonce ==
            addr->nonce);
}

ucs_status_t uct_specrdv_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                      uct_completion_t *comp)
{
    uct_specrdv_shm_ep_t *ep     = ucs_derived_of(tl_ep, uct_specrdv_shm_ep_t);
    uct_specrdv_shm_peer_t *peer = uct_specrdv_shm_ep_peer(ep);

    UCT_SPECRDV_EP_CHECK_PARAMS(flags, comp);
    /* A live process may have closed the interface: its segment says so */
    if (peer->seg.ctl->closed) {
        return uct_specrdv_ep_invalidate(tl_ep, 0);
    }

    uct_ep_keepalive_check(tl_ep, &ep->keepalive, peer->pid, flags, comp);
    return UCS_OK;
}
