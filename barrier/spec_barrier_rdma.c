/**
 * ucx-spec: the inter-node stage of the RDMA barrier on UCP's RMA.
 *
 * See spec_barrier_rdma.h for the algorithm.
 *
 * See file LICENSE for terms.
 */

#include "spec_barrier_rdma.h"
#include "spec_barrier_pattern.h"

#include <ucp/api/ucp.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Waits for a slot call MPI's progress every so many spins, and yield the
 * core every so many more (when oversubscribed, both at every spin), as the
 * node stage does (shm/specrdv_shm_barrier.c) */
#define SPEC_BARRIER_PROGRESS  64
#define SPEC_BARRIER_YIELD     4096


typedef struct {
    ucp_ep_h   ep;
    ucp_rkey_h rkey;
    uint64_t   slots;        /* the peer's slot 0, in its address space */
} spec_barrier_peer_t;

struct spec_barrier_rdma {
    ucp_context_h          context;
    ucp_worker_h           worker;
    ucp_mem_h              memh;
    volatile uint64_t      *slots;    /* written by the peers */
    uint64_t               src;       /* what we write: the barrier's number */
    spec_barrier_pattern_t pattern;
    void                   **reqs;    /* our writes in flight, at most one
                                         per operation */
    unsigned               num_reqs;
    int                    failed;
    int                    size;
    spec_barrier_peer_t    *peers;    /* by rank; ep NULL where we never
                                         write */
    void                   (*progress)(void *arg);
    void                   *progress_arg;
    int                    yield_always;
};

/* What a participant tells the others, followed by its worker address and
 * its packed key */
typedef struct {
    uint32_t ok;
    uint32_t addr_len;
    uint32_t rkey_len;
    uint64_t slots;
} spec_barrier_blob_t;


static int spec_barrier_writes_to(const spec_barrier_rdma_t *b, int peer)
{
    unsigned i;

    for (i = 0; i < b->pattern.num_ops; ++i) {
        if (b->pattern.ops[i].write && (b->pattern.ops[i].peer == peer)) {
            return 1;
        }
    }
    return 0;
}

/* Open UCP, register the slots, and pack what the others need; a failure
 * leaves *blob_p with ok = 0 and nothing else */
static void spec_barrier_local_setup(spec_barrier_rdma_t *b,
                                     spec_barrier_blob_t **blob_p,
                                     size_t *blob_len_p)
{
    static spec_barrier_blob_t failed = {0};
    ucp_params_t params               = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_RMA
    };
    ucp_worker_params_t wparams       = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    size_t slots_len = b->pattern.num_slots * sizeof(uint64_t);
    ucp_mem_map_params_t mparams;
    spec_barrier_blob_t *blob;
    ucp_address_t *addr = NULL;
    void *rkey_buf      = NULL;
    size_t addr_len, rkey_len;
    ucp_config_t *config;
    ucs_status_t status;

    *blob_p     = &failed;
    *blob_len_p = sizeof(failed);

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        return;
    }
    status = ucp_init(&params, config, &b->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        b->context = NULL;
        return;
    }

    if ((ucp_worker_create(b->context, &wparams, &b->worker) != UCS_OK) ||
        (posix_memalign((void**)&b->slots, 64, slots_len) != 0)) {
        return;
    }
    memset((void*)b->slots, 0, slots_len);

    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = (void*)b->slots;
    mparams.length     = slots_len;
    if ((ucp_mem_map(b->context, &mparams, &b->memh) != UCS_OK) ||
        (ucp_rkey_pack(b->context, b->memh, &rkey_buf, &rkey_len) != UCS_OK)) {
        return;
    }

    if (ucp_worker_get_address(b->worker, &addr, &addr_len) != UCS_OK) {
        ucp_rkey_buffer_release(rkey_buf);
        return;
    }

    blob = malloc(sizeof(*blob) + addr_len + rkey_len);
    if (blob != NULL) {
        blob->ok       = 1;
        blob->addr_len = addr_len;
        blob->rkey_len = rkey_len;
        blob->slots    = (uintptr_t)b->slots;
        memcpy(blob + 1, addr, addr_len);
        memcpy((uint8_t*)(blob + 1) + addr_len, rkey_buf, rkey_len);
        *blob_p        = blob;
        *blob_len_p    = sizeof(*blob) + addr_len + rkey_len;
    }
    ucp_worker_release_address(b->worker, addr);
    ucp_rkey_buffer_release(rkey_buf);
}

