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
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

IN_MAGIC, OUT_MAGIC, VERSION, OUT_VERSION = 20261122, 20261123, 2, 1
HDR_INTS, HDR_FLOATS, OUT_HDR_INTS = 32, 16, 8
INT_NAMES = ["magic", "version", "V", "maxT", "L", "NH", "C", "T", "B", "M", "S",
             "warmup", "decay", "G", "F"]
FLT_NAMES = ["lr", "min_lr", "beta1", "beta2", "eps", "weight_decay", "clip_grad", "norm_eps",
             "rope_base"]


class InputError(Exception):
    """A malformed INPUT.bin; the message names the problem."""


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
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    fixed = 4 * (HDR_INTS + HDR_FLOATS)
    if len(data) < fixed:
        raise InputError("%s: file is %d bytes, shorter than the %d-byte header"
                         % (path, len(data), fixed))
    hi = np.frombuffer(data, "<i4", HDR_INTS, 0)
    hf = np.frombuffer(data, "<f4", HDR_FLOATS, 4 * HDR_INTS).astype(np.float64)
    cfg = {n: int(hi[i]) for i, n in enumerate(INT_NAMES)}
    hp = {n: float(hf[i]) for i, n in enumerate(FLT_NAMES)}
    if cfg["magic"] != IN_MAGIC:
        raise InputError("%s: bad magic %d (expected %d)" % (path, cfg["magic"], IN_MAGIC))
    if cfg["version"] != VERSION:
        raise InputError("%s: version %d is not a Llama file (expected %d; version 1 is "
                         "GPT-2's, read by gpt_ref.py)" % (path, cfg["version"], VERSION))
    for n in INT_NAMES[2:11] + ["G", "F"]:
        if cfg[n] <= 0:
            raise InputError("%s: header field %s = %d must be positive" % (path, n, cfg[n]))
    for n in ("warmup", "decay"):
        if cfg[n] < 0:
            raise InputError("%s: header field %s = %d must be >= 0" % (path, n, cfg[n]))
    for i in range(len(INT_NAMES), HDR_INTS):
        if hi[i] != 0:
            raise InputError("%s: reserved header int [%d] = %d must be 0" % (path, i, hi[i]))
    for i in range(len(FLT_NAMES), HDR_FLOATS):
        if hf[i] != 0:
            raise InputError("%s: reserved header float [%d] = %g must be 0" % (path, i, hf[i]))
    for n, v in hp.items():
        if not math.isfinite(v):
            raise InputError("%s: hyperparameter %s = %g is not finite" % (path, n, v))
    if hp["eps"] <= 0 or hp["norm_eps"] <= 0 or hp["rope_base"] <= 0:
        raise InputError("%s: eps, the norm's eps and the RoPE base must be positive" % path)
    if not (0 <= hp["beta1"] < 1 and 0 <= hp["beta2"] < 1):
        raise InputError("%s: beta1/beta2 must lie in [0, 1)" % path)
    V, L, NH, C, T, G = cfg["V"], cfg["L"], cfg["NH"], cfg["C"], cfg["T"], cfg["G"]
    if C % NH != 0 or (C // NH) % 2 != 0:
        raise InputError("%s: C = %d over NH = %d heads must give an even head size"
                         % (path, C, NH))
    if NH % G != 0:
        raise InputError("%s: G = %d key/value heads must divide NH = %d" % (path, G, NH))
    if T > cfg["maxT"]:
        raise InputError("%s: sequence length T = %d exceeds maxT = %d" % (path, T, cfg["maxT"]))
    specs = param_specs(V, L, C, NH, G, cfg["F"])
    nparam = sum(int(np.prod(s)) for _, s, _ in specs)
    ntok = cfg["S"] * cfg["M"] * cfg["B"] * T
    expect = fixed + 4 * nparam + 2 * 4 * ntok
    if len(data) != expect:
        raise InputError("%s: file is %d bytes, expected %d for this header"
                         % (path, len(data), expect))
    params, off = {}, fixed
    for name, shape, _ in specs:
        n = int(np.prod(shape))
        params[name] = np.frombuffer(data, "<f4", n, off).reshape(shape).astype(np.float32)
        off += 4 * n
        if not np.all(np.isfinite(params[name])):
            raise InputError("%s: parameter %s contains non-finite values" % (path, name))
    shape = (cfg["S"], cfg["M"], cfg["B"], T)
    tokens = np.frombuffer(data, "<i4", ntok, off).reshape(shape).astype(np.int64)
    targets = np.frombuffer(data, "<i4", ntok, off + 4 * ntok).reshape(shape).astype(np.int64)
    for what, arr in (("token", tokens), ("target", targets)):
        if arr.min() < 0 or arr.max() >= V:
            raise InputError("%s: %s ids must lie in [0, %d), found range [%d, %d]"
                             % (path, what, V, arr.min(), arr.max()))
    return {"cfg": cfg, "hp": hp, "specs": specs, "params": params,
            "tokens": tokens, "targets": targets}


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


def lr_at(s, lr, min_lr, warmup, decay):
    """Linear warmup over `warmup` steps, then cosine decay to min_lr by step `decay`."""
    if s < warmup:
        return lr * (s + 1) / warmup
    frac = min(1.0, (s - warmup) / max(1, decay - warmup))
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * frac))


