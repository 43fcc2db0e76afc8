/**
 * ucx-spec: what the unit tests of the specrdv module share: a worker and the
 * specrdv_shm memory domain, opened through UCT's public API.
 *
 * See file LICENSE for terms.
 */

#ifndef SPECRDV_FIXTURE_H_
#define SPECRDV_FIXTURE_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stdlib.h>
#include <string.h>


typedef struct {
    uct_component_h       component;
    uct_md_h              md;
    ucs_async_context_t  *async;
    uct_worker_h          worker;
    uct_error_handler_t   err_handler;  /* for interfaces opened after set */
    void                  *err_arg;
    size_t                rx_headroom;
} fixture_t;


static uct_component_h find_component(const char *name)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    uct_component_h found = NULL;
    unsigned i, count;

    assert_int_equal(uct_query_components(&components, &count), UCS_OK);
    for (i = 0; i < count; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        assert_int_equal(uct_component_query(components[i], &attr), UCS_OK);
        if (!strcmp(attr.name, name)) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
}

static ucs_status_t open_md(uct_component_h component, const char *name,
                            uct_md_h *md_p)
{
    uct_md_config_t *config;
    ucs_status_t status;

    assert_int_equal(uct_md_config_read(component, NULL, NULL, &config), UCS_OK);
    status = uct_md_open(component, name, config, md_p);
    uct_config_release(config);
    return status;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->component = find_component("specrdv");
    assert_non_null(f->component);
    assert_int_equal(open_md(f->component, "specrdv_shm", &f->md), UCS_OK);
    assert_int_equal(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                              &f->async), UCS_OK);
    assert_int_equal(uct_worker_create(f->async, UCS_THREAD_MODE_SINGLE,
                                       &f->worker), UCS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;

    uct_worker_destroy(f->worker);
    ucs_async_context_destroy(f->async);
    uct_md_close(f->md);
    free(f);
    return 0;
}

/* Opens the shm interface with the given UCX_SPECRDV_* overrides (name,
 * value pairs, NULL-terminated); returns uct_iface_open's status. */
static ucs_status_t open_iface(fixture_t *f, uct_iface_h *iface_p, ...)
{
    uct_iface_params_t params = {
        .field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                UCT_IFACE_PARAM_FIELD_DEVICE,
        .open_mode            = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name  = "specrdv",
        .mode.device.dev_name = "shm"
    };
    uct_iface_config_t *config;
    const char *name, *value;
    ucs_status_t status;
    va_list ap;

    assert_int_equal(uct_md_iface_config_read(f->md, "specrdv", NULL, NULL,
                                              &config), UCS_OK);
    va_start(ap, iface_p);
    while ((name = va_arg(ap, const char*)) != NULL) {
        value = va_arg(ap, const char*);
        assert_int_equal(uct_config_modify(config, name, value), UCS_OK);
    }
    va_end(ap);

    if (f->err_handler != NULL) {
        params.field_mask     |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                 UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
        params.err_handler     = f->err_handler;
        params.err_handler_arg = f->err_arg;
    }

    if (f->rx_headroom != 0) {
        params.field_mask  |= UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
        params.rx_headroom  = f->rx_headroom;
    }

    status = uct_iface_open(f->md, f->worker, &params, config, iface_p);
    uct_config_release(config);
    return status;
}

#endif
