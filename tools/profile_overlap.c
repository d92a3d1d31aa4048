/* SPDX-License-Identifier: MIT */
/* tools/profile_overlap.c: `helix profile-overlap`, the command line of the overlap profiler
 * (issue 6, item 4; papers.md §2.2).  It builds two instances of the GPT step graph the model
 * flags describe (Megatron's names, as `helix train`), runs one training step of each, then
 * times one transformer layer's operators solo and every (forward, backward) pair co-running
 * (tools/overlap_measure.c), and writes the table of include/helix/overlap.h as JSON, plus a
 * summary: solo times, best and worst pairs by OEF, mean OEF of comp||comp and comp||comm.
 *
 * Lists: forward = nodes of phase forward, layer --layer, micro-batch 0; backward = nodes of
 * phase backward-data or backward-weight, same layer, the rank's last micro-batch (M/dp - 1),
 * both in submission order; keys F<k> and B<k>.  Collectives appear only with tp > 1 under
 * mpirun; every rank runs the same sequence and rank 0 writes.
 * Exit: 0, 1 (a runtime failure), 2 (bad flags or input, one worker).
 * Test: tests/cli/profile_overlap.sh, tests/mpi/profile_overlap.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rng.h"
#include "tools/llama_flags.h"
#include "tools/profile_overlap.h"
#include "tools/tools.h"

struct po_args {
    int layers, hidden, heads, seq_len, micro_batch, vocab, micro_batches;
    int tp, sequence_parallel, ranks_per_node, tile_seqs, attn_block;
    int layer, repeats, workers, cuda, seed, classes;
    float comm_timeout;
    struct llama_flags llama;
    const char *out, *sched, *compute_on;
    enum hx_place place; /* --compute-on, resolved */
};

static struct flag table[32 + LLAMA_FLAGS];
static int ntable;

#define F(n, t, d, lo, hi, h) table[ntable++] = (struct flag){ n, t, d, lo, hi, h }

/* Defaults: `helix train`'s "small" model (4 layers, C 128, T 128, B 8), whose layer has 14
 * forward and 36 backward nodes on two row tiles (504 pairs): about 10 s on 2 cores at 10
 * repeats, since every pair's repeat also re-times both ops alone. */
