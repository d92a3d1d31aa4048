#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/schedulers/plugin_install.sh: the example scheduling plug-ins (examples/policies/:
# critical_path.c, comm_first.c) built the way a user builds one, against an installed helix
# with their Makefile and pkg-config alone, and run by the installed helix:
#   install   `make install prefix=<temporary>` (the build itself is left as it is); the
#             pkg-config files carry configure's prefix (substituted then, not at install), so
#             their prefix= line is pointed at the temporary one, as configure --prefix gives it
#   train     each plug-in under helix train, one rank, 3 steps of --preset tiny: the start-up
#             line names its policy, and the losses, validation losses and gradient norms of
#             --log-json are hx-prio's, bit for bit (a policy only orders tasks)
#   simulate  where the simulation flavour is installed (helix-sim.pc): `make sim`, then the
#             installed helix-sim simulates 3 steps under critical_path-sim.so
# shellcheck disable=SC2016  # ok evals its checks
set -u
. "$(dirname "$0")/../cli/lib.sh"
SRC=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
P=$TMP/prefix
H=$P/bin/helix
# the sub-makes are a user's, not part of the make that runs this test
unset MAKEFLAGS MFLAGS MAKELEVEL
# fields FILE: the step, loss, val_loss and grad_norm fields of a --log-json file
fields() { grep -o '"\(step\|loss\|val_loss\|grad_norm\)": [^,}]*' "$1"; }
same_as_ref() { [ -s "$TMP/ref.json" ] && fields "$TMP/ref.json" >"$TMP/a" &&
    fields "$1" >"$TMP/b" && grep -q '"loss"' "$TMP/b" && cmp -s "$TMP/a" "$TMP/b"; }
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
TRAIN="--preset tiny --train-iters 3 --sample-tokens 0 --progress-bar 0"

plan 9
# (one install at a time in the build tree: tests/cli/install.sh installs from it too, and
# libtool relinks in place while installing)
run flock -o "$HX_BUILDDIR/tests/.install.lock" make -s -C "$HX_BUILDDIR" install prefix="$P"
ok "make install prefix=<temporary>: helix, libhelix, the headers and helix.pc" \
    'rc_is 0 && [ -x "$H" ] && [ -f "$P/include/helix/sched_plugin.h" ] &&
     [ -f "$P/lib/pkgconfig/helix.pc" ]'
# the installed helix finds the installed libhelix as a user's would (libtool's install
# records no run path to a prefix given at install time)
LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
for pc in "$P"/lib/pkgconfig/helix*.pc; do
    sed "s|^prefix=.*|prefix=$P|" "$pc" >"$pc.new" && mv "$pc.new" "$pc"
done
# and the PKG_CONFIG_PATH configure ran with: it chose the StarPU helix is linked against
pcp=$(sed -n 's/^PKG_CONFIG_PATH = //p' "$HX_BUILDDIR/Makefile")
PKG_CONFIG_PATH="$P/lib/pkgconfig${pcp:+:$pcp}"
export PKG_CONFIG_PATH

mkdir "$TMP/policies"
cp "$SRC"/examples/policies/Makefile "$SRC"/examples/policies/*.c "$TMP/policies/"
run make -C "$TMP/policies"
ok "make: critical_path.so and comm_first.so with pkg-config --cflags --libs helix" \
    'rc_is 0 && [ -f "$TMP/policies/critical_path.so" ] && [ -f "$TMP/policies/comm_first.so" ]'

cd "$TMP/policies" || exit 1
# shellcheck disable=SC2086  # TRAIN is a list of flags
run timeout 60 "$H" train $TRAIN --sched hx-prio --log-json "$TMP/ref.json"
ok "the installed helix trains 3 steps under hx-prio (the reference)" \
    'rc_is 0 && out_has "policy hx-prio"'
for pol in critical_path:critical-path-first comm_first:inter-comm-first; do
    so=${pol%%:*}.so name=${pol#*:}
    # shellcheck disable=SC2086
    run timeout 60 "$H" train $TRAIN --sched-plugin "./$so" --sched "$name" \
        --log-json "$TMP/$name.json"
    ok "helix train --sched-plugin ./$so --sched $name runs it" \
        'rc_is 0 && out_has "policy $name,"'
    ok "$name: losses and gradient norms are hx-prio's, bit for bit" \
        'same_as_ref "$TMP/$name.json"'
done

if [ -f "$P/lib/pkgconfig/helix-sim.pc" ]; then
    run make -C "$TMP/policies" sim
    ok "make sim: critical_path-sim.so and comm_first-sim.so with pkg-config helix-sim" \
        'rc_is 0 && [ -f critical_path-sim.so ] && [ -f comm_first-sim.so ]'
    # the installed helix-sim, not the build tree's that helix simulate would run first
    # shellcheck disable=SC2086  # TRAIN is a list of flags
    run env HX_SIM_BINARY="$P/libexec/helix/helix-sim" timeout 60 "$H" simulate \
        --machine "$SRC/machines/this-bed.machine" --ranks 1 --perf-models \
        "$SRC/tests/sim/models" $TRAIN --log-interval 1 \
        --sched-plugin ./critical_path-sim.so --sched critical-path-first
    ok "helix simulate --sched-plugin ./critical_path-sim.so: 3 simulated steps under it" \
        'rc_is 0 && out_has "policy critical-path-first," &&
         out_has "^done: 3 simulated steps"'
elif [ "${HX_REQUIRE_SIMGRID:-0}" = 1 ]; then
    echo "Bail out! helix was configured without --with-starpu-simgrid: no helix-sim.pc"
    exit 1
else
    skip "make sim" "the simulation flavour is not built (configure --with-starpu-simgrid)"
    skip "helix simulate with a plug-in" "the simulation flavour is not built"
fi
finish
