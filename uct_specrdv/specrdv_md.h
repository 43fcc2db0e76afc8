/**
 * ucx-spec: specrdv memory domains.
 *
 * One component, "specrdv", owns every specrdv memory domain: one for shared
 * memory on this node, and (with the verbs writer) one per RDMA device.  The
 * memory domain decides which writer an interface opened on it uses.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_MD_H_
#define UCT_SPECRDV_MD_H_

#include <uct/base/uct_md.h>


#define UCT_SPECRDV_COMPONENT_NAME  "specrdv"
#define UCT_SPECRDV_SHM_MD_NAME     UCT_SPECRDV_COMPONENT_NAME "_shm"
#define UCT_SPECRDV_SHM_DEVICE_NAME "shm"


typedef enum {
    UCT_SPECRDV_MD_TYPE_SHM
} uct_specrdv_md_type_t;


typedef struct uct_specrdv_md_config {
    uct_md_config_t       super;
} uct_specrdv_md_config_t;


typedef struct uct_specrdv_md {
    uct_md_t              super;
    uct_specrdv_md_type_t type;
} uct_specrdv_md_t;


extern uct_component_t uct_specrdv_component;

#endif