static int spec_barrier_connect(spec_barrier_rdma_t *b, int peer,
                                const spec_barrier_blob_t *blob)
{
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
        .address    = (const ucp_address_t*)(blob + 1)
    };

    if (ucp_ep_create(b->worker, &params, &b->peers[peer].ep) != UCS_OK) {
        b->peers[peer].ep = NULL;
        return -1;
    }

    b->peers[peer].slots = blob->slots;
    if (ucp_ep_rkey_unpack(b->peers[peer].ep,
                           (const uint8_t*)(blob + 1) + blob->addr_len,
                           &b->peers[peer].rkey) != UCS_OK) {
        b->peers[peer].rkey = NULL;
        return -1;
    }
    return 0;
}

int spec_barrier_rdma_create(spec_barrier_rdma_t **b_p, int rank, int size,
                             int radix, spec_barrier_allgather_func_t allgather,
                             void *arg)
{
    spec_barrier_rdma_t *b = calloc(1, sizeof(*b));
    spec_barrier_blob_t *blob, failed = {0};
    uint32_t my_len, max_len, *lens;
    uint8_t *mine, *all = NULL;
    size_t blob_len;
    int ok, i;

    *b_p = NULL;
    if (b == NULL) {
        blob     = &failed;
        blob_len = sizeof(failed);
    } else {
        b->size  = size;
        b->peers = calloc(size, sizeof(*b->peers));
        if ((b->peers == NULL) ||
            (spec_barrier_pattern_build(&b->pattern, rank, size, radix) != 0) ||
            ((b->reqs = calloc(b->pattern.num_ops, sizeof(*b->reqs))) ==
             NULL)) {
            blob     = &failed;
            blob_len = sizeof(failed);
        } else {
            spec_barrier_local_setup(b, &blob, &blob_len);
        }
    }

    /* lengths first, then every blob padded to the longest: every
     * participant calls allgather twice, whatever happened to it */
    my_len = blob_len;
    lens   = calloc(size, sizeof(*lens));
    ok     = (lens != NULL) &&
             (allgather(&my_len, lens, sizeof(my_len), arg) == 0);
    for (i = 0, max_len = 0; ok && (i < size); ++i) {
        max_len = (lens[i] > max_len) ? lens[i] : max_len;
    }
    mine = ok ? calloc(1, max_len) : NULL;
    all  = ok ? calloc(size, max_len) : NULL;
    if (mine != NULL) {
        memcpy(mine, blob, blob_len);
    }
    ok = ok && (mine != NULL) && (all != NULL) &&
         (allgather(mine, all, max_len, arg) == 0);

    for (i = 0; ok && (i < size); ++i) {
        ok = ((const spec_barrier_blob_t*)(all + (size_t)i * max_len))->ok;
    }
    for (i = 0; ok && (i < size); ++i) {
        if (spec_barrier_writes_to(b, i)) {
            ok = (spec_barrier_connect(
                          b, i, (const spec_barrier_blob_t*)
                                (all + (size_t)i * max_len)) == 0);
        }
    }

    if (blob != &failed) {
        free(blob);
    }
    free(mine);
    free(all);
    free(lens);
    if (!ok) {
        if (b != NULL) {
            spec_barrier_rdma_destroy(b);
        }
        return -1;
    }

    *b_p = b;
    return 0;
}

