/* SPDX-License-Identifier: MIT */
/* tools/plan_model.c: one configuration's predicted step time and memory (tools/plan_model.h
 * has the model).  The graphs are built, never run: every number comes from their nodes'
 * flops and bytes, the device description and the machine's links. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_analytic.h"
#include "tools/plan_model.h"

void plan_mesh_request(const struct plan_config *pc, const struct plan_bed *bed,
                       const struct hx_gpt_config *m, int rank, struct hx_mesh_request *r)
{
    memset(r, 0, sizeof *r);
    r->world_size = bed->gpus;
    r->world_rank = rank;
    r->tp = pc->gz > 0 ? 0 : pc->tp;
    r->pp = pc->pp;
    r->ranks_per_node = bed->per_node;
    if (pc->gz > 0) { /* AxoNN's grid: Z splits the batch, no sequence parallelism */
        r->tp_grid[0] = pc->tp / pc->gy;
        r->tp_grid[1] = pc->gy;
        r->tp_grid[2] = pc->gz;
    } else {
        r->sequence_parallel = pc->tp > 1; /* Megatron's choice: 1/tp of the activations */
    }
    r->shard_p = pc->s_p;
    r->shard_g = pc->s_g;
    r->shard_os = pc->s_os;
    r->num_heads = m->num_heads;
    r->hidden_size = m->hidden_size;
    r->vocab_size = m->vocab_size;
    r->num_layers = m->num_layers;
    r->seq_len = m->seq_len;
    r->micro_batches = pc->M;
}

double plan_ring_factor(enum hx_op op, int p)
{
    switch (op) {
    case HX_OP_ALLREDUCE:
        return 2.0 * (p - 1) / p;
    case HX_OP_ALLGATHER:
    case HX_OP_REDUCE_SCATTER:
    case HX_OP_ALLTOALL:
        return (double)(p - 1) / p;
    case HX_OP_BROADCAST: /* pipelined through the ring */
    case HX_OP_SEND:
    case HX_OP_RECV:
    case HX_OP_SHIFT:
        return 1;
    default:
        return 0;
    }
}

/* The ring's latency steps of @p op over @p p ranks */
static int ring_steps(enum hx_op op, int p)
{
    return op == HX_OP_ALLREDUCE ? 2 * (p - 1)
         : op == HX_OP_SEND || op == HX_OP_RECV || op == HX_OP_SHIFT ? 1
         : plan_ring_factor(op, p) > 0 ? p - 1 : 0;
}

double plan_collective_s(const struct plan_bed *bed, const struct hx_mesh *mesh,
                         enum hx_group_kind g, enum hx_op op, double bytes)
{
    const struct hx_group *gr = &mesh->groups[g];
    const struct hx_sim_machine *mc = &bed->mc;
    int p = gr->size, transfer = op == HX_OP_SEND || op == HX_OP_RECV;
    if (p <= 1 && !transfer) {
        return 0;
    }
    /* a measured shape: its own fixed cost and bandwidth (a transfer: between two ranks) */
    int q = transfer ? 2 : p;
    int span = transfer ? (gr->intra_node ? 1 : 2) : gr->nodes > 0 ? gr->nodes : 1;
    for (int i = 0; i < bed->ncomm; i++) {
        const struct plan_measured *e = &bed->comm[i];
        if (e->op == (int)(transfer ? HX_OP_RECV : op) && e->p == q && e->nodes == span &&
            e->gbytes_per_s > 0) {
            return e->alpha_us * 1e-6 +
                   plan_ring_factor(op, q) * bytes / (e->gbytes_per_s * 1e9);
        }
    }
    /* inside a node: NVLink, else PCIe through the host; CPU ranks copy through shared
     * memory at one core's streaming bandwidth (Open MPI's vader), ~1 us a message */
    int gpu = mc->gpus_per_node > 0;
    double bw = !gpu ? bed->dev.cpu_memory_gbytes_per_s
              : mc->nvlink_gbytes_per_s > 0 ? mc->nvlink_gbytes_per_s : mc->pcie_gbytes_per_s;
    double lat = !gpu ? 1.0 : mc->nvlink_gbytes_per_s > 0 ? mc->nvlink_latency_us
                                                           : mc->pcie_latency_us;
    if (!gr->intra_node && mesh->ranks_per_node < mesh->world_size) {
        /* across nodes: k members a node, so per_node / k such rings share the node's NICs */
        int nodes = gr->nodes > 0 ? gr->nodes : 1;
        double k = (double)p / nodes, rings = bed->per_node / (k > 1 ? k : 1);
        double nic = mc->nic_gbits_per_s / 8.0 * mc->nics_per_node / (rings > 1 ? rings : 1);
        bw = nic < bw || bw <= 0 ? nic : bw;
        lat = mc->nic_latency_us + (gpu ? mc->pcie_latency_us : 0);
    }
    return plan_ring_factor(op, p) * bytes / (bw * 1e9) + ring_steps(op, p) * lat * 1e-6;
}

