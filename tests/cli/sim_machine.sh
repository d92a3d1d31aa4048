#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/sim_machine.sh: `helix sim-machine` (tools/sim_machine_cmd.c).  Each shipped machine
# writes its files and prints the one-way cost of a message between typical ranks, the same
# figures as machines/README.md; the same machine written twice gives the same bytes; the
# command is in `helix --help`.  Bad input exits 2 with one message naming it: no machine, no
# --out, an unknown flag, a bad machine file (its file:line and key), a bad --host; a --out
# that cannot be a directory exits 1.  No SimGrid needed.
# shellcheck disable=SC2016,SC2034  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

M=$HX_SRCDIR/machines
plan 12

run "$HELIX" --help
ok "sim-machine is listed in helix --help" 'rc_is 0 && out_has "sim-machine"'
run "$HELIX" sim-machine --help
ok "sim-machine --help says what it writes" 'rc_is 0 && out_has "cluster.xml" && out_has "--host"'

run "$HELIX" sim-machine "$M/h100-sxm.machine" --out "$TMP/h100"
ok "h100-sxm: 64 ranks on rails; NVLink 3.40 us 450 GB/s, other rail 17.40 us 50 GB/s" \
    'rc_is 0 && out_has "64 ranks of 12 CPU workers, rail" &&
     out_has "rank 0 -> 1 .* nvlink  *3.40 us  *450 GB/s" &&
     out_has "rank 0 -> 9 .* nvlink+pcie+nic  *17.40 us  *50 GB/s" &&
     [ -s "$TMP/h100/bus/h100-sxm.platform.v4.xml" ] && [ "$(lines "$TMP/h100/hostfile")" -eq 64 ]'
run "$HELIX" sim-machine "$M/a40-ib100.machine" --out "$TMP/a40" --host vm
ok "a40-ib100 with --host vm: PCIe 5.70 us 32 GB/s, NIC 14.00 us 12.5 GB/s, bus/vm.*" \
    'rc_is 0 && out_has "rank 0 -> 1 .* pcie  *5.70 us  *32 GB/s" &&
     out_has "rank 0 -> 8 .* pcie+nic  *14.00 us  *12.5 GB/s" &&
     [ -s "$TMP/a40/bus/vm.latency" ] && [ -s "$TMP/a40/bus/vm.bandwidth" ] &&
     out_has "STARPU_HOSTNAME=vm starpu_smpirun"'
run "$HELIX" sim-machine "$M/this-bed.machine" --out "$TMP/bed"
ok "this-bed: 2 ranks, the link at 10.30 us 0.1195 GB/s" \
    'rc_is 0 && out_has "2 ranks of 1 CPU worker" && out_has "nic  *10.30 us  *0.1195 GB/s"'
run "$HELIX" sim-machine "$M/h100-sxm.machine" --out "$TMP/h100b"
ok "the same machine twice: the same files" \
    'rc_is 0 && diff -r "$TMP/h100" "$TMP/h100b" >/dev/null'
keep "$TMP/h100" # bad runs below must leave written machines alone

bad "no machine file" "needs a machine file and --out" sim-machine --out "$TMP/x"
bad "no --out" "needs a machine file and --out" sim-machine "$M/h100-sxm.machine"
bad "an unknown flag" "unknown flag --outt" sim-machine "$M/h100-sxm.machine" --outt "$TMP/x"
printf 'name = x\nnodes = 2\ngpus_per_node = 8\npcie_gbytes_per_s = 32GB/s\n' >"$TMP/bad.machine"
bad "a value with its unit" "bad.machine:4:|pcie_gbytes_per_s = '32GB/s' is not a number" \
    sim-machine "$TMP/bad.machine" --out "$TMP/x"
bad "a host name with a slash" "host name 'a/b'" sim-machine "$M/this-bed.machine" \
    --out "$TMP/x" --host a/b
: >"$TMP/file"
run "$HELIX" sim-machine "$M/this-bed.machine" --out "$TMP/file/sub"
ok "--out under a file: exit 1, one message" \
    'one_error 1 "cannot create directory" && [ ! -s "$OUT" ]'
finish
