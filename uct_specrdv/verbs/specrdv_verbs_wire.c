/**
 * ucx-spec: the verbs writer's wire acts: the send path, its completions and
 * the fallback channel's receive side.
 *
 * A sealed ring slot travels as one RDMA write from the sender's registered
 * mirror of the ring into the same slot of the receiver's ring, inline when
 * the device takes it.  The fallback channel is SEND into the receiver's
 * shared receive queue; all of one side's work requests to a peer go through
 * one QP, so a SEND is placed after every ring write before it, which is what
 * the connection layer's PSN holding needs.  A sender asks for a ring with a
 * RING_REQ control message; the receiver answers with an RDMA write into the
 * sender's word, where its explicit credit updates go too.
 *
 * The connection's life (its QPs, their wireup, liveness, disconnect and
 * reaping) is specrdv_verbs_conn.c's, which calls in here and never the
 * reverse.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_verbs.h"

#include <uct/base/uct_iov.inl>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>
#include <arpa/inet.h>
#include <stdio.h>


/* Work requests carry the peer's id above their number */
#define UCT_SPECRDV_VERBS_SN_BITS  48
#define UCT_SPECRDV_VERBS_SN_MASK  UCS_MASK(UCT_SPECRDV_VERBS_SN_BITS)

/* Send completions taken per progress call */
#define UCT_SPECRDV_VERBS_TX_BATCH 16


ucs_status_t uct_specrdv_verbs_peer_post(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer,
                                         struct ibv_send_wr *wr, int signal)
{
    uint64_t sn = peer->sn_posted + 1;
    struct ibv_send_wr *bad_wr;
    int ret;

    ucs_assert(uct_specrdv_verbs_peer_tx_room(iface, peer, 1));

    if (signal || (sn - peer->sn_signalled >= iface->config.moderation)) {
        wr->send_flags |= IBV_SEND_SIGNALED;
    }
    if (ucs_unlikely(peer->fence)) {
        wr->send_flags |= IBV_SEND_FENCE;
    }

    wr->wr_id = ((uint64_t)peer->local_id << UCT_SPECRDV_VERBS_SN_BITS) | sn;
    wr->next  = NULL;
    ret       = ibv_post_send(peer->tx_qp->qp, wr, &bad_wr);
    if (ucs_unlikely(ret != 0)) {
        errno = ret;
        ucs_error("specrdv: ibv_post_send to %s failed: %m", peer->super.name);
        uct_specrdv_peer_fail(&iface->super.conns, &peer->super,
                              UCS_ERR_IO_ERROR);
        return UCS_ERR_IO_ERROR;
    }

    peer->sn_posted = sn;
    peer->fence     = 0;
    --iface->tx_cq_avail;
    if (wr->send_flags & IBV_SEND_SIGNALED) {
        peer->sn_signalled = sn;
    }
    return UCS_OK;
}

ucs_status_t uct_specrdv_verbs_peer_signal(uct_specrdv_verbs_iface_t *iface,
                                           uct_specrdv_verbs_peer_t *peer)
{
    struct ibv_send_wr wr = {
        .num_sge    = 0,
        .opcode     = IBV_WR_RDMA_WRITE,
        .send_flags = 0
    };

    if (peer->sn_signalled == peer->sn_posted) {
        return UCS_OK;
    }

    if (!uct_specrdv_verbs_peer_tx_room(iface, peer, 1)) {
        return UCS_ERR_NO_RESOURCE;
    }

    return uct_specrdv_verbs_peer_post(iface, peer, &wr, 1);
}

static void uct_specrdv_verbs_peer_push_comp(uct_specrdv_verbs_peer_t *peer,
                                             uct_specrdv_verbs_comp_t *elem,
                                             uct_completion_t *comp)
{
    ucs_assert(peer->sn_signalled == peer->sn_posted);
    elem->sn   = peer->sn_posted;
    elem->comp = comp;
    ucs_queue_push(&peer->comps, &elem->queue);
}

