# SPDX-License-Identifier: MIT
"""What the PyTorch training-step oracles share (gpt_ref.py, llama_ref.py): the INPUT.bin
header and body checks, the learning-rate schedule, S AdamW steps over M micro-batches, the
OUTPUT.bin writer and the command line.  Each oracle brings its model: its header fields, its
parameter specs and its loss.  Formats: tests/reference/README.md."""
import math
import os
import sys

import numpy as np
import torch

IN_MAGIC, OUT_MAGIC, OUT_VERSION = 20261122, 20261123, 1
HDR_INTS, HDR_FLOATS, OUT_HDR_INTS = 32, 16, 8


class InputError(Exception):
    """A malformed INPUT.bin; the message names the problem."""


def read_header(path, version, int_names, flt_names, positive, eps_names, wrong_version=""):
    """-> (data, cfg, hp): the file's bytes and its checked header fields.  positive: the int
    fields that must be > 0; eps_names: the float fields that must be > 0."""
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
    cfg = {n: int(hi[i]) for i, n in enumerate(int_names)}
    hp = {n: float(hf[i]) for i, n in enumerate(flt_names)}
    if cfg["magic"] != IN_MAGIC:
        raise InputError("%s: bad magic %d (expected %d)" % (path, cfg["magic"], IN_MAGIC))
    if cfg["version"] != version:
        raise InputError("%s: unsupported version %d (expected %d%s)"
                         % (path, cfg["version"], version, wrong_version))
    for n in positive:
        if cfg[n] <= 0:
            raise InputError("%s: header field %s = %d must be positive" % (path, n, cfg[n]))
    for n in ("warmup", "decay"):
        if cfg[n] < 0:
            raise InputError("%s: header field %s = %d must be >= 0" % (path, n, cfg[n]))
    for i in range(len(int_names), HDR_INTS):
        if hi[i] != 0:
            raise InputError("%s: reserved header int [%d] = %d must be 0" % (path, i, hi[i]))
    for i in range(len(flt_names), HDR_FLOATS):
        if hf[i] != 0:
            raise InputError("%s: reserved header float [%d] = %g must be 0" % (path, i, hf[i]))
    for n, v in hp.items():
        if not math.isfinite(v):
            raise InputError("%s: hyperparameter %s = %g is not finite" % (path, n, v))
    if any(hp[n] <= 0 for n in eps_names):
        raise InputError("%s: %s must be positive" % (path, ", ".join(eps_names)))
    if not (0 <= hp["beta1"] < 1 and 0 <= hp["beta2"] < 1):
        raise InputError("%s: beta1/beta2 must lie in [0, 1)" % path)
    return data, cfg, hp


def read_body(path, data, cfg, hp, specs):
    """The parameters (specs [(name, shape, decayed)], file order) and the S x M x B x T
    tokens and targets after the header -> the dict train() takes."""
    V, T = cfg["V"], cfg["T"]
    fixed = 4 * (HDR_INTS + HDR_FLOATS)
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


def lr_at(s, lr, min_lr, warmup, decay):
    """Linear warmup over `warmup` steps, then cosine decay to min_lr by step `decay`."""
    if s < warmup:
        return lr * (s + 1) / warmup
    frac = min(1.0, (s - warmup) / max(1, decay - warmup))
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * frac))


def train(inp, loss_of):
    """Run S steps of loss_of(P, tokens (B,T), targets (B,T)) -> (losses[S] f64, norms[S]
    f64, grads0 flat f32, final params flat f32)."""
    cfg, hp, specs = inp["cfg"], inp["hp"], inp["specs"]
    M, S = cfg["M"], cfg["S"]
    P = {n: torch.tensor(inp["params"][n], requires_grad=True) for n, _, _ in specs}
    plist = [P[n] for n, _, _ in specs]                          # file order
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
            loss = loss_of(P, tokens[s, m], targets[s, m])
            (loss / M).backward()                                # grads accumulate over m
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
    opt.zero_grad(set_to_none=True)
    final = torch.cat([p.detach().reshape(-1) for p in plist]).numpy().copy()
    return losses, norms, grads0, final


def write_output(path, losses, norms, grads0, final):
    hdr = np.zeros(OUT_HDR_INTS, "<i4")
    hdr[:4] = [OUT_MAGIC, OUT_VERSION, len(losses), final.size]
    with open(path, "wb") as f:
        for arr, dt in ((hdr, "<i4"), (losses, "<f8"), (norms, "<f8"),
                        (grads0, "<f4"), (final, "<f4")):
            f.write(np.ascontiguousarray(arr, dtype=dt).tobytes())


def main(argv, prog, read_input, loss_for):
    """The oracles' command line: read_input(path) -> inp; loss_for(inp) -> the loss of one
    micro-batch, loss(P, tokens, targets).  Exit 0, 1 (bad file, I/O) or 2 (usage)."""
    prog = os.path.basename(argv[0]) if argv else prog
    if len(argv) != 3:
        print("usage: %s INPUT.bin OUTPUT.bin" % prog, file=sys.stderr)
        return 2
    torch.set_num_threads(1)                                     # reproducible reductions
    torch.manual_seed(0)
    try:
        inp = read_input(argv[1])
    except InputError as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 1
    losses, norms, grads0, final = train(inp, loss_for(inp))
    try:
        write_output(argv[2], losses, norms, grads0, final)
    except OSError as e:
        print("%s: cannot write %s: %s" % (prog, argv[2], e.strerror), file=sys.stderr)
        return 1
    return 0
