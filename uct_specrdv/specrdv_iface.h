/**
 * ucx-spec: specrdv interface, the part shared by every writer.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_IFACE_H_
#define UCT_SPECRDV_IFACE_H_

#include <uct/base/uct_iface.h>
#include <ucs/arch/cpu.h>
#include <ucs/sys/math.h>


/* Smallest slot that holds a header, a cache line of payload and a tail flag */
#define UCT_SPECRDV_SLOT_SIZE_MIN   128
#define UCT_SPECRDV_SLOT_SIZE_MAX   UCS_MBYTE
#define UCT_SPECRDV_RING_SLOTS_MIN  2
#define UCT_SPECRDV_RING_SLOTS_MAX  UINT16_MAX


typedef struct uct_specrdv_iface_config {
    uct_iface_config_t super;
    unsigned           ring_slots;
    size_t             slot_size;
    double             bandwidth;
} uct_specrdv_iface_config_t;


typedef struct uct_specrdv_iface {
    uct_base_iface_t   super;
    struct {
        unsigned       ring_slots;  /* slots per ring, one ring per direction */
        size_t         slot_size;   /* bytes per slot, head and tail included */
        double         bandwidth;   /* estimate reported to UCP, bytes/sec */
    } config;
} uct_specrdv_iface_t;


UCS_CLASS_DECLARE(uct_specrdv_iface_t, uct_iface_ops_t*,
                  uct_iface_internal_ops_t*, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*);


void uct_specrdv_iface_query(uct_specrdv_iface_t *iface,
                             uct_iface_attr_t *iface_attr);

#endif
