/* SPDX-License-Identifier: MIT */
/* examples/custom_graph.c: a training step written by hand as one codelet graph with helix's
 * builders, without the parallel passes (examples/custom_model.c puts a model under them).
 * It shows
 *   1- how to declare tensors cut into row tiles, so each builder call (include/helix/layers.h)
 *      emits one task per tile and the tiles of a layer run in parallel;
 *   2- a whole training step as one graph: zero the gradients, forward, loss, backward,
 *      gradient norm, AdamW; StarPU derives every dependency from the order of the calls;
 *   3- the loop a trainer runs: set the per-step optimizer arguments on the nodes, submit,
 *      wait, read the loss on the host.
 * The model is a 2-layer MLP classifier on synthetic data: x (N,D) -> gelu(x W1^T + b1) (N,H)
 * -> logits (N,K), trained with softmax cross-entropy against label = argmax(x R^T) for a fixed
 * random R (K,D), so the labels are learnable.  Exits 1 unless the loss halves in 100 steps.
 * Run: ./custom_graph [--sched NAME] [--workers N] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"

#define N 512    /* samples, all of them in every step (full-batch training) */
#define D 16     /* input features */
#define H 64     /* hidden units */
#define K 4      /* classes */
#define TILE 64  /* rows per task: N / TILE = 8 tasks per layer */
#define STEPS 100
#define LR 1e-2f

struct mlp {
    hx_graph_t g;
    hx_tensor_t x, y;                   /* inputs (N,D) f32 and labels (N,1) i32 */
    hx_tensor_t pre, hid, logits;       /* activations (N,H), (N,H), (N,K) */
    hx_tensor_t losses, lse;            /* per-sample loss and log-sum-exp (N,1) */
    hx_tensor_t dhid, dpre;             /* activation gradients (N,H) */
    hx_tensor_t loss_sum, gnorm_sumsq;  /* (1,1) f64 accumulators */
    hx_tensor_t param[4], grad[4];      /* w1 (H,D), b1 (1,H), w2 (K,H), b2 (1,K) */
};

/* ---- 1. the graph of one step ---- */

