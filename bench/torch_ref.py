#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch CPU baseline for `helix bench --compare torch` (see bench/README.md).

Trains GPT-2 (pre-LN, tanh GELU, tied LM head; the model of tests/reference/gpt_ref.py),
or with --llama a Llama (RMSNorm, rotary embeddings, grouped-query attention over --groups
key/value heads, SwiGLU of --ffn, untied output layer, no biases; the model of
tests/reference/llama_ref.py), written for speed the way a PyTorch user would, and prints
one JSON line on stdout:
  /usr/bin/python3 bench/torch_ref.py --vocab V --hidden C --layers L --heads NH
      --batch B --seq T --steps N --warmup W --threads K [--seed S] [--lr LR] [--max-pos P]
      [--llama --groups G --ffn F]
W untimed warm-up steps, then N timed steps.  Logs go to stderr.  Exit 2 on bad arguments
or a missing environment setting (one line on stderr).
"""
import argparse
import ctypes
import json
import math
import os
import resource
import statistics
import sys
import time

# PyTorch is only at its best on this machine with these set before the interpreter starts:
# passive OpenMP waiting (spinning OpenMP threads otherwise fight OpenBLAS's threads), and
# glibc malloc never returning big blocks to the kernel (otherwise activations are unmapped
# and page-faulted back every step).  glibc reads GLIBC_TUNABLES only at process start.
REQUIRED_TUNABLES = {"glibc.malloc.mmap_max": "0",
                     "glibc.malloc.trim_threshold": "68719476736"}
ENV_HINT = ("OMP_WAIT_POLICY=PASSIVE GLIBC_TUNABLES=glibc.malloc.mmap_max=0:"
            "glibc.malloc.trim_threshold=68719476736")
PROG = "torch_ref.py"


def fail(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(2)


def check_env():
    if os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
        fail("OMP_WAIT_POLICY must be PASSIVE; run as: %s /usr/bin/python3 %s ..."
             % (ENV_HINT, sys.argv[0]))
    tun = dict(kv.split("=", 1) for kv in os.environ.get("GLIBC_TUNABLES", "").split(":")
               if "=" in kv)
    if any(tun.get(k) != v for k, v in REQUIRED_TUNABLES.items()):
        fail("GLIBC_TUNABLES must contain glibc.malloc.mmap_max=0 and "
             "glibc.malloc.trim_threshold=68719476736; run as: %s /usr/bin/python3 %s ..."
             % (ENV_HINT, sys.argv[0]))


class Parser(argparse.ArgumentParser):
    def error(self, message):                                   # one line, exit 2
        fail(message)


def parse_args(argv):
    p = Parser(prog=PROG)
    for name in ("vocab", "hidden", "layers", "heads", "batch", "seq", "steps", "warmup",
                 "threads"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--max-pos", type=int, default=0, help="wpe rows (0: --seq)")
    p.add_argument("--llama", action="store_true", help="the Llama architecture")
    p.add_argument("--groups", type=int, default=0, help="key/value heads (--llama)")
    p.add_argument("--ffn", type=int, default=0, help="SwiGLU width (--llama)")
    a = p.parse_args(argv)
    if a.llama and (a.groups <= 0 or a.heads % a.groups != 0 or a.ffn <= 0 or
                    (a.hidden // a.heads) % 2 != 0):
        fail("--llama needs --groups dividing --heads, a positive --ffn and an even head size")
    for name in ("vocab", "hidden", "layers", "heads", "batch", "seq", "steps", "threads"):
        if getattr(a, name) <= 0:
            fail("--%s must be a positive integer, got %d" % (name, getattr(a, name)))
    if a.warmup < 0 or a.seed < 0 or a.max_pos < 0:
        fail("--warmup, --seed and --max-pos must be >= 0")
    if a.hidden % a.heads != 0:
        fail("--hidden %d is not divisible by --heads %d" % (a.hidden, a.heads))
    if not (math.isfinite(a.lr) and a.lr > 0):
        fail("--lr must be a positive number")
    a.max_pos = a.max_pos or a.seq
    if a.seq > a.max_pos:
        fail("--seq %d exceeds --max-pos %d" % (a.seq, a.max_pos))
    return a


def set_blas_threads(k):
    """torch.set_num_threads sizes the OpenMP pool only; pthread OpenBLAS (Debian) keeps its
    own pool, so size it too, or --threads 1 would still run every GEMM on all cores."""
    with open("/proc/self/maps") as f:
        libs = {l.split()[-1] for l in f if "/libopenblas" in l and ".so" in l}
    for lib in sorted(libs):
        fn = getattr(ctypes.CDLL(lib), "openblas_set_num_threads", None)
        if fn is not None:
            fn(ctypes.c_int(k))
            return lib
    print("%s: OpenBLAS not found; BLAS threads left as they are" % PROG, file=sys.stderr)
    return None


check_env()
ARGS = parse_args(sys.argv[1:])

import torch                                                     # noqa: E402 (after checks)
import torch.nn as nn                                            # noqa: E402
import torch.nn.functional as F                                  # noqa: E402


class Block(nn.Module):
    def __init__(self, C, NH, T):
        super().__init__()
        self.NH = NH
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)                          # -> [q | k | v]
        self.proj = nn.Linear(C, C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)
        # (1,1,T,T) True where key position > query position (the future): masked out
        self.register_buffer("future", ~torch.tril(torch.ones(T, T, dtype=torch.bool))
                             .view(1, 1, T, T), persistent=False)

    def forward(self, x):                                        # x (B,T,C)
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)          # each (B,T,C)
        q, k, v = (t.view(B, T, self.NH, hs).transpose(1, 2) for t in (q, k, v))  # (B,NH,T,hs)
        att = (q * (1.0 / math.sqrt(hs))) @ k.transpose(-2, -1)  # (B,NH,T,T)
        # in place: the product is fresh and its backward needs only q and k (saves a copy)
        att = att.masked_fill_(self.future[:, :, :T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)           # heads back in order
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))  # (B,T,4C) inside


class GPT(nn.Module):
    def __init__(self, V, C, L, NH, maxT):
        super().__init__()
        self.wte = nn.Embedding(V, C)                            # also the LM head (tied)
        self.wpe = nn.Embedding(maxT, C)
        self.blocks = nn.ModuleList(Block(C, NH, maxT) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():                  # GPT-2 initialisation
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):                             # idx, targets (B,T) int64
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:T]                  # (B,T,C)
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.lnf(x), self.wte.weight)          # (B,T,V)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class RMSNorm(nn.Module):
    def __init__(self, C, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):                                         # (B,H,T,hs), rotate-half
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), dim=-1) * sin


class LlamaBlock(nn.Module):
    def __init__(self, C, NH, G, Fh, T):
        super().__init__()
        self.NH, self.G, self.Fh = NH, G, Fh
        hs = C // NH
        self.ln1, self.ln2 = RMSNorm(C), RMSNorm(C)
        self.qkv = nn.Linear(C, C + 2 * G * hs, bias=False)     # -> [q | k | v]
        self.proj = nn.Linear(C, C, bias=False)
        self.fc = nn.Linear(C, 2 * Fh, bias=False)                # -> [gate | up]
        self.fcproj = nn.Linear(Fh, C, bias=False)
        self.register_buffer("future", ~torch.tril(torch.ones(T, T, dtype=torch.bool))
                             .view(1, 1, T, T), persistent=False)

    def forward(self, x, cos, sin):                              # x (B,T,C)
        B, T, C = x.shape
        NH, G = self.NH, self.G
        hs = C // NH
        q, k, v = self.qkv(self.ln1(x)).split([C, G * hs, G * hs], dim=2)
        q = rotate(q.view(B, T, NH, hs).transpose(1, 2), cos, sin)  # (B,NH,T,hs)
        k = rotate(k.view(B, T, G, hs).transpose(1, 2), cos, sin)   # (B,G,T,hs)
        v = v.view(B, T, G, hs).transpose(1, 2)
        k = k.repeat_interleave(NH // G, dim=1)                   # query head h: kv h // (NH/G)
        v = v.repeat_interleave(NH // G, dim=1)
        att = (q * (1.0 / math.sqrt(hs))) @ k.transpose(-2, -1)
        att = att.masked_fill_(self.future[:, :, :T, :T], float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        gate, up = self.fc(self.ln2(x)).split(self.Fh, dim=2)
        return x + self.fcproj(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, V, C, L, NH, G, Fh, T, base=10000.0):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList(LlamaBlock(C, NH, G, Fh, T) for _ in range(L))
        self.lnf = RMSNorm(C)
        self.head = nn.Linear(C, V, bias=False)                   # untied
        hs = C // NH
        inv_freq = 1.0 / (base ** (torch.arange(0, hs, 2, dtype=torch.float32) / hs))
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
        ang = torch.cat((ang, ang), dim=-1)                         # (T, hs)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)
        for name, p in self.named_parameters():                  # Megatron's initialisation
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx)
        cos, sin = self.cos[:T], self.sin[:T]
        for blk in self.blocks:
            x = blk(x, cos, sin)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main(a):
    torch.set_num_threads(a.threads)
    blas = set_blas_threads(a.threads)
    torch.manual_seed(a.seed)
    V, C, L, NH, B, T = a.vocab, a.hidden, a.layers, a.heads, a.batch, a.seq
    if a.llama:
        model = Llama(V, C, L, NH, a.groups, a.ffn, a.max_pos)
    else:
        model = GPT(V, C, L, NH, a.max_pos)
    params = list(model.parameters())                            # tied wte listed once
    decay = [p for p in params if p.dim() == 2]                  # 2-D weights (wte, wpe, W)
    other = [p for p in params if p.dim() != 2]                  # biases, norms
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    n_params = sum(p.numel() for p in params) - (0 if a.llama else model.wpe.weight.numel())
    flops = (6 * n_params + 12 * L * C * T) * B * T
    print("%s: torch %s, %d threads, BLAS %s, N'=%d, %.3f GFLOP/step"
          % (PROG, torch.__version__, a.threads, blas, n_params, flops / 1e9), file=sys.stderr)

    # every step's batch up front: (W+N, B, T+1) random tokens; targets = inputs shifted by 1
    g = torch.Generator().manual_seed(a.seed)
    data = torch.randint(0, V, (a.warmup + a.steps, B, T + 1), generator=g, dtype=torch.long)
    xs, ys = data[:, :, :T].contiguous(), data[:, :, 1:].contiguous()  # each (W+N, B, T)

    times, losses = [], []
    for s in range(a.warmup + a.steps):
        x, y = xs[s], ys[s]                                      # each (B,T)
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        dt = time.perf_counter() - t0
        if s >= a.warmup:
            times.append(dt * 1e3)
        print("%s: step %d%s loss %.4f %.1f ms" % (PROG, s, " (warm-up)" if s < a.warmup
              else "", losses[-1], dt * 1e3), file=sys.stderr)

    median = statistics.median(times)
    print(json.dumps({
        "ms_median": round(median, 3), "ms_all": [round(t, 3) for t in times],
        "tokens_per_s": round(B * T / (median / 1e3), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "params": n_params, "flops_per_step": flops,
        "loss_first": losses[0], "loss_last": losses[-1],
        "threads": a.threads, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