ucs_status_t uct_specrdv_verbs_peer_add_comp(uct_specrdv_verbs_iface_t *iface,
                                             uct_specrdv_verbs_peer_t *peer,
                                             uct_completion_t *comp)
{
    uct_specrdv_verbs_comp_t *elem;

    elem = ucs_mpool_get_inline(&iface->comp_mp);
    if (elem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    uct_specrdv_verbs_peer_push_comp(peer, elem, comp);
    return UCS_OK;
}

/* Post @a wr with @a comp's element @a elem (NULL without @a comp), taken
 * before, so that nothing can fail once a work request is posted */
static ucs_status_t
uct_specrdv_verbs_peer_post_elem(uct_specrdv_verbs_iface_t *iface,
                                 uct_specrdv_verbs_peer_t *peer,
                                 struct ibv_send_wr *wr,
                                 uct_specrdv_verbs_comp_t *elem,
                                 uct_completion_t *comp)
{
    ucs_status_t status;

    status = uct_specrdv_verbs_peer_post(iface, peer, wr, comp != NULL);
    if (ucs_unlikely(status != UCS_OK)) {
        if (elem != NULL) {
            ucs_mpool_put_inline(elem);
        }
        return status;
    }

    if (comp != NULL) {
        uct_specrdv_verbs_peer_push_comp(peer, elem, comp);
    }
    return UCS_OK;
}

ucs_status_t uct_specrdv_verbs_peer_post_comp(uct_specrdv_verbs_iface_t *iface,
                                              uct_specrdv_verbs_peer_t *peer,
                                              struct ibv_send_wr *wr,
                                              uct_completion_t *comp)
{
    uct_specrdv_verbs_comp_t *elem = NULL;

    if (comp != NULL) {
        elem = ucs_mpool_get_inline(&iface->comp_mp);
        if (elem == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    return uct_specrdv_verbs_peer_post_elem(iface, peer, wr, elem, comp);
}

void uct_specrdv_verbs_peer_purge_comps(uct_specrdv_verbs_peer_t *peer,
                                        ucs_status_t status)
{
    uct_specrdv_verbs_comp_t *elem;

    while (!ucs_queue_is_empty(&peer->comps)) {
        elem = ucs_queue_pull_elem_non_empty(&peer->comps,
                                             uct_specrdv_verbs_comp_t, queue);
        uct_invoke_completion(elem->comp, status);
        ucs_mpool_put_inline(elem);
    }
}

static void uct_specrdv_verbs_peer_completed(uct_specrdv_verbs_iface_t *iface,
                                             uct_specrdv_verbs_peer_t *peer,
                                             uint64_t sn)
{
    uct_specrdv_verbs_comp_t *elem;

    /* after an error every work request completes, signalled or not */
    if (sn <= peer->sn_completed) {
        return;
    }

    iface->tx_cq_avail += sn - peer->sn_completed;
    peer->sn_completed  = sn;
    while (!ucs_queue_is_empty(&peer->comps)) {
        elem = ucs_queue_head_elem_non_empty(&peer->comps,
                                             uct_specrdv_verbs_comp_t, queue);
        if (elem->sn > sn) {
            break;
        }
        ucs_queue_pull_non_empty(&peer->comps);
        uct_invoke_completion(elem->comp, UCS_OK);
        ucs_mpool_put_inline(elem);
    }
}

unsigned uct_specrdv_verbs_poll_send(uct_specrdv_verbs_iface_t *iface)
{
    struct ibv_wc wc[UCT_SPECRDV_VERBS_TX_BATCH];
    uct_specrdv_verbs_peer_t *peer;
    int i, count;

    count = ibv_poll_cq(iface->send_cq, UCT_SPECRDV_VERBS_TX_BATCH, wc);
    for (i = 0; i < count; ++i) {
        peer = iface->by_id[wc[i].wr_id >> UCT_SPECRDV_VERBS_SN_BITS];
        if (ucs_unlikely(peer == NULL)) {
            continue; /* left by the QP of a peer destroyed at close */
        }
        uct_specrdv_verbs_peer_completed(iface, peer,
                                         wc[i].wr_id &
                                         UCT_SPECRDV_VERBS_SN_MASK);
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            if (!(peer->super.flags & UCT_SPECRDV_PEER_FAILED)) {
                ucs_error("specrdv: send to %s completed with %s",
                          peer->super.name, ibv_wc_status_str(wc[i].status));
            }
            uct_specrdv_verbs_peer_purge_comps(peer, UCS_ERR_ENDPOINT_TIMEOUT);
            uct_specrdv_peer_fail(&iface->super.conns, &peer->super,
                                  UCS_ERR_ENDPOINT_TIMEOUT);
        }
    }

    return (count > 0) ? count : 0;
}

ucs_status_t uct_specrdv_verbs_peer_write_inline(uct_specrdv_verbs_iface_t *iface,
                                                 uct_specrdv_verbs_peer_t *peer,
                                                 const void *buffer,
                                                 unsigned length,
                                                 uint64_t remote_addr,
                                                 uint32_t rkey)
{
    struct ibv_sge sge = {
        .addr   = (uintptr_t)buffer,
        .length = length,
        .lkey   = 0
    };
    struct ibv_send_wr wr = {
        .sg_list             = &sge,
        .num_sge             = 1,
        .opcode              = IBV_WR_RDMA_WRITE,
        .send_flags          = IBV_SEND_INLINE,
        .wr.rdma.remote_addr = remote_addr,
        .wr.rdma.rkey        = rkey
    };

    return uct_specrdv_verbs_peer_post(iface, peer, &wr, 0);
}

/* A 4-byte RDMA write into the peer's word for us */
static ucs_status_t
uct_specrdv_verbs_peer_write_word(uct_specrdv_verbs_iface_t *iface,
                                  uct_specrdv_verbs_peer_t *peer,
                                  size_t offset, uint32_t value)
{
    if (!uct_specrdv_verbs_peer_tx_room(iface, peer, 1)) {
        return UCS_ERR_NO_RESOURCE;
    }

    return uct_specrdv_verbs_peer_write_inline(
            iface, peer, &value, sizeof(value),
            peer->words + peer->super.src * sizeof(uct_specrdv_verbs_word_t) +
            offset, peer->words_rkey);
}

/* Room for a message: before the QP is connected, fallback messages wait in
 * their send buffers (the connection layer started the connection before
 * the first of them) */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_verbs_peer_tx_ok(uct_specrdv_verbs_iface_t *iface,
                             uct_specrdv_verbs_peer_t *peer)
{
    if (ucs_unlikely(peer->tx_qp == NULL)) {
        return 1; /* what the fallback buffers hold */
    }

    return uct_specrdv_verbs_peer_tx_room(iface, peer,
                                          UCT_SPECRDV_VERBS_TX_RESERVE +
                                          UCT_SPECRDV_VERBS_MSG_WRS);
}

int uct_specrdv_verbs_tx_room(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *generic)
{
    return uct_specrdv_verbs_peer_tx_ok(uct_specrdv_verbs_conns_iface(conns),
                                        uct_specrdv_verbs_peer(generic));
}

ucs_status_t
uct_specrdv_verbs_fb_reserve(uct_specrdv_conns_t *conns,
                             uct_specrdv_peer_t *generic, uct_specrdv_tx_t *tx)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);
    unsigned index                   = peer->fb_next % iface->config.fb_bufs;

    /* Sends are signalled at least every fb_bufs / 2, so a buffer's last
     * send is covered by a completion by the time its turn comes again; a
     * waiting message's buffer is taken until it is sent */
    if (!uct_specrdv_verbs_peer_tx_ok(iface, peer) ||
        (peer->fb_sn[index] > peer->sn_completed)) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx->pos     = index;
    tx->payload = peer->fb_tx + index * iface->fb_size +
                  sizeof(uct_specrdv_hdr_t);
    return UCS_OK;
}

