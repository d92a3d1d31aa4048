#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/sched_env.sh: the policy is resolved once (--sched, else HX_SCHED, else
# STARPU_SCHED, else hx-prio) and everything uses it: the start-up line, the checks and the
# graph, built from what the policy needs (include/helix/sched.h).
#  - one rank: which of the three names wins; HX_SCHED=hx-prefetch is accepted with
#    --prefetch-memory as --sched is; an unknown HX_SCHED, --prefetch-memory under a policy
#    without that order, and hx-strand without a plan are refused (exit 2, one line);
#  - ZeRO-3 on 2 ranks: HX_SCHED=hx-prefetch and --sched hx-prefetch are the same run
#    (hx-prefetch's order announced, bitwise the same losses and gradient norms, the same
#    --dump-dot graph), and so are HX_SCHED=serial-comm and --sched serial-comm;
#    serial-comm's graph is hx-prio's nodes with barrier edges added, each joining a
#    collective and a compute task, and gives hx-prio's numbers.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/parity_lib.sh"
unset HX_SCHED STARPU_SCHED

plan 31
M="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
 --micro-batch-size 2 --global-batch-size 8 --train-iters 3 --eval-interval 0
 --sample-tokens 0 --log-interval 1 --seed 7"

# ---- one rank: which name wins ----
# shellcheck disable=SC2086
run env HX_SCHED=hx-prefetch STARPU_SCHED=eager "$HELIX" train $M --sched hx-wavelet
ok "--sched beats HX_SCHED and STARPU_SCHED" 'rc_is 0 && out_has "policy hx-wavelet,"'
# shellcheck disable=SC2086
run env HX_SCHED=serial-comm STARPU_SCHED=eager "$HELIX" train $M
ok "HX_SCHED beats STARPU_SCHED" 'rc_is 0 && out_has "policy serial-comm,"'
# shellcheck disable=SC2086
run env STARPU_SCHED=hx-wavelet "$HELIX" train $M
ok "STARPU_SCHED alone is taken" 'rc_is 0 && out_has "policy hx-wavelet,"'
# shellcheck disable=SC2086
run env HX_SCHED= "$HELIX" train $M
ok "nothing set (HX_SCHED empty): hx-prio" 'rc_is 0 && out_has "policy hx-prio,"'

# refused WORDS ENV...: 3 checks, a one-rank run with environment ENV
refused() {
    words=$1
    shift
    # shellcheck disable=SC2086
    run env "$@" "$HELIX" train $M $FLAGS
    what="$*${FLAGS:+ $FLAGS}"
    ok "$what: exit status 2" 'rc_is 2'
    ok "$what: one error line naming '$words'" \
       '[ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] && err_has "$words"'
    ok "$what: nothing on stdout" '[ ! -s "$OUT" ]'
}
FLAGS=
refused "HX_SCHED='no-such-policy'" HX_SCHED=no-such-policy
refused "STARPU_SCHED='no-such-policy'" STARPU_SCHED=no-such-policy
FLAGS="--prefetch-memory 1M"
refused "policy hx-prio does not run" HX_SCHED=hx-prio
# the policy's order is accepted; one rank shards nothing, which is the error left
refused "this mesh shards no parameter" HX_SCHED=hx-prefetch
FLAGS=
refused "policy hx-strand executes a strand plan" HX_SCHED=hx-strand

