#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/llama.sh: the Llama settings from the command line: --preset llama-tiny trains and
# says what its layers are; its checkpoint is format 2 (GPT-2's stays format 1, readable by
# the helix before format 2) and resumes to the same losses, to the last digit, as the run
# that wrote it; a checkpoint refuses a model flag that contradicts it; bad Llama flags exit 2
# with one line naming the flag, before any work; profile-overlap and plan-strands take a
# Llama layer, and hx-strand runs the plan without changing a number.
# shellcheck disable=SC2016,SC2086  # ok evals its quoted checks; $ARGS splits
set -u
. "$(dirname "$0")/lib.sh"
plan 15
ARGS="--preset llama-tiny --seq-length 32 --micro-batch-size 4 --log-interval 1 \
--eval-interval 0 --sample-tokens 0 --workers 2 --progress-bar 0 --train-iters 4"
# steps FILE: the step lines without their timings
steps() { sed -n 's/^step *\([0-9]*\)\/[0-9]* | \(loss .* | grad norm [^ ]*\) | .*/\1 \2/p' "$1"; }
# version FILE: the checkpoint format (the u32 after the 8-byte magic)
version() { od -A n -t u4 -j 8 -N 4 "$1" | tr -d ' '; }

run "$HELIX" train $ARGS --save "$TMP/ck" --save-interval 2
cp "$OUT" "$TMP/full.out"
ok "llama-tiny trains 4 steps" 'rc_is 0 && [ "$(steps "$TMP/full.out" | wc -l)" -eq 4 ]'
ok "... and says what its layers are" \
    'out_has "^model: RMSNorm, SwiGLU MLP of 176, rotary positions, 2 key/value heads for 4 query heads, untied output layer, no biases"'
ok "its checkpoint is format 2" '[ "$(version "$TMP/ck/ckpt-00000004.bin")" = 2 ]'

run "$HELIX" train $ARGS --load "$TMP/ck/ckpt-00000002.bin"
steps "$TMP/full.out" | sed -n '3,4p' >"$TMP/want"
steps "$OUT" >"$TMP/got"
ok "resumed at step 2: steps 3 and 4 are the uninterrupted run's" \
    'rc_is 0 && [ -s "$TMP/want" ] && cmp -s "$TMP/want" "$TMP/got"'

run "$HELIX" train --preset tiny --train-iters 1 --sample-tokens 0 --eval-interval 0 \
    --workers 2 --progress-bar 0 --save "$TMP/gpt"
ok "a GPT-2 checkpoint stays format 1" \
    'rc_is 0 && [ "$(version "$TMP/gpt/ckpt-00000001.bin")" = 1 ]'

run "$HELIX" train $ARGS --load "$TMP/ck" --model gpt --train-iters 5
ok "--model gpt against a Llama checkpoint: exit 2, named" \
    'rc_is 2 && err_has "model gpt contradicts the checkpoint"'
run "$HELIX" train $ARGS --num-query-groups 3
ok "--num-query-groups 3 of 4 heads: exit 2, named" \
    'rc_is 2 && err_has "num-query-groups 3 does not divide --num-attention-heads 4"'
run "$HELIX" train $ARGS --normalization rms
ok "--normalization rms: exit 2, names the two choices" \
    'rc_is 2 && err_has "is not LayerNorm or RMSNorm"'
run "$HELIX" train $ARGS --position-embedding-type alibi
ok "--position-embedding-type alibi: exit 2" 'rc_is 2 && err_has "is not learned_absolute or rope"'
run "$HELIX" train --preset tiny --group-query-attention --train-iters 1
ok "--group-query-attention alone: exit 2, asks for --num-query-groups" \
    'rc_is 2 && err_has "without --num-query-groups"'
run "$HELIX" train --model llama --load-llmc "$TMP/none.bin" --train-iters 1
ok "--load-llmc with --model llama: exit 2, named" \
    'rc_is 2 && err_has "load-llmc reads llm.c.s GPT-2 weights"'
run "$HELIX" train --preset llama-tiny --hidden-size 60 --num-attention-heads 4 --train-iters 1
ok "RoPE with an odd head size (60 / 4 = 15): exit 2, named" \
    'rc_is 2 && err_has "even head size"'

# DHelix's loop on a Llama: its layer profiled, a plan, hx-strand with it, bitwise plain
M="--model llama --num-layers 4 --hidden-size 64 --num-attention-heads 4 --num-query-groups 2
 --ffn-hidden-size 96 --seq-length 32 --micro-batch-size 2"
run "$HELIX" profile-overlap $M --num-micro-batches 4 --repeats 1 --classes --workers 2 \
    --out "$TMP/ov.json"
ok "profile-overlap of a Llama layer records its settings in the table's model" \
    'rc_is 0 && grep -q "\"swiglu\": 1" "$TMP/ov.json" && grep -q "\"num_query_groups\": 2" "$TMP/ov.json"'
run "$HELIX" plan-strands --profile "$TMP/ov.json" --out "$TMP/plan.json"
T="$M --global-batch-size 8 --train-iters 3 --eval-interval 0 --sample-tokens 0 --workers 2
 --progress-bar 0 --log-interval 1"
run "$HELIX" train $T --strands --strand-plan "$TMP/plan.json" --sched hx-strand
steps "$OUT" >"$TMP/strand"
ok "plan-strands plans it and hx-strand applies the plan to every pair" \
    'rc_is 0 && out_has "strand plan .*: 6 of them planned"'
run "$HELIX" train $T
steps "$OUT" >"$TMP/plain"
ok "... with bitwise the losses and norms of plain training" \
    'rc_is 0 && [ -s "$TMP/plain" ] && cmp -s "$TMP/plain" "$TMP/strand"'
finish