/* SEND the message in fallback buffer @a index */
static void uct_specrdv_verbs_fb_send(uct_specrdv_verbs_iface_t *iface,
                                      uct_specrdv_verbs_peer_t *peer,
                                      unsigned index)
{
    const uct_specrdv_hdr_t *hdr = (const void*)(peer->fb_tx +
                                                 index * iface->fb_size);

    peer->fb_wr.sge.addr      = (uintptr_t)hdr;
    peer->fb_wr.sge.length    = sizeof(*hdr) + hdr->length;
    peer->fb_wr.wr.send_flags = (peer->fb_wr.sge.length <=
                                 iface->config.max_inline) ?
                                IBV_SEND_INLINE : 0;
    if (uct_specrdv_verbs_peer_post(iface, peer, &peer->fb_wr.wr, 0) ==
        UCS_OK) {
        peer->fb_sn[index] = peer->sn_posted;
    }
}

void uct_specrdv_verbs_fb_post(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *generic,
                               uct_specrdv_tx_t *tx,
                               const uct_specrdv_hdr_t *hdr)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);

    memcpy(peer->fb_tx + tx->pos * iface->fb_size, hdr, sizeof(*hdr));
    ++peer->fb_next;
    if (ucs_unlikely(peer->tx_qp == NULL)) {
        peer->fb_sn[tx->pos] = UINT64_MAX;
        ++peer->fb_waiting;
        return;
    }

    uct_specrdv_verbs_fb_send(iface, peer, tx->pos);
}

