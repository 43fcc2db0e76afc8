/**
 * ucx-spec: the specrdv component.
 *
 * One component, "specrdv", owns the memory domains of every writer: one for
 * shared memory on this node, and one per RDMA device.  A memory domain knows
 * its writer, which serves its devices and the interfaces opened on them.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_writer.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* The writers, listed once */
extern uct_specrdv_writer_t uct_specrdv_shm_writer;
#if HAVE_IB
extern uct_specrdv_writer_t uct_specrdv_verbs_writer;
#endif

uct_specrdv_writer_t *uct_specrdv_writers[] = {
    &uct_specrdv_shm_writer,
#if HAVE_IB
    &uct_specrdv_verbs_writer,
#endif
    NULL
};


static ucs_config_field_t uct_specrdv_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_specrdv_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"RCACHE", "try",
     "Registration cache of an RDMA device's memory domain: a buffer sent\n"
     "from again is not registered again, and UCM's memory events drop a\n"
     "registration whose pages go away.  \"try\" registers directly where\n"
     "the cache cannot be created (no memory events), \"y\" fails then.",
     ucs_offsetof(uct_specrdv_md_config_t, rcache_enable),
     UCS_CONFIG_TYPE_TERNARY},

    {"", "", NULL,
     ucs_offsetof(uct_specrdv_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(uct_specrdv_rcache_config_table)},

    {NULL}
};

static ucs_status_t
uct_specrdv_query_md_resources(uct_component_t *component,
                               uct_md_resource_desc_t **resources_p,
                               unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources = NULL, *tmp, *found;
    unsigned count                    = 0;
    uct_specrdv_writer_t **writer;
    ucs_status_t status;
    unsigned num;

    UCS_STATIC_ASSERT(ucs_static_array_size(uct_specrdv_writers) <=
                      UCT_SPECRDV_MAX_WRITERS + 1);

    for (writer = uct_specrdv_writers; *writer != NULL; ++writer) {
        status = (*writer)->query_md_resources(&found, &num);
        if (status != UCS_OK) {
            ucs_debug("specrdv: %s writer has no memory domain: %s",
                      (*writer)->name, ucs_status_string(status));
            continue;
        }

        if (num == 0) {
            ucs_free(found);
            continue;
        }

        tmp = ucs_realloc(resources, (count + num) * sizeof(*resources),
                          "specrdv_md_resources");
        if (tmp == NULL) {
            ucs_free(found);
            ucs_free(resources);
            return UCS_ERR_NO_MEMORY;
        }

        resources = tmp;
        memcpy(resources + count, found, num * sizeof(*resources));
        count += num;
        ucs_free(found);
    }

    *resources_p     = resources;
    *num_resources_p = count;
    return UCS_OK;
}

static ucs_status_t
uct_specrdv_md_open(uct_component_t *component, const char *md_name,
                    const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_specrdv_writer_t **writer;
    ucs_status_t status;

    for (writer = uct_specrdv_writers; *writer != NULL; ++writer) {
        status = (*writer)->md_open(md_name, config, md_p);
        if (status != UCS_ERR_NO_DEVICE) {
            return status;
        }
    }

    ucs_error("specrdv: no memory domain named '%s'", md_name);
    return UCS_ERR_NO_DEVICE;
}

static ucs_status_t
uct_specrdv_rkey_unpack_key(uct_component_t *component, const void *rkey_buffer,
                            uct_rkey_t *rkey_p, void **handle_p)
{
    *rkey_p   = uct_specrdv_packed_rkey_load(rkey_buffer);
    *handle_p = NULL;
    return UCS_OK;
}
UCT_SPECRDV_RKEY_UNPACK_DEFINE(uct_specrdv_rkey_unpack,
                               uct_specrdv_rkey_unpack_key)

uct_component_t uct_specrdv_component = {
    .query_md_resources = uct_specrdv_query_md_resources,
    .md_open            = uct_specrdv_md_open,
    .cm_open            = (uct_component_cm_open_func_t)ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_specrdv_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)ucs_empty_function_return_success,
    UCT_SPECRDV_COMPONENT_RKEY_COMPARE
    .name               = UCT_SPECRDV_COMPONENT_NAME,
    .md_config          = {
        .name           = "specrdv memory domain",
        .prefix         = "SPECRDV_",
        .table          = uct_specrdv_md_config_table,
        .size           = sizeof(uct_specrdv_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_specrdv_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
