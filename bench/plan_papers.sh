#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/plan_papers.sh: `helix plan` against the papers' published settings, in simulation
# (issue 25, "Planner against the papers"; papers.md 1.8 and 4.9).  Nothing runs on a GPU:
# every number is the planner's prediction for the papers' clusters, described in
# machines/a800-hdr.machine + devices/a800.device (AMSP: 128 nodes of 8 A800, 4 HDR NICs a
# node) and machines/perlmutter.machine + devices/a100-40g.device (AxoNN: 4 A100-40GB, 4
# Slingshot-11 NICs a node), printed beside the number each paper reports.
#
#   bench/plan_papers.sh [--only SECTIONS] [--simulate]
#     --only S    comma-separated sections (default all but simulate):
#                   amsp   LLaMA-7B/13B/30B on 1024 A800s: the planner's choice, free and in
#                          AMSP's space (tp 1, pp 1, micro-batch 1), against AMSP's Table IV
#                   sweep  ZeRO-3 (--zero-stage 3, tp 1, pp 1) against AMSP's configuration
#                          and the planner's choice, 8 to 1024 GPUs, LLaMA-7B and 13B
#                   table5 AMSP's configurations on 64 GPUs, M = 1, 2, 4, 8 micro-batches a
#                          GPU, against AMSP's Table V
#                   axonn  GPT-5B..80B on 64..1024 Perlmutter GPUs (AxoNN's Table III):
#                          ZeRO-3 and the planner's choice (activation checkpointing, one
#                          sequence a micro-batch, everything else free: grids included)
#                   grid   AxoNN's grids: GPT-20B, 32k tokens, on 16 and 32 Perlmutter GPUs,
#                          where AxoNN runs 2x2x4 (Section IV) and ranks its measured best
#                          first (Section V)
#                   simulate  --simulate-top 3 on a reduced AMSP setting (see below)
#     --simulate  add the simulate section (minutes; needs the simulation flavour)
#   HELIX=PATH picks the helix binary (default build/tools/helix).
#
# MFU is recomputed here from the predicted tokens/s with each paper's own formula, so that
# the planner's number and the paper's have the same numerator:
#   AMSP (Megatron's formula, attention not halved, no recomputation counted; checked against
#   AMSP's Table V: 7B and 13B TGS x this / 312 TFLOP/s give its MFU within 1%):
#     flops/token = 6 (L (4 h^2 + 3 h f) + V h) + 12 L s h
#   AxoNN (Narayanan et al.'s eq. 3, which counts the recomputed forward; AxoNN trains GPT
#   with activation checkpointing):
#     flops/token = 96 L h^2 (1 + s / (6 h) + V / (16 L h))
# `helix plan`'s own MFU column (PaLM's: 3 x the serial graph's forward flops, causal
# attention halved) is printed as "helix MFU".
#
# "AMSP memory" re-checks a configuration with AMSP's model-state formula (2 Phi / s_p +
# 2 Phi / s_g + 12 Phi / s_os bytes: bf16 parameters and gradients, fp32 master and Adam)
# and the planner's activations and buffers halved (bf16), against 80 GiB; helix's own
# memory (its tensors are fp32: 4 Phi / s_p + 4 Phi / s_g + 8 Phi / s_os) is "helix memory".
#
# Exit 0 when every plan ran, 1 otherwise, 2 bad usage.  One plan at a time (each is one
# process on one core).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
exec python3 - "$top" "$@" <<'PY'
import os, subprocess, sys, time

top = sys.argv[1]
helix = os.environ.get("HELIX") or os.path.join(top, "build/tools/helix")
sections = ["amsp", "sweep", "table5", "axonn", "grid"]
argv = sys.argv[2:]
while argv:
    a = argv.pop(0)
    if a == "--only" and argv:
        sections = argv.pop(0).split(",")
    elif a == "--simulate":
        sections.append("simulate")
    else:
        sys.stderr.write("usage: bench/plan_papers.sh [--only SECTIONS] [--simulate]\n")
        sys.exit(2)
if not os.access(helix, os.X_OK):
    sys.stderr.write("plan_papers: no %s (HELIX=PATH)\n" % helix)
    sys.exit(2)