void uct_specrdv_verbs_fb_send_waiting(uct_specrdv_verbs_iface_t *iface,
                                       uct_specrdv_verbs_peer_t *peer)
{
    uct_specrdv_hdr_t *hdr;
    unsigned index;

    /* A new QP has room for every fallback buffer (iface_check_config).
     * Their headers were written before the peer told us our id there. */
    for (; peer->fb_waiting > 0; --peer->fb_waiting) {
        index    = (peer->fb_next - peer->fb_waiting) % iface->config.fb_bufs;
        hdr      = (void*)(peer->fb_tx + index * iface->fb_size);
        hdr->src = peer->super.src;
        uct_specrdv_verbs_fb_send(iface, peer, index);
    }
}

int uct_specrdv_verbs_fb_can_send(uct_specrdv_conns_t *conns,
                                  uct_specrdv_peer_t *generic)
{
    uct_specrdv_tx_t tx;

    return uct_specrdv_verbs_fb_reserve(conns, generic, &tx) == UCS_OK;
}

/* A gathered payload put the user's bytes in the receiver's slot, where the
 * mirror has others: one of them may equal the tail flag of a shorter
 * message sent into the slot later, and the receiver would take that message
 * as whole while its write is still landing (over v2's rendezvous put, the
 * stress found such messages ending in an older message's bytes).  A zero
 * written first, in order on the QP, is no flag. */
static void uct_specrdv_verbs_ring_clear_tail(uct_specrdv_verbs_iface_t *iface,
                                              uct_specrdv_verbs_peer_t *peer,
                                              uint32_t slot, size_t length)
{
    static const uint8_t zero = 0;

    if (!peer->super.tx.clear_tail) {
        return;
    }

    uct_specrdv_verbs_peer_write_inline(iface, peer, &zero, sizeof(zero),
                                        peer->ring_remote +
                                        (size_t)slot * peer->geom.slot_size +
                                        length - 1, peer->rings_rkey);
    UCT_SPECRDV_CONNS_STAT(&iface->super.conns, TX_TAIL_CLEARED);
}

void uct_specrdv_verbs_ring_write(uct_specrdv_conns_t *conns,
                                  uct_specrdv_peer_t *generic,
                                  uint32_t slot, size_t length)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);
    size_t offset                    = (size_t)slot * peer->geom.slot_size;

    uct_specrdv_verbs_ring_clear_tail(iface, peer, slot, length);

    peer->ring_wr.sge.addr               = (uintptr_t)peer->mirror + offset;
    peer->ring_wr.sge.length             = length;
    peer->ring_wr.wr.wr.rdma.remote_addr = peer->ring_remote + offset;
    peer->ring_wr.wr.send_flags          = (length <=
                                            iface->config.max_inline) ?
                                           IBV_SEND_INLINE : 0;
    uct_specrdv_verbs_peer_post(iface, peer, &peer->ring_wr.wr, 0);
}

/* One RDMA write into the slot: the sealed header (and what the caller put
 * after it) from the mirror, the user's buffers, the tail flag from the
 * mirror.  Buffers the writer cannot gather from are copied into the mirror
 * instead, and the slot goes as ring_write sends it. */
