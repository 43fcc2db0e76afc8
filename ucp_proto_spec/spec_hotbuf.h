/**
 * ucx-spec: which eager send buffers are hot (Rashti & Afsahi, "Improving
 * RDMA-based MPI Eager Protocol for Frequently-used Buffers", §3.2-3.3).
 *
 * An eager send copies the user's buffer into a registered one.  A buffer
 * sent from again and again can be registered once instead (the md's rcache
 * keeps the registration and UCM's memory events invalidate it) and sent
 * zero-copy: the registration R(m) is paid once, every reuse saves the copy
 * C(m) and pays the lookups V, so registering pays after n > R / (C - V)
 * uses (the paper's inequality 3).  This table counts the uses of each
 * (address, length) and says when one has reached its size class's share of
 * n; the costs come from the caller (measured on the running machine).
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PROTO_SPEC_HOTBUF_H_
#define UCP_PROTO_SPEC_HOTBUF_H_

#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Size class c holds lengths 2^c <= m < 2^(c+1) */
#define UCP_PROTO_SPEC_HOTBUF_CLASSES 32

/* Each counter named once: its field and the words a report prints */
#define UCP_PROTO_SPEC_HOTBUF_COUNTERS(_c) \
    _c(lookups,   "hot-buffer lookups") \
    _c(hot,       "hot") \
    _c(inserts,   "inserted") \
    _c(evictions, "evicted") \
    _c(skipped,   "not tracked while paused") \
    _c(pauses,    "; paused") \
    _c(resumes,   "resumed") \
    _c(copied,    "; v2 copy for a zero-copy")

typedef struct {
#define UCP_PROTO_SPEC_HOTBUF_COUNTER_FIELD(_name, _words) uint64_t _name;
    UCP_PROTO_SPEC_HOTBUF_COUNTERS(UCP_PROTO_SPEC_HOTBUF_COUNTER_FIELD)
#undef UCP_PROTO_SPEC_HOTBUF_COUNTER_FIELD
} ucp_proto_spec_hotbuf_counters_t;

/* One size class's costs, in seconds, and what follows from them */
typedef struct {
    double   reg;          /* R(m): registering a buffer of the class */
    double   copy;         /* C(m): copying it */
    uint32_t n_min;        /* least n with n (C - V) > R; 0: never pays */
    uint32_t register_at;  /* uses from which a buffer is hot; 0: never */
} ucp_proto_spec_hotbuf_class_t;

typedef struct {
    uintptr_t address;
    size_t    length;
    uint32_t  uses;
    uint32_t  next;        /* in its bucket's chain */
    uint8_t   referenced;  /* used since the clock hand last passed */
    uint8_t   hot;
} ucp_proto_spec_hotbuf_entry_t;

typedef struct {
    ucp_proto_spec_hotbuf_class_t    classes[UCP_PROTO_SPEC_HOTBUF_CLASSES];
    double                           lookup;      /* V */
    double                           fraction;    /* register at this share of n */
    double                           min_hot;     /* pause below this share hot */
    uint32_t                        *buckets;
    ucp_proto_spec_hotbuf_entry_t   *entries;
    unsigned                         bucket_shift;
    uint32_t                         capacity;
    uint32_t                         count;
    uint32_t                         used_buckets;
    uint32_t                         hot_count;
    uint32_t                         free_head;
    uint32_t                         hand;        /* clock eviction */
    uint32_t                         paused_misses;
    int                              paused;
    ucp_proto_spec_hotbuf_counters_t cnt;
} ucp_proto_spec_hotbuf_t;


/* A table of @a capacity entries (rounded up to a power of two) */
ucs_status_t ucp_proto_spec_hotbuf_init(ucp_proto_spec_hotbuf_t *hb,
                                        unsigned capacity, double fraction,
                                        double min_hot);

void ucp_proto_spec_hotbuf_cleanup(ucp_proto_spec_hotbuf_t *hb);

/* Set each class's R and C (reg[c] <= 0: not measured, the class stays off)
 * and V, and derive n_min and register_at */
void ucp_proto_spec_hotbuf_set_costs(ucp_proto_spec_hotbuf_t *hb,
                                     const double *reg, const double *copy,
                                     double lookup);

/* No costs: n as given for classes class_min..class_max, off elsewhere */
void ucp_proto_spec_hotbuf_set_reuse(ucp_proto_spec_hotbuf_t *hb,
                                     unsigned class_min, unsigned class_max,
                                     uint32_t n);

/* Count one send from (address, length); nonzero if it should go
 * zero-copy.  No lookup at all for a length whose class never pays. */
int ucp_proto_spec_hotbuf_use(ucp_proto_spec_hotbuf_t *hb, const void *address,
                              size_t length);

/* For UCP's v2 protocols, which price a zero-copy send as a registration
 * cache hit: count one zero-copy send from (address, length); nonzero if it
 * should be a copy instead: the buffer's first use, in a class where the
 * copy costs less than a registration, C < R (or, with no costs, the given
 * n is above 1).  Tracks buffers also in classes where reuse never pays. */
int ucp_proto_spec_hotbuf_first_use(ucp_proto_spec_hotbuf_t *hb,
                                    const void *address, size_t length);

/* Bytes the table holds */
size_t ucp_proto_spec_hotbuf_memory(const ucp_proto_spec_hotbuf_t *hb);

/* The classes' costs and thresholds beside the paper's Table 2 */
void ucp_proto_spec_hotbuf_print(const ucp_proto_spec_hotbuf_t *hb,
                                 FILE *stream);

#endif