/* Bytes of a node's buffers in @p mode (HX_R: read-only ones; HX_W: written ones) */
static double ref_bytes(const struct hx_graph *g, const struct hx_node *n, int written)
{
    double b = 0;
    for (int i = 0; i < n->nrefs; i++) {
        const struct hx_tensor *t = g->tensors[n->refs[i].tensor];
        if (((n->refs[i].mode & HX_W) != 0) != written) {
            continue;
        }
        int tr = t->tile_rows > 0 ? t->tile_rows : t->rows;
        int rows = t->rows - n->refs[i].tile * tr;
        rows = rows < tr ? rows : tr;
        b += (double)rows * t->cols * (double)hx_dtype_size(t->dtype);
    }
    return b;
}

/* A stage's step, by kind: seconds, and bytes of memory */
struct stage_cost {
    double compute, backward, tp, p2p, gather, grad, after;
    double nic;                /* every collective that crosses nodes, summed */
    struct hx_gpt_memory mem;
};

/* Price every node of the step of @p m (rank @p mesh's graph) */
static void price(hx_gpt_t m, const struct hx_mesh *mesh, const struct plan_bed *bed,
                  struct stage_cost *sc)
{
    memset(sc, 0, sizeof *sc);
    hx_graph_t g = hx_gpt_graph(m);
    int first_opt = hx_gpt_first_optimizer_node(m), end = hx_model_step_nodes(hx_gpt_model(m));
    int gpu = bed->mc.gpus_per_node > 0, cores = bed->mc.cores_per_rank;
    for (int i = 0; i < end; i++) {
        const struct hx_node *n = &g->nodes[i];
        if (n->kind != HX_KIND_COMM) {
            double s = hx_sim_analytic_cost_us(n, n->flops, n->bytes, gpu, cores) * 1e-6;
            sc->compute += s;
            sc->backward += n->phase == HX_PHASE_BACKWARD_DATA ||
                            n->phase == HX_PHASE_BACKWARD_WEIGHT ||
                            n->phase == HX_PHASE_RECOMPUTE ? s : 0;
            continue;
        }
        int ch = n->args.coll.channel;
        int written = n->op != HX_OP_REDUCE_SCATTER && n->op != HX_OP_SEND;
        double s = plan_collective_s(bed, mesh, (enum hx_group_kind)ch, n->op,
                                     ref_bytes(g, n, written));
        if (!mesh->groups[ch].intra_node && n->op != HX_OP_SEND) {
            sc->nic += s; /* (a transfer counts once: its receive) */
        }
        if (ch == HX_GROUP_TP || ch == HX_GROUP_TP_BETA || ch == HX_GROUP_TP_X ||
            ch == HX_GROUP_TP_Y) {
            sc->tp += s;
        } else if (ch == HX_GROUP_PP || ch == HX_GROUP_PP_BWD || ch == HX_GROUP_FOLD_F ||
                   ch == HX_GROUP_FOLD_B) {
            /* a stage waits for what it receives; its sends leave on their own */
            sc->p2p += n->op == HX_OP_RECV ? s : 0;
            sc->after += n->op == HX_OP_ALLREDUCE ? s : 0; /* the loss */
        } else if (ch == HX_GROUP_SHARD_P) {
            sc->gather += s;
        } else if (i < first_opt) {
            sc->grad += s;
        } else {
            sc->after += s;
        }
    }
    hx_gpt_memory(m, &sc->mem);
}

