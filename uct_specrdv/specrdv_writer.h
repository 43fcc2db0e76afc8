/**
 * ucx-spec: what a writer is to the specrdv transport.
 *
 * A writer moves slot-protocol messages over one kind of medium (shared
 * memory, an RDMA device).  It owns its memory domains, their devices and the
 * interfaces opened on them, and its own UCX_SPECRDV_* variables.  The
 * writers are listed once, in specrdv_md.c; nothing else names them.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_WRITER_H_
#define UCT_SPECRDV_WRITER_H_

#include "specrdv_addr.h"
#include "specrdv_compat.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/config/parser.h>


typedef struct uct_specrdv_writer {
    const char         *name;
    uint8_t            id;     /* first byte of its interfaces' addresses */

    /* Its variables, nested into the transport's configuration; the offset
     * of its part there is set when the transport registers */
    ucs_config_field_t *config_table;
    size_t             config_size;
    size_t             config_offset;

    /* Its memory domains, added to the component's list */
    ucs_status_t       (*query_md_resources)(uct_md_resource_desc_t **resources_p,
                                             unsigned *num_resources_p);

    /* Open @a md_name if it is one of its own, else UCS_ERR_NO_DEVICE */
    ucs_status_t       (*md_open)(const char *md_name,
                                  const uct_md_config_t *config,
                                  uct_md_h *md_p);

    ucs_status_t       (*query_devices)(uct_md_h md,
                                        uct_tl_device_resource_t **devices_p,
                                        unsigned *num_devices_p);

    ucs_status_t       (*iface_open)(uct_md_h md, uct_worker_h worker,
                                     const uct_iface_params_t *params,
                                     const uct_iface_config_t *config,
                                     uct_iface_h *iface_p);
} uct_specrdv_writer_t;


/* Every specrdv memory domain: it knows which writer made it */
typedef struct uct_specrdv_md {
    uct_md_t                   super;
    const uct_specrdv_writer_t *writer;
} uct_specrdv_md_t;


typedef struct uct_specrdv_md_config {
    uct_md_config_t            super;
    int                        rcache_enable;  /* ucs_ternary_auto_value_t */
    uct_specrdv_rcache_config_t rcache;        /* writers that register */
} uct_specrdv_md_config_t;


#define UCT_SPECRDV_COMPONENT_NAME  "specrdv"

/* Every memory domain packs a 32-bit rkey, so that the component unpacks the
 * rkeys of all its writers alike; where none is needed it is 0 */
typedef uint32_t uct_specrdv_packed_rkey_t;

/* UCP hands an rkey buffer at any offset of its packed keys (1.22.0: odd
 * ones), so the key is copied in and out, never stored through a cast */
static inline void
uct_specrdv_packed_rkey_store(void *rkey_buffer, uct_specrdv_packed_rkey_t rkey)
{
    memcpy(rkey_buffer, &rkey, sizeof(rkey));
}

static inline uct_specrdv_packed_rkey_t
uct_specrdv_packed_rkey_load(const void *rkey_buffer)
{
    uct_specrdv_packed_rkey_t rkey;

    memcpy(&rkey, rkey_buffer, sizeof(rkey));
    return rkey;
}


extern uct_component_t uct_specrdv_component;

/* The writers a build can have: the transport's configuration table nests
 * each one's table after the slot protocol's (specrdv_iface.c) */
#define UCT_SPECRDV_MAX_WRITERS  4

/* NULL-terminated */
extern uct_specrdv_writer_t *uct_specrdv_writers[];


static inline int
uct_specrdv_iface_addr_is_writer(const uct_iface_addr_t *addr,
                                 const uct_specrdv_writer_t *writer)
{
    return (addr != NULL) &&
           (((const uct_specrdv_iface_addr_t*)addr)->writer == writer->id);
}

/* The writer's part of the transport's configuration */
static inline const void*
uct_specrdv_writer_config(const uct_specrdv_writer_t *writer,
                          const uct_iface_config_t *config)
{
    return UCS_PTR_BYTE_OFFSET(config, writer->config_offset);
}

#endif
