/* SPDX-License-Identifier: MIT */
/* graphs/model_state.c: any model at run time: its parameters' states between the serial
 * layout and this rank's shards (tp parts of each block, AMSP pieces, OS owners, pipeline
 * stages), the seeded initialisation its specs describe, and running a step (set lr and t
 * on the AdamW nodes, submit, wait, read the loss and the norm).  Initialisation draws every
 * parameter from one generator in parameter order, so a seed means the same model on every
 * machine, worker count and mesh.
 * Test: tests/graphs/checkpoint.c, tests/mpi/parity_*.sh, tests/mpi/custom_model.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/model_internal.h"
#include "helix/comm.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/rng.h"

/* ---- shards of a parameter's state ---- */

/* The serial index along tp_dim of tp rank @p t's local index @p r: the local extent is each
 * block's 1/tp part in block order, rank t's part of block b sitting at t * block[b] / tp
 * inside it (q|k|v split separately, so heads stay whole). */
static int tp_index(const struct hx_param_dist *d, int tp, int t, int r)
{
    int full0 = 0; /* the block's first serial index */
    for (int b = 0; b < d->nblocks; b++) {
        int lb = d->block[b] / tp; /* local extent of block b */
        if (r < lb) {
            return full0 + t * lb + r;
        }
        r -= lb;
        full0 += d->block[b];
    }
    HX_ASSERT(0, "parameter %s: local index beyond its blocks", d->name);
    return -1;
}

/* The serial index along a dimension of local index @p r: X's cut (tp_index) or Y's (one
 * block, rank y's part at y * extent) or none. */
static int grid_index(const struct hx_param_dist *d, const struct hx_mesh *ms, int x, int y,
                      int dim, int r)
{
    int ext = dim == 0 ? d->lrows : d->lcols;
    return d->tp_dim == dim ? tp_index(d, ms->tpx, x, r) : d->y_dim == dim ? y * ext + r : r;
}

/* Copy between the serial (rows, cols) tensor and the part of tp rank @p t (grid x, y:
 * t = y Gx + x).  to_local: full -> local, else local -> full. */
static void tp_copy(const struct hx_param_dist *d, const struct hx_mesh *ms, int t,
                    float *full, float *local, int to_local)
{
    int x = t % ms->tpx, y = t / ms->tpx;
    for (int r = 0; r < d->lrows; r++) {
        int fr = grid_index(d, ms, x, y, 0, r);
        for (int c = 0; c < d->lcols; c++) {
            int fc = grid_index(d, ms, x, y, 1, c);
            float *f = full + (size_t)fr * d->cols + fc, *l = local + (size_t)r * d->lcols + c;
            if (to_local) {
                *l = *f;
            } else {
                *f = *l;
            }
        }
    }
}

hx_tensor_t hx_model_state_tensor(hx_model_t m, int i, enum hx_state_kind k)
{
    return k == HX_STATE_PARAM ? m->params[i]
         : k == HX_STATE_ADAM_M ? m->adam_m[i] : m->adam_v[i];
}

int hx_model_scatter_state(struct hx_model *m, int i, enum hx_state_kind k, const float *src)
{
    const struct hx_param_dist *d = &m->pd[i];
    hx_tensor_t t = hx_model_state_tensor(m, i, k);
    if (t == NULL) { /* another rank of the OS group keeps it */
        return HX_OK;
    }
    float *local = malloc(sizeof(float) * (size_t)d->lrows * d->lcols);
    if (local == NULL) {
        return HX_ERR(HX_ENOMEM, "%zu bytes for parameter %s", sizeof(float) *
                      (size_t)d->lrows * d->lcols, d->name);
    }
    tp_copy(d, &m->mesh, m->mesh.tp_rank, (float *)src, local, 1);
    int ret = hx_tensor_write(t, local + d->piece_off);
    free(local);
    return ret;
}

static int gather_in_stage(struct hx_model *m, int i, enum hx_state_kind k, float *dst);

/* Every rank gets the whole tensor: the stage that keeps it gathers it from its tp ranks and
 * shards, then (pipeline) its ranks broadcast it along their pipeline group. */
int hx_model_gather_state(struct hx_model *m, int i, enum hx_state_kind k, float *dst)
{
    const struct hx_param_dist *d = &m->pd[i];
    int ret = d->held ? gather_in_stage(m, i, k, dst) : HX_OK;
    if (ret == HX_OK && m->mesh.pp > 1) {
        ret = hx_comm_host_bcast(HX_GROUP_PP, dst, (long)sizeof(float) * d->rows * d->cols,
                                 d->stage);
    }
    return ret;
}

