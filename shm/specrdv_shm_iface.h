/**
 * ucx-spec: specrdv interface on the shared-memory writer.
 *
 * The writer moves a slot-protocol message by copying it into the receiver's
 * slot, which this process maps, and sealing it with a release store of the
 * tail flag (specrdv_shm_peer.c has its wire acts).  Its segment holds what
 * peers write to this interface: the rings of the polling set and the
 * fallback FIFO.  put/get go through CMA (process_vm_writev/readv).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_IFACE_H_
#define UCT_SPECRDV_SHM_IFACE_H_

#include "specrdv_shm_seg.h"

#include <uct/specrdv/specrdv_iface.h>
#include <uct/specrdv/specrdv_writer.h>
#include <ucs/config/parser.h>
#include <ucs/sys/sys.h>


#define UCT_SPECRDV_SHM_MD_NAME     "specrdv_shm"
#define UCT_SPECRDV_SHM_DEVICE_NAME "shm"

/* Messages taken from the FIFO per progress call */
#define UCT_SPECRDV_SHM_RX_BATCH    16

/* Seconds of software overhead: an active message is a store into a slot;
 * put and get are a CMA system call, as UCX's cma reports them */
#define UCT_SPECRDV_SHM_AM_OVERHEAD  10e-9
#define UCT_SPECRDV_SHM_RMA_OVERHEAD 2e-6

/* Bytes per second of the sender's copy into a slot, as UCP's v2 prices a
 * bcopy by default (UCX_BCOPY_BW=auto) */
#define UCT_SPECRDV_SHM_COPY_BW      (7000.0 * UCS_MBYTE)


typedef struct uct_specrdv_shm_peer uct_specrdv_shm_peer_t;


/* UCX_SPECRDV_SHM_* */
typedef struct uct_specrdv_shm_config {
    unsigned                 fifo_size;
    unsigned                 max_peers;
    ucs_ternary_auto_value_t cma;
} uct_specrdv_shm_config_t;


typedef struct uct_specrdv_shm_iface {
    uct_specrdv_iface_t        super;
    uct_specrdv_shm_seg_t      seg;          /* what peers write to us */
    uint64_t                   fifo_tail;
    uct_specrdv_shm_peer_t     **by_id;      /* senders, by their id here */
    void                       *bounce;      /* put/get bcopy staging */
    int                        rma;          /* CMA usable */
} uct_specrdv_shm_iface_t;


extern ucs_config_field_t uct_specrdv_shm_config_table[];
extern uct_specrdv_writer_t uct_specrdv_shm_writer;

ucs_status_t uct_specrdv_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p);

#endif
