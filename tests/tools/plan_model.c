/* SPDX-License-Identifier: MIT */
/* tests/tools/plan_model.c: the cost model of `helix plan` (tools/plan_model.c), nothing run.
 *   - the ring model against hand-computed times on machines/a40-ib100.machine: an
 *     all-reduce inside a node (PCIe), one across the 8 nodes (a NIC shared by the node's 8
 *     rings), an all-gather, a receive;
 *   - a serial step's predicted compute is the sum of the analytic model over the graph's
 *     compute nodes (computed here again, node by node);
 *   - the model-state memory is AMSP's 4 Phi/s_p + 4 Phi/s_g + 8 Phi/s_os (ZeRO-2's whole-
 *     tensor owners: within the largest tensor of it),
 *     ZeRO-3 over 4 ranks keeps a quarter of what no sharding keeps, ZeRO-2 between;
 *   - the step extended from two small builds equals the step of the whole build (1F1B
 *     with 2 stages, 12 micro-batches; ZeRO-2 on dp 4) within 1e-9.
 * Needs HX_SRCDIR (make check sets it) for the machine and device files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "runtime/sim_analytic.h"
#include "tap.h"
#include "tools/plan_model.h"

static struct hx_gpt_config tiny(void)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 1,
                               .num_micro_batches = 1 };
    return c;
}

static int near(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b);
}

int main(void)
{
    tap_plan(9);
    const char *src = getenv("HX_SRCDIR");
    if (src == NULL) {
        tap_skip_all("HX_SRCDIR is not set: run through make check");
    }
    char path[512];
    struct plan_bed a40 = { 0 }, bed = { 0 };
    snprintf(path, sizeof path, "%s/machines/a40-ib100.machine", src);
    int ok = hx_sim_machine_load(path, &a40.mc) == HX_OK;
    snprintf(path, sizeof path, "%s/machines/this-bed.machine", src);
    ok = ok && hx_sim_machine_load(path, &bed.mc) == HX_OK;
    snprintf(path, sizeof path, "%s/devices/a40.device", src);
    ok = ok && hx_sim_device_load(path, &a40.dev) == HX_OK;
    bed.dev = a40.dev;
    ok = ok && setenv("HX_SIM_DEVICE", path, 1) == 0 && hx_sim_analytic_on();
    if (!ok) {
        tap_skip_all("the machine or device files do not load");
    }
    a40.gpus = 64, a40.per_node = 8;
    bed.gpus = 4, bed.per_node = 2;

    /* 1. the ring model: 64 A40s, tp 8 inside a node, dp 8 across the nodes */
    struct hx_gpt_config m = tiny();
    m.num_heads = 8;
    struct plan_config pc = { .tp = 8, .pp = 1, .dp = 8, .mbs = 1, .M = 8, .s_p = 1, .s_g = 1,
                              .s_os = 1 };
    struct hx_mesh_request q;
    struct hx_mesh mesh;
    plan_mesh_request(&pc, &a40, &m, 0, &q);
    ok = hx_mesh_init(&mesh, &q, 0) == HX_OK;
    double tp = ok ? plan_collective_s(&a40, &mesh, HX_GROUP_TP, HX_OP_ALLREDUCE, 1e9) : 0;
    double want = 2 * 7.0 / 8 * 1e9 / 32e9 + 2 * 7 * 5.7e-6;
    tap_ok(near(tp, want, 1e-12), "all-reduce of 1 GB over tp 8 inside a node (PCIe 32 GB/s, "
           "5.7 us): %.6f s, hand %.6f", tp, want);
    double dp = ok ? plan_collective_s(&a40, &mesh, HX_GROUP_DP, HX_OP_ALLREDUCE, 1e9) : 0;
    want = 2 * 7.0 / 8 * 1e9 / (12.5e9 / 8) + 2 * 7 * 14e-6;
    tap_ok(near(dp, want, 1e-12), "the same over dp 8 across nodes: the 100 Gb/s NIC shared by "
           "8 rings, 14 us: %.6f s, hand %.6f", dp, want);
    double ag = ok ? plan_collective_s(&a40, &mesh, HX_GROUP_DP, HX_OP_ALLGATHER, 1e9) : 0;
    double rv = ok ? plan_collective_s(&a40, &mesh, HX_GROUP_TP, HX_OP_RECV, 1e9) : 0;
    tap_ok(near(ag, 7.0 / 8 * 1e9 / (12.5e9 / 8) + 7 * 14e-6, 1e-12) &&
           near(rv, 1e9 / 32e9 + 5.7e-6, 1e-12),
           "an all-gather across nodes %.6f s and a receive inside one %.6f s", ag, rv);

    /* 2. a serial step's compute, node by node */
    m = tiny();
    struct plan_config serial = { .tp = 1, .pp = 1, .dp = 1, .mbs = 2, .M = 2, .s_p = 1,
                                  .s_g = 1, .s_os = 1 };
    struct plan_bed one = bed;
    one.gpus = 1, one.per_node = 1;
    struct plan_estimate e;
    int ret = plan_estimate(&m, &serial, &one, &e);
    struct hx_gpt_config c = m;
    c.micro_batch_size = 2, c.num_micro_batches = 2;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    hx_gpt_t g;
    double sum = 0;
    if (hx_gpt_build(&g, &c, &o) == HX_OK) {
        hx_graph_t gr = hx_gpt_graph(g);
        for (int i = 0; i < hx_model_step_nodes(hx_gpt_model(g)); i++) {
            const struct hx_node *n = &gr->nodes[i];
            sum += n->kind == HX_KIND_COMM ? 0
                   : hx_sim_analytic_cost_us(n, n->flops, n->bytes, 0, 1) * 1e-6;
        }
        hx_gpt_destroy(g);
    }
    tap_ok(ret == HX_OK && sum > 0 && near(e.compute, sum, 1e-12) && e.step == e.compute,
           "serial: the step is its compute, %.6f s, the nodes' analytic sum %.6f s", e.compute,
           sum);

    /* 3. AMSP's model-state formula, and ZeRO-3 against no sharding */
    struct plan_config none = { .tp = 1, .pp = 1, .dp = 4, .mbs = 1, .M = 4, .s_p = 1,
                                .s_g = 1, .s_os = 1 };
    struct plan_config z3 = none, mix = none;
    z3.s_p = z3.s_g = z3.s_os = 4;
    mix.s_g = 4, mix.s_os = 4; /* ZeRO-2 */
    struct plan_estimate en, e3, em;
    ret = plan_estimate(&m, &none, &bed, &en);
    ret = ret == HX_OK ? plan_estimate(&m, &z3, &bed, &e3) : ret;
    ret = ret == HX_OK ? plan_estimate(&m, &mix, &bed, &em) : ret;
    /* under s_p = 1 the owners hold whole tensors, balanced by size: at least the formula,
     * at most one more of the largest tensor's gradient and Adam states (wte: 256 x 64) */
    tap_ok(ret == HX_OK && near(en.states, en.model_state_formula, 1e-9) &&
           near(e3.states, e3.model_state_formula, 1e-9) &&
           em.states >= em.model_state_formula &&
           em.states <= em.model_state_formula + 12.0 * 256 * 64,
           "model states of (1,1,1), (4,4,4), (1,4,4): %.0f, %.0f, %.0f bytes, AMSP's formula "
           "%.0f, %.0f, %.0f", en.states, e3.states, em.states, en.model_state_formula,
           e3.model_state_formula, em.model_state_formula);
    tap_ok(ret == HX_OK && near(e3.states * 4, en.states, 0.01),
           "ZeRO-3 on 4 ranks keeps a quarter of the states (%.0f of %.0f bytes)", e3.states,
           en.states);
    tap_ok(ret == HX_OK && e3.states < em.states && em.states < en.states,
           "sharding more keeps less: (4,4,4) < (1,4,4) < (1,1,1)");

    /* 4. extended from two small steps = built whole */
    struct plan_config pp2 = { .tp = 1, .pp = 2, .dp = 2, .mbs = 1, .M = 24, .s_p = 1,
                               .s_g = 1, .s_os = 1 };
    struct plan_config z2 = { .tp = 1, .pp = 1, .dp = 4, .mbs = 1, .M = 48, .s_p = 1,
                              .s_g = 4, .s_os = 4 };
    for (int k = 0; k < 2; k++) {
        struct plan_config x = k == 0 ? pp2 : z2, w = x;
        w.exact = 1;
        struct plan_estimate ex, ew;
        ret = plan_estimate(&m, &x, &bed, &ex);
        ret = ret == HX_OK ? plan_estimate(&m, &w, &bed, &ew) : ret;
        tap_ok(ret == HX_OK && near(ex.step, ew.step, 1e-9) && near(ex.grad, ew.grad, 1e-9) &&
               near(ex.inputs, ew.inputs, 1e-9),
               "%s, %d micro-batches a rank: extended %.6f s, whole %.6f s",
               k == 0 ? "1F1B on 2 stages" : "ZeRO-2 on dp 4", x.M / x.dp, ex.step, ew.step);
    }
    return tap_exit();
}