static int gather_in_stage(struct hx_model *m, int i, enum hx_state_kind k, float *dst)
{
    const struct hx_mesh *ms = &m->mesh;
    const struct hx_param_dist *d = &m->pd[i];
    long n = (long)d->lrows * d->lcols;
    int p = ms->sp.s, tp = ms->tp;
    float *piece = malloc(sizeof(float) * (size_t)d->piece_cnt);
    float *local = malloc(sizeof(float) * (size_t)n * (size_t)tp);
    long *bytes = malloc(sizeof(long) * (size_t)(p > tp ? p : tp));
    int ret = piece && local && bytes ? HX_OK : HX_ERR(HX_ENOMEM, "gathering %s (%ld elements)",
                                                       d->name, n);
    hx_tensor_t t = hx_model_state_tensor(m, i, k);
    if (ret == HX_OK && t != NULL) {
        ret = hx_tensor_read(t, piece);
    }
    /* Adam states live with the piece's OS owner */
    if (ret == HX_OK && k != HX_STATE_PARAM && ms->groups[HX_GROUP_SHARD_OS].size > 1) {
        ret = hx_comm_host_bcast(HX_GROUP_SHARD_OS, piece, (long)sizeof(float) * d->piece_cnt,
                                 d->os_owner);
    }
    float *mine = local + (size_t)n * (size_t)ms->tp_rank * (tp > 1);
    if (ret == HX_OK && p > 1) { /* the pieces of the P group make the tp-local tensor */
        for (int j = 0; j < p; j++) {
            bytes[j] = (long)sizeof(float) * hx_split_count(n, p, j);
        }
        ret = hx_comm_host_allgatherv(HX_GROUP_SHARD_P, piece, (long)sizeof(float) *
                                      d->piece_cnt, mine, bytes);
    } else if (ret == HX_OK) {
        memcpy(mine, piece, sizeof(float) * (size_t)n);
    }
    if (ret == HX_OK && d->tp_dim < 0 && d->y_dim < 0) {
        memcpy(dst, mine, sizeof(float) * (size_t)n);
    } else if (ret == HX_OK) { /* every tp rank's part into the serial layout */
        for (int j = 0; j < tp; j++) {
            bytes[j] = (long)sizeof(float) * n;
        }
        float *sendbuf = malloc(sizeof(float) * (size_t)n);
        ret = sendbuf != NULL ? HX_OK : HX_ERR(HX_ENOMEM, "gathering %s", d->name);
        if (ret == HX_OK) {
            memcpy(sendbuf, mine, sizeof(float) * (size_t)n);
            ret = hx_comm_host_allgatherv(HX_GROUP_TP, sendbuf, (long)sizeof(float) * n, local,
                                          bytes);
        }
        free(sendbuf);
        for (int j = 0; ret == HX_OK && j < tp; j++) {
            tp_copy(d, ms, j, dst, local + (size_t)n * j, 0);
        }
    }
    free(piece);
    free(local);
    free(bytes);
    return ret;
}

void hx_model_init_params(struct hx_model *m, uint64_t seed)
{
    if (hx_runtime_simulated()) { /* no kernel reads them; drawing a 10B model's would take
                                   * minutes of real time per simulated rank */
        return;
    }
    struct hx_rng rng;
    hx_rng_seed(&rng, seed);
    /* As each parameter's spec says (GPT-2's: graphs/gpt_spec.c).  Every rank draws every
     * value of the serial model in order and keeps its shard, so a seed means the same model
     * on every mesh. */
    for (int i = 0; i < m->nparams; i++) {
        const struct hx_param_dist *d = &m->pd[i];
        const struct hx_param_spec *s = &m->spec[i];
        size_t n = (size_t)d->rows * d->cols;
        float *x = malloc(sizeof(float) * n);
        HX_ASSERT(x != NULL, "out of memory initialising %s (%zu floats)", d->name, n);
        for (size_t j = 0; j < n; j++) {
            x[j] = s->init == HX_INIT_ONE ? 1.0f : s->init == HX_INIT_ZERO ? 0.0f
                 : (float)(hx_rng_normal(&rng) * s->init_std);
        }
        hx_model_scatter_state(m, i, HX_STATE_PARAM, x);
        memset(x, 0, sizeof(float) * n);
        hx_model_scatter_state(m, i, HX_STATE_ADAM_M, x);
        hx_model_scatter_state(m, i, HX_STATE_ADAM_V, x);
        free(x);
    }
}

static double read_scalar(hx_tensor_t t)
{
    double v = NAN;
    hx_tensor_read(t, &v);
    return v;
}

int hx_model_run(struct hx_model *m, int last, int step, struct hx_step_result *r)
{
    int ret = hx_graph_submit(m->g, 0, last);
    int wret = hx_graph_wait(m->g);
    if (ret == HX_OK) {
        ret = wret;
    }
    if (ret != HX_OK) {
        return ret;
    }
    if (hx_runtime_simulated()) { /* no kernel ran: the sums hold nothing to read */
        r->loss = r->grad_norm = NAN;
        return HX_OK;
    }
    r->loss = read_scalar(m->loss_sum) / m->loss_count;
    r->grad_norm = sqrt(read_scalar(m->gnorm_sumsq));
    if (!isfinite(r->loss)) {
        return HX_ERR(HX_ENONFINITE, "step %d: the loss is %f, not finite (gradient norm %f): "
                      "training diverged; lower --lr or raise --lr-warmup-iters, and restart "
                      "from the last checkpoint", step, r->loss, r->grad_norm);
    }
    return HX_OK;
}

void hx_model_set_lr(struct hx_model *m, const struct hx_optim_config *o, int step,
                     struct hx_step_result *r)
{
    float lr = hx_lr_at(o, step);
    for (int i = m->first_opt_node; i < m->g->nnodes; i++) {
        struct hx_node *n = &m->g->nodes[i];
        if (n->op == HX_OP_ADAMW) {
            n->args.adamw.lr = lr;
            n->args.adamw.t = step + 1;
        }
    }
    r->lr = lr;
}

int hx_model_step(hx_model_t m, const struct hx_optim_config *o, int step,
                  struct hx_step_result *r)
{
    hx_model_set_lr(m, o, step, r);
    return hx_model_run(m, m->eval_begin, step + 1, r);
}
