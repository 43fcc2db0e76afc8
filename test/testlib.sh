# Sourced by the test runners (test/integration/run, test/rdma/check): each
# test is a shell function, run with set -e so that every check in it counts.

# shellcheck source=limit.sh
source "${BASH_SOURCE[0]%/*}/limit.sh"

TEST_LOGS=$(mktemp -d)
tests_passed=0 tests_failed=0

run_test() {
    local name=$1 rc t0=$SECONDS
    # not in a condition: bash ignores set -e inside one, and every check of
    # the test must count, not just its last
    (set -e; "$name") >"$TEST_LOGS/$name.log" 2>&1
    rc=$?
    # the seconds each test took: CI's budget is spent test by test
    if [ "$rc" = 0 ]; then
        echo "PASS $name ($((SECONDS - t0)) s)"
        # what a passing test must still tell: a run it made again
        sed -n 's/^NOTE: /    /p' "$TEST_LOGS/$name.log"
        tests_passed=$((tests_passed + 1))
    else
        echo "FAIL $name ($((SECONDS - t0)) s)"
        sed 's/^/    /' "$TEST_LOGS/$name.log" | tail -n 80
        tests_failed=$((tests_failed + 1))
    fi
}

# Whether UCX version $2 is $1 or later
# usage: version_at_least MIN VERSION
version_at_least() {
    [ "$(printf '%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]
}

# Runs CMD with its stdout and stderr into the caller's variable out (local
# there) and prints them: a run that fails shows what it said before the
# test stops on its status (run_test's set -e).
# usage: capture CMD [ARG]...
capture() {
    local rc=0
    out=$("$@" 2>&1) || rc=$?
    echo "$out"
    return $rc
}

# Runs SERVER... in the background, then CLIENT...: both under PAIR_TIMEOUT
# seconds, both must succeed.  Their output stays in $TEST_LOGS/server.out
# and client.out, and is shown when either fails.
# usage: pair SERVER... -- CLIENT...
PAIR_TIMEOUT=${PAIR_TIMEOUT:-120}
PAIR_WAIT=${PAIR_WAIT:-1}           # seconds the server needs to listen
pair() {
    local server=() pid rc_s=0 rc_c=0
    while [ "$1" != -- ]; do server+=("$1"); shift; done
    shift
    timeout "$PAIR_TIMEOUT" "${server[@]}" >"$TEST_LOGS/server.out" 2>&1 &
    pid=$!
    sleep "$PAIR_WAIT"
    timeout "$PAIR_TIMEOUT" "$@" >"$TEST_LOGS/client.out" 2>&1 || rc_c=$?
    wait "$pid" || rc_s=$?
    if [ "$rc_s" != 0 ] || [ "$rc_c" != 0 ]; then
        echo "server exit $rc_s, client exit $rc_c"
        tail -n 25 "$TEST_LOGS/server.out" "$TEST_LOGS/client.out"
        return 1
    fi
}

# fails unless $1 contains the fixed string $2
expect() {
    grep -qF -- "$2" <<<"$1" || { echo "expected '$2' in:"; echo "$1"; return 1; }
}

# How many UCX_SPECRDV_REPORT lines in TEXT satisfy CONDITION, an awk
# expression over c["COUNTER"] (that line's counters).  Open MPI 5 forwards
# a rank's output in pieces: another rank's line can land inside one, and
# the rest follow on a line of its own.  So each report starts at its
# "[host] ucx-spec:" and a piece that starts with none continues the last
# report not yet complete (its last counter, TX_GATHERED, not yet seen).
# usage: specrdv_reports TEXT CONDITION
specrdv_reports() {
    sed 's/\[[^] ]*\] ucx-spec:/\n&/g' <<<"$1" |
    awk 'function done_(r) { return r ~ /TX_GATHERED [0-9]+/ }
         /^\[[^] ]*\] ucx-spec: specrdv .* iface/ { rep[++n] = $0; next }
         /^\[[^] ]*\] ucx-spec:/ { next }
         { for (i = n; i > 0; --i) if (!done_(rep[i])) { rep[i] = rep[i] $0; break } }
         END {
             for (r = 1; r <= n; ++r) {
                 delete c
                 m = split(rep[r], f, " ")
                 for (i = 1; i < m; ++i) { c[f[i]] = f[i + 1] }
                 if ('"$2"') { ++k }
             }
             print k + 0
         }'
}

# The specrdv reports of `turns_verify 2000 6` on three ranks
# (test/mpi/turns_verify.c, polling set of one ring) show the receiver's ring
# handed over at every turn after the first, and each sender admitted at
# each of its three turns
ring_changes_hands() {
    [ "$(specrdv_reports "$1" 'c["RING_EVICTED"] == 5')" = 1 ] ||
        { echo "the ring did not change hands at every turn"; return 1; }
    [ "$(specrdv_reports "$1" 'c["RING_GRANTED"] == 3 &&
                               c["RING_REVOKED"] >= 2')" = 2 ] ||
        { echo "a sender was not admitted again at each of its turns"; return 1; }
}

# prints the closing line CI reads and returns the suite's status
finish_tests() {
    rm -rf "$TEST_LOGS"
    echo "$1: $tests_passed passed, $tests_failed failed"
    [ "$tests_failed" -eq 0 ]
}

# test/mpi/hotbuf_stale's sender, UCX_SPEC_HOTBUF_REUSE=4: all 7 cases x 16
# sends looked up (MPICH on v2 sends one more message of its own at the
# end), and hot from a buffer's 2nd use on: every case's buffer
# keeps its address across its change but realloc's, so at least
# 6 x 15 + 2 x 7 hot (more where malloc hands a case an earlier one's)
# usage: hotbuf_sends_counted OUTPUT
hotbuf_sends_counted() {
    grep -Eq "hot-buffer lookups 11[2-9] hot (10[4-9]|11[0-2]) " <<<"$1" ||
        { echo "not every send was looked up, or too few hot"; return 1; }
}

# The same test on UCP's v2 protocols (UCX_SPEC_HOTBUF_V2, on by default):
# the sends v2 made zero-copy were copied at each buffer's first use only,
# as many as the addresses the sender printed; with "none", v2 made none
# zero-copy here and nothing was copied.  Summed, not per line: Open MPI 5 may join two ranks'
# lines
# usage: hotbuf_v2_first_uses_copied OUTPUT [none]
hotbuf_v2_first_uses_copied() {
    local copies want=0
    copies=$(grep -Eo 'v2 copy for a zero-copy [0-9]+' <<<"$1" |
             awk '{ n += $NF } END { print n + 0 }')
    [ "${2:-}" = none ] ||
        want=$(sed -n 's/.*rank 0: sent from \([0-9]*\) addresses.*/\1/p' \
               <<<"$1")
    [ "$copies" = "${want:-?}" ] ||
        { echo "$copies sends copied, expected ${want:-?} first uses"; return 1; }
}
