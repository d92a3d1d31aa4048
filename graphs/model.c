/* SPDX-License-Identifier: MIT */
/* graphs/model.c: a training step for any model (issue 24).  A model is its parameters'
 * specs and its emitters (helix/model.h); this file makes the rest, in the same order for
 * every model:
 *   layout   the mesh's pipeline chunks for L layers, the micro-batches of this rank, the
 *            lanes of the mesh's groups (hx_model_init);
 *   params   each parameter's place on this rank (graphs/dist.c) and its tensors: the piece
 *            this rank keeps, its gradient where it accumulates it, its Adam states where it
 *            runs AdamW (hx_model_make_params);
 *   step     the distribution's buffers, the zeroing, every micro-batch's forward, loss and
 *            backward in the schedule's order (graphs/schedule.c), the reductions, the
 *            gradient norm, AdamW and the broadcasts of updated pieces (hx_model_emit);
 *   order    critical-path priorities, the pipeline's bands, collectives first, and the
 *            serial-comm baseline's barriers (hx_model_finish).
 * GPT-2 and Llama (graphs/gpt.c) embed struct hx_model and call these; a user's model gets
 * its own through hx_model_create (examples/custom_model.c).
 * Test: tests/mpi/custom_model.sh (a user's model on dp2 x tp2 against its serial run), and
 * every GPT test, whose graphs these build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphs/model_internal.h"
#include "helix/collectives.h"
#include "helix/error.h"
#include "helix/pipeline.h"
#include "helix/sched.h"

int hx_model_vstage_rank(const struct hx_model *m, int v)
{
    return hx_pipeline_stage_of(m->par.pipeline_schedule, m->mesh.pp, v);
}

/* With two strands, alpha and beta alternate: one by one, or in groups of p in the folded W */
void hx_model_stamp(struct hx_model *m, int mb, enum hx_phase phase, int layer)
{
    m->g->cur.phase = phase;
    m->g->cur.microbatch = mb;
    m->g->cur.layer = layer;
    m->g->cur.strand = !m->strands ? HX_STRAND_NONE
                       : hx_pipeline_strand(m->par.pipeline_schedule, m->mesh.pp, mb)
                           ? HX_STRAND_BETA : HX_STRAND_ALPHA;
}

/* What the layout asks of L and M on the mesh, before anything is made */
static int check_layout(const struct hx_model *m, const struct hx_parallel_config *par,
                        const struct hx_mesh *ms, int L, int M)
{
    int sched = par != NULL ? par->pipeline_schedule : HX_PIPE_1F1B;
    int rc = par != NULL ? par->recompute : HX_RECOMPUTE_NONE;
    if (sched < HX_PIPE_1F1B || sched > HX_PIPE_FOLD) {
        return HX_ERR(HX_EINVAL, "pipeline schedule %d is not an enum hx_pipeline_schedule",
                      sched);
    }
    int nvs = hx_pipeline_virtual_stages(sched, ms->pp);
    if (L < 1 || L % nvs != 0) {
        return HX_ERR(HX_EINVAL, "%d layers do not cut into the pipeline's %d equal chunks "
                      "(%d stages%s); choose a layer count divisible by %d", L, nvs, ms->pp,
                      sched == HX_PIPE_FOLD ? ", folded: 2 chunks each" : "", nvs);
    }
    if (M < 1 || M % ms->dp != 0) {
        return HX_ERR(HX_EINVAL, "%d micro-batches do not divide among %d data-parallel "
                      "ranks; choose a multiple of %d", M, ms->dp, ms->dp);
    }
    if (rc < HX_RECOMPUTE_NONE || rc > HX_RECOMPUTE_FULL) {
        return HX_ERR(HX_EINVAL, "recompute %d is not an enum hx_recompute", rc);
    }
    if (rc != HX_RECOMPUTE_NONE && (ms->pp > 1 || par->strands)) {
        return HX_ERR(HX_EINVAL, "--recompute-activations with %s is not supported: the "
                      "recomputation is emitted per layer of whole micro-batches; drop one",
                      ms->pp > 1 ? "--pipeline-model-parallel-size > 1" : "--strands");
    }
    if (rc != HX_RECOMPUTE_NONE && (m->ops == NULL || m->ops->recompute_layer == NULL)) {
        return HX_ERR(HX_EINVAL, "recomputation asked for, but the model has no "
                      "recompute_layer emitter (struct hx_model_ops); add one or drop "
                      "recompute");
    }
    return HX_OK;
}

