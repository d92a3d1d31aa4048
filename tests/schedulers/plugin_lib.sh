# SPDX-License-Identifier: MIT
# tests/schedulers/plugin_lib.sh: what tests/schedulers/plugins.sh and compare.sh share: the
# test plug-ins (tests/schedulers/plugins/test_policy.c, one build per variant) compiled with
# the build's compiler and StarPU (HX_PLUGIN_* from tests/Makefile.am), sourced after
# tests/cli/lib.sh.
# shellcheck shell=sh disable=SC2034,SC2016  # its variables are the sourcing test's
SRC=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SIM=0
grep -q '^#define HX_SIM_BUILD_BINARY' "$HX_BUILDDIR/config.h" && SIM=1
TRAIN="--preset tiny --train-iters 3 --sample-tokens 0 --progress-bar 0"
fields() { grep -o '"\(step\|loss\|grad_norm\)": [^,}]*' "$1"; }
same_as() { fields "$1" >"$TMP/a" && fields "$2" >"$TMP/b" && grep -q loss "$TMP/a" &&
    cmp -s "$TMP/a" "$TMP/b"; }
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
compile() { # VARIANT OUT [sim]
    if [ "${3:-}" = sim ]; then
        # shellcheck disable=SC2086
        $HX_PLUGIN_CC -isystem "$HX_SIM_STARPU_INC" -DVARIANT="$1" -o "$2" \
            "$SRC/tests/schedulers/plugins/test_policy.c" "$HX_BUILDDIR/sim/helix-sim"
    else
        # shellcheck disable=SC2086
        $HX_PLUGIN_CC $HX_PLUGIN_CFLAGS -DVARIANT="$1" -o "$2" \
            "$SRC/tests/schedulers/plugins/test_policy.c" $HX_PLUGIN_LIBS
    fi
}

# build_plugins VARIANT...: TMP/VARIANT.so each (and GOOD-sim.so with the simulation
# flavour), then one check that they all built
build_plugins() {
    bp_want=0
    bp_built=0
    for v in "$@"; do
        bp_want=$((bp_want + 1))
        compile "$v" "$TMP/$v.so" >>"$TMP/cc.log" 2>&1 && bp_built=$((bp_built + 1))
    done
    if [ "$SIM" = 1 ]; then
        bp_want=$((bp_want + 1))
        compile GOOD "$TMP/GOOD-sim.so" sim >>"$TMP/cc.log" 2>&1 && bp_built=$((bp_built + 1))
    fi
    RC=0
    LAST_CMD="compile the variants of test_policy.c"
    cp "$TMP/cc.log" "$ERR" 2>/dev/null || : >"$ERR"
    ok "the test plug-ins build: $bp_built of $bp_want" '[ "$bp_built" = "$bp_want" ]'
}
SIMF="--machine $SRC/machines/this-bed.machine --perf-models $SRC/tests/sim/models"