static void args_init(struct po_args *a, struct flag_set *s)
{
    memset(a, 0, sizeof *a);
    a->layers = 4, a->hidden = 128, a->heads = 4, a->seq_len = 128, a->micro_batch = 8;
    a->vocab = 256, a->tp = 1, a->layer = -1, a->repeats = 10, a->seed = 1234;
    a->comm_timeout = 300, a->out = "-";
    ntable = 0;
    F("num-layers", FLAG_INT, &a->layers, 1, 1024, "transformer layers");
    F("hidden-size", FLAG_INT, &a->hidden, 1, 65536, "hidden size C");
    F("num-attention-heads", FLAG_INT, &a->heads, 1, 1024, "attention heads (must divide C)");
    F("seq-length", FLAG_INT, &a->seq_len, 1, 65536, "tokens per sequence T");
    F("micro-batch-size", FLAG_INT, &a->micro_batch, 1, 65536, "sequences per micro-batch");
    F("vocab-size", FLAG_INT, &a->vocab, 2, 1 << 20, "vocabulary");
    llama_flags_add(&a->llama, table, &ntable);
    F("num-micro-batches", FLAG_INT, &a->micro_batches, 0, 1 << 20,
      "micro-batches per step over all dp ranks (0: one per dp rank)");
    F("tile-seqs", FLAG_INT, &a->tile_seqs, 0, 65536, "sequences per row tile (0: auto)");
    F("attn-block", FLAG_INT, &a->attn_block, 0, 65536, "attention block (0: 64)");
    F("tensor-model-parallel-size", FLAG_INT, &a->tp, 1, 1024,
      "tensor-parallel ranks (under mpirun; tp > 1 adds collectives)");
    F("sequence-parallel", FLAG_BOOL, &a->sequence_parallel, 0, 1,
      "shard LayerNorm and residual regions over the sequence within tp");
    F("ranks-per-node", FLAG_INT, &a->ranks_per_node, 0, 1 << 20,
      "consecutive ranks sharing a node (0: Open MPI's local size)");
    F("layer", FLAG_INT, &a->layer, -1, 1 << 20, "layer to profile (-1: num-layers / 2)");
    F("repeats", FLAG_INT, &a->repeats, 1, 1000, "runs of every op and pair (median kept)");
    F("classes", FLAG_BOOL, &a->classes, 0, 1,
      "time one op per class of identical work (row tiles of one operation), reused by the rest");
    F("out", FLAG_STRING, &a->out, 0, 0, "JSON table file, written atomically (-: stdout)");
    F("workers", FLAG_INT, &a->workers, 0, 64,
      "CPU workers, at least 2 (0: STARPU_NCPU or all cores)");
    F("cuda", FLAG_INT, &a->cuda, 0, 64,
      "CUDA workers (in helix simulate: the rank's simulated GPU)");
    F("compute-on", FLAG_STRING, &a->compute_on, 0, 0,
      "placement of compute ops: any, cpu, opencl or cuda (default any)");
    F("sched", FLAG_STRING, &a->sched, 0, 0, "scheduling policy (default hx-prio)");
    F("seed", FLAG_INT, &a->seed, 0, 2147483647, "seed of the parameters and tokens");
    F("comm-timeout", FLAG_FLOAT, &a->comm_timeout, 0, 1e6,
      "seconds without collective progress before the ranks stop (0: never)");
    flags_init(s, table, ntable);
}

static const char usage_text[] =
    "usage: helix profile-overlap [flags]\n\n"
    "Measure how well one transformer layer's operators overlap (DHelix's OEF): every\n"
    "forward op F<k> and backward op B<k> of --layer alone, and every (F, B) pair co-running\n"
    "on two StarPU workers; write the table as JSON (schema helix-overlap-1) and a summary.\n"
    "  OEF(a,b) = (T(a) + T(b) - T(a||b)) / min(T(a), T(b))\n"
    "Collectives (comm lanes) appear with tp > 1 only: run under\n"
    "  mpirun -np N helix profile-overlap --tensor-model-parallel-size N [--sequence-parallel]\n"
    "Two collectives of one channel are never co-run (\"serialized\": true, OEF 0).";

/* --out's directory must exist and be writable: checked before minutes of measuring. */
static int check_out(const char *out)
{
    if (strcmp(out, "-") == 0) {
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    struct stat st;
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "helix: error: --out %s is a directory; give a file name\n", out);
        return 2;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "helix: error: --out %s: directory %s is not writable (%s); create it "
                "or choose another file\n", out, dir, strerror(errno));
        return 2;
    }
    return 0;
}

