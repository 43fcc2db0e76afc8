# Sourced by the test runners (test/integration/run, test/rdma/check): each
# test is a shell function, run with set -e so that every check in it counts.

TEST_LOGS=$(mktemp -d)
tests_passed=0 tests_failed=0

run_test() {
    local name=$1 rc
    # not in a condition: bash ignores set -e inside one, and every check of
    # the test must count, not just its last
    (set -e; "$name") >"$TEST_LOGS/$name.log" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then
        echo "PASS $name"; tests_passed=$((tests_passed + 1))
    else
        echo "FAIL $name"; sed 's/^/    /' "$TEST_LOGS/$name.log" | tail -n 30
        tests_failed=$((tests_failed + 1))
    fi
}

# fails unless $1 contains the fixed string $2
expect() {
    grep -qF -- "$2" <<<"$1" || { echo "expected '$2' in:"; echo "$1"; return 1; }
}

# prints the closing line CI reads and returns the suite's status
finish_tests() {
    rm -rf "$TEST_LOGS"
    echo "$1: $tests_passed passed, $tests_failed failed"
    [ "$tests_failed" -eq 0 ]
}
