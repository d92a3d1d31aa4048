#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli/bad_input.sh: every bad flag, data file or checkpoint is a usage error: exit 2,
# nothing on stdout (no work started), one stderr line naming the problem (each case lists its
# words), and the checkpoint made first stays byte for byte.  A diverging run (non-finite
# loss) and a save past `ulimit -f` exit 1 and leave the checkpoints as they were.
# shellcheck disable=SC2016,SC2034,SC2086,SC2317  # ok evals its single-quoted checks
# shellcheck disable=SC2059  # binary files are written with printf formats of octal escapes
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

TINY="--num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32 \
--micro-batch-size 4 --workers 2 --progress-bar 0 --sample-tokens 0 --log-interval 1"
GOOD=$TMP/good

# shard VERSION COUNT N: an llm.c token shard whose header says COUNT tokens, holding N ids.
shard() {
    le32 20240520
    le32 "$1"
    le32 "$2"
    zeros 1012
    i=0
    while [ $i -lt "$3" ]; do
        le16 $((i * 37 % 1000 + 300))
        i=$((i + 1))
    done
}

# One good checkpoint first; every case below must leave it as it is.
good_checkpoint "$GOOD" $TINY
CKPT=$GOOD/ckpt-00000003.bin

printf '' >"$TMP/empty.txt"
printf 'hello, world\n' >"$TMP/short.txt"
printf 'lr = 1e-3\n# a comment\nnum-layer = 3\n' >"$TMP/typo.cfg"
printf 'lr = 1e-3\nlayers 3\n' >"$TMP/noeq.cfg"
shard 3 200 200 >"$TMP/v3.bin"
shard 1 200 150 >"$TMP/short_shard.bin"
shard 1 200 200 >"$TMP/shard.bin"
mkdir "$TMP/nolatest" "$TMP/dangling" "$TMP/truncdir"
echo ckpt-00000007.bin >"$TMP/dangling/latest"
head -c 200000 "$CKPT" >"$TMP/truncdir/ckpt-00000003.bin"
cp "$GOOD/latest" "$TMP/truncdir/latest"
cp "$CKPT" "$TMP/flipped.bin" # one bit of one byte in the middle of the tensors
byte=$(od -A n -t u1 -j 300000 -N 1 "$CKPT" | tr -d ' ')
bytes $((byte ^ 1)) | dd of="$TMP/flipped.bin" bs=1 seek=300000 conv=notrunc 2>/dev/null
cp "$CKPT" "$TMP/magic.bin"
printf 'HYCK' | dd of="$TMP/magic.bin" bs=1 seek=0 conv=notrunc 2>/dev/null
{ le32 20240326; le32 3; le32 1024; zeros 1012; } >"$TMP/llmc_damaged.bin"
# an llm.c model of maxT=8 V=256 L=1 NH=1 C=4: (256 + 8 + 2) 4 + (12 16 + 13 4) = 1308 floats
{ le32 20240326; le32 3; le32 8; le32 256; le32 1; le32 1; le32 4; le32 256; zeros 992;
  zeros 5232; } >"$TMP/llmc_small.bin"

plan 51

# flags
bad "unknown flag" "unknown flag --num-layer|did you mean --num-layers" \
    train --num-layer 2
bad "non-numeric integer" "--train-iters|integer|'abc'" train --train-iters abc
bad "non-numeric float, --name=value form" "--lr|number|'fast'" train --lr=fast
bad "integer trailing garbage" "--seed|integer|'12x'" train --seed 12x
bad "out of range" "--num-layers 0|out of range" train --num-layers 0
bad "float out of range" "--lr 11|out of range|0..10" train --lr 11
bad "--prefetch-memory not a size" "--prefetch-memory '12Q'|K, M or G" train \
    --sched hx-prefetch --prefetch-memory 12Q
bad "--prefetch-memory without hx-prefetch" "--prefetch-memory|--sched hx-prefetch" train \
    --prefetch-memory 64M --sched hx-prio
bad "heads not dividing the hidden size" \
    "--hidden-size 64|not divisible|--num-attention-heads 5" \
    train --hidden-size 64 --num-attention-heads 5
bad "global batch not a multiple of the micro-batch" \
    "--global-batch-size 6|not a multiple|--micro-batch-size 4" \
    train --micro-batch-size 4 --global-batch-size 6