/* Flags, model and mesh, before anything starts: 0, 1 (--help printed) or 2. */
static int prepare(struct po_args *a, struct flag_set *fs, int argc, char **argv, int size,
                   int rank, struct hx_gpt_config *c, struct hx_mesh *mesh)
{
    int ret = flags_parse_argv(fs, argc, argv, 2, usage_text);
    if (ret != 0) {
        return ret;
    }
    if (a->layer < 0) {
        a->layer = a->layers / 2;
    }
    if (a->layer >= a->layers) {
        fprintf(stderr, "helix: error: --layer %d is out of range: the model has %d layers "
                "(--layer 0..%d)\n", a->layer, a->layers, a->layers - 1);
        return 2;
    }
    if (a->workers == 1) {
        fprintf(stderr, "helix: error: --workers 1: co-running two operators needs at least 2 "
                "StarPU workers; use --workers 2 (or more)\n");
        return 2;
    }
    if (tools_check_sched(a->sched) != 0 || llama_flags_check(&a->llama) != 0) {
        return 2;
    }
    if (a->compute_on != NULL && hx_place_from_name(a->compute_on, &a->place) != HX_OK) {
        fprintf(stderr, "helix: error: --compute-on %s is not a placement; use any, cpu, "
                "opencl or cuda\n", flags_esc(a->compute_on));
        return 2;
    }
    if (check_out(a->out) != 0) {
        return 2;
    }
    struct hx_mesh_request r = {
        .world_size = size, .world_rank = rank, .tp = a->tp, .pp = 1,
        .ranks_per_node = a->ranks_per_node, .sequence_parallel = a->sequence_parallel,
        .num_heads = a->heads, .hidden_size = a->hidden, .vocab_size = a->vocab,
        .num_layers = a->layers, .seq_len = a->seq_len,
    };
    if (r.ranks_per_node == 0) {
        int local = hx_mpi_local_size();
        r.ranks_per_node = local > 0 && size % local == 0 ? local : size;
    }
    /* micro-batches: the mesh check needs the count, the count's default needs dp */
    int per_replica = a->tp;
    int dp = size % per_replica == 0 ? size / per_replica : 1;
    r.micro_batches = a->micro_batches > 0 ? a->micro_batches : dp;
    if (hx_mesh_init(mesh, &r, rank != 0) != HX_OK) {
        return 2;
    }
    memset(c, 0, sizeof *c);
    c->vocab_size = a->vocab;
    c->num_layers = a->layers;
    c->num_heads = a->heads;
    c->hidden_size = a->hidden;
    c->seq_len = a->seq_len;
    c->micro_batch_size = a->micro_batch;
    c->num_micro_batches = r.micro_batches;
    c->tile_seqs = a->tile_seqs;
    c->attn_block = a->attn_block;
    llama_flags_apply(&a->llama, c);
    return hx_gpt_config_check(c) == HX_OK ? 0 : 2;
}

/* Parameters from --seed, the same random tokens on every rank, one training step. */
static int first_step(hx_gpt_t m, const struct hx_gpt_config *c, uint64_t seed)
{
    size_t n = (size_t)c->num_micro_batches * c->micro_batch_size * c->seq_len;
    int32_t *tok = malloc(n * sizeof *tok), *tgt = malloc(n * sizeof *tgt);
    int ret = tok && tgt ? HX_OK : HX_ERR(HX_ENOMEM, "batch of %zu tokens", n);
    if (ret == HX_OK) {
        struct hx_rng rng;
        hx_rng_seed(&rng, seed);
        for (size_t i = 0; i < n; i++) {
            tok[i] = (int32_t)hx_rng_below(&rng, (uint64_t)c->vocab_size);
            tgt[i] = (int32_t)hx_rng_below(&rng, (uint64_t)c->vocab_size);
        }
        hx_gpt_init_params(m, seed);
        ret = hx_gpt_set_batch(m, tok, tgt);
    }
    struct hx_step_result r;
    ret = ret == HX_OK ? hx_gpt_step(m, 0, &r) : ret;
    free(tok);
    free(tgt);
    return ret;
}

static int by_oef_desc(const void *x, const void *y)
{
    double a = (*(const struct hx_overlap_pair *const *)x)->oef;
    double b = (*(const struct hx_overlap_pair *const *)y)->oef;
    return (a < b) - (a > b);
}

static void print_pair(FILE *f, const struct hx_overlap_table *t, const struct hx_overlap_pair *p)
{
    const struct hx_overlap_op *a = &t->ops[p->a], *b = &t->ops[p->b];
    fprintf(f, "  %-4s %-18s || %-4s %-20s OEF %6.3f  (solo %.3f + %.3f ms, co-run %.3f ms)\n",
            a->key, a->op, b->key, b->op, p->oef, a->solo_ms, b->solo_ms, p->corun_ms);
}

