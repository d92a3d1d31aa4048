/* SPDX-License-Identifier: MIT */
/* tests/schedulers/oef.c: hx_oef computes DHelix's Overlap Effectiveness Factor
 * (T(a) + T(b) - T(a||b)) / min(T(a), T(b)) from known times: a fully hidden shorter op
 * gives 1, back-to-back gives 0, a slowdown gives a negative value, half hidden 0.5, the
 * arguments' order does not matter, and a zero solo time gives 0 instead of a division by
 * zero.  No StarPU needed. */
#include <math.h>

#include "helix/overlap.h"
#include "tap.h"

static int near(double x, double y)
{
    return fabs(x - y) <= 1e-12 * (1 + fabs(y));
}

int main(void)
{
    tap_plan(7);
    double v;
    v = hx_oef(3.0, 1.0, 3.0);
    tap_ok(near(v, 1.0), "3 ms || 1 ms in 3 ms: the shorter one fully hidden, OEF %g = 1", v);
    v = hx_oef(3.0, 1.0, 4.0);
    tap_ok(near(v, 0.0), "3 ms || 1 ms in 4 ms: back to back, OEF %g = 0", v);
    v = hx_oef(3.0, 1.0, 5.0);
    tap_ok(near(v, -1.0), "3 ms || 1 ms in 5 ms: co-running costs a whole op, OEF %g = -1", v);
    v = hx_oef(2.0, 2.0, 3.0);
    tap_ok(near(v, 0.5), "2 ms || 2 ms in 3 ms: half of either hidden, OEF %g = 0.5", v);
    v = hx_oef(0.25, 0.75, 0.8);
    tap_ok(near(v, 0.8) && near(hx_oef(0.75, 0.25, 0.8), v),
           "0.25 || 0.75 in 0.8: OEF %g = 0.8, the same with the arguments swapped", v);
    v = hx_oef(0.0, 1.0, 1.0);
    tap_ok(v == 0.0, "a zero solo time gives OEF %g = 0, not a division by zero", v);
    v = hx_oef(1.5, 2.5, 1.5 + 2.5);
    tap_ok(v == 0.0, "the serialized convention, co-run = a + b, gives exactly 0 (%g)", v);
    return tap_exit();
}