ucs_status_t
uct_specrdv_verbs_ring_write_gather(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic, uint32_t slot,
                                    size_t length,
                                    const uct_specrdv_gather_t *gather,
                                    uct_completion_t *comp)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);
    size_t offset                    = (size_t)slot * peer->geom.slot_size;
    size_t head = peer->geom.payload_offset + gather->offset;
    uint8_t *view                    = peer->mirror + offset;
    struct ibv_sge sge[UCT_SPECRDV_VERBS_MAX_IOV];
    struct ibv_send_wr wr = {
        .sg_list             = sge,
        .opcode              = IBV_WR_RDMA_WRITE,
        .wr.rdma.remote_addr = peer->ring_remote + offset,
        .wr.rdma.rkey        = peer->ring_wr.wr.wr.rdma.rkey
    };
    uct_specrdv_verbs_comp_t *elem = NULL;
    ucs_iov_iter_t iov_iter;
    ucs_status_t status;
    size_t i;

    sge[0].addr   = (uintptr_t)view;
    sge[0].length = head;
    sge[0].lkey   = peer->mirror_mr->lkey;
    wr.num_sge    = 1;
    for (i = 0; i < gather->iovcnt; ++i) {
        if (uct_iov_get_length(&gather->iov[i]) == 0) {
            continue;
        }
        if ((gather->iov[i].memh == UCT_MEM_HANDLE_NULL) ||
            (wr.num_sge + 1 >= UCT_SPECRDV_VERBS_MAX_IOV)) {
            goto copy;
        }
        sge[wr.num_sge].addr     = (uintptr_t)gather->iov[i].buffer;
        sge[wr.num_sge].length   = uct_iov_get_length(&gather->iov[i]);
        sge[wr.num_sge++].lkey   = uct_specrdv_verbs_memh_lkey(
                gather->iov[i].memh);
    }

    sge[wr.num_sge].addr     = (uintptr_t)view + length - 1;
    sge[wr.num_sge].length   = 1;
    sge[wr.num_sge++].lkey   = peer->mirror_mr->lkey;

    /* the completion's element first, so that the clear cannot go alone */
    if (comp != NULL) {
        elem = ucs_mpool_get_inline(&iface->comp_mp);
        if (elem == NULL) {
            goto copy;
        }
    }

    uct_specrdv_verbs_ring_clear_tail(iface, peer, slot, length);
    status = uct_specrdv_verbs_peer_post_elem(iface, peer, &wr, elem, comp);
    if (status != UCS_OK) {
        return status; /* the peer has failed */
    }

    uct_specrdv_ring_tx_gathered(&peer->super.tx, slot, head, length - 1);
    UCT_SPECRDV_CONNS_STAT(conns, TX_GATHERED);
    return UCS_INPROGRESS;

copy:
    ucs_iov_iter_init(&iov_iter);
    uct_iov_to_buffer(gather->iov, gather->iovcnt, &iov_iter, view + head,
                      SIZE_MAX);
    uct_specrdv_verbs_ring_write(conns, generic, slot, length);
    return UCS_OK;
}