static void summary(FILE *f, const struct hx_overlap_table *t, const char *out)
{
    const struct hx_overlap_model *m = &t->model;
    fprintf(f, "helix profile-overlap: layer %d of %d (C=%d, %d heads, T=%d, B=%d, V=%d, "
            "tp %d%s, dp %d), %d forward + %d backward ops, %d workers, %d rank%s, %d repeats\n",
            t->layer, m->num_layers, m->hidden_size, m->num_heads, m->seq_length,
            m->micro_batch_size, m->vocab_size, m->tp, m->sequence_parallel ? " +sp" : "",
            m->dp, t->nfwd, t->nbwd, t->workers, t->ranks, t->ranks > 1 ? "s" : "", t->repeats);
    fprintf(f, "solo times (median / min, ms):\n");
    int ncomm = 0;
    for (int i = 0; i < t->nops; i++) {
        const struct hx_overlap_op *o = &t->ops[i];
        ncomm += o->comm;
        fprintf(f, "  %-4s %-20s %-4s %-10s %9.3f / %9.3f   %.3g flop, %.3g B", o->key, o->op,
                o->comm ? "comm" : "comp", hx_overlap_lane_name(o->lane), o->solo_ms,
                o->solo_ms_min, o->flops, o->bytes);
        if (o->cls != i) {
            fprintf(f, "   (class %s)", t->ops[o->cls].key);
        }
        fprintf(f, "\n");
    }
    /* per class (comp||comp, comp||comm, comm||comm): the mean OEF, and the time-weighted
     * one, sum of hidden time / sum of min(T(a), T(b)): a pair with a 10 us op has an OEF
     * that is mostly the other op's noise divided by 10 us, and weighs little there */
    const struct hx_overlap_pair **v = malloc(sizeof *v * (size_t)(t->npairs ? t->npairs : 1));
    int n = 0, nser = 0, nreused = 0, cnt[3] = { 0, 0, 0 };
    double sum[3] = { 0, 0, 0 }, hidden[3] = { 0, 0, 0 }, shorter[3] = { 0, 0, 0 };
    for (int k = 0; v != NULL && k < t->npairs; k++) {
        const struct hx_overlap_pair *p = &t->pairs[k];
        const struct hx_overlap_op *a = &t->ops[p->a], *b = &t->ops[p->b];
        if (p->serialized) {
            nser++;
            continue;
        }
        if (a->cls == p->a && b->cls == p->b) {
            v[n++] = p; /* a measured pair: the others repeat its numbers */
        } else {
            nreused++;
        }
        int c = a->comm + b->comm;
        cnt[c]++;
        sum[c] += p->oef;
        hidden[c] += a->solo_ms + b->solo_ms - p->corun_ms;
        shorter[c] += a->solo_ms < b->solo_ms ? a->solo_ms : b->solo_ms;
    }
    if (v != NULL && n > 0) {
        qsort(v, (size_t)n, sizeof *v, by_oef_desc);
        int show = n < 5 ? n : 5;
        fprintf(f, "%d pairs: %d co-run", t->npairs, n);
        if (nreused > 0) {
            fprintf(f, ", %d with the numbers of their classes' pair", nreused);
        }
        fprintf(f, ", %d serialized (two collectives of one channel); best by OEF:\n", nser);
        for (int k = 0; k < show; k++) {
            print_pair(f, t, v[k]);
        }
        fprintf(f, "worst by OEF:\n");
        for (int k = n - show; k < n; k++) {
            print_pair(f, t, v[k]);
        }
    }
    free(v);
    static const char *cls[3] = { "comp||comp", "comp||comm", "comm||comm (two channels)" };
    fprintf(f, "mean OEF (time-weighted in brackets):");
    for (int c = 0; c < 3; c++) {
        if (cnt[c] > 0) {
            fprintf(f, "%s %s %.3f (%.3f) over %d pairs", c ? ";" : "", cls[c], sum[c] / cnt[c],
                    shorter[c] > 0 ? hidden[c] / shorter[c] : 0.0, cnt[c]);
        } else if (c < 2) {
            fprintf(f, "%s %s: no pairs", c ? ";" : "", cls[c]);
        }
    }
    fprintf(f, "\n");
    if (ncomm == 0) {
        fprintf(f, "note: no collective in this layer, so no comm lane was profiled; the comm "
                "lanes need mpirun -np N with --tensor-model-parallel-size > 1\n");
    }
    if (strcmp(out, "-") != 0) {
        fprintf(f, "wrote %s (%d ops, %d pairs)\n", out, t->nops, t->npairs);
    }
}

