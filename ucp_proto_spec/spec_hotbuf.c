/**
 * ucx-spec: the hot-buffer usage table (see spec_hotbuf.h).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_hotbuf.h"
#include "spec_compat.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <math.h>
#include <string.h>

#define UCP_PROTO_SPEC_HOTBUF_NIL UINT32_MAX

/* The paper's Table 2: n per size on its InfiniBand cluster, for the report */
static const struct {
    size_t   size;
    unsigned n;
} ucp_proto_spec_hotbuf_paper[] = {
    {128, 1280}, {256, 755}, {512, 432}, {1024, 200}, {2048, 109},
    {4096, 59}, {8192, 33}
};


static unsigned ucp_proto_spec_hotbuf_class(size_t length)
{
    return (length == 0) ? 0 :
           ucs_min(ucs_ilog2(length), UCP_PROTO_SPEC_HOTBUF_CLASSES - 1);
}

/* Multiplicative (Fibonacci) hashing, as the paper's Linux buffer-cache hash:
 * the top bits of the product spread addresses that differ only in their
 * low bits, which is how buffers of one array differ */
static uint32_t ucp_proto_spec_hotbuf_bucket(const ucp_proto_spec_hotbuf_t *hb,
                                             uintptr_t address, size_t length)
{
    uint64_t key = (uint64_t)address ^ ((uint64_t)length << 40);

    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> hb->bucket_shift);
}

ucs_status_t ucp_proto_spec_hotbuf_init(ucp_proto_spec_hotbuf_t *hb,
                                        unsigned capacity, double fraction,
                                        double min_hot)
{
    uint32_t i, num_buckets;

    if ((capacity == 0) || (capacity > (1u << 24)) || !(fraction > 0) ||
        (fraction > 1) || (min_hot < 0) || (min_hot > 1)) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(hb, 0, sizeof(*hb));
    hb->fraction     = fraction;
    hb->min_hot      = min_hot;
    hb->capacity     = ucs_roundup_pow2(capacity);
    /* twice the buckets of the entries: a full table chains ~21 % of them */
    num_buckets      = 2 * hb->capacity;
    hb->bucket_shift = 64 - ucs_ilog2(num_buckets);
    hb->buckets      = ucs_malloc(num_buckets * sizeof(*hb->buckets),
                                  "spec_hotbuf_buckets");
    hb->entries      = ucs_malloc(hb->capacity * sizeof(*hb->entries),
                                  "spec_hotbuf_entries");
    if ((hb->buckets == NULL) || (hb->entries == NULL)) {
        ucp_proto_spec_hotbuf_cleanup(hb);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_buckets; ++i) {
        hb->buckets[i] = UCP_PROTO_SPEC_HOTBUF_NIL;
    }
    for (i = 0; i < hb->capacity; ++i) {
        hb->entries[i].next = i + 1;
        hb->entries[i].uses = 0;   /* 0: free */
    }
    hb->entries[hb->capacity - 1].next = UCP_PROTO_SPEC_HOTBUF_NIL;
    hb->free_head                      = 0;
    return UCS_OK;
}

void ucp_proto_spec_hotbuf_cleanup(ucp_proto_spec_hotbuf_t *hb)
{
    ucs_free(hb->buckets);
    ucs_free(hb->entries);
    hb->buckets = NULL;
    hb->entries = NULL;
}

/* Registered speculatively at a share of n, hoping for n uses; never at the
 * first use, so that a buffer sent once never pays R */
static void ucp_proto_spec_hotbuf_set_n(ucp_proto_spec_hotbuf_t *hb,
                                        ucp_proto_spec_hotbuf_class_t *cls,
                                        uint32_t n)
{
    cls->n_min       = n;
    cls->register_at = ucs_max(2, (uint32_t)ceil(hb->fraction * n));
}

void ucp_proto_spec_hotbuf_set_costs(ucp_proto_spec_hotbuf_t *hb,
                                     const double *reg, const double *copy,
                                     double lookup)
{
    ucp_proto_spec_hotbuf_class_t *cls;
    double n;
    unsigned c;

    hb->lookup = lookup;
    for (c = 0; c < UCP_PROTO_SPEC_HOTBUF_CLASSES; ++c) {
        cls              = &hb->classes[c];
        cls->reg         = reg[c];
        cls->copy        = copy[c];
        cls->n_min       = 0;
        cls->register_at = 0;
        if ((reg[c] <= 0) || (copy[c] <= lookup)) {
            continue; /* not measured, or every reuse costs more than it saves */
        }

        n = floor(reg[c] / (copy[c] - lookup)) + 1;
        if (n >= UINT32_MAX) {
            continue;
        }

        ucp_proto_spec_hotbuf_set_n(hb, cls, (uint32_t)n);
    }
}

