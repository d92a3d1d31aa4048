/* SPDX-License-Identifier: MIT */
/* tools/plan_strands.c: `helix plan-strands`, DHelix's pairing plan for one layer from a
 * profiled overlap table.  The model comes from the table; model flags on the command line
 * only confirm it (a difference is a usage error naming the flag).  The graph is built as the
 * profiler built it, for rank 0 of the table's tp x dp mesh, without MPI or StarPU (building
 * a graph never touches either); then lists, costs, orders and the DP (helix/plan.h).
 * Exit: 0, 1 runtime failure, 2 bad usage or input (table missing, malformed, or for another
 * model).  Test: tests/cli/plan_strands.sh */
#include <stdio.h>
#include <string.h>

#include "helix/helix.h"
#include "tools/tools.h"

struct plan_args {
    const char *profile, *out;
    int layer, max_orders, max_segment, movable_desc;
    float barrier_us;
    /* model flags (Megatron's names): checked against the table when given */
    int layers, hidden, heads, seq_len, micro_batch, vocab, global_batch, tp, sp, dp;
};

/* Model flags given on the command line must agree with the table's model. */
static int check_model(const struct flag_set *fs, const struct plan_args *a,
                       const struct hx_overlap_model *m, const char *path)
{
    const struct {
        const char *flag, *field;
        int given, table;
    } f[] = { { "num-layers", "num_layers", a->layers, m->num_layers },
              { "hidden-size", "hidden_size", a->hidden, m->hidden_size },
              { "num-attention-heads", "num_heads", a->heads, m->num_heads },
              { "seq-length", "seq_length", a->seq_len, m->seq_length },
              { "micro-batch-size", "micro_batch_size", a->micro_batch, m->micro_batch_size },
              { "vocab-size", "vocab_size", a->vocab, m->vocab_size },
              { "global-batch-size", "num_micro_batches x micro_batch_size", a->global_batch,
                m->num_micro_batches * m->micro_batch_size },
              { "tensor-model-parallel-size", "tp", a->tp, m->tp },
              { "sequence-parallel", "sequence_parallel", a->sp, m->sequence_parallel },
              { "data-parallel-size", "dp", a->dp, m->dp } };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        const struct flag *fl = flags_find(fs, f[k].flag);
        if (fs->origin[fl - fs->flags] == FROM_ARGV && f[k].given != f[k].table) {
            fprintf(stderr, "helix: error: --%s %d does not match the model of %s (%s %d); "
                    "drop the flag or profile that model\n", f[k].flag, f[k].given, path,
                    f[k].field, f[k].table);
            return 2;
        }
    }
    return 0;
}

/* Build the graph for rank 0 of the table's mesh, as `helix profile-overlap` does. */
static int build_model(const struct hx_overlap_model *m, hx_gpt_t *model, struct hx_mesh *mesh)
{
    struct hx_gpt_config c = { .vocab_size = m->vocab_size, .num_layers = m->num_layers,
                               .num_heads = m->num_heads, .hidden_size = m->hidden_size,
                               .seq_len = m->seq_length,
                               .micro_batch_size = m->micro_batch_size,
                               .num_micro_batches = m->num_micro_batches,
                               .normalization = m->normalization, .swiglu = m->swiglu,
                               .ffn_hidden_size = m->ffn_hidden_size,
                               .position_embedding = m->position_embedding,
                               .rotary_base = m->rotary_base,
                               .num_query_groups = m->num_query_groups,
                               .untie_embeddings = m->untie_embeddings,
                               .disable_bias = m->disable_bias };
    struct hx_mesh_request q = { .world_size = m->tp * m->dp, .world_rank = 0, .tp = m->tp,
                                 .dp = m->dp, .sequence_parallel = m->sequence_parallel,
                                 .num_heads = m->num_heads, .hidden_size = m->hidden_size,
                                 .vocab_size = m->vocab_size, .num_layers = m->num_layers,
                                 .seq_len = m->seq_length,
                                 .micro_batches = m->num_micro_batches };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    if (m->tp < 1 || m->dp < 1 || hx_mesh_init(mesh, &q, 0) != HX_OK) {
        fprintf(stderr, "helix: error: the table's model has no valid mesh (tp %d, dp %d, "
                "see the message above)\n", m->tp, m->dp);
        return 2;
    }
    struct hx_parallel_config par = { .mesh = mesh };
    int ret = hx_gpt_build_parallel(model, &c, &o, &par);
    return ret == HX_OK ? 0 : ret == HX_ENOMEM ? 1 : 2;
}

/* "F3 matmul, F4 gelu" for positions [from, to) of an order */
static void print_keys(char side, const int *order, char (*ops)[HX_PLAN_OPNAME], int from,
                       int to)
{
    for (int k = from; k < to; k++) {
        printf("%s%c%d %s", k > from ? ", " : "", side, order[k], ops[order[k]]);
    }
    printf("\n");
}

