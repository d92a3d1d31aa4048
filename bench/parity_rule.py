# SPDX-License-Identifier: MIT
"""bench/parity_rule.py: the parity tolerance rule of every parity test (tests/README.md,
"Parity tolerances"), for the benches, whose speedups count only when their runs reproduce the
serial run's losses.

The benches run the serial reference twice: as it is (a), and in a second, equally exact
summation order (one row tile per micro-batch, --tile-seqs MBS) (a2).  E, the worst relative
difference of their per-step losses, is how far rounding alone moves this model on this machine
and OpenBLAS kernel; a run passes when its worst relative loss difference to (a) is at most
K x max(E, floor), with K and the floor read from tools/parity.h, their one definition.

    import parity_rule
    rule = parity_rule.Rule(top, steps(out, "a"), steps(out, "a2"))
    d, ok = rule.judge(steps(out, "b1"))
    print(rule.describe(worst))
"""
import json
import math
import os
import re


def constants(top):
    """(K, floor) from tools/parity.h under the repository root @p top."""
    text = open(os.path.join(top, "tools", "parity.h")).read()
    k = re.search(r"^#define PARITY_K ([0-9.e+-]+)", text, re.M)
    floor = re.search(r"^#define PARITY_FLOOR ([0-9.e+-]+)", text, re.M)
    if not k or not floor:
        raise SystemExit("parity_rule: no PARITY_K and PARITY_FLOOR in tools/parity.h")
    return float(k.group(1)), float(floor.group(1))


def steps(out, name):
    """{step: record} of the --log-json file out/NAME.json, the records with a loss."""
    with open(os.path.join(out, name + ".json")) as f:
        return {r["step"]: r for r in map(json.loads, f) if "loss" in r}


def loss_diff(ref, run):
    """Worst relative difference of the per-step losses; inf when the steps differ or a loss
    is not a number (a run that stopped early or diverged never passes)."""
    if not ref or sorted(ref) != sorted(run):
        return math.inf
    worst = 0.0
    for s, r in ref.items():
        x, y = run[s]["loss"], r["loss"]
        if x is None or y is None:
            return math.inf
        worst = max(worst, abs(x - y) / max(abs(y), 1e-30))
    return worst


class Rule:
    """The rule for one bench: the envelope of its serial runs (a) and (a2)."""

    def __init__(self, top, ref, ref_order):
        self.k, self.floor = constants(top)
        self.ref = ref
        self.envelope = loss_diff(ref, ref_order)
        if math.isinf(self.envelope):
            raise SystemExit("parity_rule: the serial run in the second summation order did "
                             "not log the reference's steps: no envelope, no verdict")
        if self.envelope == 0.0:
            raise SystemExit("parity_rule: the serial runs in the two summation orders are "
                             "bitwise equal: the envelope measures nothing (tests/README.md)")
        self.tolerance = self.k * max(self.envelope, self.floor)

    def judge(self, run):
        """(the run's worst relative loss difference to the reference, whether it passes)"""
        d = loss_diff(self.ref, run)
        return d, d <= self.tolerance

    def describe(self, worst):
        """The verdict's words: measured, tolerance, their ratio and the envelope."""
        return ("worst %.2e over %d steps, tolerance %.2e = %g x max(E %.2e, floor %.2e), "
                "ratio %.3f" % (worst, len(self.ref), self.tolerance, self.k, self.envelope,
                                self.floor, worst / self.tolerance))
