#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Independent PyTorch GPT-2 training-step oracle for tests/graphs/torch_parity.c.

Usage: /usr/bin/python3 tests/reference/gpt_ref.py INPUT.bin OUTPUT.bin
Reads a model + data + hyperparameter file, runs S AdamW steps of GPT-2
(pre-LayerNorm, tied embeddings, tanh GELU) in float32 and writes per-step
loss and gradient norm, the step-0 gradients and the final parameters.
Formats: tests/reference/README.md.  Exit 0 on success, 1 on a bad file or
I/O error (one line on stderr), 2 on bad usage.
"""
import math
import sys

import torch
import torch.nn.functional as F

import ref_step
from ref_step import InputError

VERSION = 1
INT_NAMES = ["magic", "version", "V", "maxT", "L", "NH", "C", "T", "B", "M", "S",
             "warmup", "decay"]
FLT_NAMES = ["lr", "min_lr", "beta1", "beta2", "eps", "weight_decay", "clip_grad", "ln_eps"]


def param_specs(V, maxT, L, C):
    """[(name, shape, decayed)] in file order; decayed = 2-D weight (gets weight decay)."""
    specs = [("wte", (V, C), True), ("wpe", (maxT, C), True)]
    for l in range(L):
        p = "h%d." % l
        specs += [(p + "ln1_w", (C,), False), (p + "ln1_b", (C,), False),
                  (p + "qkv_w", (3 * C, C), True), (p + "qkv_b", (3 * C,), False),
                  (p + "proj_w", (C, C), True), (p + "proj_b", (C,), False),
                  (p + "ln2_w", (C,), False), (p + "ln2_b", (C,), False),
                  (p + "fc_w", (4 * C, C), True), (p + "fc_b", (4 * C,), False),
                  (p + "fcproj_w", (C, 4 * C), True), (p + "fcproj_b", (C,), False)]
    return specs + [("lnf_w", (C,), False), ("lnf_b", (C,), False)]


def read_input(path):
    """Parse and validate INPUT.bin -> dict(cfg, hp, params{name: np.float32}, tokens, targets)."""
    data, cfg, hp = ref_step.read_header(path, VERSION, INT_NAMES, FLT_NAMES, INT_NAMES[2:11],
                                         ["eps", "ln_eps"])
    C, T = cfg["C"], cfg["T"]
    if C % cfg["NH"] != 0:
        raise InputError("%s: C = %d is not divisible by NH = %d" % (path, C, cfg["NH"]))
    if T > cfg["maxT"]:
        raise InputError("%s: sequence length T = %d exceeds maxT = %d" % (path, T, cfg["maxT"]))
    specs = param_specs(cfg["V"], cfg["maxT"], cfg["L"], C)
    return ref_step.read_body(path, data, cfg, hp, specs)


def gpt_loss(P, tokens, targets, L, NH, ln_eps):
    """Mean cross-entropy of one micro-batch.  P: {name: tensor}; tokens/targets (B,T) int64.
    Works in whatever dtype P holds (float32 for the oracle, float64 in the self-check)."""
    B, T = tokens.shape
    C = P["wte"].shape[1]
    hs = C // NH
    x = P["wte"][tokens] + P["wpe"][:T]                        # (B,T,C)
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)         # True above the diagonal
    for l in range(L):
        p = "h%d." % l
        a = F.layer_norm(x, (C,), P[p + "ln1_w"], P[p + "ln1_b"], ln_eps)
        qkv = a @ P[p + "qkv_w"].t() + P[p + "qkv_b"]           # (B,T,3C)
        q, k, v = qkv.split(C, dim=-1)                           # each (B,T,C)
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))  # (B,NH,T,hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B,NH,T,T)
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)          # heads back in order, (B,T,C)
        x = x + (y @ P[p + "proj_w"].t() + P[p + "proj_b"])
        b = F.layer_norm(x, (C,), P[p + "ln2_w"], P[p + "ln2_b"], ln_eps)
        h = F.gelu(b @ P[p + "fc_w"].t() + P[p + "fc_b"], approximate="tanh")  # (B,T,4C)
        x = x + (h @ P[p + "fcproj_w"].t() + P[p + "fcproj_b"])
    x = F.layer_norm(x, (C,), P["lnf_w"], P["lnf_b"], ln_eps)
    logits = x @ P["wte"].t()                                    # (B,T,V), tied weights
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def loss_for(inp):
    cfg, hp = inp["cfg"], inp["hp"]
    return lambda P, tokens, targets: gpt_loss(P, tokens, targets, cfg["L"], cfg["NH"],
                                               hp["ln_eps"])


if __name__ == "__main__":
    sys.exit(ref_step.main(sys.argv, "gpt_ref.py", read_input, loss_for))