bad "--min-lr above --lr" "--min-lr 0.01|above --lr 0.001" train --lr 1e-3 --min-lr 1e-2
bad "bad --lr-decay-style" "--lr-decay-style 'cos'|cosine, linear or constant" \
    train --lr-decay-style cos
bad "unknown --preset" "unknown --preset 'huge'|tiny|small|gpt2-124m" train --preset huge
bad "unknown --sched, with the choices" "unknown --sched 'bogus'|hx-prio|eager|dmda" \
    train --sched bogus
bad "--config with an unknown key: file and line" \
    "$TMP/typo.cfg:3|unknown flag --num-layer|did you mean --num-layers" \
    train --config "$TMP/typo.cfg"
bad "--config line without '='" "$TMP/noeq.cfg:2|key = value|'layers 3'" \
    train --config "$TMP/noeq.cfg"
bad "--config of a missing file" "$TMP/none.cfg|--config" train --config "$TMP/none.cfg"
bad "--load and --load-llmc together" "--load and --load-llmc|not both" \
    train --load "$GOOD" --load-llmc "$TMP/llmc_small.bin"
bad "missing value at the end" "--lr needs a value" train --lr
bad "unexpected positional argument" "unexpected argument 'foo'" train --num-layers 2 foo
bad "unknown command" "unknown command 'trian'|helix --help" trian
run "$HELIX"
ok "no command: exit 2, the usage on stderr, empty stdout" \
    'rc_is 2 && [ ! -s "$OUT" ] && err_has "^usage: helix <command>"'

# data files
bad "missing --data-path file" "$TMP/missing.txt|--data-path" \
    train --data-path "$TMP/missing.txt"
bad "--data-path names a directory" "'$TMP'" train --data-path "$TMP"
bad "empty data file" "$TMP/empty.txt|empty" train --data-path "$TMP/empty.txt"
bad "data shorter than --seq-length" "$TMP/short.txt|13 tokens|--seq-length 32" \
    train --data-path "$TMP/short.txt" --seq-length 32
bad "llm.c token shard of version 3" "$TMP/v3.bin|version 3|versions read are 1" \
    train --data-path "$TMP/v3.bin" --vocab-size 50257
bad "token shard shorter than its header's count" \
    "$TMP/short_shard.bin|1324 bytes|200 tokens|truncated" \
    train --data-path "$TMP/short_shard.bin" --vocab-size 50257
bad "token shard without --vocab-size 50257" \
    "$TMP/shard.bin|--vocab-size is 256|--vocab-size 50257" \
    train --data-path "$TMP/shard.bin"
bad "malformed --split" "--split '949,x,1'|weight 2 'x'" train --split 949,x,1
bad "--split leaving validation shorter than a sequence" \
    "--split '100,0.001,0'|validation part 3|--seq-length 32" \
    train $TINY --split 100,0.001,0

# checkpoints: --load (each with --save at the good checkpoint: it must not be touched)
bad "--load of a missing directory" "$TMP/nodir|no checkpoint" \
    train --load "$TMP/nodir" --save "$GOOD"
bad "--load of a directory without 'latest'" "$TMP/nolatest|no 'latest'" \
    train --load "$TMP/nolatest" --save "$GOOD"
bad "--load of a directory whose 'latest' names a missing file" \
    "$TMP/dangling/ckpt-00000007.bin|cannot open checkpoint" \
    train --load "$TMP/dangling" --save "$GOOD"
bad "--load of a truncated checkpoint" "$TMP/truncdir/ckpt-00000003.bin|truncated|200000 bytes" \
    train --load "$TMP/truncdir" --save "$GOOD"
bad "--load of a checkpoint with one flipped bit" "$TMP/flipped.bin|corrupted|checksum" \
    train --load "$TMP/flipped.bin" --save "$GOOD"
bad "--load of a file with the wrong magic" "$TMP/magic.bin|not a helix checkpoint|magic" \
    train --load "$TMP/magic.bin" --save "$GOOD"
bad "--load of an llm.c model file" "$TMP/llmc_small.bin|llm.c checkpoint|--load-llmc" \
    train --load "$TMP/llmc_small.bin" --save "$GOOD"