int hx_model_init(struct hx_model *m, const struct hx_parallel_config *par, int L, int M)
{
    struct hx_mesh serial;
    hx_mesh_serial(&serial);
    const struct hx_mesh *mesh = par != NULL && par->mesh != NULL ? par->mesh : &serial;
    int ret = check_layout(m, par, mesh, L, M);
    if (ret != HX_OK) {
        return ret;
    }
    if ((m->g = hx_graph_create()) == NULL) {
        return HX_ERR(HX_ENOMEM, "the step's graph");
    }
    m->mesh = *mesh;
    if (par != NULL) {
        m->par = *par;
    }
    m->par.mesh = &m->mesh;
    m->par.prefetch |= (m->par.sched_needs & HX_SCHED_NEEDS_PREFETCH) != 0;
    int s = m->mesh.pp_rank, p = m->mesh.pp, sched = m->par.pipeline_schedule;
    m->L = L;
    m->M = M;
    m->Ml = M / m->mesh.dp;
    m->nvs = hx_pipeline_virtual_stages(sched, p);
    m->Lc = L / m->nvs;
    m->nchunks = hx_pipeline_chunks(sched, p, s, m->cv, m->cvn);
    for (int c = 0; c < m->nchunks; c++) {
        m->clo[c] = m->cv[c] * m->Lc;
        m->chi[c] = (m->cv[c] + m->cvn[c]) * m->Lc;
    }
    m->first_stage = hx_model_vstage_rank(m, 0) == s;
    m->last_stage = hx_model_vstage_rank(m, m->nvs - 1) == s;
    m->strands = m->par.strands ? 2 : 0;
    int lanes[HX_GROUP_COUNT];
    for (int k = 0; k < HX_GROUP_COUNT; k++) { /* a group inside one node talks intra-node */
        lanes[k] = m->mesh.groups[k].intra_node ? HX_LANE_COMM_INTRA : HX_LANE_COMM_INTER;
    }
    hx_collectives_set_lanes(m->g, lanes, HX_GROUP_COUNT);
    return HX_OK;
}

/* Parameters with their gradient and Adam moments, in spec order: this rank's pieces
 * (graphs/dist.c), the gradient only where this rank accumulates it and the Adam states
 * only where it runs AdamW. */
void hx_model_make_params(struct hx_model *m)
{
    int flat = m->mesh.sp.s > 1, n = m->nparams;
    m->params = calloc((size_t)n, sizeof(hx_tensor_t));
    m->grads = calloc((size_t)n, sizeof(hx_tensor_t));
    m->adam_m = calloc((size_t)n, sizeof(hx_tensor_t));
    m->adam_v = calloc((size_t)n, sizeof(hx_tensor_t));
    HX_ASSERT(m->params && m->grads && m->adam_m && m->adam_v, "out of memory");
    hx_dist_layout(m);
    for (int i = 0; i < n; i++) {
        const struct hx_param_dist *d = &m->pd[i];
        const char *name = d->name;
        if (!d->held) { /* another pipeline stage keeps it: no tensors here */
            continue;
        }
        /* a piece under s_p > 1 is flat; otherwise the tp-local matrix */
        int r = flat ? 1 : d->lrows;
        int k = flat ? (int)d->piece_cnt : d->lcols;
        char gname[HX_NAME_MAX + 8];
        m->params[i] = hx_graph_tensor(m->g, name, HX_F32, HX_ROLE_PARAM, r, k, 0);
        /* weights and embeddings decay; biases and norms do not */
        m->params[i]->weight_decay = m->spec[i].role == HX_PARAM_WEIGHT ||
                                     m->spec[i].role == HX_PARAM_EMBEDDING;
        if (d->owns_grad) {
            snprintf(gname, sizeof gname, "%s.grad", name);
            m->grads[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_GRAD, r, k, 0);
            m->grads[i]->grad_of = m->params[i]->id;
        }
        if (d->owns_optim) {
            snprintf(gname, sizeof gname, "%s.adam_m", name);
            m->adam_m[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_OPTIM, r, k, 0);
            snprintf(gname, sizeof gname, "%s.adam_v", name);
            m->adam_v[i] = hx_graph_tensor(m->g, gname, HX_F32, HX_ROLE_OPTIM, r, k, 0);
            m->adam_m[i]->grad_of = m->adam_v[i]->grad_of = m->params[i]->id;
        }
    }
}

