/**
 * ucx-spec: the shared-memory segment of a specrdv shm interface.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_shm_seg.h"

#include <uct/specrdv/specrdv_compat.h>

#include <ucs/arch/atomic.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <inttypes.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <string.h>


typedef struct {
    size_t peers;
    size_t ring_ctl;
    size_t fifo;
    size_t rings;
    size_t total;
} uct_specrdv_shm_seg_layout_t;


/* Rings a power of two apart would put every idle head slot the receiver
 * polls into one cache set, and a polling set larger than the cache's ways
 * would miss on each of them: a cache line more staggers them */
size_t uct_specrdv_shm_seg_ring_bytes(const uct_specrdv_ring_geom_t *geom)
{
    return geom->slot_size * geom->num_slots + UCS_SYS_CACHE_LINE_SIZE;
}

static void
uct_specrdv_shm_seg_layout(const uct_specrdv_shm_seg_ctl_t *ctl,
                           uct_specrdv_shm_seg_layout_t *layout)
{
    size_t offset = sizeof(*ctl);

    layout->peers    = offset;
    offset          += ucs_align_up(ctl->max_peers * sizeof(uint64_t),
                                    UCS_SYS_CACHE_LINE_SIZE);
    layout->ring_ctl = offset;
    offset          += ctl->num_rings * sizeof(uct_specrdv_shm_ring_ctl_t);
    layout->fifo     = offset;
    offset          += (size_t)ctl->fifo_size *
                       uct_specrdv_shm_fifo_elem_size(&ctl->geom);
    layout->rings    = offset;
    offset          += ctl->num_rings *
                       uct_specrdv_shm_seg_ring_bytes(&ctl->geom);
    layout->total    = offset;
}

static void uct_specrdv_shm_seg_map(uct_specrdv_shm_seg_t *seg, void *base,
                                    int shmid)
{
    uct_specrdv_shm_seg_layout_t layout;

    seg->base  = base;
    seg->shmid = shmid;
    seg->ctl   = base;
    uct_specrdv_shm_seg_layout(seg->ctl, &layout);
    seg->peers    = UCS_PTR_BYTE_OFFSET(base, layout.peers);
    seg->ring_ctl = UCS_PTR_BYTE_OFFSET(base, layout.ring_ctl);
    seg->fifo     = UCS_PTR_BYTE_OFFSET(base, layout.fifo);
    seg->rings    = UCS_PTR_BYTE_OFFSET(base, layout.rings);
}

ucs_status_t uct_specrdv_shm_seg_create(const uct_specrdv_shm_seg_params_t *params,
                                        uint64_t nonce,
                                        uct_specrdv_shm_seg_t *seg)
{
    uct_specrdv_shm_seg_ctl_t ctl = {
        .magic     = UCT_SPECRDV_SHM_SEG_MAGIC,
        .nonce     = nonce,
        .pid       = getpid(),
        .max_peers = params->max_peers,
        .num_rings = params->num_rings,
        .fifo_size = params->fifo_size,
        .geom      = params->geom
    };
    uct_specrdv_shm_seg_layout_t layout;
    void *base = NULL;
    ucs_status_t status;
    size_t size;
    uint64_t pos;
    int shmid;

    ucs_assert(ucs_is_pow2(params->fifo_size));
    uct_specrdv_shm_seg_layout(&ctl, &layout);
    size   = layout.total;
    /* ucs_sysv_alloc marks the segment for removal right after attaching it */
    status = ucs_sysv_alloc(&size, SIZE_MAX, &base, SHM_R | SHM_W,
                            "specrdv_shm_seg", &shmid);
    if (status != UCS_OK) {
        return status;
    }

    /* Fresh System V memory is zero: free peer entries, free rings, clear
     * head flags */
    memcpy(base, &ctl, sizeof(ctl));
    uct_specrdv_shm_seg_map(seg, base, shmid);
    for (pos = 0; pos < ctl.fifo_size; ++pos) {
        uct_specrdv_shm_fifo_elem(seg, pos)->seq = pos;
    }

    ucs_debug("specrdv: segment shmid %d, %zu bytes: %u peers, %u rings of "
              "%u x %zu bytes, fifo %u", shmid, size, ctl.max_peers,
              ctl.num_rings, ctl.geom.num_slots, ctl.geom.slot_size,
              ctl.fifo_size);
    return UCS_OK;
}