# ---- ZeRO-3 on 2 ranks: the variable and the flag are the same run ----
Z="--zero-stage 3 --ranks-per-node 2"
# zrun NAME ENV...: mpirun -np 2 with environment ENV (flags after --)
zrun() {
    name=$1
    shift
    envs=
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        envs="$envs $1"
        shift
    done
    [ $# -gt 0 ] && shift
    # shellcheck disable=SC2086
    run hx_mpirun 2 env $envs "$HELIX" train $M $Z --comm-timeout 60 \
        --log-json "$TMP/$name.json" --dump-dot "$TMP/$name.dot" "$@"
    cp "$OUT" "$TMP/$name.out"
}
# edges of a DOT file, one "a b" per line, sorted
edges() { sed -n 's/^  n\([0-9]*\) -> n\([0-9]*\)\( \[style=dashed\]\)\{0,1\};$/\1 \2/p' "$1" | sort; }
nodes() { grep -c '^  n[0-9]* \[label' "$1"; }

zrun pf-flag -- --sched hx-prefetch
ok "--sched hx-prefetch: trains, announces the prefetch order" \
   'rc_is 0 && out_has "policy hx-prefetch," && out_has "all-gathered 1 layer ahead"'
zrun pf-env HX_SCHED=hx-prefetch
ok "HX_SCHED=hx-prefetch: trains, announces the prefetch order" \
   'rc_is 0 && out_has "policy hx-prefetch," && out_has "all-gathered 1 layer ahead"'
ok "hx-prefetch: the variable and the flag give bitwise the same losses and gradient norms" \
   'parity_same pf-flag pf-env'
ok "hx-prefetch: the variable and the flag build the same --dump-dot graph" \
   '[ -s "$TMP/pf-flag.dot" ] && cmp -s "$TMP/pf-flag.dot" "$TMP/pf-env.dot"'

zrun prio
ok "hx-prio (default): trains" 'rc_is 0 && out_has "policy hx-prio,"'
zrun sc-flag -- --sched serial-comm
ok "--sched serial-comm: trains" 'rc_is 0 && out_has "policy serial-comm,"'
zrun sc-env HX_SCHED=serial-comm
ok "HX_SCHED=serial-comm: trains" 'rc_is 0 && out_has "policy serial-comm,"'
ok "serial-comm: the variable and the flag give bitwise the same losses and gradient norms" \
   'parity_same sc-flag sc-env'
ok "serial-comm: the variable and the flag build the same --dump-dot graph" \
   '[ -s "$TMP/sc-flag.dot" ] && cmp -s "$TMP/sc-flag.dot" "$TMP/sc-env.dot"'
ok "serial-comm gives bitwise hx-prio's losses and gradient norms" 'parity_same prio sc-flag'

# serial-comm's graph: hx-prio's nodes, hx-prio's edges, and barrier edges, each between a
# collective (drawn with penwidth=3) and a compute task
edges "$TMP/prio.dot" >"$TMP/prio.edges"
edges "$TMP/sc-flag.dot" >"$TMP/sc.edges"
comm=$(sed -n 's/^  n\([0-9]*\) \[label.*penwidth=3.*/\1/p' "$TMP/sc-flag.dot" | sort -u)
extra=$(comm -13 "$TMP/prio.edges" "$TMP/sc.edges")
nextra=$(printf '%s\n' "$extra" | grep -c .)
crossing=$(printf '%s\n' "$extra" | while read -r a b; do
    ca=0 cb=0
    printf '%s\n' "$comm" | grep -qx "$a" && ca=1
    printf '%s\n' "$comm" | grep -qx "$b" && cb=1
    [ "$ca" -ne "$cb" ] && echo x
done | grep -c x)
echo "# serial-comm's --dump-dot: $(wc -l <"$TMP/sc.edges") edges, hx-prio's $(wc -l <"$TMP/prio.edges"); $nextra barrier edges, $crossing of them between a collective and a compute task"
ok "serial-comm's --dump-dot has hx-prio's nodes and every edge of hx-prio's" \
   '[ "$(nodes "$TMP/prio.dot")" -gt 0 ] && [ "$(nodes "$TMP/prio.dot")" -eq "$(nodes "$TMP/sc-flag.dot")" ] && [ -z "$(comm -23 "$TMP/prio.edges" "$TMP/sc.edges")" ]'
sed -n 's/^  n\([0-9]*\) -> n\([0-9]*\) \[style=dashed\];$/\1 \2/p' "$TMP/sc-flag.dot" | sort \
    >"$TMP/sc.dashed"
ok "serial-comm's --dump-dot shows its barrier edges (dashed), each from a collective to compute or back" \
   '[ "$nextra" -gt 0 ] && [ "$crossing" -eq "$nextra" ] &&
    [ -z "$(printf "%s\n" "$extra" | sort | comm -23 - "$TMP/sc.dashed")" ]'
finish