void hx_model_emit(struct hx_model *m, const struct hx_optim_config *o)
{
    hx_dist_prefetch_depth(m);
    hx_dist_tensors(m);
    m->zero_loss_node = hx_optim_emit_zero(m);
    hx_schedule_emit(m);
    hx_dist_after_backward(m);
    hx_optim_emit_grad_norm(m);
    m->first_opt_node = m->g->nnodes;
    hx_optim_emit_adamw(m, o);
    hx_dist_after_adamw(m);
    m->eval_begin = m->g->nnodes;
}

void hx_model_blocking(struct hx_model *m, unsigned bit, int first)
{
    if (!(m->par.no_overlap & bit) || m->g->nnodes == first) {
        return;
    }
    if (m->nblocking == m->cap_blocking) {
        m->cap_blocking = m->cap_blocking ? 2 * m->cap_blocking : 64;
        m->blocking = realloc(m->blocking, sizeof *m->blocking * (size_t)m->cap_blocking);
        HX_ASSERT(m->blocking != NULL, "out of memory");
    }
    m->blocking[m->nblocking][0] = first;
    m->blocking[m->nblocking++][1] = m->g->nnodes;
}

/* A blocking collective [first, last) holds back every node emitted after it up to the end
 * of the next blocking one (which then holds back the rest: the chain makes it all), within
 * the step (never the evaluation tail).  Edges go in (to, from) order, so each appends. */
static void blocking_edges(struct hx_model *m)
{
    for (int k = 0; k < m->nblocking; k++) {
        int first = m->blocking[k][0], last = m->blocking[k][1];
        int end = k + 1 < m->nblocking ? m->blocking[k + 1][1] : m->eval_begin;
        for (int to = last; to < end; to++) {
            for (int from = first; from < last; from++) {
                int ret = hx_graph_control(m->g, from, to);
                HX_ASSERT(ret == HX_OK, "blocking edge %d -> %d", from, to);
            }
        }
    }
}

void hx_model_finish(struct hx_model *m)
{
    blocking_edges(m); /* before the priorities, which read every edge */
    /* critical path first: a priority policy (hx-prio, prio) then starts the long chains
     * (the backward's data path) before work that can wait (weight gradients); collectives
     * go before everything, so a ready one is posted at once and its transfer overlaps */
    struct hx_deps d;
    if (hx_graph_deps(m->g, &d) == HX_OK) {
        hx_graph_prioritize(m->g, &d, 1000);
        hx_deps_free(&d);
    }
    if (m->mesh.pp > 1) {
        hx_schedule_priorities(m);
    }
    for (int i = 0; i < m->g->nnodes; i++) {
        if (m->g->nodes[i].kind == HX_KIND_COMM) {
            m->g->nodes[i].priority = 1001;
        }
    }
    /* serial-comm's barriers, once the order is final and after the priorities, which stay
     * hx-prio's: over each range submitted as one, the step and the evaluation tail */
    if (m->par.sched_needs & HX_SCHED_NEEDS_SERIAL_COMM) {
        hx_graph_serialize_comm(m->g, 0, m->eval_begin);
        hx_graph_serialize_comm(m->g, m->eval_begin, m->g->nnodes);
    }
}

void hx_model_release(struct hx_model *m)
{
    hx_graph_destroy(m->g);
    free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    hx_dist_free(m);
    free(m->blocking);
    free(m->spec);
    free(m->item_first);
}

/* ---- a user's model (helix/model.h) ---- */

/* A spec the layout can place: shapes, enums, layers and units in range, and every block
 * that tensor parallelism cuts divisible by tp. */
