/**
 * ucx-spec: MPI_Barrier for unchanged MPI programs (Gupta et al.), through
 * the MPI profiling interface: LD_PRELOAD=libspec_barrier.openmpi.so (or
 * .mpich.so) takes over MPI_Barrier and calls PMPI_Barrier for whatever it
 * does not handle.
 *
 * On a communicator's first barrier its processes are split by node
 * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); each node meets in shared
 * memory (shm/specrdv_shm_barrier.c), and the nodes' masters meet by RDMA
 * writes (spec_barrier_rdma.c).  What that set-up made is cached on the
 * communicator as an attribute and freed with it: by MPI_Comm_free, or at
 * MPI_Finalize through an attribute of MPI_COMM_SELF, which the standard
 * deletes first.  An inter-communicator, or a set-up that failed anywhere,
 * leaves the communicator to PMPI_Barrier, with one log line.
 *
 * Its variables (UCX_SPEC_BARRIER_*) are a UCS configuration table, so
 * that UCX knows them and documents them (ucx_info -c with the library
 * preloaded).
 *
 * See file LICENSE for terms.
 */

#include "spec_barrier_rdma.h"
#include "../shm/specrdv_shm_barrier.h"
#include "../ucp_proto_spec/spec_compat.h"

#include <mpi.h>
#include <ucs/sys/preprocessor.h>
#include <ucs/config/parser.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>


typedef struct {
    int                       active;   /* else PMPI_Barrier */
    MPI_Comm                  node;
    MPI_Comm                  masters;  /* MPI_COMM_NULL but on masters */
    int                       shm_ok;
    uct_specrdv_shm_barrier_t shm;
    spec_barrier_rdma_t       *rdma;    /* with more than one node */
} spec_barrier_t;


typedef struct {
    int      enable;
    unsigned radix;
    unsigned node;
} spec_barrier_config_t;


static ucs_config_field_t spec_barrier_config_table[] = {
  {"ENABLE", "y",
   "Take over MPI_Barrier: shared memory within a node, RDMA writes between\n"
   "nodes; n leaves every barrier to the MPI library.",
   ucs_offsetof(spec_barrier_config_t, enable), UCS_CONFIG_TYPE_BOOL},

  {"RADIX", "2",
   "Group size of each step between nodes (at least 2): 2 is the paper's\n"
   "pairwise exchange, log2 N steps of one RDMA write each; k > 2 takes\n"
   "log_k N steps of k - 1 writes each (recursive k-ing, as UCC's k-nomial\n"
   "barrier).",
   ucs_offsetof(spec_barrier_config_t, radix), UCS_CONFIG_TYPE_UINT},

  {"NODE", "0",
   "Tests only: treat each run of this many consecutive ranks of a\n"
   "communicator as one node; 0 asks MPI which processes share a node.",
   ucs_offsetof(spec_barrier_config_t, node), UCS_CONFIG_TYPE_UINT},

  {NULL}
};

UCS_CONFIG_REGISTER_TABLE(spec_barrier_config_table, "ucx-spec MPI barrier",
                          "SPEC_BARRIER_", spec_barrier_config_t,
                          &ucs_config_global_list)

static int spec_barrier_keyval = MPI_KEYVAL_INVALID;
static spec_barrier_config_t spec_barrier_config;


/* A blocking MPI call must let the MPI library progress: an Iprobe does */
static void spec_barrier_mpi_progress(void *arg)
{
    MPI_Status status;
    int flag;

    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, *(MPI_Comm*)arg, &flag, &status);
}

/* Once this master is done: join a non-blocking barrier of the masters,
 * and report whether it completed */
typedef struct {
    MPI_Comm    comm;
    MPI_Request req;
    int         joined;
} spec_barrier_quiesce_t;