def train(inp):
    """Run S steps -> (losses[S] f64, norms[S] f64, grads0 flat f32, final params flat f32)."""
    cfg, hp, specs = inp["cfg"], inp["hp"], inp["specs"]
    M, S = cfg["M"], cfg["S"]
    P = {n: torch.tensor(inp["params"][n], requires_grad=True) for n, _, _ in specs}
    plist = [P[n] for n, _, _ in specs]
    opt = torch.optim.AdamW(
        [{"params": [P[n] for n, _, d in specs if d], "weight_decay": hp["weight_decay"]},
         {"params": [P[n] for n, _, d in specs if not d], "weight_decay": 0.0}],
        lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    tokens, targets = torch.from_numpy(inp["tokens"]), torch.from_numpy(inp["targets"])
    losses, norms, grads0 = np.zeros(S), np.zeros(S), None
    for s in range(S):
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for m in range(M):
            loss = llama_loss(P, tokens[s, m], targets[s, m], cfg, hp)
            (loss / M).backward()
            total += float(loss.item())
        losses[s] = total / M
        norms[s] = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in plist))
        if s == 0:
            grads0 = torch.cat([p.grad.reshape(-1) for p in plist]).numpy().copy()
        if hp["clip_grad"] > 0:
            torch.nn.utils.clip_grad_norm_(plist, hp["clip_grad"])
        for g in opt.param_groups:
            g["lr"] = lr_at(s, hp["lr"], hp["min_lr"], cfg["warmup"], cfg["decay"])
        opt.step()
    final = torch.cat([p.detach().reshape(-1) for p in plist]).numpy().copy()
    return losses, norms, grads0, final


def write_output(path, losses, norms, grads0, final):
    hdr = np.zeros(OUT_HDR_INTS, "<i4")
    hdr[:4] = [OUT_MAGIC, OUT_VERSION, len(losses), final.size]
    with open(path, "wb") as f:
        for arr, dt in ((hdr, "<i4"), (losses, "<f8"), (norms, "<f8"),
                        (grads0, "<f4"), (final, "<f4")):
            f.write(np.ascontiguousarray(arr, dtype=dt).tobytes())


def main(argv):
    prog = os.path.basename(argv[0]) if argv else "llama_ref.py"
    if len(argv) != 3:
        print("usage: %s INPUT.bin OUTPUT.bin" % prog, file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        inp = read_input(argv[1])
    except InputError as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 1
    losses, norms, grads0, final = train(inp)
    try:
        write_output(argv[2], losses, norms, grads0, final)
    except OSError as e:
        print("%s: cannot write %s: %s" % (prog, argv[2], e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