static int check_spec(const struct hx_param_spec *s, int i, int L, int tp)
{
    if (s->rows < 1 || s->cols < 1 || s->role < HX_PARAM_WEIGHT ||
        s->role > HX_PARAM_EMBEDDING || s->split < HX_TP_REPLICATED || s->split > HX_TP_VOCAB ||
        s->site < HX_SITE_LAYER || s->site > HX_SITE_TIED || s->init < HX_INIT_ZERO ||
        s->init > HX_INIT_NORMAL || s->nblocks < 0 || s->nblocks > HX_PARAM_MAX_BLOCKS) {
        return HX_ERR(HX_EINVAL, "parameter %d (%.*s): shape (%d,%d), role %d, split %d, site "
                      "%d, init %d or %d blocks out of range; see struct hx_param_spec", i,
                      HX_NAME_MAX, s->name, s->rows, s->cols, s->role, s->split, s->site,
                      s->init, s->nblocks);
    }
    if ((s->site == HX_SITE_LAYER) != (s->layer >= 0 && s->layer < L) ||
        (s->site == HX_SITE_LAYER && (s->unit < 0 || s->unit >= HX_UNIT_MAX))) {
        return HX_ERR(HX_EINVAL, "parameter %d (%.*s): layer %d and unit %d do not fit site "
                      "%d of a %d-layer model; a layer parameter has site HX_SITE_LAYER, a "
                      "layer in 0..%d and a unit in 0..%d, any other layer -1", i,
                      HX_NAME_MAX, s->name, s->layer, s->unit, s->site, L, L - 1,
                      HX_UNIT_MAX - 1);
    }
    int dim = hx_dist_tp_dim(s);
    int ext = dim == 0 ? s->rows : s->cols, sum = 0;
    for (int b = 0; dim >= 0 && b < (s->nblocks > 0 ? s->nblocks : 1); b++) {
        int size = s->nblocks > 0 ? s->block[b] : ext;
        sum += size;
        if (size % tp != 0) {
            return HX_ERR(HX_EINVAL, "tensor parallelism %d cuts parameter %d (%.*s) along its "
                          "%s, whose %s%d is not divisible by %d; choose a tp that divides "
                          "it", tp, i, HX_NAME_MAX, s->name, dim == 0 ? "rows" : "columns",
                          s->nblocks > 0 ? "block of " : "", size, tp);
        }
    }
    if (dim >= 0 && s->nblocks > 0 && sum != ext) {
        return HX_ERR(HX_EINVAL, "parameter %d (%.*s): its blocks sum to %d, not its %d %s", i,
                      HX_NAME_MAX, s->name, sum, ext, dim == 0 ? "rows" : "columns");
    }
    return HX_OK;
}