static int spec_barrier_all_done(int done, void *arg)
{
    spec_barrier_quiesce_t *q = arg;
    int flag                  = 0;

    if (!done) {
        return 0;
    }
    if (!q->joined) {
        q->joined = (PMPI_Ibarrier(q->comm, &q->req) == MPI_SUCCESS);
        if (!q->joined) {
            return 1;   /* cannot know: stop answering rather than hang */
        }
    }
    return (PMPI_Test(&q->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) ||
           flag;
}

static void spec_barrier_free(spec_barrier_t *st)
{
    spec_barrier_quiesce_t q = {st->masters, MPI_REQUEST_NULL, 0};

    if (st->rdma != NULL) {
        spec_barrier_rdma_quiesce(st->rdma, spec_barrier_all_done, &q);
        spec_barrier_rdma_destroy(st->rdma);
    }
    if (st->shm_ok) {
        uct_specrdv_shm_barrier_detach(&st->shm);
    }
    if (st->masters != MPI_COMM_NULL) {
        PMPI_Comm_free(&st->masters);
    }
    if (st->node != MPI_COMM_NULL) {
        PMPI_Comm_free(&st->node);
    }
    free(st);
}

static int spec_barrier_delete(MPI_Comm comm, int keyval, void *value,
                               void *extra)
{
    spec_barrier_free(value);
    return MPI_SUCCESS;
}

/* MPI_COMM_SELF's attributes go first at MPI_Finalize: take
 * MPI_COMM_WORLD's with them, while MPI still works */
static int spec_barrier_finalize(MPI_Comm comm, int keyval, void *value,
                                 void *extra)
{
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, spec_barrier_keyval);
    PMPI_Comm_free_keyval(&spec_barrier_keyval);
    /* our own keyval too: MPI frees it once this attribute is gone */
    PMPI_Comm_free_keyval(&keyval);
    return MPI_SUCCESS;
}

static int spec_barrier_allgather(const void *in, void *out, size_t len,
                                  void *arg)
{
    return (PMPI_Allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE,
                           *(MPI_Comm*)arg) == MPI_SUCCESS) ? 0 : -1;
}

static int spec_barrier_split_node(MPI_Comm comm, MPI_Comm *node)
{
    int rank;

    if (spec_barrier_config.node > 0) {
        PMPI_Comm_rank(comm, &rank);
        return PMPI_Comm_split(comm, rank / (int)spec_barrier_config.node,
                               rank, node);
    }
    return PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                node);
}

/* Whether this host runs more of the communicator's processes than it has
 * cores: then a waiting process yields at every spin, as Open MPI's
 * mpi_yield_when_idle does for an oversubscribed job.  Collective. */
static int spec_barrier_oversubscribed(MPI_Comm comm, MPI_Comm node)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Comm host;
    int local;

    if (spec_barrier_config.node == 0) {
        PMPI_Comm_size(node, &local);
    } else if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0,
                                    MPI_INFO_NULL, &host) == MPI_SUCCESS) {
        PMPI_Comm_size(host, &local);
        PMPI_Comm_free(&host);
    } else {
        return 0;
    }
    return (cpus > 0) && (local > cpus);
}

static void spec_barrier_log(MPI_Comm comm, const char *why)
{
    char host[64] = "?";
    int rank;

    PMPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        gethostname(host, sizeof(host));
        fprintf(stderr, "[%s] ucx-spec barrier: %s: this communicator uses "
                "PMPI_Barrier\n", host, why);
    }
}

/* Collective over @a comm; NULL only when out of memory before anything
 * collective (then every process is: nothing was agreed) */
static spec_barrier_t *spec_barrier_setup(MPI_Comm comm)
{
    spec_barrier_t *st = calloc(1, sizeof(*st));
    int node_rank, node_size, master_rank, masters, shmid, ok, all_ok;
    int oversubscribed;

    if (st == NULL) {
        return NULL;
    }
    st->node    = MPI_COMM_NULL;
    st->masters = MPI_COMM_NULL;

    if (spec_barrier_split_node(comm, &st->node) != MPI_SUCCESS) {
        spec_barrier_log(comm, "no node split");
        return st;
    }
    PMPI_Comm_rank(st->node, &node_rank);
    PMPI_Comm_size(st->node, &node_size);
    oversubscribed = spec_barrier_oversubscribed(comm, st->node);

    /* the node's segment: the master creates it, everyone attaches, and it
     * is marked for removal once all have */
    shmid = (node_rank == 0) ? uct_specrdv_shm_barrier_create(node_size) : 0;
    PMPI_Bcast(&shmid, 1, MPI_INT, 0, st->node);
    st->shm_ok = (shmid >= 0) &&
                 (uct_specrdv_shm_barrier_attach(&st->shm, shmid, node_size,
                                                 node_rank,
                                                 spec_barrier_mpi_progress,
                                                 &st->node) == 0);
    st->shm.yield_always = oversubscribed;
    PMPI_Barrier(st->node);
    if ((node_rank == 0) && (shmid >= 0)) {
        uct_specrdv_shm_barrier_unlink(shmid);
    }

    PMPI_Comm_split(comm, (node_rank == 0) ? 0 : MPI_UNDEFINED, 0,
                    &st->masters);
    ok = st->shm_ok;
    if (st->masters != MPI_COMM_NULL) {
        PMPI_Comm_size(st->masters, &masters);
        PMPI_Comm_rank(st->masters, &master_rank);
        if ((masters > 1) &&
            (spec_barrier_rdma_create(&st->rdma, master_rank, masters,
                                      spec_barrier_config.radix,
                                      spec_barrier_allgather,
                                      &st->masters) != 0)) {
            ok = 0;
        } else if (st->rdma != NULL) {
            spec_barrier_rdma_set_progress(st->rdma, spec_barrier_mpi_progress,
                                           &st->masters, oversubscribed);
        }
    }

    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    st->active = all_ok;
    if (!all_ok) {
        spec_barrier_log(comm, "set-up failed");
    }
    return st;
}

