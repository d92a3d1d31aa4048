#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Independent PyTorch Llama training-step oracle for tests/graphs/torch_parity.c.

Usage: /usr/bin/python3 tests/reference/llama_ref.py INPUT.bin OUTPUT.bin
Reads a model + data + hyperparameter file (version 2 of gpt_ref.py's format) and
runs S AdamW steps of a Llama-3 style decoder in float32: RMSNorm, rotary position
embeddings (rotate-half, Megatron's and Hugging Face's layout), grouped-query
attention, a SwiGLU MLP, no biases, an output layer not tied to the embedding.
Writes per-step loss and gradient norm, the step-0 gradients and the final
parameters.  Formats: tests/reference/README.md.  Exit 0 on success, 1 on a bad
file or I/O error (one line on stderr), 2 on bad usage.
"""
import math
import sys

import torch
import torch.nn.functional as F

import ref_step
from ref_step import InputError

VERSION = 2
INT_NAMES = ["magic", "version", "V", "maxT", "L", "NH", "C", "T", "B", "M", "S",
             "warmup", "decay", "G", "F"]
FLT_NAMES = ["lr", "min_lr", "beta1", "beta2", "eps", "weight_decay", "clip_grad", "norm_eps",
             "rope_base"]


def param_specs(V, L, C, NH, G, Fh):
    """[(name, shape, decayed)] in file order; decayed = a 2-D weight (gets weight decay)."""
    kv = G * (C // NH)
    specs = [("wte", (V, C), True)]
    for l in range(L):
        p = "h%d." % l
        specs += [(p + "ln1_w", (C,), False), (p + "qkv_w", (C + 2 * kv, C), True),
                  (p + "proj_w", (C, C), True), (p + "ln2_w", (C,), False),
                  (p + "fc_w", (2 * Fh, C), True), (p + "fcproj_w", (C, Fh), True)]
    return specs + [("lnf_w", (C,), False), ("head_w", (V, C), True)]


def read_input(path):
    """Parse and validate INPUT.bin -> dict(cfg, hp, params{name: np.float32}, tokens, targets)."""
    data, cfg, hp = ref_step.read_header(path, VERSION, INT_NAMES, FLT_NAMES,
                                         INT_NAMES[2:11] + ["G", "F"],
                                         ["eps", "norm_eps", "rope_base"],
                                         "; version 1 is GPT-2's, read by gpt_ref.py")
    NH, C, G = cfg["NH"], cfg["C"], cfg["G"]
    if C % NH != 0 or (C // NH) % 2 != 0:
        raise InputError("%s: C = %d over NH = %d heads must give an even head size"
                         % (path, C, NH))
    if NH % G != 0:
        raise InputError("%s: G = %d key/value heads must divide NH = %d" % (path, G, NH))
    if cfg["T"] > cfg["maxT"]:
        raise InputError("%s: sequence length T = %d exceeds maxT = %d"
                         % (path, cfg["T"], cfg["maxT"]))
    return ref_step.read_body(path, data, cfg, hp, param_specs(cfg["V"], cfg["L"], C, NH, G,
                                                               cfg["F"]))


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate(x, cos, sin):
    """RoPE on (B,heads,T,hs): channel i pairs with i + hs/2 (rotate-half)."""
    h = x.shape[-1] // 2
    rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    return x * cos + rot * sin


def llama_loss(P, tokens, targets, cfg, hp):
    """Mean cross-entropy of one micro-batch.  P: {name: tensor}; tokens/targets (B,T)."""
    B, T = tokens.shape
    L, NH, G, C, Fh = cfg["L"], cfg["NH"], cfg["G"], cfg["C"], cfg["F"]
    hs, eps = C // NH, hp["norm_eps"]
    inv_freq = 1.0 / (hp["rope_base"] ** (torch.arange(0, hs, 2, dtype=torch.float32) / hs))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]  # (T, hs/2)
    ang = torch.cat((ang, ang), dim=-1)                                      # (T, hs)
    cos, sin = ang.cos().to(P["wte"].dtype), ang.sin().to(P["wte"].dtype)
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    x = P["wte"][tokens]                                        # (B,T,C), no positions
    for l in range(L):
        p = "h%d." % l
        a = rms_norm(x, P[p + "ln1_w"], eps)
        qkv = a @ P[p + "qkv_w"].t()                             # (B,T,C + 2 G hs)
        q, k, v = qkv.split([C, G * hs, G * hs], dim=-1)
        q = q.view(B, T, NH, hs).transpose(1, 2)                 # (B,NH,T,hs)
        k = k.view(B, T, G, hs).transpose(1, 2)                  # (B,G,T,hs)
        v = v.view(B, T, G, hs).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k = k.repeat_interleave(NH // G, dim=1)                  # head h reads kv h // (NH/G)
        v = v.repeat_interleave(NH // G, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P[p + "proj_w"].t()
        b = rms_norm(x, P[p + "ln2_w"], eps)
        gate, up = (b @ P[p + "fc_w"].t()).split(Fh, dim=-1)     # fc = [gate | up]
        x = x + (F.silu(gate) * up) @ P[p + "fcproj_w"].t()
    x = rms_norm(x, P["lnf_w"], eps)
    logits = x @ P["head_w"].t()                                 # untied output layer
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


if __name__ == "__main__":
    sys.exit(ref_step.main(sys.argv, "llama_ref.py", read_input,
                           lambda inp: lambda P, tokens, targets:
                           llama_loss(P, tokens, targets, inp["cfg"], inp["hp"])))