/* Build rank @p rank's graph with @p Ml micro-batches of its own and price it */
static int build_price(const struct hx_gpt_config *m, const struct plan_config *pc,
                       const struct plan_bed *bed, int rank, int Ml, struct stage_cost *sc)
{
    struct hx_mesh_request r;
    struct hx_mesh mesh;
    plan_mesh_request(pc, bed, m, rank, &r);
    r.micro_batches = Ml * pc->dp;
    int ret = hx_mesh_init(&mesh, &r, 1);
    if (ret != HX_OK) {
        return ret;
    }
    struct hx_gpt_config c = *m;
    c.micro_batch_size = pc->mbs;
    c.num_micro_batches = Ml * pc->dp;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    struct hx_parallel_config par = { .mesh = &mesh, .recompute = pc->recompute,
                                      .pipeline_schedule = pc->fold ? HX_PIPE_FOLD
                                                                    : HX_PIPE_1F1B };
    hx_gpt_t g;
    ret = hx_gpt_build_parallel(&g, &c, &o, &par);
    if (ret != HX_OK) {
        return ret;
    }
    price(g, &mesh, bed, sc);
    hx_gpt_destroy(g);
    return HX_OK;
}

/* a + (b - a) x t, term by term: the step of Ml micro-batches from two smaller ones */
static void extrapolate(struct stage_cost *a, const struct stage_cost *b, double t)
{
    double *x[] = { &a->compute, &a->backward, &a->tp, &a->p2p, &a->gather, &a->grad,
                    &a->after, &a->mem.inputs, &a->nic };
    const double y[] = { b->compute, b->backward, b->tp, b->p2p, b->gather, b->grad,
                         b->after, b->mem.inputs, b->nic };
    for (size_t k = 0; k < sizeof y / sizeof y[0]; k++) {
        *x[k] += (y[k] - *x[k]) * t;
    }
}

/* The world ranks of every pipeline stage's first rank (dp rank 0, tp rank 0): rank 0's
 * pipeline group, member by member */
static int stage_ranks(const struct hx_gpt_config *m, const struct plan_config *pc,
                       const struct plan_bed *bed, int *ranks)
{
    struct hx_mesh_request q;
    struct hx_mesh mesh;
    plan_mesh_request(pc, bed, m, 0, &q);
    int ret = hx_mesh_init(&mesh, &q, 1);
    for (int s = 0; ret == HX_OK && s < pc->pp; s++) {
        ranks[s] = hx_group_member(&mesh.groups[HX_GROUP_PP], s);
    }
    return ret;
}

/* The whole model's forward flops of one micro-batch of @p mbs sequences: the serial graph's
 * (cached by size for the last model asked about: a plan asks for few sizes of one model) */
static double serial_fwd_flops(const struct hx_gpt_config *m, int mbs)
{
    static struct hx_gpt_config of; /* the model the cache holds */
    static double cache[65];
    if (memcmp(&of, m, sizeof of) != 0) {
        memcpy(&of, m, sizeof of);
        memset(cache, 0, sizeof cache);
    }
    if (mbs <= 64 && cache[mbs] > 0) {
        return cache[mbs];
    }
    struct hx_gpt_config c = *m;
    c.micro_batch_size = mbs;
    c.num_micro_batches = 1;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    hx_gpt_t g;
    double f = 0;
    if (hx_gpt_build(&g, &c, &o) == HX_OK) {
        hx_graph_t gr = hx_gpt_graph(g);
        for (int i = 0; i < hx_gpt_first_optimizer_node(g); i++) {
            f += gr->nodes[i].kind != HX_KIND_COMM && gr->nodes[i].phase == HX_PHASE_FORWARD
                     ? gr->nodes[i].flops : 0;
        }
        hx_gpt_destroy(g);
    }
    if (mbs <= 64) {
        cache[mbs] = f;
    }
    return f;
}

