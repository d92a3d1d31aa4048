/* SPDX-License-Identifier: MIT */
/* examples/custom_model.c: your own model under helix's parallel passes (helix/model.h).
 * The model is written entirely here: a small transformer variant with PaLM's parallel
 * block, where attention and the MLP read one normed input and their outputs are added to
 * the residual stream together,
 *     h = RMSNorm(x)                                                   (N,C)
 *     x' = x + Attn(h Wqkv^T) Wproj^T + gelu(h Wfc^T) Wfcproj^T         (N,C)
 * after a token embedding (V,C) and before a final RMSNorm and an untied head (V,C), with
 * no biases.  It declares its parameters (what each is, how tensor parallelism splits it),
 * writes its seven emitters with the builders of helix/layers.h, and leaves the rest to
 * helix: the parameters' shards on every rank, the micro-batches' order, gradient buckets
 * (DDP), ZeRO/AMSP sharding, the loss sum, the norm and AdamW.  The parallel block needs
 * one tensor-parallel all-reduce per layer and direction where a GPT block needs two: the
 * two branches' partial sums are added before they are reduced.
 * Run: ./custom_model [--steps S] [--lr X] [--tile-seqs K] [--log-json F] [--save-params F]
 *      mpirun -np 4 ./custom_model --tp 2        (dp 2 x tp 2; --zero-stage 1..3, --strands)
 * It prints every step's loss; with --log-json it writes them as JSON lines (helix train's
 * format), with --save-params the final parameters, gathered whole, as float32 in parameter
 * order.  tests/mpi/custom_model.sh compares dp2 x tp2 with the serial run that way.  Exits
 * 1 if the loss does not go down. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"

#define V 256  /* vocabulary: the embedded corpus's bytes */
#define C 64   /* hidden size */
#define NH 4   /* attention heads */
#define F 128  /* MLP width */
#define L 2    /* layers */
#define T 32   /* sequence length */
#define B 4    /* sequences per micro-batch */
#define M 4    /* micro-batches per step */
#define N (B * T) /* rows of a micro-batch */
#define EPS 1e-5f

/* parameters, in order: the embedding, per layer five, the final norm and the head */
enum { P_NORM, P_QKV, P_PROJ, P_FC, P_FCPROJ, P_PER_LAYER };
#define P_WTE 0
#define PI(l, k) (1 + (l) * P_PER_LAYER + (k))
#define P_LNF PI(L, 0)
#define P_HEAD (P_LNF + 1)
#define NPARAMS (P_HEAD + 1)

/* What one micro-batch keeps from its forward for its backward (this rank's shapes: tp
 * splits the heads and the MLP's channels) */
struct mb_acts {
    hx_tensor_t tokens, targets;               /* (N,1) i32 */
    hx_tensor_t x[L + 1];                      /* residual stream (N,C): x[l] enters layer l */
    hx_tensor_t rstd[L], h[L];                 /* the block's RMSNorm: (N,1), (N,C) */
    hx_tensor_t qkv[L], att[L], lse[L];        /* (N,3C/tp), (N,C/tp), (N,NH/tp) */
    hx_tensor_t pre[L], act[L];                /* the MLP's (N,F/tp) before and after gelu */
    hx_tensor_t rstdf, hf, logits, losses, lse_x; /* the head: ..., (N,V), (N,1), (N,1) */
};

struct pmodel {
    int heads;                 /* this rank's attention heads: NH/tp */
    struct mb_acts *mb;        /* [micro-batches of this rank] */
    /* temporaries every micro-batch reuses (StarPU orders the reuse) */
    hx_tensor_t y, ym;         /* a layer's two branches, partial over tp (N,C) */
    hx_tensor_t dx[L + 1], dhf, dh, dhm; /* gradients (N,C) */
    hx_tensor_t datt, dqkv, dact, dpre;
};

static struct pmodel *pm(hx_model_t m)
{
    return hx_model_user(m);
}

static hx_tensor_t W(hx_model_t m, int i)
{
    return hx_model_compute_param(m, i);
}

/* parameter i's gradient: accumulate into it, then say it is complete for this micro-batch
 * (its bucket or reduce-scatter can leave while the backward goes on) */
