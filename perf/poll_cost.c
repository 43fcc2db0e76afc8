/**
 * ucx-spec: the cost of a receiver's progress call against the size of its
 * polling set (Liu et al., ICS'03, Fig. 20), with nothing arriving.
 *
 * For each size N, one receiving interface and N senders, each of which sent
 * one message so that it holds a ring in the receiver's polling set; then
 * uct_iface_progress() on the receiver, timed over many calls.  The same for
 * a UCT transport without a polling set (its progress reads one FIFO or one
 * completion queue), with N peers connected.  One size at a time (so
 * that only the largest set's memory is ever needed: a verbs interface
 * takes megabytes), the two transports alternated, repetition after
 * repetition; one CSV row per measurement goes to stdout:
 *
 *     platform,test,size,variant,rep,value,unit
 *
 * usage: poll_cost [-r REPS] [-n CALLS] [-m MAX_N] [-d DEVICE]
 *                  [-b BASELINE_TL[:DEVICE]] [-p PLATFORM]
 *   specrdv on DEVICE (shm, or a verbs port such as rxe0:1), against
 *   BASELINE_TL (posix on memory; ud_verbs on a verbs port, which connects
 *   to an interface as specrdv does)
 *
 * See file LICENSE for terms.
 */

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define AM_ID      3


typedef struct {
    const char      *tl;
    const char      *dev;
    uct_md_h        md;
    uct_component_h component;
} tl_t;

typedef struct {
    unsigned        n;
    uct_iface_h     rx;
    uct_iface_h     *tx;
    uct_ep_h        *ep;
    volatile int    received;
} set_t;


static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "poll_cost: %s: %s\n", what, ucs_status_string(status));
    exit(1);
}

#define CHECK(_call) \
    do { \
        ucs_status_t _s = (_call); \
        if (_s != UCS_OK) { \
            die(#_call, _s); \
        } \
    } while (0)

static void find_md(tl_t *tl)
{
    uct_component_h *components;
    uct_md_resource_desc_t *mds;
    uct_tl_resource_desc_t *res;
    uct_component_attr_t attr;
    unsigned nc, i, j, k, nres;
    uct_md_config_t *config;
    uct_md_h md;

    CHECK(uct_query_components(&components, &nc));
    for (i = 0; i < nc; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        CHECK(uct_component_query(components[i], &attr));
        mds             = calloc(attr.md_resource_count, sizeof(*mds));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds;
        CHECK(uct_component_query(components[i], &attr));
        for (j = 0; j < attr.md_resource_count; ++j) {
            CHECK(uct_md_config_read(components[i], NULL, NULL, &config));
            if (uct_md_open(components[i], mds[j].md_name, config, &md) !=
                UCS_OK) {
                uct_config_release(config);
                continue;
            }
            uct_config_release(config);
            if (uct_md_query_tl_resources(md, &res, &nres) == UCS_OK) {
                for (k = 0; k < nres; ++k) {
                    if (!strcmp(res[k].tl_name, tl->tl) &&
                        !strcmp(res[k].dev_name, tl->dev)) {
                        tl->md        = md;
                        tl->component = components[i];
                        uct_release_tl_resource_list(res);
                        free(mds);
                        uct_release_component_list(components);
                        return;
                    }
                }
                uct_release_tl_resource_list(res);
            }
            uct_md_close(md);
        }
        free(mds);
    }
    fprintf(stderr, "poll_cost: no transport %s on device %s\n", tl->tl,
            tl->dev);
    exit(1);
}

static uct_iface_h open_iface(tl_t *tl, uct_worker_h worker, unsigned poll_set)
{
    uct_iface_params_t params = {
        .field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                UCT_IFACE_PARAM_FIELD_DEVICE,
        .open_mode            = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name  = tl->tl,
        .mode.device.dev_name = tl->dev
    };
    uct_iface_config_t *config;
    uct_iface_h iface;
    char value[16];

    CHECK(uct_md_iface_config_read(tl->md, tl->tl, NULL, NULL, &config));
    if (!strcmp(tl->tl, "specrdv")) {
        snprintf(value, sizeof(value), "%u", poll_set);
        CHECK(uct_config_modify(config, "POLL_SET", value));
        CHECK(uct_config_modify(config, "RING_AFTER", "0"));
    }
    CHECK(uct_iface_open(tl->md, worker, &params, config, &iface));
    uct_config_release(config);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return iface;
}

static double now(void);

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++((set_t*)arg)->received;
    return UCS_OK;
}

