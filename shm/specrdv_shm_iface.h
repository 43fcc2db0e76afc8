/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * The writer moves a slot-protocol message by copying it into the receiver's
 * slot, which this process maps, and sealing it with a release store of the
 * tail flag.  Its fallback channel is the receiver's multi-producer FIFO; its
 * explicit credit update is a store into the ring's control line.  put/get go
 * through CMA (process_vm_writev/readv).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_IFACE_H_
#define UCT_SPECRDV_SHM_IFACE_H_

#include "specrdv_shm_seg.h"

#include <uct/specrdv/specrdv_iface.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/list.h>
#include <ucs/stats/stats.h>
#include <ucs/sys/sys.h>


typedef struct uct_specrdv_shm_peer uct_specrdv_shm_peer_t;


enum {
    UCT_SPECRDV_SHM_IFACE_STAT_TX_RING,        /* messages sent through a ring */
    UCT_SPECRDV_SHM_IFACE_STAT_TX_FALLBACK,    /* ... through the FIFO */
    UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_CREDITS,  /* ring full, fell back */
    UCT_SPECRDV_SHM_IFACE_STAT_TX_NO_RESOURCE, /* ring and FIFO full */
    UCT_SPECRDV_SHM_IFACE_STAT_RX_HELD,        /* early PSN held in place */
    UCT_SPECRDV_SHM_IFACE_STAT_CREDIT_UPDATES, /* explicit credit updates */
    UCT_SPECRDV_SHM_IFACE_STAT_RING_CLAIMED,   /* peers given a ring */
    UCT_SPECRDV_SHM_IFACE_STAT_RING_REFUSED,   /* polling set was full */
    UCT_SPECRDV_SHM_IFACE_STAT_LAST
};


/* A ring of our polling set: the receiving side of one peer's connection */
typedef struct uct_specrdv_shm_rx_ring {
    uct_specrdv_ring_rx_t  rx;
    uct_specrdv_shm_peer_t *peer;     /* NULL when the ring is not in use */
    int                    closing;   /* peer left; free once idle */
} uct_specrdv_shm_rx_ring_t;


typedef struct uct_specrdv_shm_iface {
    uct_specrdv_iface_t        super;
    uct_specrdv_shm_seg_t      seg;          /* what peers write to us */
    uint64_t                   fifo_tail;
    uct_specrdv_shm_peer_t     **by_id;      /* senders, by their id here */
    uct_specrdv_shm_rx_ring_t  *rings;
    uint8_t                    *released;    /* rings' release bitmaps */
    unsigned                   *poll_set;    /* indexes of rings in use */
    unsigned                   poll_count;
    ucs_list_link_t            peers;
    ucs_arbiter_t              arbiter;
    uct_recv_desc_t            release_desc;
    void                       *bounce;      /* put/get bcopy staging */
    int                        rma;          /* CMA usable */
    unsigned                   rx_headroom;
    unsigned                   ring_am_flags; /* DESC if slots are aligned */
    unsigned                   invalidated;   /* endpoints to report */
    UCS_STATS_NODE_DECLARE(stats)
} uct_specrdv_shm_iface_t;


/* Largest message: peers with other slots are unreachable, so this holds for
 * every peer, and it reads nothing of theirs */
static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_shm_iface_max_payload(const uct_specrdv_shm_iface_t *iface)
{
    return uct_specrdv_ring_max_payload(&iface->seg.ctl->geom);
}

ucs_status_t uct_specrdv_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p);

#endif