static void print_order(const char *what, char side, const int *order, int n)
{
    int moved = 0;
    for (int k = 0; k < n; k++) {
        moved |= order[k] != k;
    }
    printf("%s order: ", what);
    if (!moved) {
        printf("submission order\n");
        return;
    }
    for (int k = 0; k < n; k++) {
        printf("%s%c%d", k ? " " : "", side, order[k]);
    }
    printf("\n");
}

static void print_plan(const struct hx_plan *p, const struct plan_args *a)
{
    printf("\n%4s  %-7s %12s %13s\n", "step", "kind", "predicted ms", "sequential ms");
    for (int k = 0; k < p->nsteps; k++) {
        const struct hx_plan_step *s = &p->steps[k];
        int nf = s->f1 - s->f0, nb = s->b1 - s->b0;
        printf("%4d  %-7s %12.4f %13.4f\n", k + 1, nf && nb ? "co-run" : nf ? "F alone"
                                                                        : "B alone",
               s->predicted_ms, s->sequential_ms);
        if (nf) {
            printf("        F: ");
            print_keys('F', p->f_order, p->f_op, s->f0, s->f1);
        }
        if (nb) {
            printf("        B: ");
            print_keys('B', p->b_order, p->b_op, s->b0, s->b1);
        }
    }
    int corun = 0;
    for (int k = 0; k < p->nsteps; k++) {
        corun += p->steps[k].f1 > p->steps[k].f0 && p->steps[k].b1 > p->steps[k].b0;
    }
    printf("\n");
    print_order("forward", 'F', p->f_order, p->nf);
    print_order("backward", 'B', p->b_order, p->nb);
    printf("steps: %d (%d co-run, each closed by a barrier of %g us)\n", p->nsteps, corun,
           (double)a->barrier_us);
    printf("orders considered: %d forward (%s) x %d backward (%s)\n", p->f_orders,
           p->f_all ? "all" : "cut at --max-orders", p->b_orders,
           p->b_all ? "all" : "cut at --max-orders");
    double saving = p->sequential_ms > 0 ? 100.0 * (1.0 - p->predicted_ms / p->sequential_ms)
                                         : 0.0;
    printf("predicted makespan %.4f ms against %.4f ms sequential: saving %.1f%%\n",
           p->predicted_ms, p->sequential_ms, saving);
}

static int count(const int *flag, int n)
{
    int c = 0;
    for (int k = 0; k < n; k++) {
        c += flag[k] != 0;
    }
    return c;
}

static int plan_layer(const struct plan_args *a, const struct hx_overlap_table *t,
                      hx_gpt_t model, const struct hx_mesh *mesh)
{
    hx_graph_t g = hx_gpt_graph(model);
    int last_mb = t->model.num_micro_batches / mesh->dp - 1;
    struct hx_deps deps;
    struct hx_strand_list F = { 0 }, B = { 0 };
    struct hx_strand_costs c = { 0 };
    struct hx_plan p = { 0 };
    int rc = 1;
    if (hx_graph_deps(g, &deps) != HX_OK) {
        return 1;
    }
    if (hx_strand_list_build(g, &deps, 'F', a->layer, 0, a->movable_desc, &F) != HX_OK ||
        hx_strand_list_build(g, &deps, 'B', a->layer, last_mb, a->movable_desc, &B) !=
            HX_OK) {
        goto out;
    }
    int ret = hx_strand_costs_from_table(t, g, &F, &B, &c);
    if (ret != HX_OK) {
        rc = ret == HX_ENOMEM ? 1 : 2; /* else the table does not fit the graph: bad input */
        goto out;
    }
    struct hx_plan_options o = { .max_orders = a->max_orders, .max_segment = a->max_segment,
                                 .barrier_ms = a->barrier_us / 1000.0,
                                 .movable_desc = a->movable_desc };
    if (hx_plan_search(g, &F, &B, &c, &o, &p) != HX_OK) {
        goto out;
    }
    const struct hx_overlap_model *m = &t->model;
    printf("helix plan-strands: layer %d of L=%d C=%d heads=%d T=%d B=%d V=%d, tp %d%s, dp %d, "
           "M=%d (table %s, profiled on layer %d)\n", a->layer, m->num_layers, m->hidden_size,
           m->num_heads, m->seq_length, m->micro_batch_size, m->vocab_size, m->tp,
           m->sequence_parallel ? " + sp" : "", m->dp, m->num_micro_batches, a->profile,
           t->layer);
    printf("forward: %d ops (micro-batch 0), backward: %d ops (micro-batch %d); movable (at "
           "most %d descendants in their list): %d forward, %d backward; co-run segments of "
           "at most %d ops\n", F.n, B.n, last_mb, a->movable_desc, count(F.movable, F.n),
           count(B.movable, B.n), a->max_segment);
    print_plan(&p, a);
    if (a->out != NULL) {
        if (hx_plan_write_json(&p, a->out) != HX_OK) {
            goto out;
        }
        printf("plan written to %s\n", a->out);
    }
    rc = 0;
out:
    hx_plan_free(&p);
    hx_strand_costs_free(&c);
    hx_strand_list_free(&F);
    hx_strand_list_free(&B);
    hx_deps_free(&deps);
    return rc;
}

