/**
 * ucx-spec: every UCP tag path over specrdv, with contiguous, iov and generic
 * datatypes on each side, at sizes around every threshold specrdv sets.
 *
 * MPICH receives into a non-contiguous MPI datatype through UCP's generic
 * datatype, whose unpack (yaksa's, in MPICH 4.0) cannot stop inside a basic
 * element: a fragment that ends inside one loses its bytes.  This test's
 * generic datatype is as strict, for elements of 8 bytes, and lays them out
 * with a gap after each as a vector type would; its pack, like yaksa's,
 * packs whole elements only.  Each transfer is played receiver first
 * (speculation sends an RTR, the idle side copies) and sender first, every
 * byte is checked, and so is every byte around the data.  Over posix+cma
 * too, as the reference.
 *
 * See file LICENSE for terms.
 */

#include "ucp_pair.h"

#include <ucp/spec/ucp_proto_spec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define TAG      0x1234000000000007ull
#define ELEM     8       /* the generic datatype's element */
#define GUARD    64
#define SPIN_MAX 10000000

typedef enum { DT_CONTIG, DT_IOV, DT_GENERIC, DT_LAST } dt_kind_t;

static const char *dt_names[] = { "contig", "iov", "generic" };

/* A message's bytes where a datatype puts them: logical byte j of a generic
 * one at 2 * ELEM * (j / ELEM) + j % ELEM; of an iov one in the piece it
 * falls in, each piece followed by a gap */
typedef struct {
    dt_kind_t    kind;
    size_t       len;
    uint8_t      *mem;
    size_t       mem_size;
    ucp_dt_iov_t iov[3];
    size_t       iovcnt;
    int          split;   /* unpack was asked to stop inside an element */
} view_t;

typedef struct {
    const char *name;
    const char *var, *value;    /* the UCX variable this pass sets */
    int        rndv;            /* it has rendezvous: speculation sends RTRs */
} pass_t;

static const char *tls;

static int proto_v2(void)
{
    return !strcmp(getenv("T_PROTO_ENABLE"), "y");
}

/* UCX 1.22's cma registers no memory, so UCP's v1 rendezvous has no
 * zero-copy lane on posix,cma and an RTR nothing to put with: the data
 * must still arrive whole, by the ordinary path (v2 finds another) */
static int rndv_can_put(void)
{
    return (UCP_API_VERSION < UCP_VERSION(1, 22)) ||
           (strstr(tls, "cma") == NULL) || proto_v2();
}
static ucp_datatype_t generic_dt;


static uint8_t *view_at(const view_t *v, size_t j)
{
    size_t k;

    switch (v->kind) {
    case DT_GENERIC:
        return v->mem + 2 * ELEM * (j / ELEM) + (j % ELEM);
    case DT_IOV:
        for (k = 0; j >= v->iov[k].length; ++k) {
            j -= v->iov[k].length;
        }
        return (uint8_t*)v->iov[k].buffer + j;
    default:
        return v->mem + j;
    }
}

static void view_init(view_t *v, dt_kind_t kind, size_t len)
{
    size_t k, off = 0, rest = len;

    memset(v, 0, sizeof(*v));
    v->kind     = kind;
    v->len      = len;
    v->mem_size = ((kind == DT_GENERIC) ? 2 * (len + ELEM) : len + 3 * ELEM) +
                  GUARD;
    v->mem      = malloc(v->mem_size);
    assert_non_null(v->mem);
    memset(v->mem, 0xee, v->mem_size);

    /* three pieces of odd lengths where there are bytes enough */
    v->iovcnt = (len < 3) ? 1 : 3;
    for (k = 0; k < v->iovcnt; ++k) {
        v->iov[k].buffer = v->mem + off;
        v->iov[k].length = (k + 1 < v->iovcnt) ? (len / 3) | 1 : rest;
        rest            -= v->iov[k].length;
        off             += v->iov[k].length + ELEM;
    }
}

static uint8_t pattern(size_t j, unsigned seed)
{
    return (uint8_t)(seed * 131 + j * 7 + (j >> 8));
}

