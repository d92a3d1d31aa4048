# SPDX-License-Identifier: MIT
"""bench/bench_stats.py: the paired comparison of two runs of the benches on this noisy
machine.  Rounds alternate the runs, so one round's two runs share the machine's moods, and
the ratio of one round's medians is steadier than the ratio of the pooled medians: the
benches report the geometric mean of the per-round ratios and its 95% confidence interval
(Student's t on the logarithms).

    import bench_stats
    gm, ci = bench_stats.ratio_ci([x / y for x, y in zip(rounds_x, rounds_y)])
    ms = bench_stats.steady(parity_rule.steps(out, "b1"))
"""
import math
import statistics

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: 1.96+)
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def ratio_ci(q):
    """(geometric mean of the ratios @p q, its 95% interval as (lo, hi); None for one ratio)"""
    lq = [math.log(x) for x in q]
    m = statistics.mean(lq)
    if len(lq) < 2:
        return math.exp(m), None
    t = T95[len(lq) - 2] if len(lq) - 1 <= len(T95) else 1.96 + 2.5 / (len(lq) - 1)
    h = t * statistics.stdev(lq) / math.sqrt(len(lq))
    return math.exp(m), (math.exp(m - h), math.exp(m + h))


def steady(recs):
    """A run's step times in ms ({step: --log-json record}), less the first step (it warms
    up: StarPU calibrates, buffers are allocated and paged in)."""
    return [x["ms"] for s, x in recs.items() if s > min(recs)]