static hx_tensor_t G(hx_model_t m, int i)
{
    return hx_model_compute_grad(m, i);
}

/* ---- 1. the parameters: shapes, roles and tensor-parallel splits ---- */

static void spec(struct hx_param_spec *s, const char *name, int rows, int cols, int role,
                 int split, int site, int layer, double std)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->rows = rows, s->cols = cols, s->role = role, s->split = split, s->site = site;
    s->layer = layer; /* unit 0: under ZeRO-3 a layer's parameters travel as one message */
    s->init = role == HX_PARAM_NORM ? HX_INIT_ONE : HX_INIT_NORMAL;
    s->init_std = std;
}

static void declare_params(struct hx_param_spec *s)
{
    const double std = 0.02, proj = 0.02 / sqrt(2.0 * L); /* GPT-2's residual scaling */
    char n[HX_NAME_MAX];
    spec(&s[P_WTE], "wte", V, C, HX_PARAM_EMBEDDING, HX_TP_REPLICATED, HX_SITE_EMBED, -1, std);
    for (int l = 0; l < L; l++) {
        snprintf(n, sizeof n, "h%d.norm_w", l);
        spec(&s[PI(l, P_NORM)], n, 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_SITE_LAYER, l, 0);
        /* q | k | v, each split by heads: tp rank r keeps heads r*NH/tp .. of each */
        snprintf(n, sizeof n, "h%d.qkv_w", l);
        spec(&s[PI(l, P_QKV)], n, 3 * C, C, HX_PARAM_WEIGHT, HX_TP_COLUMN, HX_SITE_LAYER, l,
             std);
        s[PI(l, P_QKV)].nblocks = 3;
        s[PI(l, P_QKV)].block[0] = s[PI(l, P_QKV)].block[1] = s[PI(l, P_QKV)].block[2] = C;
        snprintf(n, sizeof n, "h%d.proj_w", l);
        spec(&s[PI(l, P_PROJ)], n, C, C, HX_PARAM_WEIGHT, HX_TP_ROW, HX_SITE_LAYER, l, proj);
        snprintf(n, sizeof n, "h%d.fc_w", l);
        spec(&s[PI(l, P_FC)], n, F, C, HX_PARAM_WEIGHT, HX_TP_COLUMN, HX_SITE_LAYER, l, std);
        snprintf(n, sizeof n, "h%d.fcproj_w", l);
        spec(&s[PI(l, P_FCPROJ)], n, C, F, HX_PARAM_WEIGHT, HX_TP_ROW, HX_SITE_LAYER, l, proj);
    }
    spec(&s[P_LNF], "lnf_w", 1, C, HX_PARAM_NORM, HX_TP_REPLICATED, HX_SITE_HEAD, -1, 0);
    spec(&s[P_HEAD], "head_w", V, C, HX_PARAM_WEIGHT, HX_TP_REPLICATED, HX_SITE_HEAD, -1, std);
}

/* ---- 2. the emitters: the model's own nodes, micro-batch mb's tensors ---- */

static void forward_begin(hx_model_t m, int mb, int c)
{
    struct mb_acts *a = &pm(m)->mb[mb];
    /* the whole table on every tp rank: the plain lookup (no positions: none are learned;
     * causal attention without them still trains, slowly) */
    hx_embed_fwd_vp(hx_model_graph(m), a->x[0], a->tokens, W(m, P_WTE), NULL, T, 0, V, 0);
}