/* Our ring's mirror: blank, as the receiver's ring is when it grants it */
static ucs_status_t
uct_specrdv_verbs_peer_mirror(uct_specrdv_verbs_iface_t *iface,
                              uct_specrdv_verbs_peer_t *peer)
{
    size_t bytes = (size_t)peer->geom.num_slots * peer->geom.slot_size;

    if (peer->mirror == NULL) {
        if (ucs_posix_memalign((void**)&peer->mirror, ucs_get_page_size(),
                               bytes, "specrdv_verbs_mirror") != 0) {
            return UCS_ERR_NO_MEMORY;
        }

        peer->mirror_mr = ibv_reg_mr(uct_specrdv_verbs_iface_md(iface)->pd,
                                     peer->mirror, bytes,
                                     IBV_ACCESS_LOCAL_WRITE);
        if (peer->mirror_mr == NULL) {
            ucs_error("specrdv: ibv_reg_mr(%zu) failed: %m", bytes);
            ucs_free(peer->mirror);
            peer->mirror = NULL;
            return UCS_ERR_IO_ERROR;
        }
    }

    if (peer->unseen == NULL) {
        peer->unseen = ucs_calloc(peer->geom.num_slots, sizeof(*peer->unseen),
                                  "specrdv_verbs_unseen");
        if (peer->unseen == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    memset(peer->mirror, 0, bytes);
    memset(peer->unseen, 0, peer->geom.num_slots * sizeof(*peer->unseen));
    return UCS_OK;
}

static ucs_status_t uct_specrdv_verbs_ring_granted(uct_specrdv_verbs_iface_t *iface,
                                                   uct_specrdv_verbs_peer_t *peer,
                                                   unsigned ring)
{
    if (ring == UCT_SPECRDV_VERBS_REFUSED) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    if (uct_specrdv_verbs_peer_mirror(iface, peer) != UCS_OK) {
        /* the ring stays unused; the fallback channel carries everything */
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    peer->tx_ring                 = ring;
    peer->ring_remote             = peer->rings + (uint64_t)ring *
                                    peer->geom.num_slots *
                                    peer->geom.slot_size;
    peer->ring_wr.sge.lkey        = peer->mirror_mr->lkey;
    peer->ring_wr.wr.sg_list      = &peer->ring_wr.sge;
    peer->ring_wr.wr.num_sge      = 1;
    peer->ring_wr.wr.opcode       = IBV_WR_RDMA_WRITE;
    peer->ring_wr.wr.wr.rdma.rkey = peer->rings_rkey;
    uct_specrdv_ring_tx_init(&peer->super.tx, peer->mirror, &peer->geom);
    uct_specrdv_ring_tx_set_unseen(&peer->super.tx, peer->unseen);
    return UCS_OK;
}

/* Ask once, then look for the answer at every send until it comes */
ucs_status_t uct_specrdv_verbs_ring_request(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);
    uint32_t answer;
    uct_specrdv_tx_t tx;

    if (peer->ring_waiting) {
        answer = iface->words[peer->local_id].answer;
        if ((answer >> 16) != peer->ring_asked) {
            return UCS_ERR_NO_RESOURCE;
        }

        peer->ring_waiting = 0;
        if (!peer->ring_void) {
            return uct_specrdv_verbs_ring_granted(iface, peer,
                                                  answer & UCS_MASK(16));
        }

        /* revoked before we saw it: the receiver closes it at our RELEASED;
         * ask anew */
        peer->ring_void = 0;
        if ((answer & UCS_MASK(16)) != UCT_SPECRDV_VERBS_REFUSED) {
            uct_specrdv_peer_ring_voided(generic);
        }
    }

    if (uct_specrdv_peer_fb_reserve(conns, generic, &tx) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }

    tx.ring = 0;
    ++peer->ring_asked;
    peer->ring_waiting = 1;
    uct_specrdv_peer_tx_end(conns, generic, &tx, UCT_SPECRDV_MSG_CTRL,
                            UCT_SPECRDV_VERBS_CTRL_RING_REQ, 0);
    return UCS_ERR_NO_RESOURCE;
}

uint16_t uct_specrdv_verbs_ring_credits(uct_specrdv_conns_t *conns,
                                        uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);
    uint32_t credits = iface->words[peer->local_id].credits;

    /* a count of the ring before this one is none of this one's */
    return ((uint8_t)(credits >> 16) == generic->tx_epoch) ?
           (uint16_t)credits : (uint16_t)generic->tx.tail;
}

void uct_specrdv_verbs_credit_push(uct_specrdv_conns_t *conns,
                                   uct_specrdv_peer_t *generic,
                                   unsigned ring, uint16_t tail)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);

    /* Without room now, the sender learns the tail from the next update or
     * message; it falls back meanwhile */
    if (uct_specrdv_verbs_peer_write_word(
                iface, uct_specrdv_verbs_peer(generic),
                ucs_offsetof(uct_specrdv_verbs_word_t, credits),
                ((uint32_t)generic->rx_epoch << 16) | tail) != UCS_OK) {
        ucs_debug("specrdv: no room to return credits to %s", generic->name);
    }
}

uint32_t uct_specrdv_verbs_fb_credits(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);

    return iface->words[uct_specrdv_verbs_peer(generic)->local_id].fb_delivered;
}

ucs_status_t uct_specrdv_verbs_fb_credit_push(uct_specrdv_conns_t *conns,
                                              uct_specrdv_peer_t *generic,
                                              uint32_t delivered)
{
    return uct_specrdv_verbs_peer_write_word(
            uct_specrdv_verbs_conns_iface(conns),
            uct_specrdv_verbs_peer(generic),
            ucs_offsetof(uct_specrdv_verbs_word_t, fb_delivered), delivered);
}

