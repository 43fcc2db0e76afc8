#
# ucx-spec: build UCX with our extension, run the demonstration and the
# tests.  README gives the two commands a user needs: `make demo`, `make check`.
#
# UCX_VERSION picks the UCX (1.13.1, Debian 12's, by default; 1.18.1; 1.22.0),
# UCX_TARBALLS a folder holding upstream's ucx-<version>.tar.gz.
#

SHELL      := /bin/bash
REPO       := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
UCX_VERSION ?= 1.13.1
# not UCX's variables: UCX would warn of them in every process it starts
unexport UCX_VERSION UCX_TARBALLS
BOOTSTRAP   = UCX_VERSION=$(UCX_VERSION) UCX_TARBALLS=$(UCX_TARBALLS) \
              $(REPO)/contrib/ucx-bootstrap
# (and the figures of the other versions go to perf/results/NAME-VERSION.*)
ifeq ($(UCX_VERSION),1.13.1)
BUILD_DIR  ?= $(REPO)/build
ASAN_DIR   ?= $(REPO)/build-asan
VERSION_SUFFIX =
else
BUILD_DIR  ?= $(REPO)/build-$(UCX_VERSION)
ASAN_DIR   ?= $(REPO)/build-asan-$(UCX_VERSION)
VERSION_SUFFIX = -$(UCX_VERSION)
endif
PREFIX      = $(BUILD_DIR)/prefix
GTEST_FILTER ?= specrdv/*

UNIT_SRCS  := $(wildcard $(REPO)/test/unit/test_*.c)
UNIT_NAMES := $(basename $(notdir $(UNIT_SRCS)))

# Tests see only the configuration they set themselves.
CLEAN_ENV  := env $$(env | sed -n 's/^\(UCX_[A-Za-z0-9_]*\)=.*/-u \1/p')

.PHONY: all build print-prefix deps demo check check-unit check-integration check-asan \
        check-gtest check-gtest-spec check-rdma-asan \
        check-valgrind check-fuzz check-docs check-model check-mpi check-conformance \
        check-rdma check-debian13 stress-mpi rdma-progs \
        bench bench-shm bench-mpi bench-slots bench-thresh bench-noise bench-spec \
        bench-rdma bench-barrier bench-zcopy-v2 bench-hotbuf-v2 gtest clean

all: build

deps:
	@$(REPO)/contrib/install-deps build test

build: deps
	@BUILD_DIR=$(BUILD_DIR) $(BOOTSTRAP)

# for scripts that drive a version's build from outside
print-prefix:
	@echo $(PREFIX)

demo: build
	@$(REPO)/contrib/install-deps bench mpi
	@$(MAKE) --no-print-directory $(MPI_BENCH) $(POLL_COST)
	@$(REPO)/contrib/demo $(PREFIX)

# --------------------------------------------------------------------- tests
# Every stage runs, a failed one too, and says what it cost: CI's budget is
# measured stage by stage.  CI shows only the end of the output, so the end
# repeats every stage's time and the last lines of each that failed (whole
# logs: CHECK_LOGS/STAGE.log, and STAGE.times with each line's second in
# the stage; every run's times: SPEC_CACHE/check-times.log;
# the last run's logs of every build folder, per test where a suite times
# its tests: SPEC_CACHE/last-check/, so that CI's outlive its clone)
CHECK_STAGES = check-unit check-docs check-model check-fuzz check-integration check-mpi \
               check-conformance check-gtest check-gtest-spec check-valgrind \
               check-asan check-rdma check-rdma-asan check-debian13
