#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/plan_strands.sh: `helix plan-strands` on synthetic overlap tables of a tiny model
# (tp 2 + sequence parallel, the keys of the graph built by tests/schedulers/synth_overlap,
# times from flops and bytes; nothing is timed).  A table where collectives overlap compute
# gives a plan faster than sequential, the same on every run, written as helix-plan-1 JSON;
# a table with no overlap gives exactly the sequential time; model flags that agree pass.
# Bad input exits 2 with one message naming it: no --profile, a missing table, bad JSON, a
# wrong schema, a missing pair, a missing key, a negative time (the table is read by
# hx_overlap_table_load, whose wording these are), an op that is not the graph's under its
# key, a model flag that differs from the table's, a layer the model lacks or whose ops
# differ from the profiled layer's (layer 0 starts with its own LayerNorm; later layers
# receive it fused into the previous layer's residual add), one micro-batch per rank (no
# second strand).
# shellcheck disable=SC2016,SC2034,SC2317  # ok evals its single-quoted checks
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

GEN=$HX_BUILDDIR/tests/schedulers/synth_overlap
MODEL="2 64 4 32 2 256 2 1 1 2" # L C H T B V tp sp dp M: 2 layers, C 64, tp 2 + sp
GOOD=$TMP/overlap.json
SERIAL=$TMP/serial.json
plan 20

# shellcheck disable=SC2086  # MODEL is a list of numbers
"$GEN" "$GOOD" $MODEL 1 overlap && "$GEN" "$SERIAL" $MODEL 1 serial || # layer 1
    echo "# cannot write the synthetic tables with $GEN"

# the number after a label on the totals line: "predicted makespan P ms against S ms ..."
total() { sed -n 's/^predicted makespan \([0-9.]*\) ms against \([0-9.]*\) ms.*/\1 \2/p' "$OUT"; }
faster() { total | awk '{ exit !($1 > 0 && $1 < $2) }'; }
equal() { total | awk '{ exit !($1 > 0 && $1 == $2) }'; }

run "$HELIX" plan-strands --profile "$GOOD" --out "$TMP/plan.json"
ok "a table with overlap: a plan faster than sequential" 'rc_is 0 && faster'
ok "each step lists its forward and backward keys with op names" \
    'out_has "co-run" && out_has "F: F[0-9]* [a-z_]*" && out_has "B: B[0-9]* [a-z_]*"'
ok "the plan is written as helix-plan-1 JSON" \
    'grep -q "\"schema\": \"helix-plan-1\"" "$TMP/plan.json" && out_has "plan written to"'
sed '/plan written/d' "$OUT" >"$TMP/first.txt"
run "$HELIX" plan-strands --profile "$GOOD" --out "$TMP/plan2.json"
ok "the same table gives the same plan" \
    'rc_is 0 && sed "/plan written/d" "$OUT" | cmp -s - "$TMP/first.txt"'
ok "and the same plan file" 'cmp -s "$TMP/plan.json" "$TMP/plan2.json"'

run "$HELIX" plan-strands --profile "$SERIAL"
ok "a table with no overlap (co-run = a + b): predicted = sequential" 'rc_is 0 && equal'

run "$HELIX" plan-strands --profile "$GOOD" --num-layers 2 --hidden-size 64 \
    --tensor-model-parallel-size 2 --sequence-parallel --global-batch-size 4 --layer 1 \
    --max-orders 4 --max-segment 4 --barrier-us 5
ok "model flags that agree with the table, small caps, a barrier cost" \
    'rc_is 0 && faster && out_has "layer 1 of" && out_has "barrier of 5 us"'

# bad WORDS ARGS...: exit 2, nothing on stdout, every '|'-separated WORD on stderr
bad() {
    bad_desc=$1
    bad_words=$2
    shift 2
    run "$HELIX" plan-strands "$@"
    ok "$bad_desc: exit 2 naming it" 'rc_is 2 && [ ! -s "$OUT" ] && has_words "$bad_words"'
}
has_words() {
    old_ifs=$IFS
    IFS='|'
    for w in $1; do
        grep -q -F -e "$w" "$ERR" || { IFS=$old_ifs; return 1; }
    done
    IFS=$old_ifs
}

bad "no --profile" "needs --profile"
bad "a missing table" "cannot open overlap table|$TMP/none.json|profile-overlap" \
    --profile "$TMP/none.json"
head -c 300 "$GOOD" >"$TMP/cut.json"
bad "a truncated table" "not valid JSON|line" --profile "$TMP/cut.json"
sed 's/helix-overlap-1/helix-overlap-2/' "$GOOD" >"$TMP/schema.json"
bad "a wrong schema" "helix-overlap-2|reads \"helix-overlap-1\"" --profile "$TMP/schema.json"
sed '/"a": "F1", "b": "B2",/d' "$GOOD" >"$TMP/pair.json"
bad "a missing pair" "no entry for (F1, B2)" --profile "$TMP/pair.json"
sed '/"key": "B3",/d' "$GOOD" >"$TMP/key.json"
bad "a missing key" "ops[|].key is \"B4\"|expected \"B3\"" --profile "$TMP/key.json"
sed 's/"key": "F0", "op": "[a-z_]*"/"key": "F0", "op": "gelu_fwd"/' "$GOOD" >"$TMP/op.json"
sed 's/"corun_ms": /"corun_ms": -/' "$GOOD" >"$TMP/negative.json"
bad "a negative co-run time" "negative time|pairs[0]" --profile "$TMP/negative.json"
bad "an op that is not the graph's" "F0 is gelu_fwd|re-profile" --profile "$TMP/op.json"
bad "a model flag against the table" "--hidden-size 128|hidden_size 64" --profile "$GOOD" \
    --hidden-size 128
bad "a layer the model lacks" "layer 5|--layer 0..1" --profile "$GOOD" --layer 5
bad "layer 0 (its own first LayerNorm) from layer 1's table" "profiled on layer 1|plan layer 1" \
    --profile "$GOOD" --layer 0
bad "a segment bound of 0" "--max-segment" --profile "$GOOD" --max-segment 0
sed 's/"num_micro_batches": 2/"num_micro_batches": 1/' "$GOOD" >"$TMP/onemb.json"
bad "one micro-batch per rank" "num_micro_batches >= 2 x dp" --profile "$TMP/onemb.json"
finish
