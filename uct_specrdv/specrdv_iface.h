/**
 * ucx-spec: specrdv interface, the part shared by every writer.
 *
 * It holds the connection layer (specrdv_conn.h) and is its UCT face:
 * delivery of active messages (the user copies what it keeps: no
 * descriptor outlives its callback), endpoint errors,
 * pending requests, progress.  A writer's interface derives from it, opens
 * the memory its rings live in, and supplies the wire acts.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_IFACE_H_
#define UCT_SPECRDV_IFACE_H_

#include "specrdv_compat.h"
#include "specrdv_conn.h"

#include <uct/base/uct_iface.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/sys/math.h>


/* Where a slot's payload starts, whoever receives it: right after the
 * header, so that a message of up to 47 bytes is one cache line for the
 * sender to write and the receiver to read (a spare line of headroom once
 * stood between them, and two lines cost 5-25 % of Open MPI's small-message
 * bandwidth).  A fixed offset gives every interface the same maximum
 * message, so what one process may send, any other can receive. */
#define UCT_SPECRDV_PAYLOAD_OFFSET  sizeof(uct_specrdv_hdr_t)

/* Smallest slot: four cache lines */
#define UCT_SPECRDV_SLOT_SIZE_MIN   256
#define UCT_SPECRDV_SLOT_SIZE_MAX   UCS_MBYTE
#define UCT_SPECRDV_RING_SLOTS_MIN  2
#define UCT_SPECRDV_RING_SLOTS_MAX  INT16_MAX

/* Most iov entries a gathered active message takes */
#define UCT_SPECRDV_MAX_IOV         16


/* The slot protocol's knobs; each writer's follow in the transport's
 * configuration (uct_specrdv_writer_config) */
typedef struct uct_specrdv_iface_config {
    uct_iface_config_t       super;
    unsigned                 ring_slots;
    size_t                   slot_size;
    unsigned                 poll_set;
    unsigned                 ring_after;
    unsigned long            credit_update;
    double                   bandwidth;
    int                      report;
} uct_specrdv_iface_config_t;


typedef struct uct_specrdv_iface {
    uct_base_iface_t         super;
    uct_specrdv_conns_t      conns;
    ucs_arbiter_t            arbiter;
    unsigned                 invalidated;   /* endpoints to report */
    /* Completions of operations done inside their call, delivered from
     * progress (uct_specrdv_iface_complete_later) */
    struct {
        uct_completion_t     **comps;
        unsigned             count;
        unsigned             size;
    } done;
    /* the ring geometry and the polling set's bound are in conns */
    struct {
        double               bandwidth;     /* estimate reported to UCP */
        int                  report;        /* print counters at close */
    } config;
} uct_specrdv_iface_t;


UCS_CLASS_DECLARE(uct_specrdv_iface_t, uct_iface_ops_t*,
                  uct_iface_internal_ops_t*, const uct_specrdv_wire_ops_t*,
                  unsigned, uct_md_h, uct_worker_h, const uct_iface_params_t*,
                  const uct_iface_config_t*);


/* Fragments of a message larger than one active message start this far
 * apart, less UCP's headers (multiples of 8 too) */
#define UCT_SPECRDV_AM_ALIGN        8

/* Largest message: peers with other slots are unreachable, so this holds for
 * every peer.  A slot carries a few bytes more, which the user is not
 * offered: a consumer whose unpack cannot stop inside a basic element
 * (MPICH's generic datatypes, through yaksa, lose the partial element) needs
 * every fragment a multiple of the largest one, as UCX's own transports
 * have it (posix and sysv carry 8256 B, self 8192 B). */
static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_iface_max_payload(const uct_specrdv_iface_t *iface)
{
    return ucs_align_down(uct_specrdv_conns_max_payload(&iface->conns),
                          UCT_SPECRDV_AM_ALIGN);
}

/* What every writer's interface offers: active messages through the rings
 * and the fallback channel, pending requests, peer failure */
void uct_specrdv_iface_query(uct_specrdv_iface_t *iface,
                             uct_iface_attr_t *iface_attr);

unsigned uct_specrdv_iface_progress(uct_iface_h tl_iface);

ucs_status_t uct_specrdv_iface_complete_later(uct_specrdv_iface_t *iface,
                                              uct_completion_t *comp);

ucs_status_t uct_specrdv_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp);

#endif