static void forward_layer(hx_model_t m, int mb, int c, int l)
{
    hx_graph_t g = hx_model_graph(m);
    struct pmodel *p = pm(m);
    struct mb_acts *a = &p->mb[mb];
    hx_rmsnorm_fwd(g, a->h[l], a->rstd[l], a->x[l], W(m, PI(l, P_NORM)), EPS);
    /* column-parallel: this rank's heads and MLP channels, from the whole h */
    hx_linear_fwd(g, a->qkv[l], a->h[l], W(m, PI(l, P_QKV)), NULL);
    hx_attention_fwd(g, a->att[l], a->lse[l], a->qkv[l], T, p->heads, 0);
    hx_linear_fwd(g, a->pre[l], a->h[l], W(m, PI(l, P_FC)), NULL);
    hx_gelu_fwd(g, a->act[l], a->pre[l]);
    /* row-parallel: partial sums over tp, both branches added, then reduced once */
    hx_linear_fwd(g, p->y, a->att[l], W(m, PI(l, P_PROJ)), NULL);
    hx_linear_fwd(g, p->ym, a->act[l], W(m, PI(l, P_FCPROJ)), NULL);
    hx_accumulate(g, p->y, p->ym);
    hx_model_tp_reduce(m, p->y, p->y);
    hx_add(g, a->x[l + 1], a->x[l], p->y);
}

static void forward_end(hx_model_t m, int mb, int c)
{
    hx_graph_t g = hx_model_graph(m);
    struct mb_acts *a = &pm(m)->mb[mb];
    hx_rmsnorm_fwd(g, a->hf, a->rstdf, a->x[L], W(m, P_LNF), EPS);
    hx_linear_fwd(g, a->logits, a->hf, W(m, P_HEAD), NULL);
}

/* the loss and, in place, the logits' gradient, scaled so the step's gradients are those of
 * the mean loss over the global batch; every tp rank holds the whole logits and adds the
 * same loss (helix reduces the sum over dp) */
static void loss(hx_model_t m, int mb)
{
    hx_graph_t g = hx_model_graph(m);
    struct mb_acts *a = &pm(m)->mb[mb];
    hx_xent_fused(g, a->losses, a->lse_x, a->logits, a->targets, 1.0f / (float)(M * N));
    hx_reduce(g, hx_model_loss_sum(m), a->losses, 0);
}

static void backward_begin(hx_model_t m, int mb, int c)
{
    hx_graph_t g = hx_model_graph(m);
    struct pmodel *p = pm(m);
    struct mb_acts *a = &p->mb[mb];
    hx_linear_bwd_data(g, p->dhf, a->logits, W(m, P_HEAD));
    hx_linear_bwd_weight(g, G(m, P_HEAD), NULL, a->logits, a->hf);
    hx_model_grad_done(m, P_HEAD, mb);
    hx_rmsnorm_bwd_data(g, p->dx[L], p->dhf, a->x[L], W(m, P_LNF), a->rstdf, NULL);
    hx_rmsnorm_bwd_weight(g, G(m, P_LNF), p->dhf, a->x[L], a->rstdf);
    hx_model_grad_done(m, P_LNF, mb);
}

static void backward_layer(hx_model_t m, int mb, int c, int l)
{
    hx_graph_t g = hx_model_graph(m);
    struct pmodel *p = pm(m);
    struct mb_acts *a = &p->mb[mb];
    hx_tensor_t dy = p->dx[l + 1]; /* whole on every tp rank: a row-parallel output's */
    /* attention branch */
    hx_linear_bwd_data(g, p->datt, dy, W(m, PI(l, P_PROJ)));
    hx_linear_bwd_weight(g, G(m, PI(l, P_PROJ)), NULL, dy, a->att[l]);
    hx_model_grad_done(m, PI(l, P_PROJ), mb);
    hx_attention_bwd(g, p->dqkv, a->qkv[l], a->att[l], p->datt, a->lse[l], T, p->heads, 0);
    hx_linear_bwd_data(g, p->dh, p->dqkv, W(m, PI(l, P_QKV)));
    hx_linear_bwd_weight(g, G(m, PI(l, P_QKV)), NULL, p->dqkv, a->h[l]);
    hx_model_grad_done(m, PI(l, P_QKV), mb);
    /* MLP branch */
    hx_linear_bwd_data(g, p->dact, dy, W(m, PI(l, P_FCPROJ)));
    hx_linear_bwd_weight(g, G(m, PI(l, P_FCPROJ)), NULL, dy, a->act[l]);
    hx_model_grad_done(m, PI(l, P_FCPROJ), mb);
    hx_gelu_bwd(g, p->dpre, a->pre[l], p->dact);
    hx_linear_bwd_data(g, p->dhm, p->dpre, W(m, PI(l, P_FC)));
    hx_linear_bwd_weight(g, G(m, PI(l, P_FC)), NULL, p->dpre, a->h[l]);
    hx_model_grad_done(m, PI(l, P_FC), mb);
    /* h's gradient: the two column-parallel inputs' partial sums, added, then reduced once */
    hx_accumulate(g, p->dh, p->dhm);
    hx_model_tp_reduce(m, p->dh, p->dh);
    /* through the norm, plus the residual stream's own gradient */
    hx_rmsnorm_bwd_data(g, p->dx[l], p->dh, a->x[l], W(m, PI(l, P_NORM)), a->rstd[l], dy);
    hx_rmsnorm_bwd_weight(g, G(m, PI(l, P_NORM)), p->dh, a->x[l], a->rstd[l]);
    hx_model_grad_done(m, PI(l, P_NORM), mb);
}

