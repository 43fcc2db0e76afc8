/**
 * ucx-spec: on shared memory, the idle side copies.
 *
 * A rendezvous copy between two processes of one node costs a CPU, and the
 * protocol decides whose: stock UCX has the receiver get when it reaches its
 * wait, a taken RTR has the sender put inside its send call.  Here the side
 * that learns both buffers first (a send that takes an RTR, a receive that
 * matches an RTS at post) offers the copy instead of making it: it publishes
 * a word in its claim page, generation | OFFERED, and tells the peer (the
 * RTR-ACK's tail, or OFFER).  Whichever side's progress comes first with the
 * offer pending claims it with one compare-and-swap and copies the way UCX
 * would: the sender through UCX's RTR handler (put, then ATP), the receiver
 * through ucp_rndv_receive (get, then ATS).  The other side's request
 * completes on that ATP or ATS, which the copier sends right after its copy,
 * so nobody waits for the other's next call.  The offering side claims at
 * its own next progress whatever the peer does: a peer that computes for
 * ever delays nothing.  The early progress pass at post never claims.
 *
 * Only a successful claim proves that no copy was made, hence that the
 * requests it names are alive; a lost claim touches nothing of them.  The
 * generation keeps an old offer from claiming a reused slot.  The page is a
 * System V segment removed at creation (gone with the last process that
 * attached it), attached by a peer at its first offer from us.
 *
 * test/model/copy_claim.pml checks the protocol; README.md, "The idle side
 * copies", says why it lives in UCP rather than in a transport.
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
#include <ucp/proto/proto_am.inl>
#include <ucp/rndv/rndv.inl>
#include <ucs/arch/atomic.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/ipc.h>
#include <sys/shm.h>


#define UCP_PROTO_SPEC_CLAIM_SLOTS   512 /* one page of words */
#define UCP_PROTO_SPEC_CLAIM_OFFERED 1
#define UCP_PROTO_SPEC_CLAIM_CLAIMED 2
#define UCP_PROTO_SPEC_CLAIM_STATE   3
#define UCP_PROTO_SPEC_CLAIM_GEN     4   /* one generation */
#define UCP_PROTO_SPEC_CLAIM_FAILED  (-2)

/* An offer pending on this worker, ours or the peer's */
typedef struct {
    ucs_list_link_t   list;
    ucp_ep_h          ep;
    volatile uint64_t *word;
    uint64_t          offered;
    int               own;      /* a slot of our page: freed once tried */
    uint32_t          slot;
    ucp_request_t     *rreq;    /* get: the receive and the carrier whose */
    ucp_request_t     *carrier; /* id an ATP would name; NULL: put */
    ucs_time_t        time;     /* pushed */
    size_t            length;
    uint8_t           data[];   /* put: RTR header + key; get: RTS + key */
} ucp_proto_spec_offer_t;


int ucp_proto_spec_lane_is_shm(ucp_ep_h ep, ucp_lane_index_t lane)
{
    return (lane != UCP_NULL_LANE) &&
           (ucp_ep_get_tl_rsc(ep, lane)->dev_type == UCT_DEVICE_TYPE_SHM);
}

int ucp_proto_spec_idle_copy_usable(ucp_proto_spec_worker_t *spec, ucp_ep_h ep)
{
    const ucp_ep_config_t *config = ucp_ep_config(ep);
    ucp_lane_index_t i;

    if (!spec->config.idle_copy ||
        (ep->worker->context->config.ext.rndv_mode != UCP_RNDV_MODE_AUTO)) {
        return 0;
    }

    /* RDMA: the NIC copies, nobody's CPU; put-only scheme: no key to get */
    if (!spec->v2) {
        return ucp_proto_spec_lane_is_shm(ep,
                                          config->rndv.put_zcopy.lanes[0]) &&
               ucp_proto_spec_lane_is_shm(ep,
                                          config->rndv.get_zcopy.lanes[0]);
    }

    /* v2 selects each copy's protocol itself, from the endpoint's lanes: a
     * CPU copy whichever it takes if they all are shared memory */
    if (!ucp_proto_spec_lane_is_shm(ep, ucp_ep_get_am_lane(ep)) ||
        (config->key.rma_bw_lanes[0] == UCP_NULL_LANE)) {
        return 0;
    }

    for (i = 0; (i < config->key.num_lanes) &&
                (config->key.rma_bw_lanes[i] != UCP_NULL_LANE); ++i) {
        if (!ucp_proto_spec_lane_is_shm(ep, config->key.rma_bw_lanes[i])) {
            return 0;
        }
    }

    return 1;
}

