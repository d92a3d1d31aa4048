#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/install.sh: `make install` stages the library, headers and helix.pc, and a
# program using only `pkg-config --cflags --libs helix` compiles, links and runs against the
# staged copy (examples/custom_scheduler.c, which checks its own result); so does a model of
# one's own under the parallel passes (examples/custom_model.c, helix/model.h: its loss must
# go down), written without touching helix's sources.
set -u
b=${HX_BUILDDIR:-$(cd .. && pwd)}
s=${HX_SRCDIR:-$(cd "$b" && cd "$(sed -n 's/^abs_top_srcdir = //p' Makefile)" && pwd)}
stage=$(mktemp -d /tmp/helix-install-XXXXXX)
trap 'rm -rf "$stage"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi; }
echo "1..6"
# (one install at a time in the build tree: tests/schedulers/plugin_install.sh installs from
# it too, and libtool relinks in place while installing)
flock -o "$b/tests/.install.lock" make -s -C "$b" install DESTDIR="$stage" >"$stage/install.log" 2>&1
ok $? "make install DESTDIR=<stage>"
pc=$(find "$stage" -name helix.pc | head -1)
hdr=$(find "$stage" -path '*include/helix/helix.h' | head -1)
[ -n "$pc" ] && [ -n "$hdr" ] && [ -n "$(find "$stage" -name 'libhelix.so*' | head -1)" ]
ok $? "installed helix.pc ($pc), headers and libhelix.so"
# point the staged helix.pc at the stage (a sysroot would also move StarPU's paths)
mkdir -p "$stage/pc"
sed "s|^prefix=|prefix=$stage|" "$pc" >"$stage/pc/helix.pc"
# and keep the PKG_CONFIG_PATH configure ran with: it chose the StarPU (scripts/setup --cuda's
# under its prefix) that libhelix.so was linked against
pcp=$(sed -n 's/^PKG_CONFIG_PATH = //p' "$b/Makefile")
export PKG_CONFIG_PATH="$stage/pc${pcp:+:$pcp}"
flags=$(pkg-config --cflags --libs helix 2>&1)
# a sanitizer build's library needs its runtime in the program too
san=$(sed -n 's/^HX_SAN_FLAGS = //p' "$b/Makefile")
lib=$(dirname "$(find "$stage" -name 'libhelix.so' | head -1)")
# example NAME WHAT ARGS...: examples/NAME.c built with the flags alone, then run with ARGS
example() {
    ex=$1 what=$2
    shift 2
    # shellcheck disable=SC2086  # san and flags are lists of words
    cc $san $flags -o "$stage/$ex" "$s/examples/$ex.c" $flags -lm >"$stage/$ex.cc.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || cat "$stage/$ex.cc.log"
    ok $rc "examples/$ex.c builds with pkg-config --cflags --libs helix alone"
    LD_LIBRARY_PATH="$lib" "$stage/$ex" "$@" >"$stage/$ex.run.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || tail -5 "$stage/$ex.run.log"
    ok $rc "and $what against the installed library"
}
example custom_scheduler "runs, its products exact,"
example custom_model "trains, serial, its loss going down," --steps 10
[ $fails -eq 0 ]