void uct_specrdv_verbs_ring_release(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_peer_t *peer = uct_specrdv_verbs_peer(generic);

    peer->tx_ring   = -1;
    peer->ring_void = peer->ring_waiting;
}

void uct_specrdv_verbs_ring_free(uct_specrdv_conns_t *conns,
                                 unsigned ring)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);

    iface->free_rings[iface->num_free_rings++] = ring;
}

/* Answer the peer's ring request; with no room now, from a later progress */
void uct_specrdv_verbs_peer_answer(uct_specrdv_verbs_iface_t *iface,
                                   uct_specrdv_verbs_peer_t *peer)
{
    uint16_t ring = (peer->super.rx_ring >= 0) ? peer->super.rx_ring :
                                                 UCT_SPECRDV_VERBS_REFUSED;

    if (uct_specrdv_verbs_peer_write_word(
                iface, peer, ucs_offsetof(uct_specrdv_verbs_word_t, answer),
                ((uint32_t)peer->ring_answers << 16) | ring) == UCS_OK) {
        if (peer->answer_due) {
            peer->answer_due = 0;
            --iface->answers_due;
        }
    } else if (!peer->answer_due) {
        peer->answer_due = 1;
        ++iface->answers_due;
    }
}

static void uct_specrdv_verbs_rx_ring_req(uct_specrdv_verbs_iface_t *iface,
                                          uct_specrdv_verbs_peer_t *peer)
{
    ++peer->ring_answers;
    if ((peer->super.rx_ring < 0) && (iface->num_free_rings > 0) &&
        (uct_specrdv_conns_rx_ring_open(
                 &iface->super.conns, &peer->super,
                 iface->free_rings[iface->num_free_rings - 1]) == UCS_OK)) {
        --iface->num_free_rings;
    }

    uct_specrdv_verbs_peer_answer(iface, peer);
}

void uct_specrdv_verbs_rx_ctrl(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *generic,
                               const uct_specrdv_hdr_t *hdr,
                               const void *payload)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    uct_specrdv_verbs_peer_t *peer   = uct_specrdv_verbs_peer(generic);

    switch (hdr->am_id) {
    case UCT_SPECRDV_VERBS_CTRL_RING_REQ:
        uct_specrdv_verbs_rx_ring_req(iface, peer);
        return;
    case UCT_SPECRDV_VERBS_CTRL_DISCONNECT:
        /* every message it sent came before this one */
        peer->remote_closed = 1;
        if (generic->rx_ring >= 0) {
            uct_specrdv_conns_rx_ring_close(conns, generic);
        }
        return;
    }

    ucs_error("specrdv: %s sent invalid control message %u", generic->name,
              hdr->am_id);
    uct_specrdv_peer_fail(conns, generic, UCS_ERR_IO_ERROR);
}