A800 = ("machines/a800-hdr.machine", "devices/a800.device", 8)
PERLMUTTER = ("machines/perlmutter.machine", "devices/a100-40g.device", 4)
PEAK = 312e12                      # bf16 tensor-core peak of both GPUs (both papers use it)
GIB = 1024.0 ** 3

# LLaMA-1 shapes (Touvron et al. 2023, Table 2; AMSP names LLaMA, no shapes); AMSP VI-A:
# sequence 4096, global batch 4M tokens = 1024 sequences
LLAMA = {
    "7B": dict(l=32, h=4096, a=32, f=11008, V=32000),
    "13B": dict(l=40, h=5120, a=40, f=13824, V=32000),
    "30B": dict(l=60, h=6656, a=52, f=17920, V=32000),
}
# AxoNN Table I; sequence 2048, global batch 4M tokens = 2048 sequences; GPT-2's vocabulary
# padded to 50304 as Megatron-LM does
GPT = {
    "5B": dict(l=24, h=4096, a=32), "10B": dict(l=32, h=5120, a=40),
    "20B": dict(l=32, h=7168, a=56), "40B": dict(l=38, h=9216, a=72),
    "80B": dict(l=42, h=12288, a=96),
}

# AMSP Table IV (s_p, s_g, s_os) and its MFU at 1024 GPUs (section VI-B); 8-GPU figures from
# sections I and VI-B where the text gives them
AMSP = {
    "7B": dict(amsp=(1, 1, 8), recompute="none", mfu={"amsp": 51, "mics": 35, "zero-1": 36,
                                                       "zero-3": 4},
               mfu8={"amsp": 64, "zero-1": 63, "mics": 50}),
    "13B": dict(amsp=(4, 4, 8), recompute="none", mfu={"amsp": 52, "mics": 33, "zero-3": 4},
                mfu8={"zero-3": 47}),
    "30B": dict(amsp=(8, 8, 32), recompute="full", mfu={"amsp": 42, "mics": 29},
                mfu8={}),
}
# AMSP Table V (64 GPUs, AMSP's configuration): MFU for M = 1, 2, 4, 8 with every overlap,
# and without the broadcast's (as in its end-to-end runs and in helix's model)
TABLE5 = {
    "7B": {"all": (57, 62, 65, 67), "no-bc": (54, 60, 64, 65)},
    "13B": {"all": (53, 58, 61, 62), "no-bc": (53, 54, 60, 61)},
    "30B": {"all": (48, 50, 50, 51), "no-bc": (44, 47, 49, 50)},
}
# AxoNN Table III: % of peak, weak scaling on Perlmutter
AXONN = [(64, "5B", 37, 55, 33, 67), (128, "10B", 42, 57, 33, 63), (256, "20B", 42, 57, 35, 67),
         (512, "40B", 44, 55, 35, 64), (1024, "80B", 42, 27, 38, 57)]

timings = []
failed = 0


def llama_flags(m, gbs=1024, seq=4096):
    return ["--model", "llama", "--num-layers", str(m["l"]), "--hidden-size", str(m["h"]),
            "--num-attention-heads", str(m["a"]), "--ffn-hidden-size", str(m["f"]),
            "--vocab-size", str(m["V"]), "--seq-length", str(seq),
            "--global-batch-size", str(gbs)]


def gpt_flags(m, gbs=2048, seq=2048):
    return ["--num-layers", str(m["l"]), "--hidden-size", str(m["h"]),
            "--num-attention-heads", str(m["a"]), "--vocab-size", "50304",
            "--seq-length", str(seq), "--max-position-embeddings", str(seq),
            "--global-batch-size", str(gbs)]


def amsp_space(recompute):
    return ["--tensor-model-parallel-size", "1", "--pipeline-model-parallel-size", "1",
            "--micro-batch-size", "1", "--recompute-activations", recompute]


def llama_fpt(m, seq=4096):
    """AMSP's flops a token (Megatron's formula for a SwiGLU model, no recomputation)"""
    l, h, f, V = m["l"], m["h"], m["f"], m["V"]
    return 6 * (l * (4 * h * h + 3 * h * f) + V * h) + 12 * l * seq * h


def gpt_fpt(m, seq=2048, V=50304):
    """Narayanan et al.'s eq. 3 a token (with recomputation), as AxoNN reports"""
    l, h = m["l"], m["h"]
    return 96 * l * h * h * (1 + seq / (6 * h) + V / (16 * l * h))


