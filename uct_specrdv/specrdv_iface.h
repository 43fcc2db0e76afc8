/**
 * ucx-spec: specrdv interface, the part shared by every writer.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_IFACE_H_
#define UCT_SPECRDV_IFACE_H_

#include "specrdv_slot.h"
#include "shm/specrdv_shm_config.h"

#include <uct/base/uct_iface.h>
#include <ucs/arch/cpu.h>
#include <ucs/sys/math.h>


/* Where a slot's payload starts, whoever receives it: room for the header,
 * the receive descriptor and up to 104 bytes of the user's rx headroom (UCP
 * asks for 80).  A fixed offset gives every interface the same maximum
 * message, so what one process may send, any other can receive. */
#define UCT_SPECRDV_PAYLOAD_OFFSET  (2 * UCS_SYS_CACHE_LINE_SIZE)

/* Smallest slot that holds the payload offset and a cache line of payload */
#define UCT_SPECRDV_SLOT_SIZE_MIN   256
#define UCT_SPECRDV_SLOT_SIZE_MAX   UCS_MBYTE
#define UCT_SPECRDV_RING_SLOTS_MIN  2
#define UCT_SPECRDV_RING_SLOTS_MAX  INT16_MAX


/* The transport's configuration: the slot protocol's knobs, then each writer's */
typedef struct uct_specrdv_iface_config {
    uct_iface_config_t       super;
    unsigned                 ring_slots;
    size_t                   slot_size;
    unsigned                 poll_set;
    unsigned                 ring_after;
    unsigned long            credit_update;
    double                   bandwidth;
    uct_specrdv_shm_config_t shm;
} uct_specrdv_iface_config_t;


typedef struct uct_specrdv_iface {
    uct_base_iface_t         super;
    struct {
        unsigned             ring_slots;    /* slots per ring */
        size_t               slot_size;     /* bytes per slot, all included */
        unsigned             poll_set;      /* rings this interface polls */
        unsigned             ring_after;    /* fallback sends before a ring */
        unsigned             credit_update; /* freed slots that force an update */
        double               bandwidth;     /* estimate reported to UCP */
    } config;
} uct_specrdv_iface_t;


UCS_CLASS_DECLARE(uct_specrdv_iface_t, uct_iface_ops_t*,
                  uct_iface_internal_ops_t*, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*);


void uct_specrdv_iface_query(uct_specrdv_iface_t *iface,
                             uct_iface_attr_t *iface_attr);

#endif