/* Read at load, before MPI_Init's UCX looks for variables nobody read */
UCS_STATIC_INIT {
    if (ucp_proto_spec_config_fill(&spec_barrier_config,
                                   spec_barrier_config_table, "UCX_",
                                   "SPEC_BARRIER_") != UCS_OK) {
        fprintf(stderr, "ucx-spec barrier: invalid UCX_SPEC_BARRIER_* "
                "configuration: every barrier is PMPI_Barrier\n");
        spec_barrier_config.enable = 0;
    } else if (spec_barrier_config.radix < 2) {
        fprintf(stderr, "ucx-spec barrier: UCX_SPEC_BARRIER_RADIX=%u, must "
                "be at least 2: every barrier is PMPI_Barrier\n",
                spec_barrier_config.radix);
        spec_barrier_config.enable = 0;
    }
}

/* An inter-communicator's state: its barriers are PMPI_Barrier's */
static spec_barrier_t *spec_barrier_inter(void)
{
    static int logged = 0;
    spec_barrier_t *st = calloc(1, sizeof(*st));

    if (st != NULL) {
        st->node    = MPI_COMM_NULL;
        st->masters = MPI_COMM_NULL;
    }
    if (!logged) {
        logged = 1;
        spec_barrier_log(MPI_COMM_SELF, "an inter-communicator");
    }
    return st;
}

/* The communicator's barrier state, set up on first use: the hot path is
 * one attribute lookup */
static spec_barrier_t *spec_barrier_get(MPI_Comm comm)
{
    static int self_keyval = MPI_KEYVAL_INVALID;
    spec_barrier_t *st;
    int flag, inter;

    if (spec_barrier_keyval == MPI_KEYVAL_INVALID) {
        if ((PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                     spec_barrier_delete,
                                     &spec_barrier_keyval, NULL) !=
             MPI_SUCCESS) ||
            (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                     spec_barrier_finalize, &self_keyval,
                                     NULL) != MPI_SUCCESS) ||
            (PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) !=
             MPI_SUCCESS)) {
            return NULL;
        }
    }

    if ((PMPI_Comm_get_attr(comm, spec_barrier_keyval, &st, &flag) ==
         MPI_SUCCESS) && flag) {
        return st;
    }

    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
        return NULL;
    }
    st = inter ? spec_barrier_inter() : spec_barrier_setup(comm);
    if (st != NULL) {
        PMPI_Comm_set_attr(comm, spec_barrier_keyval, st);
    }
    return st;
}

int MPI_Barrier(MPI_Comm comm)
{
    spec_barrier_t *st;
    uint64_t seq;
    int rc;

    if (!spec_barrier_config.enable || (comm == MPI_COMM_NULL)) {
        return PMPI_Barrier(comm);
    }

    st = spec_barrier_get(comm);
    if ((st == NULL) || !st->active) {
        return PMPI_Barrier(comm);
    }

    if (st->shm.rank != 0) {
        uct_specrdv_shm_barrier_arrive(&st->shm);
        return MPI_SUCCESS;
    }

    seq = uct_specrdv_shm_barrier_gather(&st->shm);
    rc  = (st->rdma != NULL) ? spec_barrier_rdma_wait(st->rdma, seq) : 0;
    /* even after a failure: the node's processes must not hang in a stage
     * that will never end */
    uct_specrdv_shm_barrier_release(&st->shm);
    if (rc == 0) {
        return MPI_SUCCESS;
    }

    /* as a failed PMPI_Barrier would: the communicator's error handler
     * decides, and MPI_ERRORS_ARE_FATAL, the default, ends the job */
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}
