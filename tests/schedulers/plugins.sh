#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/schedulers/plugins.sh: scheduling policies from shared objects (--sched-plugin,
# HX_SCHED_PLUGINS; include/helix/sched_plugin.h) (schedulers/plugin.c).  The
# plug-ins are tests/schedulers/plugins/test_policy.c, compiled here
# once per variant with the build's compiler and StarPU (HX_PLUGIN_* from tests/Makefile.am):
#   load      a good one runs under helix train with the reference's losses, bit for bit;
#             named twice (the flag and HX_SCHED_PLUGINS) it is loaded once
#   refusals  each exits 2 with one line naming the file and what is wrong, before any work:
#             a wrong ABI, no entry point, a name taken (StarPU's, or another plug-in's), a
#             file that is text or an object file, a missing file, and a plug-in of the other
#             flavour (the simulation's into train, train's into simulate)
#   simulate  the simulation flavour of the same source (linked against helix-sim) runs on
#             two simulated ranks, each with its own copy
# shellcheck disable=SC2016  # ok evals its checks
set -u
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/plugin_lib.sh"

plan 13
build_plugins GOOD BAD_ABI NO_ENTRY DUPLICATE
cp "$TMP/GOOD.so" "$TMP/GOOD2.so"

# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --log-json "$TMP/ref.json"
# shellcheck disable=SC2086
run "$HELIX" train $TRAIN --sched-plugin "$TMP/GOOD.so" --sched test-fifo \
    --log-json "$TMP/fifo.json"
ok "train --sched-plugin GOOD.so --sched test-fifo: hx-prio's losses and norms, bit for bit" \
    'rc_is 0 && out_has "test-fifo" && same_as "$TMP/ref.json" "$TMP/fifo.json"'
# shellcheck disable=SC2086
run env HX_SCHED_PLUGINS="$TMP/GOOD.so" "$HELIX" train $TRAIN --sched-plugin "$TMP/GOOD.so" \
    --sched test-fifo
ok "the same file in HX_SCHED_PLUGINS and --sched-plugin is loaded once" 'rc_is 0'

# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/BAD_ABI.so" --sched test-fifo
ok "a plug-in of another ABI: exit 2, one line naming it and the rebuild" \
    'usage_error "BAD_ABI.so|plug-in ABI 100|this helix has ABI 1|pkg-config"'
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/NO_ENTRY.so"
ok "a plug-in without hx_sched_plugin_init: exit 2, one line" \
    'usage_error "NO_ENTRY.so|no entry point|hx_sched_plugin_init"'
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/DUPLICATE.so"
ok "a plug-in registering StarPU's eager: exit 2, one line naming the name and the file" \
    'usage_error "\"eager\"|DUPLICATE.so|that name is taken|StarPU built-in"'
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/GOOD.so" --sched-plugin "$TMP/GOOD2.so"
ok "two plug-ins registering test-fifo: exit 2, the second refused naming the first" \
    'usage_error "GOOD2.so|that name is taken|by plug-in $TMP/GOOD.so"'
echo "not a plug-in" >"$TMP/text.so"
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/text.so"
ok "a text file: exit 2, not a shared object" 'usage_error "text.so|not a shared object"'
# shellcheck disable=SC2086
$HX_PLUGIN_CC -c -o "$TMP/obj.o" -DVARIANT=GOOD $HX_PLUGIN_CFLAGS \
    "$SRC/tests/schedulers/plugins/test_policy.c" 2>>"$TMP/cc.log"
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/obj.o"
ok "an object file: exit 2, link it with -shared" 'usage_error "obj.o|object file|-shared"'
# shellcheck disable=SC2086
bad_run train $TRAIN --sched-plugin "$TMP/none.so"
ok "a missing file: exit 2" 'usage_error "none.so|cannot open it"'

if [ "$SIM" = 1 ]; then
    # shellcheck disable=SC2086
    bad_run train $TRAIN --sched-plugin "$TMP/GOOD-sim.so"
    ok "the simulation's plug-in under helix train: exit 2, how to build it for train" \
        'usage_error "GOOD-sim.so|built for helix simulate|pkg-config --cflags --libs helix)"'
    # shellcheck disable=SC2086
    run "$HELIX" simulate $SIMF --ranks 2 $TRAIN --log-interval 1 \
        --sched-plugin "$TMP/GOOD-sim.so" --sched test-fifo
    ok "simulate --sched-plugin GOOD-sim.so: 3 simulated steps on 2 ranks" \
        'rc_is 0 && out_has "^done: 3 simulated steps"'
    # shellcheck disable=SC2086
    run "$HELIX" simulate $SIMF --ranks 1 $TRAIN --sched-plugin "$TMP/GOOD.so" --sched test-fifo
    ok "train's plug-in under helix simulate: exit 2, how to build it with helix-sim" \
        'rc_is 2 && err_has "GOOD.so: it was built for helix train" && err_has "helix-sim"'
else
    for d in "simulation's plug-in under train" "simulate with a plug-in" \
        "train's plug-in under simulate"; do
        skip "$d" "the simulation flavour is not built (configure --with-starpu-simgrid)"
    done
fi

finish