def llama_phi(m):
    l, h, f, V = m["l"], m["h"], m["f"], m["V"]
    return l * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h


class Row:
    def __init__(self, t):
        # tp: Megatron's ranks, or AxoNN's grid GxxGyxGz
        self.tp, self.pp, self.sched, self.dp = t[1], int(t[2]), t[3], int(t[4])
        self.mbs, self.M = int(t[5]), int(t[6])
        self.s = (int(t[7]), int(t[8]), int(t[9]))
        self.shard, self.recompute = t[10], t[11]
        self.step_ms, self.tok_s = float(t[12]), float(t[13])
        self.helix_mfu = float(t[14].rstrip("%"))
        self.compute, self.tpc, self.p2p, self.gather, self.grad, self.after, self.bubble = (
            float(x) for x in t[16:23])
        self.states, self.acts, self.comm, self.total = (float(x) for x in t[25:29])

    def desc(self):
        r = {"-": "none"}.get(self.recompute, self.recompute)
        mesh = "%s pp%d%s dp%d" % ("grid " + self.tp if "x" in self.tp else "tp" + self.tp,
                                    self.pp, "" if self.sched == "-" else " " + self.sched,
                                    self.dp)
        return "%s, s=(%d,%d,%d) %s, mbs %d, rc %s" % (mesh, *self.s, self.shard, self.mbs, r)


def plan(bed, gpus, flags, extra=(), label=""):
    """run one plan; returns (rows in the planner's order, its count line, seconds)"""
    global failed
    machine, device, per_node = bed
    cmd = [helix, "plan", "--machine", os.path.join(top, machine), "--device",
           os.path.join(top, device), "--gpus", str(gpus), "--gpus-per-node",
           str(per_node)] + list(flags) + list(extra)
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.time() - t0
    rows, count = [], ""
    for line in p.stdout.splitlines():
        if "configurations priced" in line:
            count = line.split(";")[0]
        t = line.split()
        if len(t) == 29 and t[0].isdigit() and t[15] == "|" and t[24] == "|":
            rows.append(Row(t))
    if p.returncode not in (0, 2):
        failed += 1
        print("  plan failed (exit %d): %s" % (p.returncode, p.stderr.strip()[-300:]))
    timings.append((label, gpus, count, dt))
    return rows, count, dt, p


def every(bed, gpus, flags, extra=(), label=""):
    """every configuration, no memory limit, in the planner's order"""
    return plan(bed, gpus, flags, list(extra) + ["--memory-per-gpu", "0", "--top", "1000000"],
                label)


def tgs(r, gpus):
    return r.tok_s / gpus


def mfu(r, gpus, fpt):
    return 100.0 * tgs(r, gpus) * fpt / PEAK


def amsp_mem(r, m):
    phi = llama_phi(m)
    sp, sg, sos = r.s
    return (2 * phi / sp + 2 * phi / sg + 12 * phi / sos) / GIB + (r.acts + r.comm) / 2


def find(rows, s, recompute=None):
    for i, r in enumerate(rows):
        if r.s == s and r.tp == "1" and r.pp == 1 and (recompute is None or r.recompute == recompute):
            return i, r
    return None, None


def scheme_s(name, model, dp):
    k = min(8, dp)
    return {"amsp": AMSP[model]["amsp"], "mics": (k, k, k), "zero-1": (1, 1, dp),
            "zero-3": (dp, dp, dp)}[name]


def rcname(x):
    return {"none": "-"}.get(x, x)


def fits(r, cap=80.0):
    return "yes" if r.total <= cap else "no (%.0f GiB)" % r.total


