/* SPDX-License-Identifier: MIT */
/* tests/codelets/adamw.c: the adamw codelet, built as the optimizer builds it (fill the f64
 * squared-norm accumulator, hx_reduce the squared norm of both gradients into it, one
 * hx_adamw per parameter) and run on 2 workers for 3 consecutive steps (t = 1, 2, 3, lr set
 * per step in the nodes' args, new gradients each step), matches hx_ref_clip_coef +
 * hx_ref_adamw (normwise rel. error <= 1e-5, no NaN/Inf) on param, m and v of a (96,257)
 * parameter and of a (1,96) one whose values (~1e-3) are dominated by the updates, after
 * every step, with clipping active (max_norm 1, norm ~90), inactive (max_norm 1000) and
 * disabled (0), and weight decay 0.1 and 0. */
#include "codelets/harness.h"

#define NCOMBOS 5
#define NSTEPS 3
#define NPARAMS 2
#define NCHECKS (NCOMBOS * NSTEPS * NPARAMS * 3)

struct combo {
    float max_norm, wd;
    const char *clip; /* what max_norm does here */
};

static const float lrs[NSTEPS] = { 1e-2f, 5e-3f, 1e-3f };

static void test_combo(const struct combo *c, struct rng *r)
{
    static const int rows[NPARAMS] = { 96, 1 }, cols[NPARAMS] = { 257, 96 };
    /* the small parameter is dominated by its updates, so its check sees their errors */
    static const float pscale[NPARAMS] = { 1.0f, 1e-3f };
    hx_graph_t g = graph_new();
    struct hx_tensor *p[NPARAMS], *gr[NPARAMS], *m[NPARAMS], *v[NPARAMS];
    struct hx_tensor *gn = hx_graph_tensor(g, "gnorm_sumsq", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    for (int i = 0; i < NPARAMS; i++) {
        p[i] = hx_graph_tensor(g, label("p%d", i), HX_F32, HX_ROLE_PARAM, rows[i], cols[i], 0);
        gr[i] = hx_graph_tensor(g, label("g%d", i), HX_F32, HX_ROLE_GRAD, rows[i], cols[i], 0);
        m[i] = hx_graph_tensor(g, label("m%d", i), HX_F32, HX_ROLE_OPTIM, rows[i], cols[i], 0);
        v[i] = hx_graph_tensor(g, label("v%d", i), HX_F32, HX_ROLE_OPTIM, rows[i], cols[i], 0);
    }
    hx_fill(g, gn, 0.0f);
    for (int i = 0; i < NPARAMS; i++) {
        hx_reduce(g, gn, gr[i], 1);
    }
    struct hx_adamw_args args = { .lr = lrs[0], .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                                  .weight_decay = c->wd, .max_norm = c->max_norm, .t = 1 };
    for (int i = 0; i < NPARAMS; i++) {
        hx_adamw(g, p[i], gr[i], m[i], v[i], gn, &args);
    }
    graph_realize(g);

    double *pd[NPARAMS], *md[NPARAMS], *vd[NPARAMS], *gd[NPARAMS];
    for (int i = 0; i < NPARAMS; i++) {
        size_t n = hx_tensor_numel(p[i]);
        fill_uniform(hx_f32(p[i]), n, r, pscale[i], 0.0f);
        pd[i] = dup_f64(hx_f32(p[i]), n);
        md[i] = dalloc(n); /* m, v start at zero, as the realized tensors */
        vd[i] = dalloc(n);
        gd[i] = dalloc(n);
    }

    for (int step = 0; step < NSTEPS; step++) {
        /* new gradients, written through the runtime's host view */
        double sumsq = 0.0;
        for (int i = 0; i < NPARAMS; i++) {
            size_t n = hx_tensor_numel(gr[i]);
            hx_tensor_begin_access(gr[i], 'w');
            fill_uniform(hx_f32(gr[i]), n, r, 1.0f, 0.0f);
            f32_to_f64(gd[i], hx_f32(gr[i]), n);
            hx_tensor_end_access(gr[i]);
            sumsq += hx_ref_sumsq(gd[i], (int)n);
        }
        for (int k = 0; k < g->nnodes; k++) {
            if (g->nodes[k].op == HX_OP_ADAMW) {
                g->nodes[k].args.adamw.t = step + 1;
                g->nodes[k].args.adamw.lr = lrs[step];
            }
        }

        graph_run(g);

        double clip = hx_ref_clip_coef(sumsq, c->max_norm);
        for (int i = 0; i < NPARAMS; i++) {
            size_t n = hx_tensor_numel(p[i]);
            hx_ref_adamw(pd[i], md[i], vd[i], gd[i], (int)n, lrs[step], args.beta1, args.beta2,
                         args.eps, c->wd, clip, step + 1);
            char sh[128];
            snprintf(sh, sizeof sh, "(%d,%d) t=%d lr=%g wd=%g clip %s (coef %.3g)", rows[i],
                     cols[i], step + 1, lrs[step], c->wd, c->clip, clip);
            check_tensor(label("adamw param %s", sh), p[i], pd[i], TOL);
            check_tensor(label("adamw m %s", sh), m[i], md[i], TOL);
            check_tensor(label("adamw v %s", sh), v[i], vd[i], TOL);
        }
    }

    for (int i = 0; i < NPARAMS; i++) {
        free(pd[i]);
        free(md[i]);
        free(vd[i]);
        free(gd[i]);
    }
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct combo combos[NCOMBOS] = {
        { 1.0f, 0.1f, "active" },
        { 1.0f, 0.0f, "active" },
        { 1000.0f, 0.1f, "inactive" },
        { 1000.0f, 0.0f, "inactive" },
        { 0.0f, 0.1f, "disabled" },
    };
    struct rng r = { 0x6164616d7701ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NCOMBOS; i++) {
        test_combo(&combos[i], &r);
    }
    return harness_end();
}