struct po_run {
    struct po_args a;
    struct flag_set flags;
    struct hx_mesh mesh;
    struct hx_gpt_config cfg;
    struct overlap_setup s;
    struct hx_overlap_table table;
    int mpi, rank, size, runtime_up;
};

/* Everything after the input is known good: 0, 1 (runtime failure) or 2 (one worker). */
static int profile(struct po_run *r)
{
    struct po_args *a = &r->a;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 1000);
    struct hx_parallel_config par = { .mesh = &r->mesh };
    struct overlap_setup *s = &r->s;
    if (hx_gpt_build_parallel(&s->x, &r->cfg, &o, &par) != HX_OK ||
        hx_gpt_build_parallel(&s->y, &r->cfg, &o, &par) != HX_OK) {
        return 2;
    }
    s->layer = a->layer;
    s->bwd_microbatch = r->cfg.num_micro_batches / r->mesh.dp - 1;
    s->repeats = a->repeats;
    s->classes = a->classes;
    s->ranks = r->size;
    s->verbose = r->rank == 0;
    /* builders are deterministic: y's graph holds the same nodes at the same ids as x's */
    HX_ASSERT(hx_gpt_graph(s->y)->nnodes == hx_gpt_graph(s->x)->nnodes,
              "two builds of one configuration differ: %d and %d nodes",
              hx_gpt_graph(s->x)->nnodes, hx_gpt_graph(s->y)->nnodes);
    if (overlap_lists(s->x, s->layer, s->bwd_microbatch, &s->fwd, &s->nfwd, &s->bwd,
                      &s->nbwd) != HX_OK) {
        return 1;
    }
    HX_ASSERT(s->nfwd > 0 && s->nbwd > 0, "layer %d has %d forward and %d backward nodes",
              s->layer, s->nfwd, s->nbwd);
    int ret;
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = a->workers;
    ro.cuda = a->cuda;
    ro.compute_on = a->place;
    ro.sched = a->sched;
    ro.profiling = 1; /* per-task start and end times */
    ro.mpi = r->mpi;
    if ((ret = hx_runtime_init(&ro)) != HX_OK) {
        return ret == HX_EINVAL ? 2 : 1;
    }
    r->runtime_up = 1;
    if (hx_runtime_workers() < 2) {
        if (r->rank == 0) {
            fprintf(stderr, "helix: error: co-running two operators needs at least 2 StarPU "
                    "workers, this run has %d (STARPU_NCPU=%s); set STARPU_NCPU=2 or "
                    "--workers 2\n",
                    hx_runtime_workers(),
                    getenv("STARPU_NCPU") ? getenv("STARPU_NCPU") : "unset");
        }
        return 2;
    }
    /* a simulation's collectives go through StarPU-MPI, the only communication SimGrid runs */
    struct hx_comm_opts co = { .timeout = a->comm_timeout,
                               .backend = hx_runtime_simulated() ? HX_COMM_STARPU_MPI
                                                                 : HX_COMM_MPI };
    if (r->mpi && hx_comm_open(&r->mesh, &co) != HX_OK) {
        return 1;
    }
    /* a simulation's models, once the channels chose the collectives' codelets (as train) */
    if (hx_graph_check_sim_models(hx_gpt_graph(s->x)) != HX_OK) { /* (said) */
        return 2;
    }
    ret = hx_gpt_realize(s->x);
    ret = ret == HX_OK ? hx_gpt_realize(s->y) : ret;
    ret = ret == HX_OK ? first_step(s->x, &r->cfg, (uint64_t)a->seed) : ret;
    ret = ret == HX_OK ? first_step(s->y, &r->cfg, (uint64_t)a->seed + 1) : ret;
    ret = ret == HX_OK ? hx_overlap_table_init(&r->table, s->nfwd, s->nbwd) : ret;
    ret = ret == HX_OK ? overlap_measure(s, &r->table) : ret;
    if (ret != HX_OK) {
        return 1;
    }
    if (r->rank != 0) {
        return 0;
    }
    struct hx_overlap_table *t = &r->table;
    t->model = (struct hx_overlap_model){
        .num_layers = r->cfg.num_layers, .hidden_size = r->cfg.hidden_size,
        .num_heads = r->cfg.num_heads, .seq_length = r->cfg.seq_len,
        .micro_batch_size = r->cfg.micro_batch_size, .vocab_size = r->cfg.vocab_size,
        .tp = r->mesh.tp, .sequence_parallel = r->mesh.sequence_parallel, .dp = r->mesh.dp,
        .num_micro_batches = r->cfg.num_micro_batches,
        .normalization = r->cfg.normalization, .swiglu = r->cfg.swiglu,
        .ffn_hidden_size = r->cfg.ffn_hidden_size,
        .position_embedding = r->cfg.position_embedding, .rotary_base = r->cfg.rotary_base,
        .num_query_groups = r->cfg.num_query_groups,
        .untie_embeddings = r->cfg.untie_embeddings, .disable_bias = r->cfg.disable_bias,
    };
    t->layer = s->layer;
    t->workers = hx_runtime_workers();
    t->ranks = r->size;
    t->repeats = s->repeats;
    if (gethostname(t->host, sizeof t->host) != 0) {
        snprintf(t->host, sizeof t->host, "unknown");
    }
    t->host[sizeof t->host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    strftime(t->date, sizeof t->date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    if (hx_overlap_table_write(t, a->out) != HX_OK) {
        return 1;
    }
    /* the table may be on stdout: then the summary goes to stderr */
    summary(strcmp(a->out, "-") == 0 ? stderr : stdout, t, a->out);
    return 0;
}

int cmd_profile_overlap(int argc, char **argv)
{
    static struct po_run r;
    int ret;
    r.mpi = tools_launched_by_mpirun();
    r.size = 1;
    if (r.mpi) {
        if (hx_mpi_init(&argc, &argv) != HX_OK) {
            return 1;
        }
        r.rank = hx_mpi_world_rank();
        r.size = hx_mpi_world_size();
    }
    args_init(&r.a, &r.flags);
    int muted = tools_mute_stderr(r.rank);
    ret = prepare(&r.a, &r.flags, argc, argv, r.size, r.rank, &r.cfg, &r.mesh);
    tools_unmute_stderr(muted);
    if (ret == 0) {
        /* rank 0 reports; simulated ranks share this process's stdout, so they stay quiet
         * by themselves (only rank 0 prints) */
        if (r.rank != 0 && !hx_runtime_simulated() && freopen("/dev/null", "w", stdout) == NULL) {
            hx_warn("cannot silence stdout of rank %d", r.rank);
        }
        ret = profile(&r);
    } else {
        ret = ret == 1 ? 0 : ret; /* --help */
    }
    hx_overlap_table_free(&r.table);
    if (hx_comm_is_open()) {
        hx_comm_close();
    }
    hx_gpt_destroy(r.s.x);
    hx_gpt_destroy(r.s.y);
    free(r.s.fwd);
    free(r.s.bwd);
    if (r.runtime_up) {
        hx_runtime_shutdown();
    }
    if (r.mpi) {
        hx_mpi_finalize();
    }
    flags_free(&r.flags);
    return ret;
}
