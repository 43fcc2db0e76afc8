/**
 * ucx-spec: configuration of the shared-memory writer (UCX_SPECRDV_SHM_*).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_CONFIG_H_
#define UCT_SPECRDV_SHM_CONFIG_H_

#include <ucs/config/parser.h>


typedef struct uct_specrdv_shm_config {
    unsigned          fifo_size;
    unsigned          max_peers;
    ucs_ternary_auto_value_t cma;
} uct_specrdv_shm_config_t;


extern ucs_config_field_t uct_specrdv_shm_config_table[];

#endif
