#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/bad_checkpoint.sh: hostile checkpoints and llm.c model files are input errors.
# Each crafted file has a valid checksum (tests/fuzz/ckpt_craft.py rewrites a field of a real
# checkpoint and recomputes the FNV-1a trailer), so only the field checks can refuse it: a
# header or settings text claiming a model far bigger than its tensors, a negative step,
# out-of-range optimizer and state fields, unprintable settings, records that are not the
# header's model, a NaN weight (named by tensor and element, for train and sample; an Adam
# second moment of +inf is a value training makes, and loads), and a model that cannot take
# the checkpoint (found before the runtime starts).  Each: exit 2, nothing on stdout, one
# "helix: error:" line naming the file and the field, and the good checkpoint directory byte
# for byte as it was.  --load-llmc takes the model's shape from the
# file; a flag that contradicts it is refused naming both values; its header fields are checked.
# Runs that would allocate without bound on a broken helix get `ulimit -v` (not under ASan).
# shellcheck disable=SC2016,SC2034,SC2086  # ok evals its checks (and reads LAST_CMD); flags split
# shellcheck disable=SC3045  # ulimit -v: dash and bash have it
# shellcheck disable=SC2059  # binary files are written with printf formats of octal escapes
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
SRC=${HX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CRAFT="python3 $SRC/tests/fuzz/ckpt_craft.py"

# the tiny preset: L=2, C=64, V=256, 64 positions; its checkpoint is the 1.4 MB of the issue
TINY="--preset tiny --workers 2 --progress-bar 0 --sample-tokens 0 --log-interval 1"
GOOD=$TMP/good
# address-space cap for runs that must not allocate much (ASan reserves terabytes: none there)
if grep -q '^HX_SAN_FLAGS = -fsanitize' "$HX_BUILDDIR/Makefile" 2>/dev/null; then
    VMEM=unlimited
else
    VMEM=6000000
fi

# capped CMD...: run CMD under the address-space cap and a timeout.
capped() {
    LAST_CMD="(ulimit -v $VMEM; $*)"
    (
        ulimit -v "$VMEM"
        exec timeout 60 "$@"
    ) >"$OUT" 2>"$ERR"
    RC=$?
}
# bad (lib.sh) runs helix capped
bad_run() { capped "$HELIX" "$@"; }

# llmc MAXT V L NH C VP: an llm.c version-3 model header, then its floats (all zero)
llmc() {
    le32 20240326
    le32 3
    for v in "$@"; do le32 "$v"; done
    zeros 992
    n=$((($6 + $1 + 2) * $5 + $3 * (12 * $5 * $5 + 13 * $5)))
    zeros $((4 * n))
}

# One good checkpoint first (the tiny preset's: 1.4 MB); every case must leave it as it is.
good_checkpoint "$GOOD" $TINY
CKPT=$GOOD/ckpt-00000003.bin
craft() { # OUT EDIT...: a copy of the good checkpoint with the edits, checksum recomputed
    out=$1
    shift
    $CRAFT edit "$CKPT" "$out" "$@" || echo "Bail out! ckpt_craft.py failed on $*"
}

craft "$TMP/huge_args.bin" args+hidden-size=8192 args+num-layers=64
craft "$TMP/huge_head.bin" hidden_size=8192 num_layers=64
craft "$TMP/negstep.bin" step=-5
craft "$TMP/nan.bin" 'h1.fc_w[77]=nan'
craft "$TMP/negv.bin" 'wpe.v[3]=-1'
craft "$TMP/infv.bin" 'wpe.v[3]=inf'
craft "$TMP/lr.bin" lr=nan
craft "$TMP/decay.bin" decay_style=7
craft "$TMP/seed.bin" seed=99999999999
craft "$TMP/cursor.bin" train_cursor=18446744073709551000
craft "$TMP/ctrl.bin" "args+sample-prompt=a$(printf '\033')[2Jb"
craft "$TMP/ntensors.bin" ntensors=29
craft "$TMP/record.bin" rec0.rows=128 rec0.cols=128
mkdir "$TMP/renamed"
craft "$TMP/renamed/ckpt-00000003.bin" step=7
cp "$GOOD/latest" "$TMP/renamed/latest"
craft "$TMP/eps.bin" ln_eps=0.001
craft "$TMP/nohidden.bin" args+hidden-size=

plan 25

# a header or settings text that names a model far bigger than its 1.4 MB of tensors
bad "settings say hidden 8192 x 64 layers (valid checksum)" \
    "$TMP/huge_args.bin|hidden-size = 8192|64" \
    train --load "$TMP/huge_args.bin" --save "$GOOD" --train-iters 6
bad "header says hidden 8192 x 64 layers (valid checksum)" \
    "$TMP/huge_head.bin|hidden_size 8192|num_layers 64|payload_bytes" \
    train --load "$TMP/huge_head.bin" --save "$GOOD" --train-iters 6
bad "helix sample of the same header" "$TMP/huge_head.bin|hidden_size 8192" \
    sample --load "$TMP/huge_head.bin" --tokens 2
# state and optimizer fields
bad "step = -5" "$TMP/negstep.bin|step is -5" \
    train --load "$TMP/negstep.bin" --save "$GOOD" --train-iters 6
bad "step that is not the one the file is named after" \
    "$TMP/renamed/ckpt-00000003.bin|step is 7|named after step 3" \
    train --load "$TMP/renamed" --save "$GOOD" --train-iters 9
bad "lr = nan" "$TMP/lr.bin|field lr is nan" train --load "$TMP/lr.bin" --save "$GOOD"
bad "unknown decay style" "$TMP/decay.bin|decay_style is 7" \
    train --load "$TMP/decay.bin" --save "$GOOD"
bad "seed beyond --seed's range" "$TMP/seed.bin|seed is 99999999999" \
    train --load "$TMP/seed.bin" --save "$GOOD"
bad "data cursor near 2^64" "$TMP/cursor.bin|train_cursor is 18446744073709551000" \
    train --load "$TMP/cursor.bin" --save "$GOOD"
bad "settings with a terminal escape" "$TMP/ctrl.bin|settings line|0x1b" \
    train --load "$TMP/ctrl.bin" --save "$GOOD"
ok "... and the escape is not echoed" '! grep -q "$(printf "\\033")" "$ERR"'
# records
bad "ntensors that is not the model's" "$TMP/ntensors.bin|ntensors|28 tensors" \
    train --load "$TMP/ntensors.bin" --save "$GOOD"
bad "a record that is not the header's model" \
    "$TMP/record.bin|tensor 0 is 'wte' (128 x 128)|wte (256 x 64)" \
    train --load "$TMP/record.bin" --save "$GOOD"
# values
bad "a NaN weight: train names file, tensor and element" \
    "$TMP/nan.bin|h1.fc_w|element 77|row 1, column 13|is nan" \
    train --load "$TMP/nan.bin" --save "$GOOD" --train-iters 6
bad "... and sample" "$TMP/nan.bin|h1.fc_w|element 77" sample --load "$TMP/nan.bin" --tokens 2
bad "a negative Adam second moment" "$TMP/negv.bin|wpe|Adam second moment element 3|is -1" \
    train --load "$TMP/negv.bin" --save "$GOOD"
run timeout 60 "$HELIX" sample --load "$TMP/infv.bin" --tokens 2 --workers 2
ok "an Adam second moment of +inf (an overflowed square, as a diverging run saves) loads" \
    'rc_is 0 && [ ! -s "$ERR" ]'
# a model that cannot take the checkpoint: found before the runtime starts (exit 2, not 1)
bad "LayerNorm epsilon no flag builds" "$TMP/eps.bin|LayerNorm epsilon 0.001|1e-05" \
    train --load "$TMP/eps.bin" --train-iters 6
bad "settings without hidden-size: the default model does not fit" \
    "$TMP/nohidden.bin|--hidden-size 64 but the model has 128" \
    train --load "$TMP/nohidden.bin" --train-iters 6

# llm.c model files: the shape comes from the file
llmc 8 256 1 1 4 256 >"$TMP/small.bin"
run timeout 60 "$HELIX" train --load-llmc "$TMP/small.bin" --seq-length 8 --micro-batch-size 2 \
    --train-iters 1 --workers 2 --progress-bar 0 --sample-tokens 0 --eval-iters 1
ok "--load-llmc without shape flags takes the file's shape (L=1, C=4, 1 head, maxT 8, V 256)" \
    'rc_is 0 && out_has "1 layers, C=4, 1 heads, T=8"'
bad "--load-llmc with a contradicting flag" \
    "--hidden-size 8 contradicts $TMP/small.bin, which has 4|drop the flag" \
    train --load-llmc "$TMP/small.bin" --hidden-size 8 --seq-length 8
bad "--load-llmc with a contradicting preset" \
    "--num-layers 2 (from --preset) contradicts $TMP/small.bin, which has 1" \
    train --preset tiny --load-llmc "$TMP/small.bin"
{ le32 20240326; le32 3; le32 8; le32 256; le32 5000; le32 1; le32 4; le32 256; zeros 992; } \
    >"$TMP/layers.bin"
bad "--load-llmc of a header with 5000 layers" "$TMP/layers.bin|field L is 5000" \
    train --load-llmc "$TMP/layers.bin"
cp "$TMP/small.bin" "$TMP/nan_llmc.bin" # wpe[5] = NaN: offset 1024 + 4 (256 x 4 + 5)
bytes 0 0 192 127 | dd of="$TMP/nan_llmc.bin" bs=1 seek=5140 conv=notrunc 2>/dev/null
bad "--load-llmc of a file with a NaN (agreeing shape flags given)" \
    "$TMP/nan_llmc.bin|tensor wpe|element 5 (row 1, column 1)|is nan" \
    train --load-llmc "$TMP/nan_llmc.bin" --num-layers 1 --hidden-size 4 \
    --num-attention-heads 1 --max-position-embeddings 8 --vocab-size 256 --seq-length 8 \
    --workers 2 --progress-bar 0 --sample-tokens 0

ok "the good checkpoint directory is byte for byte as it was made" 'unchanged'

finish