CHECK_LOGS  ?= $(BUILD_DIR)/logs/check
# where the stage times of every run on this machine add up, CI's too
SPEC_CACHE  ?= $(or $(UCX_SPEC_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ucx-spec)
check: build
	@rc=0; failed=; times=; mkdir -p $(CHECK_LOGS); \
	for s in $(CHECK_STAGES); do t0=$$(date +%s); \
	    set -o pipefail; \
	    $(MAKE) --no-print-directory UCX_TARBALLS=$(UCX_TARBALLS) $$s 2>&1 | \
	        $(REPO)/contrib/stage-log $(CHECK_LOGS)/$$s.log || { rc=1; failed+=" $$s"; }; \
	    t=$$(( $$(date +%s) - t0 )); times+=" $$s=$$t"; \
	    echo "check: $$s took $$t s"; done; \
	echo "check: stage times (s):$$times"; \
	mkdir -p $(SPEC_CACHE) && echo "$$(date -u +%FT%TZ) $$(git -C $(REPO) \
	    rev-parse --short HEAD 2>/dev/null) $(REPO) rc=$$rc$$times" \
	    >>$(SPEC_CACHE)/check-times.log; \
	rm -rf $(SPEC_CACHE)/last-check; for d in $(REPO)/build*/logs; do [ -d $$d ] || continue; \
	    b=$(SPEC_CACHE)/last-check/$$(basename $$(dirname $$d)); \
	    mkdir -p $$b && cp -r $$d/. $$b/; done; \
	for s in $$failed; do echo "check: the end of $$s ($(CHECK_LOGS)/$$s.log):"; \
	    grep -v '^\[ *\(RUN\|OK\) ' $(CHECK_LOGS)/$$s.log | tail -n 40 | sed 's/^/  | /'; done; \
	[ $$rc = 0 ] || echo "check: FAILED:$$failed"; exit $$rc

, := ,

# Unit tests link the built libraries and the specrdv module, whose internal
# headers they find in the UCX tree; $(1) is the build folder, $(2) extra
# compiler flags.
define unit_rule
$(1)/test/unit/%: $(REPO)/test/unit/%.c $(REPO)/test/unit/specrdv_fixture.h \
                  $(REPO)/test/unit/ucp_pair.h \
                  $(REPO)/ucp_proto_spec/ucp_proto_spec.h $(1)/.install-key
	@mkdir -p $$(@D)
	$$(CC) -g -O1 -Wall -Werror $(2) -I$(1)/prefix/include \
	    -I$(1)/ucx-$(UCX_VERSION)/src -o $$@ $$(filter %.c,$$^) \
	    -L$(1)/prefix/lib -Wl,-rpath,$(1)/prefix/lib \
	    -L$(1)/prefix/lib/ucx -Wl,-rpath,$(1)/prefix/lib/ucx \
	    -luct_specrdv -lucp -luct -lucs -lcmocka -lm
# the barrier's pattern and the hot-buffer table are compiled in from where
# they live
$(1)/test/unit/test_barrier_pattern: $(REPO)/barrier/spec_barrier_pattern.c
$(1)/test/unit/test_spec_hotbuf: $(REPO)/ucp_proto_spec/spec_hotbuf.c
endef
$(eval $(call unit_rule,$(BUILD_DIR),))
$(eval $(call unit_rule,$(ASAN_DIR),-fsanitize=address$(,)undefined -fno-omit-frame-pointer))

# Runs every unit test of build folder $(1) through wrapper $(2) (may be
# empty), leaving rc=1 in the shell when any fails.
run_units = rc=0; for t in $(addprefix $(1)/test/unit/,$(UNIT_NAMES)); do \
	    $(CLEAN_ENV) $(2) $$t || rc=1; done

check-unit: $(addprefix $(BUILD_DIR)/test/unit/,$(UNIT_NAMES))
	@$(call run_units,$(BUILD_DIR),); exit $$rc

check-integration:
	@$(CLEAN_ENV) $(REPO)/test/integration/run $(PREFIX)

# The docs and the code agree where a script can tell: variables against
# ucx_info -c -f both ways, file paths, patches (test/docs/check)
check-docs: build
	@$(CLEAN_ENV) $(REPO)/test/docs/check $(PREFIX)

# spin on the protocol models: clean runs and seeded faults
check-model:
	@$(REPO)/contrib/install-deps test
	@$(REPO)/test/model/run $(BUILD_DIR)/test/model

# libFuzzer on the slot protocol's receive side, with ASan and UBSan;
# FUZZ_TIME seconds (CI: 20)
FUZZ_TIME ?= 20
FUZZER     = $(BUILD_DIR)/test/fuzz/fuzz_slot_rx
$(FUZZER): $(REPO)/test/fuzz/fuzz_slot_rx.c $(REPO)/uct_specrdv/specrdv_slot.c \
           $(REPO)/uct_specrdv/specrdv_slot.h $(BUILD_DIR)/.install-key
	@mkdir -p $(@D)
	clang -g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined \
	    -I$(PREFIX)/include -I$(BUILD_DIR)/ucx-$(UCX_VERSION)/src -o $@ \
	    $(REPO)/test/fuzz/fuzz_slot_rx.c $(REPO)/uct_specrdv/specrdv_slot.c \
	    -L$(PREFIX)/lib -Wl,-rpath,$(PREFIX)/lib -lucs

check-fuzz: $(FUZZER)
	@mkdir -p $(BUILD_DIR)/test/fuzz/corpus
	@$(CLEAN_ENV) UCX_LOG_LEVEL=fatal $(FUZZER) -max_total_time=$(FUZZ_TIME) \
	    -print_final_stats=1 $(BUILD_DIR)/test/fuzz/corpus 2>&1 | \
	    grep -E '^(stat::number_of_executed_units|Done)|ERROR|SUMMARY'; \
	    exit $${PIPESTATUS[0]}

# Debian's Open MPI, MPICH and OpenSHMEM over specrdv alone, bytes verified
check-mpi: build
	@$(REPO)/contrib/install-deps mpi
	@$(MAKE) --no-print-directory $(BARRIER_LIBS)
	@$(CLEAN_ENV) $(REPO)/test/mpi/run $(PREFIX) $(BUILD_DIR)/test/mpi

# Debian 13 as its users have it: its Open MPI 5.0.7, MPICH 4.2.1 and
# OpenSHMEM over ucx-spec on 1.18.1 and 1.22.0, built and tested inside a
# Debian 13 root made from Debian's archive (contrib/debian13-root)
DEBIAN13_VERSIONS ?= 1.18.1 1.22.0
check-debian13:
	@$(CLEAN_ENV) UCX_TARBALLS=$(UCX_TARBALLS) \
	    RDMA_GTEST_FILTER='$(RDMA_GTEST_FILTER)' \
	    $(REPO)/test/debian13/run $(DEBIAN13_VERSIONS)

# MPICH's own test suite (pt2pt, rma, coll) through Debian's MPICH and Open
# MPI, over specrdv and speculation on shared memory against posix+cma
# (CONFORMANCE_FULL=1: every test, nightly)
check-conformance: build
	@$(REPO)/contrib/install-deps mpi
	@$(CLEAN_ENV) $(REPO)/test/conformance/run $(PREFIX) $(BUILD_DIR)/conformance

# The RDMA barrier for unchanged MPI programs (LD_PRELOAD), one library per
# MPI, installed beside our UCX
BARRIER_SRC  = $(addprefix $(REPO)/barrier/,spec_barrier_mpi.c \
                 spec_barrier_rdma.c spec_barrier_rdma.h \
                 spec_barrier_pattern.c spec_barrier_pattern.h) \
               $(REPO)/shm/specrdv_shm_barrier.c \
               $(REPO)/shm/specrdv_shm_barrier.h
BARRIER_LIBS = $(PREFIX)/lib/libspec_barrier.openmpi.so \
               $(PREFIX)/lib/libspec_barrier.mpich.so
$(PREFIX)/lib/libspec_barrier.%.so: $(BARRIER_SRC) $(BUILD_DIR)/.install-key
	mpicc.$* -O2 -g -Wall -Werror -shared -fPIC -I$(PREFIX)/include -o $@ \
	    $(filter %.c,$(BARRIER_SRC)) -L$(PREFIX)/lib \
	    -Wl,-rpath,$(PREFIX)/lib -lucp -lucs

# The speculative rendezvous under Open MPI and MPICH, long: STRESS_MESSAGES
# per direction for each MPI and transport; the summary goes to perf/results
STRESS_MESSAGES ?= 1000000
stress-mpi: build
	@$(REPO)/contrib/install-deps mpi
	@mkdir -p $(REPO)/perf/results
	@set -o pipefail; $(CLEAN_ENV) STRESS_VERBOSE=1 $(REPO)/test/mpi/stress \
	    $(PREFIX) $(BUILD_DIR)/test/mpi $(STRESS_MESSAGES) | \
	    tee $(REPO)/perf/results/stress.txt

# Every unit and integration test again under valgrind's memcheck: leaks and
# invalid accesses fail the run.  Then the MPI barrier library under
# memcheck through Open MPI, whose own records are not ours to fail on.
# UCX's own suppressions come from the version's tree
VALGRIND_UCX = UCX_SPEC_SRC=$(BUILD_DIR)/ucx-$(UCX_VERSION)
check-valgrind: $(addprefix $(BUILD_DIR)/test/unit/,$(UNIT_NAMES))
	@$(REPO)/contrib/install-deps mpi
	@$(MAKE) --no-print-directory $(BARRIER_LIBS)
	@$(call run_units,$(BUILD_DIR),$(VALGRIND_UCX) $(REPO)/test/valgrind-wrap); \
	$(CLEAN_ENV) $(VALGRIND_UCX) UCX_SPEC_TEST_WRAP=$(REPO)/test/valgrind-wrap \
	    $(REPO)/test/integration/run $(PREFIX) || rc=1; \
	$(CLEAN_ENV) $(REPO)/test/mpi/valgrind-mpi $(PREFIX) \
	    $(BUILD_DIR)/test/mpi || rc=1; exit $$rc

# A second UCX tree built with ASan and UBSan, and the same tests on it.
check-asan: deps
	@BUILD_DIR=$(ASAN_DIR) UCX_SPEC_FLAVOR=asan $(BOOTSTRAP)
	@$(MAKE) --no-print-directory $(addprefix $(ASAN_DIR)/test/unit/,$(UNIT_NAMES))
	@$(call run_units,$(ASAN_DIR),$(REPO)/test/asan-wrap); \
	$(CLEAN_ENV) $(REPO)/test/asan-wrap \
	    $(REPO)/test/integration/run $(ASAN_DIR)/prefix || rc=1; exit $$rc

# Verbs tests need a kernel RDMA stack: an emulated guest with Soft-RoCE
# (test/rdma/guest) boots Debian's kernel and runs them against our build.
# The MPI programs the guest runs, built with Open MPI (and the ping-pong
# with MPICH too) into one folder
# UCX's UCT suites on specrdv's rxe0:1 in the guest (check-gtest runs shm's),
# all but the performance envelopes, which measure only the emulator
RDMA_GTEST_FILTER = specrdv/*-specrdv/test_uct_perf.*:specrdv/test_uct_loopback.envelope/*

RDMA_MPI = $(BUILD_DIR)/test/rdma-mpi
RDMA_MPI_PROGS = $(addprefix $(RDMA_MPI)/,pingpong_verify spec_stress \
                   alltoall_verify turns_verify barrier_skew \
                   hotbuf_stale pingpong_verify.mpich barrier_skew.mpich \
                   hotbuf_stale.mpich dtype_verify.mpich ucp_fanin)
# a UCP program: it loads whichever UCX LD_LIBRARY_PATH names
$(RDMA_MPI)/ucp_fanin: $(REPO)/test/rdma/ucp_fanin.c $(BUILD_DIR)/.install-key
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Werror -I$(PREFIX)/include -o $@ $< -L$(PREFIX)/lib \
	    -lucp -lucs
$(RDMA_MPI)/%: $(REPO)/test/mpi/%.c
	@mkdir -p $(@D)
	mpicc.openmpi -O2 -Wall -Werror -o $@ $<
$(RDMA_MPI)/%.mpich: $(REPO)/test/mpi/%.c
	@mkdir -p $(@D)
	mpicc.mpich -O2 -Wall -Werror -o $@ $<

# what the guest's checks run, for test/debian13/run to build in its root
rdma-progs: $(RDMA_MPI_PROGS) $(BARRIER_LIBS)

check-rdma: build
	@$(REPO)/contrib/install-deps rdma
	@$(MAKE) --no-print-directory rdma-progs
	@$(REPO)/contrib/ucx-gtest $(BUILD_DIR) --build-only
	@rc=0; $(REPO)/test/rdma/selftest || rc=1; \
	$(CLEAN_ENV) $(REPO)/test/rdma/guest -2 -t 1500 -- \
	    $(REPO)/test/rdma/check $(PREFIX) $(RDMA_MPI) || rc=1; \
	$(CLEAN_ENV) $(REPO)/test/rdma/guest -t 1200 -e GTEST_PARAM=/rxe0:1 -- \
	    $(REPO)/contrib/ucx-gtest $(BUILD_DIR) '$(RDMA_GTEST_FILTER)' || rc=1; \
	exit $$rc

# The verbs writer's UCT-level checks again, on the ASan/UBSan build (which
# check-asan makes): the MPI checks run uninstrumented MPI programs, which
# cannot load an instrumented libucp.  The hot-buffer eager cannot run here:
# test/asan-wrap turns UCM's memory hooks off, and without their events it
# stays off, as it must
RDMA_ASAN_CHECKS = uct_specrdv_verbs_am_lat uct_specrdv_verbs_am_bw \
                   uct_specrdv_verbs_fallback_window uct_specrdv_verbs_am_zcopy \
                   uct_specrdv_verbs_put_bw uct_specrdv_verbs_peer_killed
check-rdma-asan: deps
	@$(REPO)/contrib/install-deps rdma
	@BUILD_DIR=$(ASAN_DIR) UCX_SPEC_FLAVOR=asan $(BOOTSTRAP)
	@$(CLEAN_ENV) $(REPO)/test/rdma/guest -2 -t 900 \
	    -e 'RDMA_CHECKS=$(RDMA_ASAN_CHECKS)' -- \
	    $(REPO)/test/asan-wrap $(REPO)/test/rdma/check $(ASAN_DIR)/prefix \
	    $(RDMA_MPI)

# ------------------------------------------------------------- benchmarks
# Figures go to perf/results/ as CSV, a markdown table and a PNG.  Those made
# in the RDMA guest are labelled "emulated RDMA (Soft-RoCE under TCG)".
RESULTS = $(REPO)/perf/results
COMMA  := ,

bench: bench-shm bench-mpi bench-spec bench-barrier bench-rdma

# specrdv against UCX's posix and sysv on this machine, ratios to posix
bench-shm: build
	@$(REPO)/contrib/install-deps bench
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory $(POLL_COST)
	$(CLEAN_ENV) $(REPO)/perf/bench-shm $(PREFIX) $(RESULTS)/shm$(VERSION_SUFFIX).csv
	$(REPO)/perf/report $(RESULTS)/shm$(VERSION_SUFFIX).csv --baseline posix
	@cat $(RESULTS)/shm$(VERSION_SUFFIX).md

# perf/bench-mpi's set $(1) (empty: its default) into $(RESULTS)/$(2).csv,
# ratios to posix+cma (or the first of $(3) a table has)
define bench_mpi_set
	@$(REPO)/contrib/install-deps bench mpi
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory $(MPI_BENCH)
	BENCH_SET=$(1) $(CLEAN_ENV) $(REPO)/perf/bench-mpi $(PREFIX) \
	    $(RESULTS)/$(2)$(VERSION_SUFFIX).csv
	$(REPO)/perf/report $(RESULTS)/$(2)$(VERSION_SUFFIX).csv \
	    --baseline $(or $(3),posix+cma)
	@cat $(RESULTS)/$(2)$(VERSION_SUFFIX).md
endef

# MPI ping-pong and streaming bandwidth through Open MPI, 2 ranks bound:
# specrdv, posix+cma and sysv+cma, speculation off and on
bench-mpi: build
	$(call bench_mpi_set,,mpi)

# the measurement behind specrdv's default slot geometry (not in bench)
bench-slots: build
	$(call bench_mpi_set,slots,slot-size)

# where UCP's rendezvous should begin on one node (not in bench)
bench-thresh: build
	$(call bench_mpi_set,thresh,rndv-thresh)

# how far two identical variants land apart in one run, through mpi_bench
# and spec_bench's exchange and crossing: the floor under bench-mpi's and
# bench-spec's ratios (not in bench)
bench-noise: build
	$(call bench_mpi_set,noise,mpi-noise,posix+cma$(COMMA)specrdv)
	$(CLEAN_ENV) BENCH_AGAIN=1 $(REPO)/perf/bench-spec $(PREFIX) \
	    $(RESULTS)/spec-noise$(VERSION_SUFFIX).csv 'exchange crossing'
	$(REPO)/perf/report $(RESULTS)/spec-noise$(VERSION_SUFFIX).csv --baseline stock
	@cat $(RESULTS)/spec-noise$(VERSION_SUFFIX).md

# the speculative rendezvous against stock UCX (UCX_SPEC_RNDV=n), through
# Open MPI, over posix+cma and specrdv
bench-spec: build
	@$(REPO)/contrib/install-deps bench mpi
	@mkdir -p $(RESULTS)
	$(CLEAN_ENV) $(REPO)/perf/bench-spec $(PREFIX) \
	    $(RESULTS)/spec$(VERSION_SUFFIX).csv '$(BENCH_SPEC_MODES)'
	$(REPO)/perf/report $(RESULTS)/spec$(VERSION_SUFFIX).csv --baseline stock \
	    --plot %
	@cat $(RESULTS)/spec$(VERSION_SUFFIX).md

# the RDMA barrier against each MPI's own, 2 ranks bound
bench-barrier: build
	@$(REPO)/contrib/install-deps bench mpi
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory $(BARRIER_LIBS) $(BARRIER_BENCH)
	$(CLEAN_ENV) $(REPO)/perf/bench-barrier $(PREFIX) $(RESULTS)/barrier.csv
	$(REPO)/perf/report $(RESULTS)/barrier.csv --baseline own
	@cat $(RESULTS)/barrier.md

BARRIER_BENCH = $(BUILD_DIR)/test/perf/barrier_bench.openmpi \
                $(BUILD_DIR)/test/perf/barrier_bench.mpich
$(BUILD_DIR)/test/perf/barrier_bench.%: $(REPO)/perf/barrier_bench.c
	@mkdir -p $(@D)
	mpicc.$* -O2 -Wall -Werror -o $@ $<

MPI_BENCH = $(BUILD_DIR)/test/perf/mpi_bench
$(MPI_BENCH): $(REPO)/perf/mpi_bench.c $(REPO)/perf/bench_warm.h
	@mkdir -p $(@D)
	mpicc.openmpi -O2 -Wall -Werror -o $@ $<
POLL_COST = $(BUILD_DIR)/test/perf/poll_cost
$(POLL_COST): $(REPO)/perf/poll_cost.c $(BUILD_DIR)/.install-key
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Werror -I$(PREFIX)/include -o $@ $< -L$(PREFIX)/lib \
	    -Wl,-rpath,$(PREFIX)/lib -luct -lucs

# A set of bench-rdma's, reported and shown if its part ran for this version
comma := ,
rdma_report = @csv=$(RESULTS)/$(1)$(VERSION_SUFFIX).csv; [ ! -s $$csv ] || \
	{ $(REPO)/perf/report $$csv $(2) && cat $${csv%.csv}.md; }
bench-rdma: build
	@$(REPO)/contrib/install-deps rdma bench
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory $(MPI_BENCH) $(POLL_COST) $(BARRIER_LIBS) \
	    $(BUILD_DIR)/test/perf/barrier_bench.openmpi
	$(CLEAN_ENV) $(REPO)/test/rdma/guest -2 -w $(RESULTS) \
	    -w $(BUILD_DIR)/test/perf -t 2400 \
	    $(if $(BENCH_RDMA_PARTS),-e 'BENCH_RDMA_PARTS=$(BENCH_RDMA_PARTS)') -- \
	    $(REPO)/perf/bench-rdma $(PREFIX) $(RESULTS)/rdma-guest$(VERSION_SUFFIX).csv \
	    $(RESULTS)/specrdv-rdma-guest$(VERSION_SUFFIX).csv $(RESULTS)/spec-rdma-guest$(VERSION_SUFFIX).csv \
	    $(RESULTS)/barrier-rdma-guest$(VERSION_SUFFIX).csv $(RESULTS)/hotbuf-rdma-guest$(VERSION_SUFFIX).csv
	$(call rdma_report,rdma-guest,)
	$(call rdma_report,specrdv-rdma-guest,--baseline rc_verbs$(comma)ud_verbs)
	$(call rdma_report,spec-rdma-guest,--baseline stock --plot %)
	$(call rdma_report,barrier-rdma-guest,--baseline own)
	$(call rdma_report,hotbuf-rdma-guest,--baseline stock)
	@cat $(RESULTS)/hotbuf-rdma-guest$(VERSION_SUFFIX).csv.thresholds 2>/dev/null || true

# Where UCX's v2 protocols copy and where they go zero-copy, for a buffer
# reused and one used once (emulated, between the guest's rxe hosts); made
# for UCX_VERSION=1.18.1 or 1.22.0, whose default v2 is.  bench-hotbuf-v2:
# the hot-buffer eager on v2 against stock v2, the same measurement.
# BENCH_ZCOPY_VARIANTS, BENCH_ZCOPY_TESTS and BENCH_REPS narrow or widen it.
ZCOPY_V2_CSV = $(RESULTS)/$(ZCOPY_V2_NAME)-rdma-guest$(VERSION_SUFFIX).csv
bench-zcopy-v2: ZCOPY_V2_NAME ?= zcopy-v2
bench-zcopy-v2: build
	@$(REPO)/contrib/install-deps rdma bench
	@mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory $(MPI_BENCH)
	$(CLEAN_ENV) $(REPO)/test/rdma/guest -2 -w $(RESULTS) -t 3600 \
	    -e BENCH_ZCOPY_VARIANTS="$(BENCH_ZCOPY_VARIANTS)" \
	    -e BENCH_ZCOPY_TESTS="$(BENCH_ZCOPY_TESTS)" \
	    -e BENCH_REPS="$(BENCH_REPS)" -- \
	    $(REPO)/perf/bench-zcopy-v2 $(PREFIX) $(ZCOPY_V2_CSV)
	$(REPO)/perf/report $(ZCOPY_V2_CSV) --baseline v2
	@cat $(ZCOPY_V2_CSV:.csv=.md) $(ZCOPY_V2_CSV).selection \
	    $(ZCOPY_V2_CSV).thresholds

bench-hotbuf-v2:
	@$(MAKE) --no-print-directory bench-zcopy-v2 ZCOPY_V2_NAME=hotbuf-v2 \
	    BENCH_ZCOPY_VARIANTS="v2 hotbuf"

# UCX's own gtest, built from the same tree (~250 C++ files, about 6 minutes
# here); GTEST_FILTER selects the suites.  check-gtest runs UCX's generic UCT
# suites instantiated on specrdv's shm device.
gtest: build
	@$(REPO)/contrib/ucx-gtest $(BUILD_DIR) '$(GTEST_FILTER)'

check-gtest: build
	@$(CLEAN_ENV) $(REPO)/contrib/ucx-gtest $(BUILD_DIR) 'specrdv/*'

# UCX's UCP tag suites with the speculative rendezvous forced on (about 12
# minutes, mostly their own waits)
check-gtest-spec: build
	@$(CLEAN_ENV) $(REPO)/test/spec-gtest $(BUILD_DIR)

# written by contrib/ucx-bootstrap whenever it installs
$(BUILD_DIR)/.install-key $(ASAN_DIR)/.install-key:
	@echo "no UCX build in $(@D): run 'make build' first" >&2; exit 1

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
