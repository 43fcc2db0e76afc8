# Sourced: time limits for tests that start UCX processes, which print
# where those processes wait before they are killed (a hang's only trace).
# No side effects on sourcing: test/conformance/mpiexec runs once per test.

# Processes below PID $1 (parents from /proc: minimal roots have no pgrep)
descendants() {
    cat /proc/[0-9]*/stat 2>/dev/null |
        sed -n 's/^\([0-9]*\) .*) [A-Za-z] \([0-9]*\) .*/\1 \2/p' |
        awk -v root="$1" '{ parent[$1] = $2 }
            END { for (p in parent) for (q = parent[p]; q > 1; q = parent[q])
                      if (q == root) { print p; break } }'
}

# Where every process below PID $1 that loaded UCP waits: a hang's only
# trace, taken before the time limit kills it
ucx_backtraces() {
    local p
    command -v gdb >/dev/null || { echo "(no gdb for backtraces)"; return 0; }
    for p in $(descendants "$1"); do
        grep -qs libucp "/proc/$p/maps" || continue
        echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-100)"
        gdb -q -batch -p "$p" -ex 'bt 20' 2>/dev/null | grep '^#' | cut -c1-160
    done
}

# Runs CMD for at most $1 seconds; past them, the backtraces of its UCX
# processes, then it and everything below it are killed (status 124, as
# timeout(1)'s)
# usage: run_limited SECS CMD [ARG]...
run_limited() {
    local secs=$1 pid rc=0 t=0
    shift
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$t" -ge "$((secs * 5))" ]; then
            echo "still running after $secs s: $*"
            ucx_backtraces "$pid"
            kill -KILL $(descendants "$pid") "$pid" 2>/dev/null
            # its status is the kill's; under set -e it must not end the caller
            wait "$pid" || true
            return 124
        fi
        sleep 0.2
        t=$((t + 1))
    done
    wait "$pid" || rc=$?
    return $rc
}