# ------------------------------------------------------------------------------------------
if "amsp" in sections:
    print("== AMSP (papers.md 4.9): LLaMA on 1024 A800s (128 nodes x 8), seq 4096, "
          "1024 sequences a step ==")
    for name, m in LLAMA.items():
        ref = AMSP[name]
        fpt = llama_fpt(m)
        print("\n-- LLaMA-%s (%.2fB parameters; %.1f GFLOP a token by AMSP's formula) --"
              % (name, llama_phi(m) / 1e9, fpt / 1e9))
        rows, count, dt, _ = plan(A800, 1024, llama_flags(m), ["--top", "1"],
                                  "LLaMA-%s free, 1024" % name)
        if rows:
            r = rows[0]
            print("planner, everything free (%s, %.1f s): %s: %.0f ms, TGS %.0f, MFU %.1f%% "
                  "(helix MFU %.1f%%), %.1f GiB" % (count, dt, r.desc(), r.step_ms,
                                                    tgs(r, 1024), mfu(r, 1024, fpt),
                                                    r.helix_mfu, r.total))
        rows, count, dt, _ = every(A800, 1024, llama_flags(m), amsp_space(ref["recompute"]),
                                   "LLaMA-%s AMSP space, 1024" % name)
        print("AMSP's space (tp 1, pp 1, micro-batch 1, recompute %s; %s, %.1f s):"
              % (ref["recompute"], count, dt))
        print("  %-34s %-14s %8s %6s %7s %9s %-15s %9s %6s" % (
            "what", "s_p,s_g,s_os", "step_ms", "TGS", "MFU", "paper", "helix memory",
            "AMSP mem", "rank"))
        own = next((i for i, r in enumerate(rows) if r.total <= 80), None)
        amem = next((i for i, r in enumerate(rows) if amsp_mem(r, m) <= 80), None)
        lines = [("planner's choice (helix memory)", own), ("planner's choice (AMSP memory)",
                                                            amem)]
        for scheme in ("amsp", "mics", "zero-1", "zero-3"):
            i, _ = find(rows, scheme_s(scheme, name, 1024))
            lines.append(("%s %s" % (scheme.upper() if scheme == "amsp" else scheme,
                                     "(Table IV)" if scheme == "amsp" else ""), i))
        for what, i in lines:
            if i is None:
                print("  %-34s none" % what)
                continue
            r = rows[i]
            paper = ""
            for scheme in ("amsp", "mics", "zero-1", "zero-3"):
                if r.s == scheme_s(scheme, name, 1024) and scheme in ref["mfu"]:
                    paper = "%s %d%%" % ("AMSP" if scheme == "amsp" else scheme,
                                         ref["mfu"][scheme])
            print("  %-34s %-14s %8.0f %6.0f %6.1f%% %9s %-15s %8.1fG %6d" % (
                what, "%d,%d,%d" % r.s, r.step_ms, tgs(r, 1024), mfu(r, 1024, fpt), paper,
                fits(r), amsp_mem(r, m), i + 1))
        i, r = find(rows, ref["amsp"])
        if r is not None:
            print("  AMSP's configuration, terms (ms): compute %.0f, exposed gather %.0f, "
                  "exposed grad %.0f, after-step %.0f; helix memory %.1f GiB = states %.1f + "
                  "acts %.1f + buffers %.1f" % (r.compute, r.gather, r.grad, r.after, r.total,
                                                 r.states, r.acts, r.comm))