static void view_fill(view_t *v, unsigned seed)
{
    size_t j;

    for (j = 0; j < v->len; ++j) {
        *view_at(v, j) = pattern(j, seed);
    }
}

/* nonzero unless every byte is the sent one and nothing else was touched */
static int view_check(const view_t *v, unsigned seed)
{
    uint8_t *expect = malloc(v->mem_size);
    view_t e        = *v;
    size_t j;
    int bad;

    memset(expect, 0xee, v->mem_size);
    e.mem = expect;
    for (j = 0; j < e.iovcnt; ++j) {
        e.iov[j].buffer = expect + ((uint8_t*)v->iov[j].buffer - v->mem);
    }
    for (j = 0; j < v->len; ++j) {
        *view_at(&e, j) = pattern(j, seed);
    }
    bad = memcmp(expect, v->mem, v->mem_size) != 0;
    free(expect);
    return bad;
}

static void *view_buffer(view_t *v)
{
    return (v->kind == DT_CONTIG) ? v->mem :
           (v->kind == DT_IOV)    ? (void*)v->iov : (void*)v;
}

static size_t view_count(const view_t *v)
{
    return (v->kind == DT_IOV) ? v->iovcnt : v->len;
}

static ucp_datatype_t view_dt(const view_t *v)
{
    return (v->kind == DT_CONTIG) ? ucp_dt_make_contig(1) :
           (v->kind == DT_IOV)    ? ucp_dt_make_iov() : generic_dt;
}


/* The generic datatype: the view is the buffer, the count its length */
static void *gen_start(void *context, const void *buffer, size_t count)
{
    assert_int_equal(((const view_t*)buffer)->len, count);
    return (void*)buffer;
}

static void *gen_start_unpack(void *context, void *buffer, size_t count)
{
    return gen_start(context, buffer, count);
}

static size_t gen_packed_size(void *state)
{
    return ((view_t*)state)->len;
}

static size_t gen_pack(void *state, size_t offset, void *dest, size_t max)
{
    view_t *v = state;
    size_t n  = v->len - offset;
    size_t j;

    if (n > max) {
        n = max - (max % ELEM);
    }
    for (j = 0; j < n; ++j) {
        ((uint8_t*)dest)[j] = *view_at(v, offset + j);
    }
    return n;
}