static void backward_end(hx_model_t m, int mb, int c)
{
    struct pmodel *p = pm(m);
    struct mb_acts *a = &p->mb[mb];
    hx_embed_bwd_vp(hx_model_graph(m), G(m, P_WTE), NULL, p->dx[0], a->tokens, T, 0, V);
    hx_model_grad_done(m, P_WTE, mb);
}

static const struct hx_model_ops ops = {
    .forward_begin = forward_begin, .forward_layer = forward_layer,
    .forward_end = forward_end, .loss = loss, .backward_begin = backward_begin,
    .backward_layer = backward_layer, .backward_end = backward_end,
};

/* ---- 3. the activations: one set per micro-batch of this rank, tiles of whole sequences ---- */

static hx_tensor_t act(hx_graph_t g, const char *what, int mb, int l, int cols, int tile)
{
    char name[HX_NAME_MAX];
    snprintf(name, sizeof name, l < 0 ? "mb%d.%s" : "mb%d.%s%d", mb, what, l);
    return hx_graph_tensor(g, name, HX_F32, HX_ROLE_ACTIVATION, N, cols, tile);
}

static void declare_acts(hx_model_t m, struct pmodel *p, int tile)
{
    hx_graph_t g = hx_model_graph(m);
    int tp = hx_model_mesh(m)->tp, Cl = C / tp, Fl = F / tp, nmb = hx_model_micro_batches(m);
    p->heads = NH / tp;
    p->mb = calloc((size_t)nmb, sizeof *p->mb);
    for (int k = 0; k < nmb; k++) {
        struct mb_acts *a = &p->mb[k];
        char name[HX_NAME_MAX];
        snprintf(name, sizeof name, "mb%d.tokens", k);
        a->tokens = hx_graph_tensor(g, name, HX_I32, HX_ROLE_INPUT, N, 1, tile);
        snprintf(name, sizeof name, "mb%d.targets", k);
        a->targets = hx_graph_tensor(g, name, HX_I32, HX_ROLE_INPUT, N, 1, tile);
        for (int l = 0; l <= L; l++) {
            a->x[l] = act(g, "x", k, l, C, tile);
        }
        for (int l = 0; l < L; l++) {
            a->rstd[l] = act(g, "rstd", k, l, 1, tile);
            a->h[l] = act(g, "h", k, l, C, tile);
            a->qkv[l] = act(g, "qkv", k, l, 3 * Cl, tile);
            a->att[l] = act(g, "att", k, l, Cl, tile);
            a->lse[l] = act(g, "lse", k, l, p->heads, tile);
            a->pre[l] = act(g, "pre", k, l, Fl, tile);
            a->act[l] = act(g, "act", k, l, Fl, tile);
        }
        a->rstdf = act(g, "rstdf", k, -1, 1, tile);
        a->hf = act(g, "hf", k, -1, C, tile);
        a->logits = act(g, "logits", k, -1, V, tile);
        a->losses = act(g, "losses", k, -1, 1, tile);
        a->lse_x = act(g, "lse_x", k, -1, 1, tile);
    }
    p->y = act(g, "y", 0, -1, C, tile);
    p->ym = act(g, "ym", 0, -1, C, tile);
    for (int l = 0; l <= L; l++) {
        p->dx[l] = act(g, "dx", 0, l, C, tile);
    }
    p->dhf = act(g, "dhf", 0, -1, C, tile);
    p->dh = act(g, "dh", 0, -1, C, tile);
    p->dhm = act(g, "dhm", 0, -1, C, tile);
    p->datt = act(g, "datt", 0, -1, Cl, tile);
    p->dqkv = act(g, "dqkv", 0, -1, 3 * Cl, tile);
    p->dact = act(g, "dact", 0, -1, Fl, tile);
    p->dpre = act(g, "dpre", 0, -1, Fl, tile);
}