int cmd_plan_strands(int argc, char **argv)
{
    struct plan_args a = { .layer = -1, .max_orders = 64, .max_segment = 8,
                           .movable_desc = 4 };
    const struct flag flags[] = {
        { "profile", FLAG_STRING, &a.profile, 0, 0,
          "overlap table (JSON, schema helix-overlap-1) of `helix profile-overlap`" },
        { "layer", FLAG_INT, &a.layer, -1, 1 << 20, "layer to plan (-1: the table's)" },
        { "max-orders", FLAG_INT, &a.max_orders, 1, 100000,
          "candidate operator orders per side (the DP runs once per pair)" },
        { "max-segment", FLAG_INT, &a.max_segment, 1, 1024,
          "longest co-run segment on either side, in ops (DP cost ~ F x B x S^3)" },
        { "movable-desc", FLAG_INT, &a.movable_desc, 0, 1 << 20,
          "an op may move if at most this many ops of its list depend on it" },
        { "barrier-us", FLAG_FLOAT, &a.barrier_us, 0, 1e9,
          "cost of the barrier closing each co-run step, in microseconds (not measured: 0)" },
        { "out", FLAG_STRING, &a.out, 0, 0, "write the plan as JSON (schema helix-plan-1)" },
        { "num-layers", FLAG_INT, &a.layers, 1, 1024, "check: the table's num_layers" },
        { "hidden-size", FLAG_INT, &a.hidden, 1, 65536, "check: hidden_size" },
        { "num-attention-heads", FLAG_INT, &a.heads, 1, 1024, "check: num_heads" },
        { "seq-length", FLAG_INT, &a.seq_len, 1, 65536, "check: seq_length" },
        { "micro-batch-size", FLAG_INT, &a.micro_batch, 1, 65536, "check: micro_batch_size" },
        { "vocab-size", FLAG_INT, &a.vocab, 2, 1 << 20, "check: vocab_size" },
        { "global-batch-size", FLAG_INT, &a.global_batch, 1, 1 << 20,
          "check: num_micro_batches x micro_batch_size" },
        { "tensor-model-parallel-size", FLAG_INT, &a.tp, 1, 1024, "check: tp" },
        { "sequence-parallel", FLAG_BOOL, &a.sp, 0, 1, "check: sequence_parallel" },
        { "data-parallel-size", FLAG_INT, &a.dp, 1, 1 << 20, "check: dp" },
    };
    struct flag_set fs;
    flags_init(&fs, flags, (int)(sizeof flags / sizeof flags[0]));
    int ret = flags_parse_argv(&fs, argc, argv, 2,
                               "usage: helix plan-strands --profile TABLE.json [flags]\n\n"
                               "DHelix's pairing plan for one layer: which segments of the "
                               "forward of micro-batch 0 co-run\nwith which segments of the "
                               "backward of the rank's last micro-batch, found by a dynamic\n"
                               "program over candidate operator orders that minimises the "
                               "makespan predicted from the\nprofiled overlap table.  The model "
                               "is the table's; model flags only confirm it.");
    if (ret != 0) {
        flags_free(&fs);
        return ret == 1 ? 0 : 2;
    }
    if (a.profile == NULL) {
        fprintf(stderr, "helix: error: plan-strands needs --profile TABLE.json (write one with "
                "`helix profile-overlap`)\n");
        flags_free(&fs);
        return 2;
    }
    struct hx_overlap_table t;
    if (hx_overlap_table_load(a.profile, &t) != HX_OK) { /* names the file and the field */
        flags_free(&fs);
        return 2;
    }
    int rc = check_model(&fs, &a, &t.model, a.profile);
    if (rc == 0 && a.layer < 0) {
        a.layer = t.layer;
    }
    if (rc == 0 && (a.layer >= t.model.num_layers || t.layer < 0 ||
                    t.layer >= t.model.num_layers)) {
        fprintf(stderr, "helix: error: layer %d is not one of the model's %d layers (the "
                "table was profiled on layer %d); pass --layer 0..%d\n",
                a.layer >= t.model.num_layers ? a.layer : t.layer, t.model.num_layers,
                t.layer, t.model.num_layers - 1);
        rc = 2;
    }
    /* the two strands are different micro-batches of one rank: forward of the first,
     * backward of the last; with one micro-batch the backward depends on the forward */
    if (rc == 0 && t.model.dp >= 1 && t.model.num_micro_batches / t.model.dp < 2) {
        fprintf(stderr, "helix: error: %s: %d micro-batch(es) over dp %d leave one per rank; "
                "strands pair two independent micro-batches: profile with num_micro_batches "
                ">= 2 x dp\n", a.profile, t.model.num_micro_batches, t.model.dp);
        rc = 2;
    }
    hx_gpt_t model = NULL;
    struct hx_mesh mesh;
    if (rc == 0) {
        rc = build_model(&t.model, &model, &mesh);
    }
    if (rc == 0) {
        rc = plan_layer(&a, &t, model, &mesh);
    }
    if (model != NULL) {
        hx_gpt_destroy(model);
    }
    hx_overlap_table_free(&t);
    flags_free(&fs);
    return rc;
}