static ucs_status_t gen_unpack(void *state, size_t offset, const void *src,
                               size_t count)
{
    view_t *v = state;
    size_t j;

    if ((offset % ELEM) ||
        ((count % ELEM) && ((offset + count) != v->len))) {
        v->split = 1;
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    for (j = 0; j < count; ++j) {
        *view_at(v, offset + j) = ((const uint8_t*)src)[j];
    }
    return UCS_OK;
}

static void gen_finish(void *state)
{
}

static const ucp_generic_dt_ops_t gen_ops = {
    .start_pack   = gen_start,
    .start_unpack = gen_start_unpack,
    .packed_size  = gen_packed_size,
    .pack         = gen_pack,
    .unpack       = gen_unpack,
    .finish       = gen_finish
};


static void progress_both(side_t *s, side_t *r, int n)
{
    while (n-- > 0) {
        ucp_worker_progress(s->worker);
        ucp_worker_progress(r->worker);
    }
}

static void wait_req(side_t *s, side_t *r, void *sp, req_t *req,
                     const char *what)
{
    int spin;

    for (spin = 0; !req->done && (spin < SPIN_MAX); ++spin) {
        progress_both(s, r, 1);
    }
    if (!req->done) {
        fail_msg("%s never completed", what);
    }
    if (UCS_PTR_IS_PTR(sp)) {
        ucp_request_free(sp);
    }
}

/* One message from s to r; nonzero with a line on stderr if it failed */
static int transfer(side_t *s, side_t *r, dt_kind_t sk, dt_kind_t rk,
                    size_t len, int recv_first, unsigned seed)
{
    req_t sreq = {0}, rreq = {0};
    ucp_request_param_t sparam = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE,
        .cb.send      = send_cb,
        .user_data    = &sreq
    };
    /* a receive that completes in its call still reports through the
     * callback: 1.13.1 fills no recv_info then */
    ucp_request_param_t rparam = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                        UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE |
                        UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv      = recv_cb,
        .user_data    = &rreq
    };
    ucs_status_ptr_t ssp = NULL, rsp = NULL;
    char what[96];
    view_t sv, rv;
    int bad;

    view_init(&sv, sk, len);
    view_init(&rv, rk, len);
    view_fill(&sv, seed);
    sparam.datatype = view_dt(&sv);
    rparam.datatype = view_dt(&rv);

    if (recv_first) {
        rsp = ucp_tag_recv_nbx(r->worker, view_buffer(&rv), view_count(&rv),
                               TAG, (ucp_tag_t)-1, &rparam);
        progress_both(s, r, 10);
    }
    ssp = ucp_tag_send_nbx(s->ep, view_buffer(&sv), view_count(&sv), TAG,
                           &sparam);
    assert_false(UCS_PTR_IS_ERR(ssp));
    sreq.done |= (ssp == NULL);
    if (!recv_first) {
        progress_both(s, r, 10);
        rsp = ucp_tag_recv_nbx(r->worker, view_buffer(&rv), view_count(&rv),
                               TAG, (ucp_tag_t)-1, &rparam);
    }
    assert_false(UCS_PTR_IS_ERR(rsp));
    snprintf(what, sizeof(what), "%s -> %s, %zu B, %s first", dt_names[sk],
             dt_names[rk], len, recv_first ? "receiver" : "sender");
    wait_req(s, r, rsp, &rreq, what);
    wait_req(s, r, ssp, &sreq, what);

    bad = (rreq.status != UCS_OK) || (sreq.status != UCS_OK) ||
          (rreq.info.length != len) || view_check(&rv, seed) ||
          view_check(&sv, seed);
    if (bad) {
        fprintf(stderr, "  %s: send %s, receive %s (%zu B%s)%s\n", what,
                ucs_status_string(sreq.status),
                ucs_status_string(rreq.status), rreq.info.length,
                rv.split ? ", unpack asked to split an element" : "",
                view_check(&rv, seed) ? ", bytes differ" : "");
    }
    free(sv.mem);
    free(rv.mem);
    return bad;
}

/* Around every threshold the transport sets: one slot (UCP's eager header
 * in, 8416 B of data), a fragment, two, UCP's rendezvous over shared memory
 * (8256 B for posix), and large ones of odd sizes.  Under valgrind the
 * last two, which take the paths of 65539 B through more fragments, are
 * left out: they cost minutes there. */
static const size_t sizes[] = {
    1, 8, 4096, 8192, 8256, 8257, 8415, 8416, 8417, 8424, 8432, 16840,
    16849, 65536 + 3, 262144 + 8, 1048576 + 5
};
#define NUM_SIZES          (sizeof(sizes) / sizeof(sizes[0]))
#define NUM_SIZES_VALGRIND 14

static int under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");

    return (preload != NULL) && (strstr(preload, "vgpreload") != NULL);
}