/* ---- 4. the loop ---- */

struct args {
    int tp, zero, steps, tile_seqs, strands;
    float lr;
    const char *log_json, *save_params;
};

static int parse(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--tp") == 0 && v) {
            a->tp = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--zero-stage") == 0 && v) {
            a->zero = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--strands") == 0) {
            a->strands = 1;
        } else if (strcmp(argv[i], "--steps") == 0 && v) {
            a->steps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--tile-seqs") == 0 && v) {
            a->tile_seqs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--lr") == 0 && v) {
            a->lr = strtof(argv[++i], NULL);
        } else if (strcmp(argv[i], "--log-json") == 0 && v) {
            a->log_json = argv[++i];
        } else if (strcmp(argv[i], "--save-params") == 0 && v) {
            a->save_params = argv[++i];
        } else {
            fprintf(stderr, "custom_model: unknown or incomplete argument '%s'; use --tp N, "
                    "--zero-stage S, --strands, --steps S, --lr X, --tile-seqs K, --log-json "
                    "FILE, --save-params FILE\n", argv[i]);
            return 2;
        }
    }
    if (a->steps < 1 || a->tile_seqs < 1 || B % a->tile_seqs != 0 || !(a->lr > 0)) {
        fprintf(stderr, "custom_model: --steps %d, --lr %g and --tile-seqs %d: steps and lr "
                "must be positive, tile-seqs a divisor of the %d sequences of a "
                "micro-batch\n", a->steps, (double)a->lr, a->tile_seqs, B);
        return 2;
    }
    return 0;
}

/* The final parameters, gathered whole on every rank, written by rank 0 (float32, in
 * parameter order) */
static int save_params(hx_model_t m, const char *path, int rank)
{
    FILE *f = rank == 0 ? fopen(path, "wb") : NULL;
    int ret = rank != 0 || f != NULL ? HX_OK : HX_ERR(HX_EIO, "cannot write %s", path);
    for (int i = 0; i < hx_model_num_param_tensors(m) && ret == HX_OK; i++) {
        int r, k;
        hx_model_param_shape(m, i, &r, &k);
        float *buf = malloc(sizeof(float) * (size_t)r * k);
        ret = buf ? hx_model_gather_state(m, i, HX_STATE_PARAM, buf) : HX_ENOMEM;
        if (ret == HX_OK && f != NULL && fwrite(buf, sizeof(float), (size_t)r * k, f) !=
                                             (size_t)r * k) {
            ret = HX_ERR(HX_EIO, "writing %s to %s", hx_model_param_name(m, i), path);
        }
        free(buf);
    }
    if (f != NULL && fclose(f) != 0 && ret == HX_OK) {
        ret = HX_ERR(HX_EIO, "closing %s", path);
    }
    return ret;
}

