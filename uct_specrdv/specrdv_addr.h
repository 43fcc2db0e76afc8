/**
 * ucx-spec: what every specrdv interface address starts with.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_ADDR_H_
#define UCT_SPECRDV_ADDR_H_

#include <ucs/sys/compiler_def.h>
#include <stdint.h>


/* Writers' ids in their interfaces' addresses */
enum {
    UCT_SPECRDV_WRITER_SHM   = 1,
    UCT_SPECRDV_WRITER_VERBS = 2
};


/* Every writer's interface address starts with this.  One transport name
 * covers every writer, and UCP asks an interface about any address of that
 * name: an interface answers only for its own writer's. */
typedef struct uct_specrdv_iface_addr {
    uint8_t                    writer;
} UCS_S_PACKED uct_specrdv_iface_addr_t;

#endif