static void test_pass(void **state)
{
    const pass_t *pass = *state;
    ucp_proto_spec_counters_t c0, c1;
    side_t s, r;
    unsigned seed = 0, failed = 0, count = 0;
    dt_kind_t sk, rk;
    size_t i, num_sizes;
    int order, spec;

    if (pass->var != NULL) {
        setenv(pass->var, pass->value, 1);
    }
    open_side(&s);
    open_side(&r);
    connect_sides(&s, &r);
    connect_sides(&r, &s);
    assert_int_equal(ucp_dt_create_generic(&gen_ops, NULL, &generic_dt),
                     UCS_OK);

    /* a rendezvous first: its RTS teaches the receiver the envelope */
    assert_int_equal(transfer(&s, &r, DT_CONTIG, DT_CONTIG, 65536, 0, 0), 0);
    spec = ucp_proto_spec_worker_counters(r.worker, &c0) == UCS_OK;

    num_sizes = under_valgrind() ? NUM_SIZES_VALGRIND : NUM_SIZES;
    for (i = 0; i < num_sizes; ++i) {
        for (sk = DT_CONTIG; sk < DT_LAST; ++sk) {
            for (rk = DT_CONTIG; rk < DT_LAST; ++rk) {
                for (order = 0; order < 2; ++order) {
                    failed += transfer(&s, &r, sk, rk, sizes[i], order,
                                       ++seed);
                    ++count;
                }
            }
        }
    }

    /* v2 predicts rendezvous only where its sends with fast completion
     * take it too, 256 KiB over posix+cma: valgrind's shorter sweep still
     * crosses that once */
    for (order = 0; under_valgrind() && (order < 2); ++order) {
        failed += transfer(&s, &r, DT_CONTIG, DT_CONTIG,
                           sizes[NUM_SIZES - 1], order,
                           ++seed);
        ++count;
    }

    print_message("%s, %s: %u transfers, %u failed, up to %zu B\n", tls,
                  pass->name, count, failed,
                  sizes[NUM_SIZES - 1]);
    if (spec) {
        /* the paths speculation adds were taken */
        ucp_proto_spec_worker_counters(r.worker, &c1);
        print_message("  the receiver sent %lu RTRs, offered %lu copies, "
                      "claimed %lu\n", c1.rtr_sent - c0.rtr_sent,
                      c1.copy_offered - c0.copy_offered,
                      c1.copy_claimed - c0.copy_claimed);
        assert_int_equal(c1.rtr_sent > c0.rtr_sent,
                         pass->rndv && rndv_can_put());
    } else {
        print_message("  speculation off\n");
    }

    ucp_dt_destroy(generic_dt);
    close_side(&s, &r);
    close_side(&r, &s);
    if (pass->var != NULL) {
        unsetenv(pass->var);
    }
    assert_int_equal(failed, 0);
}

static int run_group(const char *transports)
{
    static pass_t passes[] = {
        {"default thresholds",    NULL, NULL, 1},
        {"zero-copy eager",       "UCX_ZCOPY_THRESH", "0", 1},
        {"no rendezvous",         "UCX_RNDV_THRESH", "inf", 0},
        {"rendezvous from 1 KiB", "UCX_RNDV_THRESH", "1024", 1},
        {"rendezvous get",        "UCX_RNDV_SCHEME", "get_zcopy", 1},
        {"rendezvous put",        "UCX_RNDV_SCHEME", "put_zcopy", 1},
    };
    struct CMUnitTest tests[sizeof(passes) / sizeof(passes[0])];
    char name[64];
    size_t i;

    for (i = 0; i < (sizeof(passes) / sizeof(passes[0])); ++i) {
        tests[i] = (struct CMUnitTest)
            cmocka_unit_test_prestate(test_pass, &passes[i]);
        tests[i].name = passes[i].name;
    }

    tls = transports;
    setenv("UCX_TLS", transports, 1);
    snprintf(name, sizeof(name), "spec_datatypes[%s%s]", transports,
             proto_v2() ? ",v2" : "");
    return _cmocka_run_group_tests(name, tests, i, NULL, NULL);
}

int main(void)
{
    int rc = 0;

    /* speculation forced on: every path it adds is taken where it can be */
    setenv("UCX_SPEC_RNDV", "y", 1);
    setenv("UCX_SPEC_EARLY_PROGRESS", "n", 1); /* the test owns progress */
    setenv("UCX_SPEC_IDLE_COPY_DELAY", "0", 1);

    setenv("T_PROTO_ENABLE", "n", 1);
    rc |= run_group("posix,cma");
    rc |= run_group("specrdv");
#if UCP_API_VERSION >= UCP_VERSION(1, 18)
    /* UCP's v2 protocols, where speculation runs from 1.18 */
    setenv("T_PROTO_ENABLE", "y", 1);
    rc |= run_group("posix,cma");
    rc |= run_group("specrdv");
#endif
    return rc;
}