int plan_estimate(const struct hx_gpt_config *m, const struct plan_config *pc,
                  const struct plan_bed *bed, struct plan_estimate *e)
{
    memset(e, 0, sizeof *e);
    int Ml = pc->M / pc->dp;
    /* Beyond the micro-batches in flight every one more adds one forward and one backward:
     * build two small steps and extend the line to Ml */
    int m1 = Ml < 2 * pc->pp + 2 || pc->exact ? Ml : 2 * pc->pp + 2, m2 = m1 < Ml ? m1 + 1 : m1;
    double worst_mb = 0, work = 0, comm = 0;
    /* stage 0 (embedding), one in the middle (only layers: pp - 2 of those), the last (head) */
    int stages[3] = { 0, 1, pc->pp - 1 }, weight[3] = { 1, pc->pp - 2, 1 };
    int *first = malloc(sizeof(int) * (size_t)pc->pp);
    int ret = first != NULL ? stage_ranks(m, pc, bed, first) : HX_ENOMEM;
    for (int k = 0; k < 3 && ret == HX_OK; k++) {
        if ((k == 1 && pc->pp < 3) || (k == 2 && pc->pp < 2)) {
            continue;
        }
        struct stage_cost a, b;
        ret = build_price(m, pc, bed, first[stages[k]], m1, &a);
        if (ret == HX_OK && m2 != m1) {
            ret = build_price(m, pc, bed, first[stages[k]], m2, &b);
            extrapolate(&a, &b, (double)(Ml - m1) / (m2 - m1));
        }
        if (ret != HX_OK) {
            break;
        }
        /* gathers hide under the compute; gradient reductions under the last backward, or
         * under every one when each micro-batch reduce-scatters its own (s_g > 1) */
        double gather = fmax(0, a.gather - a.compute);
        double grad = fmax(0, a.grad - (pc->s_g > 1 ? a.backward : a.backward / Ml));
        double t = a.compute + a.tp + a.p2p + gather + grad + a.after;
        if (a.nic > t) { /* the NICs carry every inter-node collective one after another */
            grad += a.nic - t;
            t = a.nic;
        }
        if (t > e->step) {
            e->step = t;
            e->compute = a.compute, e->tp = a.tp, e->p2p = a.p2p;
            e->gather = gather, e->grad = grad, e->after = a.after;
        }
        work += a.compute * weight[k] * pc->tp * pc->dp * bed->mc.cores_per_rank;
        comm = fmax(comm, a.tp + a.p2p + a.gather + a.grad + a.after);
        double mb = (a.compute + a.tp + a.p2p) / Ml;
        worst_mb = mb > worst_mb ? mb : worst_mb;
        /* stage 0 and the last stage hold the embedding and the head: the most memory */
        const struct hx_gpt_memory *mm = &a.mem;
        double total = mm->params + mm->grads + mm->optim + mm->activations + mm->comm +
                       mm->inputs;
        if (total > e->total) {
            e->states = mm->params + mm->grads + mm->optim;
            e->acts = mm->activations, e->comm = mm->comm, e->inputs = mm->inputs;
            e->total = total;
            e->model_state_formula = mm->formula_model_state;
        }
    }
    free(first);
    if (ret != HX_OK) {
        return ret;
    }
    e->bubble = (pc->pp - 1) * worst_mb / (pc->fold ? 2.0 : 1.0);
    e->step += e->bubble;
    if (bed->shared_cores > 0) {
        /* the ranks' compute cannot go faster than the cores; and with every core computing,
         * none is left to progress a transfer beside it (MPI, TCP): a stage's communication
         * adds to it rather than hiding */
        e->cores = work / bed->shared_cores + comm;
        e->step = fmax(e->step, e->cores);
    }
    double tokens = (double)pc->M * pc->mbs * m->seq_len;
    e->tokens_per_s = tokens / e->step;
    int gpu = bed->mc.gpus_per_node > 0;
    double peak = gpu ? bed->dev.gpu_gemm_tflops * 1e12
                      : bed->dev.cpu_gflops_per_core * 1e9 * bed->mc.cores_per_rank;
    /* PaLM's model flops: three times the serial forward's (recomputation not counted) */
    e->mfu = 3 * serial_fwd_flops(m, pc->mbs) * pc->M / (bed->gpus * peak * e->step);
    return HX_OK;
}
