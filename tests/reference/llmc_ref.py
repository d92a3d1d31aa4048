#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Random small GPT-2 in llm.c's file layouts, and its PyTorch loss, for tests/graphs/llmc_import.c.

Usage: /usr/bin/python3 tests/reference/llmc_ref.py [--version 1|3] [--seed N]
           MODEL.bin BATCH.bin OUT.txt
Writes MODEL.bin (llm.c float32 model: V=300, maxT=24, L=2, NH=4, C=64; version 3 pads the
vocabulary to Vp=320, version 1 does not), BATCH.bin (llm.c token shard of B*T+1 = 33 ids
in [0, V)) and OUT.txt with the mean cross-entropy of the model on the batch (B=2, T=16),
computed by gpt_ref.gpt_loss in float64 ("loss") and float32 ("loss_f32").
Formats: tests/reference/README.md.  Exit 0 on success, 1 on an I/O error, 2 on bad usage.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_ref import gpt_loss, param_specs  # noqa: E402  (the same model as torch_parity)

MODEL_MAGIC, SHARD_MAGIC = 20240326, 20240520
HEADER_INTS = 256
V, VP, MAXT, L, NH, C = 300, 320, 24, 2, 4, 64
B, T = 2, 16
LN_EPS = 1e-5
STD = 0.1

# llm.c's grouped order: every layer's tensor of one kind, kind after kind (gpt_ref's names).
LAYER_KINDS = ["ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
               "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b"]


def random_params(rng):
    """{name: float32 array} in gpt_ref's shapes: weights, biases and LayerNorm shifts
    N(0, STD), LayerNorm weights 1 + N(0, STD).  STD = 0.1 rather than GPT-2's 0.02: with
    0.02 the loss stays near log(V) and swapping a layer's ln1_b and ln2_b moves it by only
    2e-5 (relative); with 0.1 that swap moves it by 9e-5, well beyond the test's 1e-5."""
    P = {}
    for name, shape, _ in param_specs(V, MAXT, L, C):
        if name.endswith(("ln1_w", "ln2_w", "lnf_w")):
            a = 1.0 + STD * rng.standard_normal(shape)
        else:
            a = STD * rng.standard_normal(shape)
        P[name] = a.astype(np.float32)
    return P


def write_model(path, P, version, rng):
    """llm.c layout: 256 int32 header, then wte (Vp,C), wpe (maxT,C), the 12 per-layer kinds
    grouped over layers ((L, ...) each), lnf_w (C), lnf_b (C).  Version 3 pads wte with
    Vp-V rows; llm.c writes zeros there, we write noise so an importer that keeps them fails."""
    vp = VP if version == 3 else V
    hdr = np.zeros(HEADER_INTS, "<i4")
    hdr[:7] = [MODEL_MAGIC, version, MAXT, V, L, NH, C]
    if version == 3:
        hdr[7] = vp
    pad = (0.5 * rng.standard_normal((vp - V, C))).astype(np.float32)
    parts = [hdr, P["wte"], pad, P["wpe"]]
    for kind in LAYER_KINDS:
        parts += [P["h%d.%s" % (l, kind)] for l in range(L)]
    parts += [P["lnf_w"], P["lnf_b"]]
    with open(path, "wb") as f:
        for a in parts:
            f.write(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes())


def write_shard(path, ids):
    """llm.c token shard: 256 int32 header (magic, version 1, count), then uint16 ids."""
    hdr = np.zeros(HEADER_INTS, "<i4")
    hdr[:3] = [SHARD_MAGIC, 1, ids.size]
    with open(path, "wb") as f:
        f.write(hdr.tobytes())
        f.write(ids.astype("<u2").tobytes())


def batch_loss(P, ids, dtype):
    """Sequence s reads ids[s*T : s*T+T] and predicts ids[s*T+1 : s*T+T+1] (the order in which
    hx_data_next_batch hands out a fresh stream); returns the mean loss over (B,T) as a float."""
    x = np.stack([ids[s * T:s * T + T] for s in range(B)]).astype(np.int64)          # (B,T)
    y = np.stack([ids[s * T + 1:s * T + T + 1] for s in range(B)]).astype(np.int64)  # (B,T)
    Pt = {n: torch.tensor(a, dtype=dtype) for n, a in P.items()}
    with torch.no_grad():
        return float(gpt_loss(Pt, torch.from_numpy(x), torch.from_numpy(y), L, NH, LN_EPS))


def main(argv):
    ap = argparse.ArgumentParser(prog=os.path.basename(argv[0]), description=__doc__.split("\n")[0])
    ap.add_argument("--version", type=int, choices=(1, 3), default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("model")
    ap.add_argument("batch")
    ap.add_argument("out")
    args = ap.parse_args(argv[1:])                               # exits 2 on bad usage
    torch.set_num_threads(1)                                     # reproducible reductions
    rng = np.random.default_rng(args.seed)
    P = random_params(rng)
    ids = rng.integers(0, V, B * T + 1)                          # one stream of B*T+1 ids
    try:
        write_model(args.model, P, args.version, rng)
        write_shard(args.batch, ids)
        with open(args.out, "w") as f:
            f.write("loss %.17g\n" % batch_loss(P, ids, torch.float64))
            f.write("loss_f32 %.9g\n" % batch_loss(P, ids, torch.float32))
    except OSError as e:
        print("%s: cannot write %s: %s" % (ap.prog, e.filename, e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
