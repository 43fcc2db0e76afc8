/**
 * ucx-spec: the specrdv module as UCT's public API sees it: component,
 * memory domain, device, interface lifetime and configuration checks.
 *
 * See file LICENSE for terms.
 */

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

    status = uct_iface_open(f->md, f->worker, &params, config, iface_p);
    uct_config_release(config);
    return status;
}

static void test_component_has_one_shm_md(void **state)
{
    fixture_t *f = *state;
    uct_md_resource_desc_t mds[4];
    uct_component_attr_t attr = {
        .field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
    };

    assert_int_equal(uct_component_query(f->component, &attr), UCS_OK);
    assert_int_equal(attr.md_resource_count, 1);

    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds;
    assert_int_equal(uct_component_query(f->component, &attr), UCS_OK);
    assert_string_equal(mds[0].md_name, "specrdv_shm");
}

static void test_md_open_rejects_unknown_name(void **state)
{
    fixture_t *f = *state;
    uct_md_h md;

    assert_int_equal(open_md(f->component, "specrdv_nosuchdev", &md),
                     UCS_ERR_NO_DEVICE);
}

static void test_md_offers_shm_device(void **state)
{
    fixture_t *f = *state;
    uct_tl_resource_desc_t *resources;
    unsigned count;

    assert_int_equal(uct_md_query_tl_resources(f->md, &resources, &count),
                     UCS_OK);
    assert_int_equal(count, 1);
    assert_string_equal(resources[0].tl_name, "specrdv");
    assert_string_equal(resources[0].dev_name, "shm");
    assert_int_equal(resources[0].dev_type, UCT_DEVICE_TYPE_SHM);
    uct_release_tl_resource_list(resources);
}

static void test_iface_open_query_close(void **state)
{
    fixture_t *f = *state;
    uint8_t dev_addr[64];
    uct_iface_attr_t attr;
    uct_iface_h iface;

    assert_int_equal(open_iface(f, &iface, NULL), UCS_OK);
    assert_int_equal(uct_iface_query(iface, &attr), UCS_OK);

    /* A connection model, and no operation before the data path exists */
    assert_int_equal(attr.cap.flags, UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    assert_true(attr.bandwidth.dedicated == 12179.0 * 1024 * 1024);
    assert_true(attr.latency.c > 0);
    assert_int_not_equal(attr.device_addr_len, 0);
    assert_true(attr.device_addr_len <= sizeof(dev_addr));
    assert_int_equal(uct_iface_get_device_address(iface, (void*)dev_addr),
                     UCS_OK);

    /* Without endpoints no peer can be reached, not even this iface */
    assert_int_equal(uct_iface_is_reachable(iface, (void*)dev_addr, NULL), 0);
    assert_int_equal(uct_iface_flush(iface, 0, NULL), UCS_OK);
    assert_int_equal(uct_iface_progress(iface), 0);

    uct_iface_close(iface);
}

static void test_iface_config_bounds(void **state)
{
    fixture_t *f = *state;
    uct_iface_h iface;

    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "1", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "65536", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "100", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "64", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "2m", NULL),
                     UCS_ERR_INVALID_PARAM);

    /* the edges of the accepted ranges */
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "2",
                                "SLOT_SIZE", "128", NULL), UCS_OK);
    uct_iface_close(iface);
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "65535",
                                "SLOT_SIZE", "1m", NULL), UCS_OK);
    uct_iface_close(iface);
}

static void test_iface_config_parse_error(void **state)
{
    fixture_t *f = *state;
    uct_iface_config_t *config;

    assert_int_equal(uct_md_iface_config_read(f->md, "specrdv", NULL, NULL,
                                              &config), UCS_OK);
    assert_int_not_equal(uct_config_modify(config, "RING_SLOTS", "many"),
                         UCS_OK);
    assert_int_not_equal(uct_config_modify(config, "NO_SUCH_KNOB", "1"),
                         UCS_OK);
    uct_config_release(config);
}

static void test_many_ifaces_on_one_worker(void **state)
{
    fixture_t *f = *state;
    uct_iface_h ifaces[8];
    int i;

    for (i = 0; i < 8; ++i) {
        assert_int_equal(open_iface(f, &ifaces[i], NULL), UCS_OK);
    }
    for (i = 7; i >= 0; --i) {
        uct_iface_close(ifaces[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_component_has_one_shm_md, setup, teardown),
        cmocka_unit_test_setup_teardown(test_md_open_rejects_unknown_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_md_offers_shm_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iface_open_query_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iface_config_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iface_config_parse_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_ifaces_on_one_worker, setup, teardown),
    };

    return cmocka_run_group_tests_name("specrdv_iface", tests, NULL, NULL);
}