void ucp_proto_spec_hotbuf_set_reuse(ucp_proto_spec_hotbuf_t *hb,
                                     unsigned class_min, unsigned class_max,
                                     uint32_t n)
{
    unsigned c;

    memset(hb->classes, 0, sizeof(hb->classes));
    hb->lookup = 0;
    for (c = class_min; (c <= class_max) && (c < UCP_PROTO_SPEC_HOTBUF_CLASSES);
         ++c) {
        ucp_proto_spec_hotbuf_set_n(hb, &hb->classes[c], ucs_max(n, 1));
    }
}

static void ucp_proto_spec_hotbuf_unlink(ucp_proto_spec_hotbuf_t *hb,
                                         uint32_t index)
{
    ucp_proto_spec_hotbuf_entry_t *e = &hb->entries[index];
    uint32_t *head = &hb->buckets[ucp_proto_spec_hotbuf_bucket(hb, e->address,
                                                               e->length)];
    uint32_t *link = head;

    while (*link != index) {
        link = &hb->entries[*link].next;
    }

    *link = e->next;
    hb->used_buckets -= (*head == UCP_PROTO_SPEC_HOTBUF_NIL);
    hb->hot_count -= e->hot;
    --hb->count;
    e->uses       = 0;
    e->next       = hb->free_head;
    hb->free_head = index;
}

/* CLOCK: the first entry not used since the hand last passed it */
static void ucp_proto_spec_hotbuf_evict(ucp_proto_spec_hotbuf_t *hb)
{
    ucp_proto_spec_hotbuf_entry_t *e;

    for (;;) {
        e        = &hb->entries[hb->hand];
        hb->hand = (hb->hand + 1) & (hb->capacity - 1);
        if (e->referenced) {
            e->referenced = 0;
            continue;
        }

        ucp_proto_spec_hotbuf_unlink(hb, e - hb->entries);
        ++hb->cnt.evictions;
        return;
    }
}

/* Resuming drops what was cold when the table paused: a pattern that
 * changed gets a table with room, and the hot keep their counts */
static void ucp_proto_spec_hotbuf_resume(ucp_proto_spec_hotbuf_t *hb)
{
    uint32_t i;

    for (i = 0; i < hb->capacity; ++i) {
        if ((hb->entries[i].uses != 0) && !hb->entries[i].hot) {
            ucp_proto_spec_hotbuf_unlink(hb, i);
        }
    }

    hb->paused        = 0;
    hb->paused_misses = 0;
    ++hb->cnt.resumes;
}

/* The paper's adaptation (§3.3) pauses inserting when few tracked buffers
 * are hot and lookups have started to walk chains.  Chains are counted as
 * entries beyond one per bucket: an eighth of the entries, which uniform
 * hashing reaches at about half a table, so that the first chance
 * collision of a young table does not stop it */
static int ucp_proto_spec_hotbuf_should_pause(const ucp_proto_spec_hotbuf_t *hb)
{
    return ((hb->count - hb->used_buckets) * 8 >= hb->count) &&
           (hb->hot_count < hb->min_hot * hb->count);
}

/* Counts a use of [address, length): nonzero once the buffer has been used
 * @a hot_at times.  A buffer the table does not track (paused) counts as
 * used once */
static int ucp_proto_spec_hotbuf_count(ucp_proto_spec_hotbuf_t *hb,
                                       uintptr_t addr, size_t length,
                                       uint32_t hot_at)
{
    ucp_proto_spec_hotbuf_entry_t *e;
    uint32_t *head, index;

    ++hb->cnt.lookups;
    head = &hb->buckets[ucp_proto_spec_hotbuf_bucket(hb, addr, length)];
    for (index = *head; index != UCP_PROTO_SPEC_HOTBUF_NIL; index = e->next) {
        e = &hb->entries[index];
        if ((e->address != addr) || (e->length != length)) {
            continue;
        }

        e->referenced = 1;
        if (e->uses < UINT32_MAX) {
            ++e->uses;
        }
        if (e->uses < hot_at) {
            return 0;
        }

        if (!e->hot) {
            e->hot = 1;
            ++hb->hot_count;
        }
        ++hb->cnt.hot;
        return 1;
    }

    if (hb->paused) {
        ++hb->cnt.skipped;
        /* a table's worth of misses since pausing: look again */
        if (++hb->paused_misses >= hb->capacity) {
            ucp_proto_spec_hotbuf_resume(hb);
        }
        return 0;
    }

    if (ucp_proto_spec_hotbuf_should_pause(hb)) {
        hb->paused = 1;
        ++hb->cnt.pauses;
        ++hb->cnt.skipped;
        return 0;
    }

    if (hb->count == hb->capacity) {
        ucp_proto_spec_hotbuf_evict(hb);
    }

    index         = hb->free_head;
    e             = &hb->entries[index];
    hb->free_head = e->next;
    e->address    = addr;
    e->length     = length;
    e->uses       = 1;
    e->referenced = 0; /* a buffer used once is the first to go */
    e->hot        = 0;
    e->next       = *head;
    hb->used_buckets += (*head == UCP_PROTO_SPEC_HOTBUF_NIL);
    *head         = index;
    ++hb->count;
    ++hb->cnt.inserts;
    return 0;
}