ucs_status_t uct_specrdv_shm_seg_attach(int shmid, uint64_t nonce,
                                        uct_specrdv_shm_seg_t *seg)
{
    uct_specrdv_shm_seg_ctl_t *ctl;
    uct_specrdv_shm_seg_layout_t layout;
    struct shmid_ds ds;
    void *base;

    base = shmat(shmid, NULL, 0);
    if (base == (void*)-1) {
        ucs_debug("specrdv: shmat(shmid=%d) failed: %m", shmid);
        return UCS_ERR_UNREACHABLE;
    }

    /* The id may have been recycled for someone else's segment */
    ctl = base;
    if ((shmctl(shmid, IPC_STAT, &ds) != 0) ||
        (ds.shm_segsz < sizeof(*ctl)) ||
        (ctl->magic != UCT_SPECRDV_SHM_SEG_MAGIC) || (ctl->nonce != nonce)) {
        goto err_detach;
    }

    uct_specrdv_shm_seg_layout(ctl, &layout);
    if ((layout.total > ds.shm_segsz) || !ucs_is_pow2(ctl->fifo_size) ||
        (uct_specrdv_ring_geom_check(&ctl->geom) != UCS_OK)) {
        ucs_error("specrdv: segment shmid %d has an invalid layout", shmid);
        goto err_detach;
    }

    uct_specrdv_shm_seg_map(seg, base, shmid);
    return UCS_OK;

err_detach:
    shmdt(base);
    return UCS_ERR_UNREACHABLE;
}

void uct_specrdv_shm_seg_detach(uct_specrdv_shm_seg_t *seg)
{
    if (shmdt(seg->base) != 0) {
        ucs_warn("specrdv: shmdt(%p) failed: %m", seg->base);
    }
}

int uct_specrdv_shm_seg_claim_peer(uct_specrdv_shm_seg_t *seg, uint64_t nonce)
{
    unsigned id;

    for (id = 0; id < seg->ctl->max_peers; ++id) {
        if ((seg->peers[id] == 0) &&
            ucs_atomic_bool_cswap64((uint64_t*)&seg->peers[id], 0, nonce)) {
            return id;
        }
    }
    return -1;
}

int uct_specrdv_shm_seg_claim_ring(uct_specrdv_shm_seg_t *seg, unsigned peer_id)
{
    unsigned ring;

    for (ring = 0; ring < seg->ctl->num_rings; ++ring) {
        if ((seg->ring_ctl[ring].owner == 0) &&
            ucs_atomic_bool_cswap32((uint32_t*)&seg->ring_ctl[ring].owner, 0,
                                    peer_id + 1)) {
            return ring;
        }
    }
    return -1;
}

ucs_status_t uct_specrdv_shm_fifo_reserve(uct_specrdv_shm_seg_t *seg,
                                          unsigned spare, uint64_t *pos_p)
{
    uint64_t pos = seg->ctl->fifo_head;
    uint64_t head;
    int64_t diff;

    for (;;) {
        diff = (int64_t)(uct_specrdv_shm_fifo_elem(seg, pos)->seq - pos);
        if (diff == 0) {
            if ((spare > 0) && !uct_specrdv_shm_fifo_free(seg, pos, spare)) {
                /* Full for us, unless another producer moved the head */
                if (seg->ctl->fifo_head == pos) {
                    return UCS_ERR_NO_RESOURCE;
                }
                pos = seg->ctl->fifo_head;
                continue;
            }

            if (ucs_atomic_bool_cswap64((uint64_t*)&seg->ctl->fifo_head, pos,
                                        pos + 1)) {
                *pos_p = pos;
                return UCS_OK;
            }
        } else if (diff < 0) {
            return UCS_ERR_NO_RESOURCE;
        } else {
            /* Another producer took pos, and moved the head before it wrote
             * the element.  A sequence ahead of a head that stayed is no
             * producer's doing: the receiver's segment is corrupt, and
             * waiting for the head would wait for ever */
            ucs_memory_cpu_load_fence();
            head = seg->ctl->fifo_head;
            if (head == pos) {
                ucs_error("specrdv: FIFO element %" PRIu64 " is ahead of its "
                          "head by %" PRId64, pos, diff);
                return UCS_ERR_IO_ERROR;
            }
            pos = head;
            continue;
        }
        pos = seg->ctl->fifo_head;
    }
}