static ucs_status_t ucp_proto_spec_claim_page_create(ucp_proto_spec_worker_t *spec)
{
    size_t size = UCP_PROTO_SPEC_CLAIM_SLOTS * sizeof(uint64_t);
    void *addr;
    unsigned i;
    int shmid;

    spec->claim.shmid = UCP_PROTO_SPEC_CLAIM_FAILED;
    spec->claim.free  = ucs_malloc(UCP_PROTO_SPEC_CLAIM_SLOTS *
                                   sizeof(*spec->claim.free), "spec_claim_free");
    if (spec->claim.free == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    shmid = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
    if (shmid < 0) {
        ucs_diag("spec: no claim page (shmget: %m): copies are not offered");
        return UCS_ERR_NO_RESOURCE;
    }

    addr = shmat(shmid, NULL, 0);
    /* removed at once: the kernel frees it with the last detach, even after
     * a crash; Linux lets peers attach it until then */
    shmctl(shmid, IPC_RMID, NULL);
    if (addr == (void*)-1) {
        ucs_diag("spec: no claim page (shmat: %m): copies are not offered");
        return UCS_ERR_NO_RESOURCE;
    }

    for (i = 0; i < UCP_PROTO_SPEC_CLAIM_SLOTS; ++i) {
        spec->claim.free[i] = UCP_PROTO_SPEC_CLAIM_SLOTS - 1 - i;
    }

    spec->claim.num_free = UCP_PROTO_SPEC_CLAIM_SLOTS;
    spec->claim.words    = addr;
    spec->claim.shmid    = shmid;
    ucs_debug("spec: worker %p claim page shmid %d", spec->worker, shmid);
    return UCS_OK;
}

ucs_status_t ucp_proto_spec_claim_open(ucp_proto_spec_worker_t *spec,
                                       ucp_proto_spec_claim_ref_t *ref)
{
    ucs_status_t status;
    uint64_t word;
    uint32_t slot;

    if (spec->claim.shmid == UCP_PROTO_SPEC_CLAIM_NONE) {
        status = ucp_proto_spec_claim_page_create(spec);
        if (status != UCS_OK) {
            return status;
        }
    }

    if ((spec->claim.shmid < 0) || (spec->claim.num_free == 0)) {
        return UCS_ERR_NO_RESOURCE;
    }

    slot = spec->claim.free[--spec->claim.num_free];
    word = ((spec->claim.words[slot] & ~(uint64_t)UCP_PROTO_SPEC_CLAIM_STATE) +
            UCP_PROTO_SPEC_CLAIM_GEN) | UCP_PROTO_SPEC_CLAIM_OFFERED;
    /* the peer reads it after our message, which leaves after this store */
    spec->claim.words[slot] = word;
    ucs_memory_cpu_store_fence();

    ref->shmid = spec->claim.shmid;
    ref->slot  = slot;
    ref->word  = word;
    return UCS_OK;
}

/* The claim itself, by either side: nonzero if this call won it */
static int ucp_proto_spec_claim_cas(volatile uint64_t *word, uint64_t offered)
{
    return ucs_atomic_bool_cswap64(word, offered,
                                   (offered &
                                    ~(uint64_t)UCP_PROTO_SPEC_CLAIM_STATE) |
                                   UCP_PROTO_SPEC_CLAIM_CLAIMED);
}

/* Our slot back, after one claim on it: nonzero if we won it, zero if the
 * peer claimed it first */
static int ucp_proto_spec_claim_take(ucp_proto_spec_worker_t *spec,
                                     uint32_t slot, uint64_t offered)
{
    int claimed = ucp_proto_spec_claim_cas(&spec->claim.words[slot], offered);

    ucs_assertv(spec->claim.num_free < UCP_PROTO_SPEC_CLAIM_SLOTS,
                "spec: claim slot %u released twice", slot);
    spec->claim.free[spec->claim.num_free++] = slot;
    return claimed;
}

void ucp_proto_spec_claim_close(ucp_proto_spec_worker_t *spec,
                                const ucp_proto_spec_claim_ref_t *ref)
{
    ucp_proto_spec_offer_t *offer;

    /* never told to the peer: nobody else can hold it */
    if (!ucs_list_is_empty(&spec->claim.offers)) {
        offer = ucs_list_tail(&spec->claim.offers, ucp_proto_spec_offer_t,
                              list);
        if (offer->own && (offer->slot == ref->slot)) {
            ucs_list_del(&offer->list);
            ucs_free(offer);
        }
    }

    ucp_proto_spec_claim_take(spec, ref->slot, ref->word);
}

/* The peer's word, its page attached at the first offer from it */
static volatile uint64_t *
ucp_proto_spec_claim_peer_word(ucp_proto_spec_worker_t *spec,
                               const ucp_proto_spec_claim_ref_t *ref)
{
    khiter_t iter;
    void *addr;
    int ret;

    if (ref->slot >= UCP_PROTO_SPEC_CLAIM_SLOTS) {
        return NULL;
    }

    iter = kh_get(ucp_proto_spec_page, &spec->claim.peers, ref->shmid);
    if (iter != kh_end(&spec->claim.peers)) {
        addr = kh_value(&spec->claim.peers, iter);
    } else {
        /* a page we keep attached cannot be freed, so its id is not reused */
        addr = shmat(ref->shmid, NULL, 0);
        if (addr == (void*)-1) {
            ucs_diag("spec: cannot attach the peer's claim page %d (%m): "
                     "its offers are left to it", ref->shmid);
            return NULL;
        }

        iter = kh_put(ucp_proto_spec_page, &spec->claim.peers, ref->shmid,
                      &ret);
        if (ret < 0) {
            shmdt(addr);
            return NULL;
        }
        kh_value(&spec->claim.peers, iter) = addr;
    }

    return (volatile uint64_t*)addr + ref->slot;
}

static unsigned ucp_proto_spec_claim_progress(void *arg);

/* A pending offer, ours or the peer's: @a hdr and @a rkey are what the copy
 * needs, UCX's RTR header (put) or RTS header (get) and the remote key */
static ucs_status_t
ucp_proto_spec_offer_add(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                         const ucp_proto_spec_claim_ref_t *ref, int own,
                         ucp_request_t *rreq, ucp_request_t *carrier,
                         const void *hdr, size_t hdr_length,
                         const void *rkey, size_t rkey_length)
{
    ucp_proto_spec_offer_t *offer;
    volatile uint64_t *word;

    /* a loopback peer's offer is in our page too, and is still not ours to
     * free: only the caller knows which side it is */
    word = own ? &spec->claim.words[ref->slot] :
                 ucp_proto_spec_claim_peer_word(spec, ref);
    if (word == NULL) {
        return UCS_ERR_UNREACHABLE; /* the offering side copies itself */
    }

    offer = ucs_malloc(sizeof(*offer) + hdr_length + rkey_length,
                       "spec_offer");
    if (offer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    offer->ep      = ep;
    offer->word    = word;
    offer->offered = ref->word;
    offer->own     = own;
    offer->slot    = ref->slot;
    offer->rreq    = rreq;
    offer->carrier = carrier;
    offer->time    = ucs_get_time();
    offer->length  = hdr_length + rkey_length;
    memcpy(offer->data, hdr, hdr_length);
    memcpy(offer->data + hdr_length, rkey, rkey_length);

    ucs_list_add_tail(&spec->claim.offers, &offer->list);
    uct_worker_progress_register_safe(spec->worker->uct,
                                      ucp_proto_spec_claim_progress, spec, 0,
                                      &spec->claim.cb_id);
    return UCS_OK;
}

ucs_status_t ucp_proto_spec_offer_put(ucp_proto_spec_worker_t *spec,
                                      ucp_ep_h ep,
                                      const ucp_proto_spec_claim_ref_t *ref,
                                      int own, const ucp_rndv_rtr_hdr_t *rtr,
                                      const void *rkey, size_t rkey_length)
{
    return ucp_proto_spec_offer_add(spec, ep, ref, own, NULL, NULL, rtr,
                                    sizeof(*rtr), rkey, rkey_length);
}

ucs_status_t ucp_proto_spec_offer_get(ucp_proto_spec_worker_t *spec,
                                      ucp_ep_h ep,
                                      const ucp_proto_spec_claim_ref_t *ref,
                                      int own, ucp_request_t *rreq,
                                      ucp_request_t *carrier,
                                      const ucp_rndv_rts_hdr_t *rts,
                                      const void *rkey, size_t rkey_length)
{
    return ucp_proto_spec_offer_add(spec, ep, ref, own, rreq, carrier, rts,
                                    sizeof(*rts), rkey, rkey_length);
}

/* Claimed: no copy was made, so the requests are alive; copy as UCX would */
static void ucp_proto_spec_offer_copy(ucp_proto_spec_worker_t *spec,
                                      ucp_proto_spec_offer_t *offer)
{
    const ucp_rndv_rts_hdr_t *rts;

    if (offer->carrier == NULL) {
        /* put into the receive buffer; the ATP completes the receive */
        ucp_am_handlers[UCP_AM_ID_RNDV_RTR]->cb(spec->worker, offer->data,
                                                 offer->length, 0);
        return;
    }

    /* get from the send buffer; the ATS completes the send.  No ATP will
     * name the carrier now. */
    rts = (const ucp_rndv_rts_hdr_t*)offer->data;
    ucp_trace_req(offer->rreq, "spec: claimed the copy, get %zu bytes",
                  rts->size);
    if (spec->v2) {
        ucp_proto_spec_v2_carrier_return(offer->carrier, offer->rreq);
    }
    ucp_send_request_id_release(offer->carrier);
    ucp_request_put(offer->carrier);
    ucp_proto_spec_rreq_dereg(offer->rreq);
    ucp_rndv_receive_start(spec->worker, offer->rreq, rts, rts + 1,
                           offer->length - sizeof(*rts));
}

/* Until when the copies we claimed keep this process busy, as UCX prices
 * them: the lane's bandwidth.  UCX queues a CMA copy and makes it in later
 * progress calls (uct_scopy), so the claim's return says nothing of it. */
static void ucp_proto_spec_claim_busy(ucp_proto_spec_worker_t *spec,
                                      const ucp_proto_spec_offer_t *offer,
                                      ucs_time_t now)
{
    ucp_worker_h worker = spec->worker;
    ucp_lane_index_t lane = ucp_ep_config(offer->ep)->key.rma_bw_lanes[0];
    size_t size           = (offer->carrier != NULL) ?
                            ((const ucp_rndv_rts_hdr_t*)offer->data)->size :
                            ((const ucp_rndv_rtr_hdr_t*)offer->data)->size;
    double bandwidth;

    if (lane == UCP_NULL_LANE) {
        return;
    }

    bandwidth = ucp_tl_iface_bandwidth(worker->context,
                                       &ucp_worker_iface_get_attr(worker,
                                           ucp_ep_get_rsc_index(offer->ep,
                                                                lane))->bandwidth);
    if (bandwidth > 0) {
        spec->claim.busy_until = ucs_max(now, spec->claim.busy_until) +
                                 ucs_time_from_sec(size / bandwidth);
    }
}

/* One claim attempt, whatever it finds; our slot is free after it.  On a
 * failed endpoint our own slot is still taken back, so that the peer cannot
 * claim it, but nothing is copied: its requests are purged. */
static unsigned ucp_proto_spec_offer_try(ucp_proto_spec_worker_t *spec,
                                         ucp_proto_spec_offer_t *offer,
                                         ucs_time_t now)
{
    int failed = !!(offer->ep->flags &
                    (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSED));
    int claimed;

    if (offer->own) {
        claimed = ucp_proto_spec_claim_take(spec, offer->slot,
                                            offer->offered) && !failed;
    } else {
        claimed = !failed &&
                  ucp_proto_spec_claim_cas(offer->word, offer->offered);
    }

    if (claimed) {
        UCP_PROTO_SPEC_COUNT(spec, copy_claimed, 1);
        ucp_proto_spec_claim_busy(spec, offer, now);
        ucp_proto_spec_offer_copy(spec, offer);
    } else {
        UCP_PROTO_SPEC_COUNT(spec, copy_lost, 1);
    }

    ucs_free(offer);
    return claimed;
}

/*
 * The claim pass.  What we receive we claim at once; what we send only once
 * its offer is UCX_SPEC_IDLE_COPY_DELAY old and our own copies are done.
 * When both processes wait (an exchange), each then gets its own data, in
 * parallel, as stock UCX has it, instead of the first one there copying
 * both ways while the other waits for it: two CMA copies between the same
 * two processes do not run faster than one (docs/benchmarks.md).  A peer
 * that has not claimed its copy by then is busy, and we copy for it.
 */
static unsigned ucp_proto_spec_claim_progress(void *arg)
{
    ucp_proto_spec_worker_t *spec = arg;
    ucp_proto_spec_offer_t *offer, *next;
    UCS_LIST_HEAD(offers);
    unsigned count = 0;
    ucs_time_t now;

    if (spec->early) {
        return 0; /* the call that posts is not idle */
    }

    /* copies may complete requests whose callbacks post and offer again */
    ucs_list_splice_tail(&offers, &spec->claim.offers);
    ucs_list_head_init(&spec->claim.offers);

    now = ucs_get_time();
    ucs_list_for_each_safe(offer, next, &offers, list) {
        if (offer->carrier != NULL) {
            ucs_list_del(&offer->list);
            count += ucp_proto_spec_offer_try(spec, offer, now);
        }
    }

    while (!ucs_list_is_empty(&offers)) {
        offer = ucs_list_extract_head(&offers, ucp_proto_spec_offer_t, list);
        if (now >= (ucs_max(offer->time, spec->claim.busy_until) +
                    spec->claim.delay)) {
            count += ucp_proto_spec_offer_try(spec, offer, now);
        } else {
            ucs_list_add_tail(&spec->claim.offers, &offer->list);
        }
    }

    if (ucs_list_is_empty(&spec->claim.offers)) {
        uct_worker_progress_unregister_safe(spec->worker->uct,
                                            &spec->claim.cb_id);
    }
    return count;
}

/* OFFER: a receive matched our RTS at its post and offers the copy */
ucs_status_t
ucp_proto_spec_offer_handler(void *arg, void *data, size_t length,
                             unsigned flags)
{
    ucp_worker_h worker                   = arg;
    ucp_proto_spec_worker_t *spec         = worker->spec;
    const ucp_proto_spec_offer_hdr_t *hdr = data;
    ucp_rndv_rtr_hdr_t rtr;
    ucp_ep_h ep;

    UCP_WORKER_GET_VALID_EP_BY_ID(&ep, worker, hdr->ep_id, return UCS_OK,
                                  "SPEC_OFFER");
    if (spec == NULL) {
        return UCS_OK; /* never sent to a worker with speculation off */
    }

    rtr.sreq_id = hdr->sreq_id;
    rtr.rreq_id = hdr->rreq_id;
    rtr.address = hdr->address;
    rtr.size    = hdr->length;
    rtr.offset  = 0;
    ucp_proto_spec_offer_put(spec, ep, &hdr->claim, 0, &rtr, hdr + 1,
                             length - sizeof(*hdr));
    return UCS_OK;
}

void ucp_proto_spec_claim_ep_cleanup(ucp_proto_spec_worker_t *spec,
                                     ucp_ep_h ep)
{
    ucp_proto_spec_offer_t *offer, *tmp;

    ucs_list_for_each_safe(offer, tmp, &spec->claim.offers, list) {
        if (offer->ep == ep) {
            ucs_list_del(&offer->list);
            if (offer->own) {
                ucp_proto_spec_claim_take(spec, offer->slot, offer->offered);
            }
            ucs_free(offer);
        }
    }
}

void ucp_proto_spec_claim_cleanup(ucp_proto_spec_worker_t *spec)
{
    ucp_proto_spec_offer_t *offer, *tmp;
    void *addr;

    ucs_list_for_each_safe(offer, tmp, &spec->claim.offers, list) {
        ucs_free(offer);
    }
    uct_worker_progress_unregister_safe(spec->worker->uct, &spec->claim.cb_id);

    kh_foreach_value(&spec->claim.peers, addr, shmdt(addr));
    kh_destroy_inplace(ucp_proto_spec_page, &spec->claim.peers);
    if (spec->claim.shmid >= 0) {
        shmdt((void*)spec->claim.words);
    }
    ucs_free(spec->claim.free);
}
