#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/install.sh: `make install` stages the library, headers and helix.pc, and a
# program using only `pkg-config --cflags --libs helix` compiles, links and runs against the
# staged copy (examples/custom_scheduler.c, which checks its own result).
set -u
b=${HX_BUILDDIR:-$(cd .. && pwd)}
s=${HX_SRCDIR:-$(cd "$b" && cd "$(sed -n 's/^abs_top_srcdir = //p' Makefile)" && pwd)}
stage=$(mktemp -d /tmp/helix-install-XXXXXX)
trap 'rm -rf "$stage"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi; }
echo "1..4"
make -s -C "$b" install DESTDIR="$stage" >"$stage/install.log" 2>&1
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
cc $san $flags -o "$stage/custom_scheduler" "$s/examples/custom_scheduler.c" $flags -lm \
    >"$stage/cc.log" 2>&1
rc=$?
[ $rc -eq 0 ] || cat "$stage/cc.log"
ok $rc "a program builds with pkg-config --cflags --libs helix alone"
LD_LIBRARY_PATH="$(dirname "$(find "$stage" -name 'libhelix.so' | head -1)")" \
    "$stage/custom_scheduler" >"$stage/run.log" 2>&1
rc=$?
[ $rc -eq 0 ] || tail -5 "$stage/run.log"
ok $rc "and runs against the installed library"
[ $fails -eq 0 ]
