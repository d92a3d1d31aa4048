# SPDX-License-Identifier: MIT
# bench/sim_lib.sh: what the bench/sim_*.sh scripts share (sourced).  A simulation is
# deterministic, so each case runs once; wall time and the peak memory are measured around it.
#   sim_init BUILD_DIR   checks the build has the simulation flavour; sets HELIX and SIM_OUT
#   sim_run NAME ARGS..  `helix simulate ARGS` into $SIM_OUT/NAME.log, with its wall seconds
#                        in $SIM_OUT/NAME.wall and peak memory in $SIM_OUT/NAME.mem (MB: the
#                        proportional set size, PSS, of the simulating process, sampled every
#                        0.5 s: folded memory maps the same pages many times, so its RSS
#                        overstates it by orders of magnitude)
#   sim_step NAME        the last simulated step, ms
#   sim_col NAME ROW COL rank 0's summary row ROW ("allgather", "all", ...), column COL
#                        (1 in flight, 2 exposed, 3 hidden, 4 hidden %), numbers only
#   sim_bubble NAME      the mean of the ranks' bubble percentages
sim_init() {
    SIM_BUILD=${1:-${HX_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)/build}}
    HELIX=$SIM_BUILD/tools/helix
    if [ ! -x "$HELIX" ] || ! grep -q '^#define HX_SIM_BUILD_BINARY' "$SIM_BUILD/config.h" 2>/dev/null; then
        echo "$(basename "$0"): error: $SIM_BUILD has no simulation flavour: configure it" \
            "--with-starpu-simgrid (scripts/setup --simgrid; README \"Simulation\")" >&2
        exit 2
    fi
    SIM_OUT=$(mktemp -d "${TMPDIR:-/tmp}/hx-$(basename "$0" .sh).XXXXXX") || exit 2
}
sim_run() {
    local name=$1 start pid peak s p v rc
    shift
    start=$(date +%s.%N)
    "$HELIX" simulate "$@" >"$SIM_OUT/$name.log" 2>&1 &
    pid=$!
    peak=0
    while kill -0 "$pid" 2>/dev/null; do
        s=0
        for p in $(pgrep -f "smpimain.*helix-sim" 2>/dev/null); do
            sim_descends "$p" "$pid" || continue # (not another simulation on the machine)
            v=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
            s=$((s + ${v:-0}))
        done
        [ "$s" -gt "$peak" ] && peak=$s
        sleep 0.5
    done
    wait "$pid"
    rc=$?
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$SIM_OUT/$name.wall"
    echo $((peak / 1024)) >"$SIM_OUT/$name.mem"
    if [ "$rc" != 0 ]; then
        echo "$name: helix simulate failed (exit $rc), $SIM_OUT/$name.log:" >&2
        grep -v '^\[starpu' "$SIM_OUT/$name.log" | tail -n 5 >&2
    fi
    return "$rc"
}
# sim_descends PID ANCESTOR: PID is ANCESTOR or one of its descendants
sim_descends() {
    local q=$1
    while [ -n "$q" ] && [ "$q" -gt 1 ]; do
        [ "$q" = "$2" ] && return 0
        q=$(awk '/^PPid:/ { print $2 }' "/proc/$q/status" 2>/dev/null)
    done
    return 1
}
sim_step() { sed -n 's/^step .*| \([0-9.]*\) ms\/step.*/\1/p' "$SIM_OUT/$1.log" | tail -n 1; }
sim_col() {
    awk -v row="$2" -v col="$3" '/^rank 0 / { r0 = 1; next } /^rank / { r0 = 0 }
        r0 && $1 == row { n = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+%?$/) { n++; if (n == col) { sub(/%/, "", $i); print $i; exit } } }' \
        "$SIM_OUT/$1.log"
}
sim_bubble() {
    awk '/^  bubble / { sub(/%/, "", $2); s += $2; n++ } END { if (n) printf "%.1f\n", s / n }' "$SIM_OUT/$1.log"
}