int ucp_proto_spec_hotbuf_use(ucp_proto_spec_hotbuf_t *hb, const void *address,
                              size_t length)
{
    uint32_t register_at =
            hb->classes[ucp_proto_spec_hotbuf_class(length)].register_at;

    return (register_at != 0) &&
           ucp_proto_spec_hotbuf_count(hb, (uintptr_t)address, length,
                                       register_at);
}

/* A buffer used once pays R sent zero-copy (the registration cache's miss;
 * V, a hit's cost, is v1's: v2 hits UCP's own memory-handle cache instead),
 * C copied.  Weighing C against R - V, as n_min does, copied where the copy
 * cost more (rc_verbs 64 KiB: R 75 us, C 131 us, V 61 us gave n_min 2;
 * perf/results/hotbuf-v2-first-use-*).  A given n, with no costs, copies the
 * first use where n > 1. */
static int
ucp_proto_spec_hotbuf_copy_first(const ucp_proto_spec_hotbuf_class_t *cls)
{
    return (cls->reg > 0) ? (cls->copy < cls->reg) : (cls->n_min > 1);
}

int ucp_proto_spec_hotbuf_first_use(ucp_proto_spec_hotbuf_t *hb,
                                    const void *address, size_t length)
{
    if (!ucp_proto_spec_hotbuf_copy_first(
                &hb->classes[ucp_proto_spec_hotbuf_class(length)])) {
        return 0;
    }

    return !ucp_proto_spec_hotbuf_count(hb, (uintptr_t)address, length, 2);
}

size_t ucp_proto_spec_hotbuf_memory(const ucp_proto_spec_hotbuf_t *hb)
{
    return sizeof(*hb) + (2 * hb->capacity * sizeof(*hb->buckets)) +
           (hb->capacity * sizeof(*hb->entries));
}

void ucp_proto_spec_hotbuf_print(const ucp_proto_spec_hotbuf_t *hb,
                                 FILE *stream)
{
    const ucp_proto_spec_hotbuf_class_t *cls;
    unsigned c, i;
    size_t size;

    fprintf(stream, "# hot-buffer eager: V = %.3f us per send, register at "
            "%.0f %% of n, table %u entries (%zu bytes)\n", hb->lookup * 1e6,
            hb->fraction * 100, hb->capacity, ucp_proto_spec_hotbuf_memory(hb));
    fprintf(stream, "# %10s %10s %10s %8s %12s %8s %10s\n", "size",
            "R (us)", "C (us)", "n", "register at", "paper n", "v2 1st use");
    for (c = 0; c < UCP_PROTO_SPEC_HOTBUF_CLASSES; ++c) {
        cls  = &hb->classes[c];
        size = (size_t)1 << c;
        if (cls->reg > 0) {
            fprintf(stream, "# %10zu %10.3f %10.3f ", size, cls->reg * 1e6,
                    cls->copy * 1e6);
        } else if (cls->n_min != 0) {
            fprintf(stream, "# %10zu %10s %10s ", size, "set", "set");
        } else {
            continue;
        }

        if (cls->n_min == 0) {
            fprintf(stream, "%8s %12s", "never", "off");
        } else {
            fprintf(stream, "%8u %12u", cls->n_min, cls->register_at);
        }

        for (i = 0; i < ucs_static_array_size(ucp_proto_spec_hotbuf_paper);
             ++i) {
            if (ucp_proto_spec_hotbuf_paper[i].size == size) {
                break;
            }
        }
        if (i < ucs_static_array_size(ucp_proto_spec_hotbuf_paper)) {
            fprintf(stream, " %8u", ucp_proto_spec_hotbuf_paper[i].n);
        } else {
            fprintf(stream, " %8s", "-");
        }
        fprintf(stream, " %10s\n",
                ucp_proto_spec_hotbuf_copy_first(cls) ? "copy" : "zcopy");
    }
}