bad "--num-layers contradicting the checkpoint" \
    "--num-layers 3 contradicts the checkpoint $GOOD|--num-layers 2" \
    train --load "$GOOD" --save "$GOOD" --num-layers 3 --train-iters 6
bad "a bad flag beside a good --load" "--lr|number|'x'" \
    train --load "$GOOD" --save "$GOOD" --train-iters 6 --lr x
bad "--load-llmc of a damaged header" "$TMP/llmc_damaged.bin|must all be positive" \
    train --load-llmc "$TMP/llmc_damaged.bin"
bad "--load-llmc with shape flags that contradict the file" \
    "--num-layers 2 contradicts $TMP/llmc_small.bin, which has 1|drop the flag" \
    train $TINY --load-llmc "$TMP/llmc_small.bin"

# where the run writes
bad "--save names a regular file" "--save $CKPT|not a directory" train $TINY --save "$CKPT"
bad "--save under a regular file (unwritable even for root)" \
    "--save $CKPT/sub|cannot be created|not a writable directory" \
    train $TINY --save "$CKPT/sub"
bad "--log-json in a missing directory" "--log-json $TMP/nodir/log.jsonl|No such file" \
    train $TINY --train-iters 1 --log-json "$TMP/nodir/log.jsonl"

# A non-finite loss: decoupled weight decay of lr * wd = 100 multiplies the weights by -99
# per step, so they overflow within a dozen steps, always at the same step (deterministic).
# (--lr-decay-iters: the good checkpoint's schedule decayed over its 3 steps, and a resume
# keeps it unless told otherwise.)
DIVERGE="--lr 10 --weight-decay 10 --lr-warmup-iters 0 --lr-decay-iters 40 --clip-grad 0 \
--train-iters 40"
cp -R "$GOOD" "$TMP/nan1"
run timeout 50 "$HELIX" train $TINY $DIVERGE --load "$TMP/nan1" --save "$TMP/nan1" \
    --save-interval 100
last=$(grep '^step' "$OUT" | tail -n 1 | sed 's|^step *\([0-9]*\)/.*|\1|')
ok "loss diverges to NaN: exit 1, one error line naming step $((last + 1)), not finite" \
    'rc_is 1 && [ "$(grep -c "^helix: error:" "$ERR")" -eq 1 ] &&
     has_words "step $((last + 1))|not finite" && [ "$last" -lt 40 ]'
GOOD=$TMP/nan1
ok "... nothing saved: that checkpoint directory is byte for byte as before" 'unchanged'
GOOD=$TMP/good
# Saving every 2 steps on the way: what 'latest' names then must be finite (a validation of
# it gives a number), and older than the step that failed.
cp -R "$GOOD" "$TMP/nan2"
run timeout 50 "$HELIX" train $TINY $DIVERGE --load "$TMP/nan2" --save "$TMP/nan2" \
    --save-interval 2
kept=$(sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.bin$/\1/p' "$TMP/nan2/latest")
run timeout 50 "$HELIX" train --load "$TMP/nan2" --train-iters "${kept:-1}" --workers 2
ok "... saving every 2 steps: the checkpoint kept (step $kept) is finite" \
    'rc_is 0 && out_has "^validation | step $kept | val loss [0-9]"'

# A full disk while saving: past `ulimit -f` (512-byte blocks) write() fails with EFBIG, "File
# too large", the same path as ENOSPC; the old checkpoint and 'latest' must stay.
cp -R "$GOOD" "$TMP/full"
LAST_CMD="(ulimit -f 64; helix train ... --load $TMP/full --save $TMP/full --train-iters 5)"
(
    ulimit -f 64
    exec timeout 50 "$HELIX" train $TINY --load "$TMP/full" --save "$TMP/full" --train-iters 5 \
        --save-interval 1
) >"$OUT" 2>"$ERR"
RC=$?
ok "save past the file size limit: exit 1, one error line 'file too large', names the file" \
    'rc_is 1 && [ "$(lines "$ERR")" -eq 1 ] && err_has "^helix: error: " &&
     has_words "file too large|$TMP/full/ckpt-00000004.bin|previous checkpoint"'
GOOD=$TMP/full
ok "... no .tmp left, the old checkpoint and 'latest' byte for byte as before" 'unchanged'
GOOD=$TMP/good

ok "the good checkpoint directory is byte for byte as it was made" 'unchanged'

finish