static ucs_status_t uct_specrdv_verbs_post_recv(uct_specrdv_verbs_iface_t *iface,
                                                unsigned index)
{
    struct ibv_sge sge = {
        .addr   = (uintptr_t)iface->fb_rx + (size_t)index * iface->fb_size,
        .length = iface->fb_size,
        .lkey   = iface->rx_mr->lkey
    };
    struct ibv_recv_wr wr = {
        .wr_id   = index,
        .sg_list = &sge,
        .num_sge = 1
    };
    struct ibv_recv_wr *bad_wr;
    int ret;

    ret = ibv_post_srq_recv(iface->srq, &wr, &bad_wr);
    if (ret != 0) {
        errno = ret;
        ucs_error("specrdv: ibv_post_srq_recv failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_specrdv_verbs_post_recvs(uct_specrdv_verbs_iface_t *iface)
{
    ucs_status_t status = UCS_OK;
    unsigned i;

    for (i = 0; (i < iface->config.rx_queue_len) && (status == UCS_OK); ++i) {
        status = uct_specrdv_verbs_post_recv(iface, i);
    }
    return status;
}

static uct_specrdv_hdr_t*
uct_specrdv_verbs_rx_buffer(uct_specrdv_verbs_iface_t *iface, unsigned index)
{
    return (uct_specrdv_hdr_t*)(iface->fb_rx + (size_t)index * iface->fb_size);
}

void uct_specrdv_verbs_rx_drop_held(uct_specrdv_verbs_iface_t *iface,
                                    uint32_t src)
{
    unsigned i, kept;

    for (i = 0, kept = 0; i < iface->num_held; ++i) {
        if (uct_specrdv_verbs_rx_buffer(iface, iface->held[i])->src == src) {
            uct_specrdv_verbs_post_recv(iface, iface->held[i]);
        } else {
            iface->held[kept++] = iface->held[i];
        }
    }
    iface->num_held = kept;
}

/* Offer a received message; 0 when it is early and stays */
static int uct_specrdv_verbs_rx_offer(uct_specrdv_verbs_iface_t *iface,
                                      unsigned index)
{
    uct_specrdv_hdr_t *hdr         = uct_specrdv_verbs_rx_buffer(iface, index);
    uct_specrdv_verbs_peer_t *peer = iface->by_id[hdr->src];

    if (uct_specrdv_conns_rx_fallback(
                &iface->super.conns, &peer->super, hdr, hdr + 1,
                iface->fb_size - sizeof(*hdr)) == UCT_SPECRDV_RX_HELD) {
        return 0;
    }

    uct_specrdv_verbs_post_recv(iface, index);
    return 1;
}

/* Whether a completion names a peer of ours, on one of its QPs, and holds a
 * whole header and the payload it announces */
static int uct_specrdv_verbs_rx_valid(uct_specrdv_verbs_iface_t *iface,
                                      const struct ibv_wc *wc)
{
    uct_specrdv_hdr_t *hdr = uct_specrdv_verbs_rx_buffer(iface, wc->wr_id);
    uct_specrdv_verbs_peer_t *peer;

    if ((wc->byte_len < sizeof(*hdr)) ||
        (wc->byte_len != sizeof(*hdr) + hdr->length) ||
        (hdr->src >= iface->config.max_peers) ||
        ((peer = iface->by_id[hdr->src]) == NULL)) {
        return 0;
    }

    return ((peer->qps[0].qp != NULL) && (peer->qps[0].qp->qp_num ==
                                          wc->qp_num)) ||
           ((peer->qps[1].qp != NULL) && (peer->qps[1].qp->qp_num ==
                                          wc->qp_num));
}

unsigned uct_specrdv_verbs_poll_recv(uct_specrdv_conns_t *conns)
{
    uct_specrdv_verbs_iface_t *iface = uct_specrdv_verbs_conns_iface(conns);
    struct ibv_wc wc[UCT_SPECRDV_VERBS_TX_BATCH];
    unsigned taken = 0;
    unsigned i, kept;
    int count;

    /* Early messages first: their turn may have come with the rings' */
    if (ucs_unlikely(iface->num_held > 0)) {
        for (i = 0, kept = 0; i < iface->num_held; ++i) {
            if (uct_specrdv_verbs_rx_offer(iface, iface->held[i])) {
                ++taken;
            } else {
                iface->held[kept++] = iface->held[i];
            }
        }
        iface->num_held = kept;
    }

    count = ibv_poll_cq(iface->recv_cq, UCT_SPECRDV_VERBS_TX_BATCH, wc);
    for (i = 0; (int)i < count; ++i) {
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            ucs_debug("specrdv: receive completed with %s",
                      ibv_wc_status_str(wc[i].status));
            uct_specrdv_verbs_post_recv(iface, wc[i].wr_id);
            continue;
        }

        if (ucs_unlikely(!uct_specrdv_verbs_rx_valid(iface, &wc[i]))) {
            /* what a peer forgotten since sent, or garbage */
            ucs_debug("specrdv: dropped a message of %u bytes on QP 0x%x",
                      wc[i].byte_len, wc[i].qp_num);
            uct_specrdv_verbs_post_recv(iface, wc[i].wr_id);
            continue;
        }

        if (ucs_unlikely(iface->num_held > 0) ||
            !uct_specrdv_verbs_rx_offer(iface, wc[i].wr_id)) {
            /* behind an early one, or early itself: in arrival order */
            iface->held[iface->num_held++] = wc[i].wr_id;
        }
        ++taken;
    }

    return taken;
}