static void build(struct mlp *m)
{
    static const char *names[4] = { "w1", "b1", "w2", "b2" };
    static const int shape[4][2] = { { H, D }, { 1, H }, { K, H }, { 1, K } };
    char name[HX_NAME_MAX];
    hx_graph_t g = m->g = hx_graph_create();

    /* row-tiled tensors share one tiling; parameters are single tiles (tile_rows 0) */
    m->x = hx_graph_tensor(g, "x", HX_F32, HX_ROLE_INPUT, N, D, TILE);
    m->y = hx_graph_tensor(g, "y", HX_I32, HX_ROLE_INPUT, N, 1, TILE);
    m->pre = hx_graph_tensor(g, "pre", HX_F32, HX_ROLE_ACTIVATION, N, H, TILE);
    m->hid = hx_graph_tensor(g, "hid", HX_F32, HX_ROLE_ACTIVATION, N, H, TILE);
    m->logits = hx_graph_tensor(g, "logits", HX_F32, HX_ROLE_ACTIVATION, N, K, TILE);
    m->losses = hx_graph_tensor(g, "losses", HX_F32, HX_ROLE_ACTIVATION, N, 1, TILE);
    m->lse = hx_graph_tensor(g, "lse", HX_F32, HX_ROLE_ACTIVATION, N, 1, TILE);
    m->dhid = hx_graph_tensor(g, "dhid", HX_F32, HX_ROLE_ACTIVATION, N, H, TILE);
    m->dpre = hx_graph_tensor(g, "dpre", HX_F32, HX_ROLE_ACTIVATION, N, H, TILE);
    m->loss_sum = hx_graph_tensor(g, "loss_sum", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    m->gnorm_sumsq = hx_graph_tensor(g, "gnorm_sumsq", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    hx_tensor_t adam_m[4], adam_v[4];
    for (int i = 0; i < 4; i++) { /* each parameter with its gradient and Adam moments */
        int r = shape[i][0], c = shape[i][1];
        m->param[i] = hx_graph_tensor(g, names[i], HX_F32, HX_ROLE_PARAM, r, c, 0);
        snprintf(name, sizeof name, "d%s", names[i]);
        m->grad[i] = hx_graph_tensor(g, name, HX_F32, HX_ROLE_GRAD, r, c, 0);
        snprintf(name, sizeof name, "%s.m", names[i]);
        adam_m[i] = hx_graph_tensor(g, name, HX_F32, HX_ROLE_OPTIM, r, c, 0);
        snprintf(name, sizeof name, "%s.v", names[i]);
        adam_v[i] = hx_graph_tensor(g, name, HX_F32, HX_ROLE_OPTIM, r, c, 0);
    }
    hx_tensor_t w1 = m->param[0], b1 = m->param[1], w2 = m->param[2], b2 = m->param[3];
    hx_tensor_t dw1 = m->grad[0], db1 = m->grad[1], dw2 = m->grad[2], db2 = m->grad[3];

    /* parameter gradients accumulate (+=), so they start each step at zero */
    g->cur.phase = HX_PHASE_OPTIMIZER;
    for (int i = 0; i < 4; i++) {
        hx_fill(g, m->grad[i], 0.0f);
    }
    hx_fill(g, m->loss_sum, 0.0f);
    hx_fill(g, m->gnorm_sumsq, 0.0f);

    g->cur.phase = HX_PHASE_FORWARD;
    hx_linear_fwd(g, m->pre, m->x, w1, b1);          /* pre = x W1^T + b1 */
    hx_gelu_fwd(g, m->hid, m->pre);                  /* hid = gelu(pre) */
    hx_linear_fwd(g, m->logits, m->hid, w2, b2);     /* logits = hid W2^T + b2 */
    hx_xent_fwd(g, m->losses, m->lse, m->logits, m->y);
    hx_reduce(g, m->loss_sum, m->losses, 0);         /* sum of the N losses */

    /* backward of the mean loss: dlogits = (softmax - onehot) / N, written over logits */
    g->cur.phase = HX_PHASE_BACKWARD_DATA;
    hx_xent_bwd(g, m->logits, m->lse, m->y, 1.0f / N);
    hx_linear_bwd_data(g, m->dhid, m->logits, w2);   /* dhid = dlogits W2 */
    hx_gelu_bwd(g, m->dpre, m->pre, m->dhid);        /* dpre = gelu'(pre) dhid */
    g->cur.phase = HX_PHASE_BACKWARD_WEIGHT;
    hx_linear_bwd_weight(g, dw2, db2, m->logits, m->hid);
    hx_linear_bwd_weight(g, dw1, db1, m->dpre, m->x); /* x needs no gradient */

    /* global gradient norm, then one AdamW task per parameter that clips with it */
    g->cur.phase = HX_PHASE_OPTIMIZER;
    for (int i = 0; i < 4; i++) {
        hx_reduce(g, m->gnorm_sumsq, m->grad[i], 1);
    }
    for (int i = 0; i < 4; i++) {
        struct hx_adamw_args a = { .lr = LR, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                                   .weight_decay = i % 2 == 0 ? 0.01f : 0.0f, /* not biases */
                                   .max_norm = 1.0f, .t = 1 };
        hx_adamw(g, m->param[i], m->grad[i], adam_m[i], adam_v[i], m->gnorm_sumsq, &a);
    }
}

/* ---- 2. synthetic data and initial weights, written on the host ---- */

static uint64_t rng_state = 42;

static float uniform(float lo, float hi) /* xorshift64*: deterministic on every platform */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1DULL;
    return lo + (hi - lo) * (float)((r >> 40) * (1.0 / 16777216.0));
}

static void fill_uniform(hx_tensor_t t, float bound)
{
    for (size_t i = 0; i < hx_tensor_numel(t); i++) {
        hx_f32(t)[i] = uniform(-bound, bound);
    }
}

static int init(struct mlp *m)
{
    hx_tensor_t host[4] = { m->x, m->y, m->param[0], m->param[2] };
    for (int i = 0; i < 4; i++) {
        int ret = hx_tensor_begin_access(host[i], 'w'); /* host writes go through StarPU too */
        if (ret != HX_OK) {
            while (i-- > 0) {
                hx_tensor_end_access(host[i]);
            }
            return ret; /* already reported */
        }
    }
    fill_uniform(m->x, 1.0f);
    fill_uniform(m->param[0], 1.0f / sqrtf(D)); /* PyTorch's Linear default; biases stay 0 */
    fill_uniform(m->param[2], 1.0f / sqrtf(H));
    float r[K][D];
    for (int k = 0; k < K; k++) {
        for (int j = 0; j < D; j++) {
            r[k][j] = uniform(-1.0f, 1.0f);
        }
    }
    for (int i = 0; i < N; i++) {
        const float *xi = hx_f32(m->x) + (size_t)i * D;
        float best = -INFINITY;
        for (int k = 0; k < K; k++) {
            float s = 0.0f;
            for (int j = 0; j < D; j++) {
                s += r[k][j] * xi[j];
            }
            if (s > best) {
                best = s;
                hx_i32(m->y)[i] = k;
            }
        }
    }
    for (int i = 0; i < 4; i++) {
        hx_tensor_end_access(host[i]);
    }
    return HX_OK;
}

/* ---- 3. one step: optimizer arguments on the nodes, submit, wait, read back ---- */


static int step(struct mlp *m, int s, double *loss, double *gnorm)
{
    for (int i = 0; i < m->g->nnodes; i++) {
        if (m->g->nodes[i].op == HX_OP_ADAMW) {
            m->g->nodes[i].args.adamw.lr = LR;  /* a schedule would vary it with s */
            m->g->nodes[i].args.adamw.t = s + 1; /* 1-based, for Adam's bias correction */
        }
    }
    int ret = hx_graph_submit(m->g, 0, -1);
    int wret = hx_graph_wait(m->g); /* wait even after a failed submit: nothing stays queued */
    if (ret == HX_OK) {
        ret = wret;
    }
    double sum = NAN, sumsq = NAN; /* (1,1) f64 accumulators, read once the step is done */
    hx_tensor_read(m->loss_sum, &sum);
    hx_tensor_read(m->gnorm_sumsq, &sumsq);
    *loss = sum / N;
    *gnorm = sqrt(sumsq);
    return ret;
}

int main(int argc, char **argv)
{
    struct hx_runtime_opts opts;
    hx_runtime_opts_init(&opts);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sched") == 0 && i + 1 < argc) {
            opts.sched = argv[++i];
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            char *end;
            long w = strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end != '\0' || w < 0 || w > 64) {
                fprintf(stderr, "custom_graph: --workers expects 0..64, got '%s'\n", argv[i]);
                return 2;
            }
            opts.workers = (int)w;
        } else {
            fprintf(stderr, "custom_graph: unknown argument '%s'; usage: custom_graph "
                    "[--sched NAME] [--workers N]\n", argv[i]);
            return 2;
        }
    }
    int ret = hx_runtime_init(&opts);
    if (ret != HX_OK) {
        return ret == HX_EINVAL ? 2 : 1; /* reported, with the list of policies if that was it */
    }

    struct mlp m;
    build(&m);
    ret = hx_graph_realize(m.g);
    if (ret == HX_OK) {
        ret = init(&m);
    }
    printf("custom_graph: MLP %d -> %d -> %d classes, %d samples in tiles of %d, %d tasks/step, "
           "%d workers, policy %s\n", D, H, K, N, TILE, m.g->nnodes, hx_runtime_workers(),
           hx_runtime_sched_name());
    double first = NAN, loss = NAN, gnorm = NAN;
    for (int s = 0; s < STEPS && ret == HX_OK; s++) {
        ret = step(&m, s, &loss, &gnorm);
        if (s == 0) {
            first = loss;
        }
        if (ret == HX_OK && (s % 10 == 0 || s == STEPS - 1)) {
            printf("step %3d | loss %.4f | grad norm %.4f\n", s + 1, loss, gnorm);
        }
    }
    int ok = ret == HX_OK && loss < 0.5 * first; /* NaN compares false: a failure too */
    printf("loss %.4f -> %.4f: %s\n", first, loss, ok ? "OK (halved)" : "FAILED (not halved)");

    hx_graph_destroy(m.g); /* unregisters the tiles: before the runtime stops */
    hx_runtime_shutdown();
    return ok ? 0 : 1;
}
