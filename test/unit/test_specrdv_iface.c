/**
 * ucx-spec: the specrdv module as UCT's public API sees it: component,
 * memory domain, device, interface lifetime and configuration checks.
 *
 * See file LICENSE for terms.
 */

#include "specrdv_fixture.h"

#include <uct/api/v2/uct_v2.h>


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
    uct_perf_attr_t perf;
    uct_iface_h iface;

    assert_int_equal(open_iface(f, &iface, NULL), UCS_OK);
    assert_int_equal(uct_iface_query(iface, &attr), UCS_OK);

    /* Connects to an interface; AMs always, RMA when CMA is allowed */
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_AM_BCOPY);
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_PENDING);
    assert_true(attr.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    /* the default slot holds 8 KiB and UCP's eager header; every fragment
     * of a larger message a multiple of 8 B (MPICH's generic unpack cannot
     * stop inside an element), so the slot's last 7 B are not offered */
    assert_int_equal(attr.cap.am.max_bcopy, 8424);
    assert_int_equal(attr.cap.am.max_short, 8424);
    assert_int_equal(attr.cap.am.max_zcopy, 8424);
    assert_int_not_equal(attr.iface_addr_len, 0);
    assert_true(attr.bandwidth.dedicated == 12179.0 * 1024 * 1024);
    assert_true(attr.latency.c > 0);

    /* UCP v1 places its rendezvous threshold with the interface's one
     * overhead: that of put/get (a CMA system call) where they exist; an
     * active message has its own, per operation */
    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD;
    perf.operation  = UCT_EP_OP_AM_ZCOPY;
    assert_int_equal(uct_iface_estimate_perf(iface, &perf), UCS_OK);
    assert_true(perf.send_pre_overhead < 100e-9);

    /* The shm writer's am_zcopy copies as bcopy does, then completes: UCP's
     * v2 must not find it cheaper than a short send of any size */
    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD |
                      UCT_PERF_ATTR_FIELD_BANDWIDTH;
    assert_int_equal(uct_iface_estimate_perf(iface, &perf), UCS_OK);
    assert_true(perf.send_post_overhead > 0);
    assert_true(perf.bandwidth.dedicated + perf.bandwidth.shared <
                attr.bandwidth.dedicated / 2);
    perf.field_mask = UCT_PERF_ATTR_FIELD_OPERATION |
                      UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD;
    if (attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) {
        assert_true(attr.overhead >= 1e-6);
        perf.operation = UCT_EP_OP_GET_ZCOPY;
        assert_int_equal(uct_iface_estimate_perf(iface, &perf), UCS_OK);
        assert_true(perf.send_pre_overhead >= 1e-6);
    } else {
        assert_true(attr.overhead < 100e-9);
    }
    assert_int_not_equal(attr.device_addr_len, 0);
    assert_true(attr.device_addr_len <= sizeof(dev_addr));
    assert_int_equal(uct_iface_get_device_address(iface, (void*)dev_addr),
                     UCS_OK);

    /* Without an interface address there is nothing to reach */
    assert_int_equal(uct_iface_is_reachable(iface, (void*)dev_addr, NULL), 0);
    assert_int_equal(uct_iface_flush(iface, 0, NULL), UCS_OK);
    assert_int_equal(uct_iface_progress(iface), 0);

    uct_iface_close(iface);
}

static void test_iface_config_bounds(void **state)
{
    fixture_t *f = *state;
    uct_iface_attr_t attr;
    uct_iface_h iface;

    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "1", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "32768", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "POLL_SET", "0", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "CREDIT_UPDATE", "17", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SHM_FIFO_SIZE", "48", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SHM_MAX_PEERS", "0", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "100", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "128", NULL),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "2m", NULL),
                     UCS_ERR_INVALID_PARAM);

    /* the edges of the accepted ranges */
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "2",
                                "SLOT_SIZE", "256", NULL), UCS_OK);
    /* 256 - 16 - 1 = 239 B fit, 232 B are offered */
    assert_int_equal(uct_iface_query(iface, &attr), UCS_OK);
    assert_int_equal(attr.cap.am.max_bcopy, 232);
    uct_iface_close(iface);
    assert_int_equal(open_iface(f, &iface, "RING_SLOTS", "32767",
                                "SLOT_SIZE", "256", "POLL_SET", "1", NULL),
                     UCS_OK);
    uct_iface_close(iface);
    assert_int_equal(open_iface(f, &iface, "SLOT_SIZE", "1m", "RING_SLOTS", "16",
                                "CREDIT_UPDATE", "16", "SHM_FIFO_SIZE", "2",
                                NULL), UCS_OK);
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