# ------------------------------------------------------------------------------------------
if "sweep" in sections:
    print("\n== ZeRO-3 against AMSP's configuration, 8 to 1024 A800s (global batch fixed at "
          "1024 x 4096 tokens) ==")
    for name in ("7B", "13B"):
        m, ref = LLAMA[name], AMSP[name]
        fpt = llama_fpt(m)
        print("\n-- LLaMA-%s: predicted MFU (AMSP's formula) [helix memory fits in 80 GiB?] --"
              % name)
        print("  %5s %4s %-22s %-22s %-40s %-40s" % (
            "GPUs", "M", "ZeRO-3 (--zero-stage 3)", "AMSP %s" % (ref["amsp"],),
            "planner in AMSP's space (helix memory)", "planner in AMSP's space (AMSP memory)"))
        for n in (8, 64, 128, 256, 512, 1024):
            z, _, _, _ = plan(A800, n, llama_flags(m), amsp_space("none") +
                              ["--zero-stage", "3", "--memory-per-gpu", "0"],
                              "LLaMA-%s ZeRO-3, %d" % (name, n))
            rows, _, _, _ = every(A800, n, llama_flags(m), amsp_space("none"),
                                  "LLaMA-%s AMSP space, %d" % (name, n))
            cells = []
            zr = z[0] if z else None
            cells.append("%5.1f%% [%s]" % (mfu(zr, n, fpt), "y" if zr.total <= 80 else "n")
                         if zr else "-")
            _, ar = find(rows, ref["amsp"])
            cells.append("%5.1f%% [%s]" % (mfu(ar, n, fpt), "y" if ar.total <= 80 else "n")
                         if ar else "not buildable")
            for pick in (lambda r: r.total <= 80, lambda r: amsp_mem(r, m) <= 80):
                r = next((r for r in rows if pick(r)), None)
                cells.append("%5.1f%% (%d,%d,%d)" % ((mfu(r, n, fpt),) + r.s) if r else "none")
            print("  %5d %4d %-22s %-22s %-40s %-40s" % (n, 1024 // n, *cells))
        p8 = ", ".join("%s %d%%" % kv for kv in ref["mfu8"].items())
        p1k = ", ".join("%s %d%%" % kv for kv in ref["mfu"].items())
        print("  paper: 8 GPUs: %s; 1024 GPUs: %s" % (p8 or "(only in its Figure 11)", p1k))

# ------------------------------------------------------------------------------------------
if "table5" in sections:
    print("\n== AMSP Table V: AMSP's configurations on 64 A800s, M micro-batches of one "
          "sequence a GPU ==")
    print("  %-5s %-11s %-3s %8s %6s %7s %8s %8s %7s %8s %8s" % (
        "model", "s", "M", "step_ms", "TGS", "MFU", "paper", "no-BC", "gather", "grad",
        "after"))
    for name, m in LLAMA.items():
        ref = AMSP[name]
        fpt = llama_fpt(m)
        for k, M in enumerate((1, 2, 4, 8)):
            rows, _, _, _ = every(A800, 64, llama_flags(m, gbs=64 * M),
                                  amsp_space(ref["recompute"]),
                                  "LLaMA-%s Table V M=%d, 64" % (name, M))
            _, r = find(rows, ref["amsp"])
            if r is None:
                print("  %-5s %-11s %-3d not buildable" % (name, ref["amsp"], M))
                continue
            print("  %-5s %-11s %-3d %8.0f %6.0f %6.1f%% %7d%% %7d%% %7.0f %8.0f %8.0f" % (
                name, "%d,%d,%d" % r.s, M, r.step_ms, tgs(r, 64), mfu(r, 64, fpt),
                TABLE5[name]["all"][k], TABLE5[name]["no-bc"][k], r.gather, r.grad, r.after))

# ------------------------------------------------------------------------------------------
if "axonn" in sections:
    print("\n== AxoNN Table III: GPT weak scaling on Perlmutter (4 A100-40GB a node), seq "
          "2048, 2048 sequences a step ==")
    print("  Throughput as AxoNN reports it: Narayanan's eq. 3 flops (recomputation counted) "
          "/ step / 312 TFLOP/s a GPU; a\n  configuration without recomputation can pass "
          "100% of it.  ZeRO-3: tp 1, pp 1, recompute full, the best micro-batch.")
    print("  %5s %-5s %-42s %-58s %s" % ("GPUs", "GPT", "ZeRO-3", "planner's choice (free)",
                                         "paper: Megatron / ZeRO-3 / DS-3D / AxoNN"))
    for n, name, meg, z3, ds, ax in AXONN:
        m = GPT[name]
        fpt = gpt_fpt(m)
        zflags = ["--zero-stage", "3", "--tensor-model-parallel-size", "1",
                  "--pipeline-model-parallel-size", "1", "--recompute-activations", "full"]
        z, _, _, _ = plan(PERLMUTTER, n, gpt_flags(m), zflags + ["--top", "1"],
                          "GPT-%s ZeRO-3, %d" % (name, n))
        if not z:  # none fits in 40 GiB: its prediction all the same, and what it needs
            z, _, _, _ = plan(PERLMUTTER, n, gpt_flags(m), zflags + ["--top", "1",
                                                                     "--memory-per-gpu", "0"],
                              "GPT-%s ZeRO-3 no limit, %d" % (name, n))
        zc = ("%5.1f%% mbs %d, %.0f ms, %.0f GiB%s" % (
            mfu(z[0], n, fpt), z[0].mbs, z[0].step_ms, z[0].total,
            " (> 40)" if z[0].total > 40 else "") if z else "-")
        # AxoNN's setting: activation checkpointing; one sequence a micro-batch keeps the
        # enumeration of every grid at 1024 GPUs to minutes
        f, _, _, _ = plan(PERLMUTTER, n, gpt_flags(m), ["--top", "1", "--recompute-activations",
                                                        "full", "--micro-batch-size", "1"],
                          "GPT-%s free, %d" % (name, n))
        fc = "%5.1f%% %s" % (mfu(f[0], n, fpt), f[0].desc()) if f else "none fits"
        print("  %5d %-5s %-42s %-58s %d / %d / %d / %d" % (n, name, zc, fc, meg, z3, ds, ax))

# ------------------------------------------------------------------------------------------
if "grid" in sections:
    # AxoNN's Section IV example: GPT-20B, 32k tokens (16 sequences of 2048), 16 GPUs = 4
    # Perlmutter nodes, its grid 2x2x4; and Section V's 32 GPUs, where its placement-aware
    # model ranks the measured best first.  Activation checkpointing, no pipeline, no memory
    # limit (helix's states are fp32: AxoNN's bf16 activations are half as large), any
    # micro-batch (AxoNN runs a rank's whole share of the batch at once).
    for n in (16, 32):
        print("\n== AxoNN's grids: GPT-20B, 16 sequences of 2048, %d Perlmutter GPUs ==" % n)
        m = GPT["20B"]
        rows, count, _, _ = every(PERLMUTTER, n, gpt_flags(m, gbs=16),
                                  ["--pipeline-model-parallel-size", "1",
                                   "--recompute-activations", "full"],
                                  "GPT-20B grids, %d" % n)
        print("  %s; the best grids (the best per grid, in the planner's order; * needs more "
              "than Perlmutter's 40 GiB):" % count)
        seen = []
        for k, r in enumerate(rows):
            if "x" in r.tp and r.tp not in seen:
                seen.append(r.tp)
                print("  %3d %-8s %8.0f ms  compute %7.0f  tp %7.0f  gather %7.0f  grad %7.0f"
                      "  %5.1f GiB%s  %s" % (k + 1, r.tp, r.step_ms, r.compute, r.tpc, r.gather,
                                             r.grad, r.total, "*" if r.total > 40 else " ",
                                             r.desc()))
        best = [r for r in rows if "x" not in r.tp][:1]
        if best:
            print("  best without a grid: %s, %.0f ms" % (best[0].desc(), best[0].step_ms))
        if "2x2x4" in seen:
            print("  AxoNN's 2x2x4: grid %d of %d" % (seen.index("2x2x4") + 1, len(seen)))
        fit = [r for r in rows if r.total <= 40]  # Perlmutter's A100-40GB
        grids = [r.tp for r in fit if "x" in r.tp]
        if fit:
            print("  in 40 GiB: first %s, %.0f ms; the best grid %s, %.0f ms, at %d of %d" % (
                fit[0].desc(), fit[0].step_ms, grids[0] if grids else "none",
                next((r.step_ms for r in fit if "x" in r.tp), 0),
                next((k + 1 for k, r in enumerate(fit) if "x" in r.tp), 0), len(fit)))

# ------------------------------------------------------------------------------------------
if "simulate" in sections:
    # AMSP's settings at 1024 GPUs cannot be simulated here (bench/README.md, sim_scale: 256
    # simulated ranks did not finish one step in 2 hours, 8.4 GB before the first task); this
    # is the nearest that finishes in minutes: LLaMA-7B's layer on 16 A800s (2 nodes), 4
    # layers, one sequence a GPU (M = 1, as at 1024 GPUs), AMSP's space.
    print("\n== --simulate-top 3: LLaMA-7B layers (4 of them), 16 A800s, M = 1 ==")
    m = dict(LLAMA["7B"], l=4)
    rows, count, dt, p = plan(A800, 16, llama_flags(m, gbs=16),
                              amsp_space("none") + ["--simulate-top", "3", "--top", "3"],
                              "LLaMA-7B 4 layers simulate-top 3, 16")
    print("\n".join("  " + x for x in p.stdout.splitlines()
                    if not x.lstrip().startswith(("1  mpirun", "2  mpirun", "3  mpirun")))
          if p.returncode == 0 else "  failed: " + p.stderr.strip()[-400:])

print("\n== wall time of each plan (one process, this machine) ==")
for label, gpus, count, dt in timings:
    print("  %-38s %5d GPUs %-34s %7.2f s" % (label, gpus, count, dt))
sys.exit(1 if failed else 0)
PY