/* Our number into the peer's slot; a failure is logged and breaks the stage */
static void spec_barrier_put(spec_barrier_rdma_t *b, int peer, unsigned slot)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    req = ucp_put_nbx(b->peers[peer].ep, &b->src, sizeof(b->src),
                      b->peers[peer].slots + slot * sizeof(b->src),
                      b->peers[peer].rkey, &param);
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "ucx-spec barrier: write to participant %d failed: "
                "%s\n", peer, ucs_status_string(UCS_PTR_STATUS(req)));
        b->failed = 1;
    } else if (req != NULL) {
        b->reqs[b->num_reqs++] = req;
    }
}

void spec_barrier_rdma_set_progress(spec_barrier_rdma_t *b,
                                    void (*progress)(void *arg), void *arg,
                                    int yield_always)
{
    b->progress     = progress;
    b->progress_arg = arg;
    b->yield_always = yield_always;
}

static void spec_barrier_await(spec_barrier_rdma_t *b, unsigned slot)
{
    const int oversubscribed = b->yield_always;
    unsigned spins           = 0;

    while (__atomic_load_n(&b->slots[slot], __ATOMIC_ACQUIRE) < b->src) {
        ucp_worker_progress(b->worker);
        ++spins;
        if (oversubscribed || (spins % SPEC_BARRIER_YIELD == 0)) {
            sched_yield();
        }
        if ((oversubscribed || (spins % SPEC_BARRIER_PROGRESS == 0)) &&
            (b->progress != NULL)) {
            b->progress(b->progress_arg);
        }
    }
}

int spec_barrier_rdma_wait(spec_barrier_rdma_t *b, uint64_t seq)
{
    const spec_barrier_op_t *op;
    ucs_status_t status;

    if (b->failed) {
        return -1;
    }

    b->src = seq;
    for (op = b->pattern.ops; !b->failed &&
                              (op < b->pattern.ops + b->pattern.num_ops);
         ++op) {
        if (op->write) {
            spec_barrier_put(b, op->peer, op->slot);
        } else {
            spec_barrier_await(b, op->slot);
        }
    }

    /* our writes' source is the next barrier's number */
    while (b->num_reqs > 0) {
        while ((status = ucp_request_check_status(
                        b->reqs[b->num_reqs - 1])) == UCS_INPROGRESS) {
            ucp_worker_progress(b->worker);
        }
        if (status != UCS_OK) {
            fprintf(stderr, "ucx-spec barrier: a write failed: %s\n",
                    ucs_status_string(status));
            b->failed = 1;
        }
        ucp_request_free(b->reqs[--b->num_reqs]);
    }
    return b->failed ? -1 : 0;
}

void spec_barrier_rdma_quiesce(spec_barrier_rdma_t *b,
                               int (*all_done)(int done, void *arg),
                               void *arg)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req      = ucp_worker_flush_nbx(b->worker, &param);
    int done                  = !UCS_PTR_IS_PTR(req);

    for (;;) {
        ucp_worker_progress(b->worker);
        if (!done && (ucp_request_check_status(req) != UCS_INPROGRESS)) {
            ucp_request_free(req);
            done = 1;
        }
        if (all_done(done, arg)) {
            return;
        }
    }
}

void spec_barrier_rdma_destroy(spec_barrier_rdma_t *b)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE
    };
    ucs_status_ptr_t req;
    int i;

    for (i = 0; (b->peers != NULL) && (i < b->size); ++i) {
        if (b->peers[i].rkey != NULL) {
            ucp_rkey_destroy(b->peers[i].rkey);
        }
        if (b->peers[i].ep == NULL) {
            continue;
        }
        req = ucp_ep_close_nbx(b->peers[i].ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                ucp_worker_progress(b->worker);
            }
            ucp_request_free(req);
        }
    }
    if (b->memh != NULL) {
        ucp_mem_unmap(b->context, b->memh);
    }
    if (b->worker != NULL) {
        ucp_worker_destroy(b->worker);
    }
    if (b->context != NULL) {
        ucp_cleanup(b->context);
    }
    free((void*)b->slots);
    free(b->reqs);
    spec_barrier_pattern_free(&b->pattern);
    free(b->peers);
    free(b);
}