int main(int argc, char **argv)
{
    struct args a = { .tp = 1, .steps = 20, .tile_seqs = 1, .lr = 2e-3f };
    if (hx_mpi_init(&argc, &argv) != HX_OK) {
        return 1;
    }
    int rank = hx_mpi_world_rank(), size = hx_mpi_world_size();
    int ret = parse(argc, argv, &a);
    /* the mesh, checked against the model's shape before any work */
    struct hx_mesh mesh;
    struct hx_mesh_request req = { .world_size = size, .world_rank = rank, .tp = a.tp,
                                   .zero_stage = a.zero, .ranks_per_node = size,
                                   .num_heads = NH, .hidden_size = C, .num_layers = L,
                                   .seq_len = T, .micro_batches = M };
    if (ret == 0 && hx_mesh_init(&mesh, &req, rank != 0) != HX_OK) {
        ret = 2;
    }
    struct hx_param_spec specs[NPARAMS];
    declare_params(specs);
    struct hx_model_desc desc = { .ops = &ops, .num_layers = L, .nparams = NPARAMS,
                                  .params = specs, .num_micro_batches = M,
                                  .loss_count = (double)M * N };
    struct hx_parallel_config par = { .mesh = &mesh, .strands = a.strands };
    struct hx_optim_config o;
    hx_optim_config_default(&o, a.steps);
    o.lr = a.lr;
    o.warmup_iters = a.steps / 4;
    struct pmodel p = { 0 };
    desc.user = &p;
    hx_model_t m = NULL;
    if (ret == 0 && (hx_model_create(&m, &desc, &par) != HX_OK)) {
        ret = 2;
    }
    if (ret != 0) {
        hx_mpi_finalize();
        return ret;
    }
    declare_acts(m, &p, a.tile_seqs * T);
    hx_model_emit_step(m, &o);
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.mpi = size > 1;
    struct hx_comm_opts co = { .timeout = 60 };
    if (hx_runtime_init(&ro) != HX_OK || hx_comm_open(&mesh, &co) != HX_OK ||
        hx_graph_realize(hx_model_graph(m)) != HX_OK) {
        hx_mpi_abort(1);
    }
    hx_model_init_params(m, 42); /* every rank draws the whole model and keeps its shard */
    struct hx_dataset data = { 0 };
    int32_t *tok = malloc(sizeof(int32_t) * M * N), *tgt = malloc(sizeof(int32_t) * M * N);
    FILE *log = rank == 0 && a.log_json ? fopen(a.log_json, "w") : NULL;
    double first = NAN, last = NAN;
    ret = tok && tgt ? hx_data_load_default(&data) : HX_ENOMEM;
    if (ret == HX_OK && rank == 0 && a.log_json && log == NULL) {
        ret = HX_ERR(HX_EIO, "cannot write %s", a.log_json);
    }
    int nmb = hx_model_micro_batches(m), d0 = mesh.dp_rank * nmb;
    for (int s = 0; s < a.steps && ret == HX_OK; s++) {
        /* the same global batch everywhere; this rank writes its data-parallel share */
        hx_data_next_batch(&data, M * B, T, tok, tgt);
        for (int k = 0; k < nmb && ret == HX_OK; k++) {
            ret = hx_tensor_write(p.mb[k].tokens, tok + (size_t)(d0 + k) * N);
            ret = ret == HX_OK ? hx_tensor_write(p.mb[k].targets, tgt + (size_t)(d0 + k) * N)
                               : ret;
        }
        struct hx_step_result r;
        ret = ret == HX_OK ? hx_model_step(m, &o, s, &r) : ret;
        if (ret == HX_OK && rank == 0) {
            first = s == 0 ? r.loss : first;
            last = r.loss;
            printf("step %2d loss %.6f grad norm %.6f\n", s + 1, r.loss, r.grad_norm);
            if (log != NULL) {
                fprintf(log, "{\"step\": %d, \"loss\": %.9g, \"grad_norm\": %.9g}\n", s + 1,
                        r.loss, r.grad_norm);
            }
        }
    }
    if (ret == HX_OK && a.save_params) {
        ret = save_params(m, a.save_params, rank);
    }
    if (log != NULL && fclose(log) != 0 && ret == HX_OK) {
        ret = HX_ERR(HX_EIO, "closing %s", a.log_json);
    }
    if (rank == 0 && ret == HX_OK) {
        char line[256];
        hx_mesh_describe(&mesh, line, sizeof line);
        printf("%s\nloss %.4f -> %.4f\n", line, first, last);
    }
    int ok = ret == HX_OK && (rank != 0 || last < first);
    if (data.map != NULL) {
        hx_data_free(&data);
    }
    free(tok);
    free(tgt);
    hx_comm_close();
    hx_model_destroy(m);
    free(p.mb);
    hx_runtime_shutdown();
    hx_mpi_finalize();
    return ok ? 0 : 1;
}