int hx_model_create(hx_model_t *out, const struct hx_model_desc *d,
                    const struct hx_parallel_config *par)
{
    *out = NULL;
    const struct hx_model_ops *ops = d->ops;
    if (ops == NULL || !ops->forward_begin || !ops->forward_layer || !ops->forward_end ||
        !ops->backward_begin || !ops->backward_layer || !ops->backward_end || !ops->loss) {
        return HX_ERR(HX_EINVAL, "struct hx_model_ops needs all seven emitters (forward_begin "
                      ".. loss); only recompute_layer is optional");
    }
    if (d->nparams < 1 || d->params == NULL || !(d->loss_count > 0)) {
        return HX_ERR(HX_EINVAL, "a model needs parameters (nparams %d) and a positive "
                      "loss_count (%g, the global batch's tokens)", d->nparams, d->loss_count);
    }
    if (par != NULL && par->tp_comm_overlap) {
        return HX_ERR(HX_EUNSUPPORTED, "--tp-comm-overlap deals row tiles of whole sequences "
                      "to the tp ranks, which only helix's GPT lays out; drop it for your "
                      "own model");
    }
    int tp = par != NULL && par->mesh != NULL ? par->mesh->tpx : 1;
    if (par != NULL && par->mesh != NULL && par->mesh->tpy > 1) {
        return HX_ERR(HX_EUNSUPPORTED, "--tp-grid %dx%dx%d: Gy > 1 splits the hidden size, so "
                      "a model's norms and biases must follow it (hx_model_norm_split, "
                      "hx_model_tp_adds_bias, hx_model_tp_reduce_y), which only helix's GPT "
                      "and Llama do yet; use a grid Gx x 1 x Gz for your own model",
                      par->mesh->tpx, par->mesh->tpy, par->mesh->tpz);
    }
    for (int i = 0; i < d->nparams; i++) {
        int ret = check_spec(&d->params[i], i, d->num_layers, tp), l = d->params[i].layer, n = 0;
        for (int k = 0; ret == HX_OK && k < d->nparams; k++) { /* one packed message each */
            n += d->params[k].site == HX_SITE_LAYER ? d->params[k].layer == l : l < 0;
        }
        if (ret == HX_OK && n > HX_UNIT_MAX) {
            ret = HX_ERR(HX_EINVAL, "%d parameters in layer %d (-1: outside the layers); at "
                         "most %d, each unit one packed message: pack some together", n, l,
                         HX_UNIT_MAX);
        }
        if (ret != HX_OK) {
            return ret;
        }
    }
    struct hx_model *m = calloc(1, sizeof *m);
    struct hx_param_spec *spec = malloc(sizeof *spec * (size_t)d->nparams);
    if (m == NULL || spec == NULL) {
        free(m);
        free(spec);
        return HX_ERR(HX_ENOMEM, "model of %d parameters", d->nparams);
    }
    m->ops = ops;
    m->user = d->user;
    m->owned = 1;
    int ret = hx_model_init(m, par, d->num_layers, d->num_micro_batches);
    if (ret != HX_OK) {
        free(m);
        free(spec);
        return ret;
    }
    memcpy(spec, d->params, sizeof *spec * (size_t)d->nparams);
    m->spec = spec;
    m->nparams = d->nparams;
    m->loss_count = d->loss_count;
    hx_model_make_params(m);
    m->loss_sum = hx_graph_tensor(m->g, "loss_sum", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    m->gnorm_sumsq = hx_graph_tensor(m->g, "gnorm_sumsq", HX_F64, HX_ROLE_SCALAR, 1, 1, 0);
    *out = m;
    return HX_OK;
}

int hx_model_emit_step(hx_model_t m, const struct hx_optim_config *o)
{
    if (m->item_first != NULL) {
        return HX_ERR(HX_EINVAL, "the model's step was emitted already; create another model "
                      "for another step graph");
    }
    hx_model_emit(m, o);
    hx_model_finish(m);
    return HX_OK;
}

void hx_model_destroy(hx_model_t m)
{
    if (m != NULL && m->owned) {
        hx_model_release(m);
        free(m);
    }
}

hx_graph_t hx_model_graph(hx_model_t m)
{
    return m->g;
}

void *hx_model_user(hx_model_t m)
{
    return m->user;
}

const struct hx_mesh *hx_model_mesh(hx_model_t m)
{
    return &m->mesh;
}

int hx_model_micro_batches(hx_model_t m)
{
    return m->Ml;
}

hx_tensor_t hx_model_compute_param(hx_model_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->pfull[i] : NULL;
}

hx_tensor_t hx_model_compute_grad(hx_model_t m, int i)
{
    return i >= 0 && i < m->nparams ? m->gfull[i] : NULL;
}

void hx_model_param_local_shape(hx_model_t m, int i, int *rows, int *cols)
{
    *rows = m->pd[i].lrows;
    *cols = m->pd[i].lcols;
}

hx_tensor_t hx_model_loss_sum(hx_model_t m)
{
    return m->loss_sum;
}

int hx_model_step_nodes(hx_model_t m)
{
    return m->eval_begin;
}

int hx_model_num_param_tensors(hx_model_t m)
{
    return m->nparams;
}

const char *hx_model_param_name(hx_model_t m, int i)
{
    return m->pd[i].name;
}

void hx_model_param_shape(hx_model_t m, int i, int *rows, int *cols)
{
    *rows = m->pd[i].rows;
    *cols = m->pd[i].cols;
}