/* A receiver and n senders, each of which sent it one message */
static void set_open(set_t *set, tl_t *tl, uct_worker_h worker, unsigned n)
{
    uint8_t dev_addr[256], iface_addr[256];
    uct_ep_params_t ep_params;
    unsigned i;

    set->n        = n;
    set->received = 0;
    set->tx       = calloc(n, sizeof(*set->tx));
    set->ep       = calloc(n, sizeof(*set->ep));
    set->rx       = open_iface(tl, worker, n);
    CHECK(uct_iface_set_am_handler(set->rx, AM_ID, am_cb, set, 0));
    CHECK(uct_iface_get_device_address(set->rx, (void*)dev_addr));
    CHECK(uct_iface_get_address(set->rx, (void*)iface_addr));

    for (i = 0; i < n; ++i) {
        set->tx[i]            = open_iface(tl, worker, 1);
        ep_params.field_mask  = UCT_EP_PARAM_FIELD_IFACE |
                                UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface       = set->tx[i];
        ep_params.dev_addr    = (void*)dev_addr;
        ep_params.iface_addr  = (void*)iface_addr;
        CHECK(uct_ep_create(&ep_params, &set->ep[i]));
        /* over verbs the connection, and the ring, come a few progress
         * calls later */
        while (uct_ep_am_short(set->ep[i], AM_ID, 0, NULL, 0) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(worker);
        }
        while (set->received <= (int)i) {
            uct_worker_progress(worker);
        }
    }
}

/* Let every side finish what it started (a verbs receiver may still be
 * connecting back to a sender, which only the sender's progress accepts):
 * the receiver is then timed alone, as a busy application would find it */
static void settle(uct_worker_h worker)
{
    double end = now() + 0.2;

    while (now() < end) {
        uct_worker_progress(worker);
    }
}

static void set_close(set_t *set)
{
    unsigned i;

    for (i = 0; i < set->n; ++i) {
        uct_ep_destroy(set->ep[i]);
        uct_iface_close(set->tx[i]);
    }
    uct_iface_close(set->rx);
    free(set->ep);
    free(set->tx);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double ns_per_call(set_t *set, unsigned long calls)
{
    unsigned long i;
    double start;

    for (i = 0; i < calls / 10; ++i) {
        uct_iface_progress(set->rx);
    }
    start = now();
    for (i = 0; i < calls; ++i) {
        uct_iface_progress(set->rx);
    }
    return (now() - start) * 1e9 / calls;
}

int main(int argc, char **argv)
{
    unsigned long calls = 2000000;
    unsigned reps       = 5;
    unsigned max_n      = 128;
    tl_t tls[2]         = {{"specrdv", "shm"}, {"posix", "memory"}};
    const char *platform = "shared memory";
    char *colon;
    set_t sets[2];
    ucs_async_context_t *async;
    uct_worker_h worker;
    unsigned n, rep, t;
    int c;

    while ((c = getopt(argc, argv, "r:n:m:d:b:p:")) != -1) {
        switch (c) {
        case 'r': reps       = atoi(optarg); break;
        case 'n': calls      = atol(optarg); break;
        case 'm': max_n      = atoi(optarg); break;
        case 'd': tls[0].dev = optarg; break;
        case 'p': platform   = optarg; break;
        case 'b':
            tls[1].tl = optarg;
            if ((colon = strchr(optarg, ':')) != NULL) {
                *colon     = '\0';
                tls[1].dev = colon + 1;
            }
            break;
        default:
            fprintf(stderr, "usage: %s [-r REPS] [-n CALLS] [-m MAX_N] "
                    "[-d DEVICE] [-b BASELINE_TL[:DEVICE]] [-p PLATFORM]\n",
                    argv[0]);
            return 2;
        }
    }

    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async));
    CHECK(uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker));
    for (t = 0; t < 2; ++t) {
        find_md(&tls[t]);
    }

    printf("platform,test,size,variant,rep,value,unit\n");
    for (n = 1; n <= max_n; n *= 2) {
        for (t = 0; t < 2; ++t) {
            set_open(&sets[t], &tls[t], worker, n);
        }
        settle(worker);
        for (rep = 1; rep <= reps; ++rep) {
            for (t = 0; t < 2; ++t) {
                printf("%s (%ld cores),poll_cost,%u,%s,%u,%.2f,"
                       "ns/progress\n", platform, sysconf(_SC_NPROCESSORS_ONLN),
                       n, tls[t].tl, rep, ns_per_call(&sets[t], calls));
                fflush(stdout);
            }
        }
        for (t = 0; t < 2; ++t) {
            set_close(&sets[t]);
        }
    }

    for (t = 0; t < 2; ++t) {
        uct_md_close(tls[t].md);
    }
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    return 0;
}
