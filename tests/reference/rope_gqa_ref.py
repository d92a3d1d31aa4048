#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Independent PyTorch oracle of RoPE + grouped-query attention, for
tests/codelets/rope_gqa_torch.c.

Usage: /usr/bin/python3 tests/reference/rope_gqa_ref.py INPUT.bin OUTPUT.bin
Reads qkv (nseq*T, (NH + 2 KV) hs) and dout (nseq*T, NH hs) in float32, and
computes, as HF transformers' Llama does (rotate_half RoPE, repeat_interleave of
the kv heads, causal softmax attention):
  qkv_rot = q and k heads turned by RoPE, v as given,
  out, lse (log-sum-exp of each query row's scaled, masked scores),
  dqkv = d sum(out * dout) / d qkv (autograd, through RoPE and the repeat).
The angle pos * inv_freq is HF's float32 value (inv_freq = 1 / (base **
(arange(0, hs, 2).float() / hs))); cos, sin and all that follows are float64,
so the output is an oracle for helix's fp32 kernels at helix's codelet
tolerance.  Formats: tests/reference/README.md.  Exit 0 on success, 1 on a bad
file or I/O error (one line on stderr), 2 on bad usage.
"""
import os
import struct
import sys

import numpy as np
import torch

IN_MAGIC, OUT_MAGIC, VERSION = 20261127, 20261128, 1
HDR = "<8if"  # magic, version, nseq, T, NH, KV, hs, 0; base


class InputError(Exception):
    """A malformed INPUT.bin; the message names the problem."""


def read_input(path):
    with open(path, "rb") as f:
        data = f.read()
    n0 = struct.calcsize(HDR)
    if len(data) < n0:
        raise InputError("%d bytes, shorter than the %d-byte header" % (len(data), n0))
    magic, version, nseq, T, NH, KV, hs, zero, base = struct.unpack_from(HDR, data)
    if magic != IN_MAGIC or version != VERSION:
        raise InputError("magic %d version %d, expected %d %d" % (magic, version, IN_MAGIC,
                                                                  VERSION))
    if min(nseq, T, NH, KV, hs) <= 0 or NH % KV != 0 or hs % 2 != 0 or zero != 0:
        raise InputError("bad sizes nseq %d T %d NH %d KV %d hs %d (NH %% KV == 0, hs even, "
                         "all positive)" % (nseq, T, NH, KV, hs))
    if not base > 1.0:
        raise InputError("base %r must exceed 1" % base)
    N, W, C = nseq * T, (NH + 2 * KV) * hs, NH * hs
    want = n0 + 4 * (N * W + N * C)
    if len(data) != want:
        raise InputError("%d bytes, expected %d for these sizes" % (len(data), want))
    qkv = np.frombuffer(data, dtype="<f4", count=N * W, offset=n0).reshape(N, W)
    dout = np.frombuffer(data, dtype="<f4", count=N * C, offset=n0 + 4 * N * W).reshape(N, C)
    if not (np.isfinite(qkv).all() and np.isfinite(dout).all()):
        raise InputError("non-finite qkv or dout")
    return nseq, T, NH, KV, hs, base, qkv, dout


def rope_cos_sin(T, hs, base):
    """HF Llama's rotary tables, (T, hs): the angle in float32, then cos and sin in float64."""
    inv_freq = 1.0 / (base ** (torch.arange(0, hs, 2, dtype=torch.int64).float() / hs))
    freqs = torch.arange(T).float()[:, None] * inv_freq[None, :]  # float32, (T, hs/2)
    emb = torch.cat((freqs, freqs), dim=-1).double()
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def forward(qkv, nseq, T, NH, KV, hs, base):
    """(qkv_rot, out, lse) from qkv (N, W) float64; heads as (nseq, heads, T, hs)."""
    C, Ckv = NH * hs, KV * hs

    def heads(x, nh):  # (N, nh hs) -> (nseq, nh, T, hs)
        return x.reshape(nseq, T, nh, hs).transpose(1, 2)

    def rows(x):  # (nseq, heads, T, d) -> (N, heads d)
        return x.transpose(1, 2).reshape(nseq * T, -1)

    q, k, v = heads(qkv[:, :C], NH), heads(qkv[:, C:C + Ckv], KV), heads(qkv[:, C + Ckv:], KV)
    cos, sin = rope_cos_sin(T, hs, base)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    group = NH // KV
    k_rep = k.repeat_interleave(group, dim=1)  # query head h reads kv head h // group
    v_rep = v.repeat_interleave(group, dim=1)
    scores = (q @ k_rep.transpose(-1, -2)) / (hs ** 0.5)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # (nseq, NH, T)
    out = torch.softmax(scores, dim=-1) @ v_rep
    qkv_rot = torch.cat((rows(q), rows(k), rows(v)), dim=1)
    return qkv_rot, rows(out), rows(lse.unsqueeze(-1))


def main(argv):
    prog = os.path.basename(argv[0]) if argv else "rope_gqa_ref.py"
    if len(argv) != 3:
        print("usage: %s INPUT.bin OUTPUT.bin" % prog, file=sys.stderr)
        return 2
    try:
        nseq, T, NH, KV, hs, base, qkv32, dout32 = read_input(argv[1])
    except (InputError, OSError) as e:
        print("%s: %s: %s" % (prog, argv[1], e), file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    qkv = torch.from_numpy(qkv32.astype(np.float64)).requires_grad_(True)
    dout = torch.from_numpy(dout32.astype(np.float64))
    qkv_rot, out, lse = forward(qkv, nseq, T, NH, KV, hs, base)
    (out * dout).sum().backward()
    try:
        with open(argv[2], "wb") as f:
            f.write(struct.pack("<4i", OUT_MAGIC, VERSION, 0, 0))
            for x in (qkv_rot, out, lse, qkv.grad):
                f.write(x.detach().numpy().astype("<f8").tobytes())
    except OSError as e:
        print("%s: cannot write %s: %s" % (prog, argv[2], e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
