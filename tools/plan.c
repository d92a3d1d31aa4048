/* SPDX-License-Identifier: MIT */
/* tools/plan.c: `helix plan`: which configuration to run on N GPUs (issue 25).  It
 * enumerates the configurations helix can run the model in:
 *   Megatron tp (inside a node, with sequence parallelism) or AxoNN's 3D grid (any Gx x Gy x
 *   Gz, no pipeline), pp plain or folded (DHelix's W), dp for the rest; AMSP's sharding (s_p, s_g, s_os): every factor set AMSP's constraints
 *   allow, from none, ZeRO-1/2/3 and MiCS (a node's dp ranks) to partial mixes inside a node
 *   or over whole nodes; the micro-batch size; the recomputation mode (without a pipeline,
 *   where helix has it);
 * any of which a train flag on the command line fixes (--tensor-model-parallel-size 2 keeps
 * tp at 2).  Each is priced by tools/plan_model.c from the graph helix would build; those
 * that fit in memory are ranked by predicted step time, and the best are printed with their
 * terms and the command line that runs each.  --simulate-top K runs the best K through
 * `helix simulate` (tools/simulate.c: the same graphs and policies on the simulated machine)
 * and ranks them again by simulated step; --measure (tools/plan_measure.c) times the bed's
 * own collectives for --comm.
 * Test: tests/cli/plan.sh, tests/tools/plan_model.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helix/error.h"
#include "runtime/sim_analytic.h"
#include "tools/plan_enumerate.h"
#include "tools/plan_model.h"
#include "tools/train.h"

static const char usage_text[] =
    "usage: helix plan --machine FILE --device FILE [--gpus N] [--gpus-per-node G]\n"
    "                  [--memory-per-gpu GIB] [--top K] [--shared-cores C] [--comm FILE]\n"
    "                  [--simulate-top K] [train flags]\n"
    "       mpirun -np N helix plan --measure FILE [--gpus-per-node G]\n\n"
    "Which configuration to run: every mesh (tp inside a node with sequence parallelism or\n"
    "AxoNN's 3D grid --tp-grid, pp plain or folded, dp), AMSP sharding (ZeRO-1/2/3, MiCS,\n"
    "mixes), micro-batch size and recomputation helix can run the model in, priced from the\n"
    "graphs helix would build (compute from the device's analytic model, collectives from a\n"
    "placement-aware ring model of the machine's links, at least their inter-node sum),\n"
    "filtered by memory and ranked by predicted step time.\n"
    "Prints the best with their terms and the `mpirun ... helix train` line of each.\n\n"
    "  --machine FILE       the cluster: nodes, GPUs, links (machines/README.md)\n"
    "  --device FILE        its GPU and CPU cores (devices/README.md)\n"
    "  --gpus N             ranks (default: every GPU of the machine; CPU-only: its nodes)\n"
    "  --gpus-per-node G    ranks a node (default: the machine's GPUs a node, or 1)\n"
    "  --memory-per-gpu GIB memory a rank may use (default: the machine's gpu_memory_gib;\n"
    "                       0: no limit)\n"
    "  --top K              configurations printed (default 5)\n"
    "  --shared-cores C     the ranks share C cores in all (an emulated cluster on one\n"
    "                       machine, scripts/netbed): a step takes at least every rank's\n"
    "                       compute over them, with its communication beside\n"
    "  --comm FILE          collectives as measured (--measure) instead of the ring model\n"
    "                       where a group's shape was measured\n"
    "  --simulate-top K     simulate the best K (helix simulate, the device's analytic\n"
    "                       models, 3 steps) and rank them again by simulated step time\n"
    "  --measure FILE       under mpirun, on the machine itself: time this bed's collectives\n"
    "                       for every group shape (a node's ranks, one rank a node, all)\n"
    "                       and write them to FILE for --comm; nothing else runs\n\n"
    "The train flags give the model (--preset, --num-layers, ...), --seq-length and\n"
    "--global-batch-size (required: sequences per step); a mesh flag among them\n"
    "(--tensor-model-parallel-size, --tp-grid, --pipeline-model-parallel-size,\n"
    "--pipeline-fold, --micro-batch-size, --zero-stage, --recompute-activations) fixes\n"
    "that choice.\n";

struct plan_opts {
    const char *machine, *device, *measure, *comm;
    int gpus, per_node, top, shared_cores, simulate_top;
    double memory_gib;         /* < 0: the machine's */
};

/* flags of this command; the rest are train's */
static int parse(int argc, char **argv, struct plan_opts *o, char **rest, int *nrest)
{
    static const char *const names[] = { "--machine", "--device", "--gpus", "--gpus-per-node",
                                         "--memory-per-gpu", "--top", "--shared-cores",
                                         "--measure", "--comm", "--simulate-top" };
    rest[(*nrest)++] = argv[0];
    rest[(*nrest)++] = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        int k = -1;
        const char *v = NULL;
        for (int n = 0; n < 10 && k < 0; n++) {
            size_t len = strlen(names[n]);
            if (strncmp(argv[i], names[n], len) == 0 &&
                (argv[i][len] == '\0' || argv[i][len] == '=')) {
                k = n;
                v = argv[i][len] == '=' ? argv[i] + len + 1 : i + 1 < argc ? argv[++i] : NULL;
            }
        }
        if (k < 0) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (v == NULL || v[0] == '\0') {
            fprintf(stderr, "helix plan: error: %s needs a value\n", names[k]);
            return 2;
        }
        if (k < 2 || k == 7 || k == 8) {
            *(k == 0 ? &o->machine : k == 1 ? &o->device : k == 7 ? &o->measure : &o->comm) = v;
            continue;
        }
        char *end;
        double x = strtod(v, &end);
        int integer = k != 4;
        if (*end != '\0' || x < 0 || (integer && (x != floor(x) || x < 1 || x > 1 << 20))) {
            fprintf(stderr, "helix plan: error: %s '%s' is not %s\n", names[k], flags_esc(v),
                    integer ? "a positive whole number" : "a size in GiB (0: no limit)");
            return 2;
        }
        if (k == 4) {
            o->memory_gib = x;
        } else {
            *(k == 2   ? &o->gpus
              : k == 3 ? &o->per_node
              : k == 5 ? &o->top
              : k == 6 ? &o->shared_cores
                       : &o->simulate_top) = (int)x;
        }
    }
    return 0;
}

/* The machine, its device and the ranks: 0 or 2 (reported) */
static int load_bed(const struct plan_opts *o, struct plan_bed *bed)
{
    if (o->machine == NULL || o->device == NULL) {
        fprintf(stderr, "helix plan: error: give the machine and its device: --machine FILE "
                "(machines/*.machine) and --device FILE (devices/*.device)\n");
        return 2;
    }
    if (hx_sim_machine_load(o->machine, &bed->mc) != HX_OK ||
        hx_sim_device_load(o->device, &bed->dev) != HX_OK) {
        return 2; /* (said where and why) */
    }
    /* the analytic compute model reads the device from the environment, as a simulated rank
     * does */
    if (setenv("HX_SIM_DEVICE", o->device, 1) != 0 || !hx_sim_analytic_on()) {
        fprintf(stderr, "helix plan: error: cannot use the device description %s\n",
                flags_esc(o->device));
        return 2;
    }
    int machine_ranks = hx_sim_machine_ranks(&bed->mc);
    bed->gpus = o->gpus > 0 ? o->gpus : machine_ranks;
    bed->per_node = o->per_node > 0 ? o->per_node
                    : bed->mc.gpus_per_node > 0 ? bed->mc.gpus_per_node : 1;
    bed->shared_cores = o->shared_cores;
    bed->ncomm = 0;
    if (o->comm != NULL && plan_read_measured(o->comm, bed->comm, &bed->ncomm) != HX_OK) {
        return 2; /* (said) */
    }
    bed->memory_bytes = (o->memory_gib >= 0 ? o->memory_gib : bed->mc.gpu_memory_gib) *
                        1073741824.0;
    if (bed->gpus % bed->per_node != 0 || bed->gpus / bed->per_node > bed->mc.nodes ||
        (bed->mc.gpus_per_node > 0 && bed->per_node > bed->mc.gpus_per_node)) {
        fprintf(stderr, "helix plan: error: %d ranks at %d a node do not fit %s (%d nodes of "
                "%d GPUs); give --gpus a multiple of --gpus-per-node, on at most its nodes\n",
                bed->gpus, bed->per_node, bed->mc.name, bed->mc.nodes, bed->mc.gpus_per_node);
        return 2;
    }
    return 0;
}

static int given(const struct flag_set *s, const char *name)
{
    const struct flag *f = flags_find(s, name);
    return f != NULL && s->origin[f - s->flags] >= FROM_CONFIG; /* a preset's is a default */
}

/* Only helix's own mesh flags may fix a choice; the rest belong to the run, not the plan */
static int fixed_of(const struct train_args *a, const struct flag_set *s, struct fixed *x)
{
    static const char *const refused[] = { "data-parallel-size", "sequence-parallel",
                                           "shard-params", "shard-grads", "shard-optim",
                                           "mics", "ranks-per-node", "strands", "load", NULL };
    for (int i = 0; refused[i] != NULL; i++) {
        if (given(s, refused[i])) {
            fprintf(stderr, "helix plan: error: --%s is for a run, not a plan: the plan picks "
                    "it (or --gpus-per-node sets the node); drop it\n", refused[i]);
            return 2;
        }
    }
    memset(x, 0, sizeof *x);
    x->tp = given(s, "tensor-model-parallel-size") ? a->tp : 0;
    if (given(s, "tp-grid")) {
        char end = 0;
        int *g = x->grid;
        if (sscanf(a->tp_grid, "%dx%dx%d%c", &g[0], &g[1], &g[2], &end) != 3 || g[0] < 1 ||
            g[1] < 1 || g[2] < 1) {
            fprintf(stderr, "helix plan: error: --tp-grid '%s' is not a grid; write GxxGyxGz, "
                    "three positive counts (e.g. 2x2x1)\n", flags_esc(a->tp_grid));
            return 2;
        }
        if (x->tp) {
            fprintf(stderr, "helix plan: error: --tp-grid and --tensor-model-parallel-size "
                    "both fix the tensor parallelism; give one\n");
            return 2;
        }
    }
    x->pp = given(s, "pipeline-model-parallel-size") ? a->pp : 0;
    x->fold = given(s, "pipeline-fold") ? 1 + a->pipeline_fold : 0;
    x->mbs = given(s, "micro-batch-size") ? a->micro_batch : 0;
    x->zero = given(s, "zero-stage") ? 1 + a->zero_stage : 0;
    if (given(s, "recompute-activations")) {
        const char *r = a->recompute;
        x->recompute = 1 + (strcmp(r, "full") == 0       ? HX_RECOMPUTE_FULL
                            : strcmp(r, "selective") == 0 ? HX_RECOMPUTE_SELECTIVE
                                                          : HX_RECOMPUTE_NONE);
        if (strcmp(r, "full") != 0 && strcmp(r, "selective") != 0 && strcmp(r, "none") != 0) {
            fprintf(stderr, "helix plan: error: --recompute-activations '%s' is not a mode; use "
                    "full, selective or none\n", flags_esc(r));
            return 2;
        }
    }
    if (a->global_batch < 1) {
        fprintf(stderr, "helix plan: error: give --global-batch-size, the sequences of one "
                "step: it fixes the work every configuration does\n");
        return 2;
    }
    return 0;
}

static int by_step(const void *a, const void *b)
{
    const struct row *p = a, *q = b;
    if (p->e.step != q->e.step) {
        return p->e.step < q->e.step ? -1 : 1;
    }
    return (p->id > q->id) - (p->id < q->id);
}

static const char *recompute_name(int r)
{
    return r == HX_RECOMPUTE_FULL ? "full" : r == HX_RECOMPUTE_SELECTIVE ? "selective" : "-";
}

static const char *shard_name(const struct plan_config *c, int k)
{
    int s[3] = { c->s_p, c->s_g, c->s_os }, dp = c->dp;
    for (int z = 0; z < 4; z++) {
        if (plan_zero_matches(s, dp, z) && (z > 0 || dp == 1 || c->s_os == 1)) {
            static const char *const names[] = { "none", "zero-1", "zero-2", "zero-3" };
            return names[z];
        }
    }
    return s[0] == k && s[1] == k && s[2] == k ? "mics" : "amsp";
}

static int in_rest(const char *flag, int nrest, char **rest)
{
    size_t len = strlen(flag);
    for (int k = 2; k < nrest; k++) {
        if (strncmp(rest[k], flag, len) == 0 && (rest[k][len] == '\0' || rest[k][len] == '=')) {
            return 1;
        }
    }
    return 0;
}

/* The train flags of a configuration after the user's: @p words gets them (at most 24),
 * their numbers written into @p num; returns how many */
static int choice_words(const struct row *r, const struct plan_bed *bed, int nrest, char **rest,
                        const char **words, char (*num)[16])
{
    const struct plan_config *c = &r->c;
    int n = 0, k = 0;
#define WORD(w) (words[n++] = (w))
#define NUM(v) (snprintf(num[k], 16, "%d", (v)), words[n++] = num[k++])
    /* a choice the user fixed is in their flags already */
    if (c->gz > 0 && !in_rest("--tp-grid", nrest, rest)) {
        snprintf(num[k], 16, "%dx%dx%d", c->tp / c->gy, c->gy, c->gz);
        WORD("--tp-grid"), words[n++] = num[k++];
    } else if (c->gz == 0 && c->tp > 1 && !in_rest("--tensor-model-parallel-size", nrest, rest)) {
        WORD("--tensor-model-parallel-size"), NUM(c->tp);
    }
    if (c->pp > 1 && !in_rest("--pipeline-model-parallel-size", nrest, rest)) {
        WORD("--pipeline-model-parallel-size"), NUM(c->pp);
    }
    if (!in_rest("--micro-batch-size", nrest, rest)) {
        WORD("--micro-batch-size"), NUM(c->mbs);
    }
    if (c->gz == 0 && c->tp > 1) {
        WORD("--sequence-parallel");
    }
    if (c->fold && !in_rest("--pipeline-fold", nrest, rest)) {
        WORD("--pipeline-fold");
    }
    if (bed->gpus > bed->per_node) {
        WORD("--ranks-per-node"), NUM(bed->per_node);
    }
    if ((c->s_p > 1 || c->s_g > 1 || c->s_os > 1) && !in_rest("--zero-stage", nrest, rest)) {
        WORD("--shard-params"), NUM(c->s_p), WORD("--shard-grads"), NUM(c->s_g);
        WORD("--shard-optim"), NUM(c->s_os);
    }
    if (c->recompute != HX_RECOMPUTE_NONE && !in_rest("--recompute-activations", nrest, rest)) {
        WORD("--recompute-activations"), WORD(recompute_name(c->recompute));
    }
    if (bed->mc.gpus_per_node > 0) {
        WORD("--cuda"), WORD("1"), WORD("--compute-on"), WORD("cuda");
    }
#undef WORD
#undef NUM
    return n;
}

/* The command line of a configuration: mpirun, the user's train flags, then the choices */
static void command(const struct row *r, const struct plan_bed *bed, int nrest, char **rest,
                    FILE *f)
{
    const char *words[24];
    char num[8][16];
    if (bed->gpus > 1) {
        fprintf(f, "mpirun -np %d ", bed->gpus);
    }
    fputs("helix train", f);
    for (int i = 2; i < nrest; i++) {
        fprintf(f, " %s", rest[i]);
    }
    for (int i = 0, n = choice_words(r, bed, nrest, rest, words, num); i < n; i++) {
        fprintf(f, " %s", words[i]);
    }
    fputc('\n', f);
}

/* --simulate-top: configuration @p r's step on the simulated machine (helix simulate with
 * the device's analytic models, 3 steps, the last one's time), in seconds; HX_OK or the
 * status of a simulation that failed (its output's tail said) */
static int simulate(const struct row *r, const struct plan_opts *o, const struct plan_bed *bed,
                    int nrest, char **rest, double *step)
{
    char self[4096], ranks[16], log[] = "/tmp/hx-plan-simulate.XXXXXX";
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    int fd = mkstemp(log);
    if (len <= 0 || fd < 0) {
        return HX_ERR(HX_EIO, "--simulate-top: cannot find this helix or make a log file");
    }
    self[len] = '\0';
    snprintf(ranks, sizeof ranks, "%d", bed->gpus);
    const char *head[] = { self, "simulate", "--machine", o->machine, "--device", o->device,
                           "--ranks", ranks };
    char json[sizeof log + 8];
    snprintf(json, sizeof json, "%s.json", log);
    const char *tail[] = { "--train-iters", "3", "--eval-interval", "0", "--eval-iters", "1",
                           "--log-interval", "1", "--sample-tokens", "0", "--progress-bar", "0",
                           "--log-json", json };
    const char *words[24];
    char num[8][16];
    int nw = choice_words(r, bed, nrest, rest, words, num), n = 0;
    char **argv = calloc((size_t)(8 + nrest + nw + 14 + 1), sizeof *argv);
    if (argv == NULL) {
        close(fd);
        remove(log);
        return HX_ERR(HX_ENOMEM, "--simulate-top");
    }
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) {
        argv[n++] = (char *)head[i];
    }
    for (int i = 2; i < nrest; i++) {
        argv[n++] = rest[i];
    }
    for (int i = 0; i < nw; i++) {
        argv[n++] = (char *)words[i];
    }
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) {
        argv[n++] = (char *)tail[i];
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { /* its output into the log: the step lines are read back from there */
        dup2(fd, 1);
        dup2(fd, 2);
        execv(self, argv);
        _exit(127);
    }
    int status = 1;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    free(argv);
    close(fd);
    /* the last step's "ms" of the JSON log ({"step": 3, ..., "ms": 4.68, ...}) */
    FILE *f = fopen(json, "r");
    char line[1024], last[1024] = "";
    *step = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *ms = strstr(line, "\"ms\": ");
        *step = ms != NULL ? strtod(ms + 6, NULL) * 1e-3 : *step;
    }
    if (f != NULL) {
        fclose(f);
    }
    f = fopen(log, "r"); /* its last line, for a failure's message */
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        snprintf(last, sizeof last, "%s", line);
    }
    if (f != NULL) {
        fclose(f);
    }
    remove(json);
    int ret = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && *step > 0
                  ? HX_OK
                  : HX_ERR(HX_ERUNTIME, "--simulate-top: the simulation of configuration tp %d "
                           "pp %d dp %d failed (exit %d); its log %s ends: %s",
                           r->c.tp, r->c.pp, r->c.dp, WIFEXITED(status) ? WEXITSTATUS(status)
                                                                         : -1, log, last);
    if (ret == HX_OK) {
        remove(log);
    }
    return ret;
}

/* Print the best @p top of the @p fit rows that fit, with their command lines */
static int report(const struct row *rows, int n, int fit, int top, int sim,
                  const struct hx_gpt_config *m, const struct train_args *a,
                  const struct plan_bed *bed, int nrest, char **rest)
{
    char budget[64] = "no memory limit";
    if (bed->memory_bytes > 0) {
        snprintf(budget, sizeof budget, "%.2f GiB each", bed->memory_bytes / 1073741824.0);
    }
    printf("helix plan: %d layers, hidden %d, %d heads, vocabulary %d, %d x %d tokens a step, "
           "on %d ranks of %s (%d a node; device %s), %s\n", m->num_layers, m->hidden_size,
           m->num_heads, m->vocab_size, a->global_batch, m->seq_len, bed->gpus, bed->mc.name,
           bed->per_node, bed->dev.name, budget);
    printf("%d configurations priced, %d fit in memory; the best %d by predicted step time:\n",
           n, fit, fit < top ? fit : top);
    printf("  #      tp pp sched dp mbs   M  s_p s_g s_os shard   recompute  step_ms "
           "tokens/s   MFU | compute     tp    p2p gather   grad  after bubble  cores (ms) | "
           "GiB: states  acts  comm total\n");
    for (int i = 0; i < fit && i < top; i++) {
        const struct plan_config *c = &rows[i].c;
        const struct plan_estimate *e = &rows[i].e;
        char tp[32]; /* Megatron's tp, or AxoNN's grid */
        if (c->gz > 0) {
            snprintf(tp, sizeof tp, "%dx%dx%d", c->tp / c->gy, c->gy, c->gz);
        } else {
            snprintf(tp, sizeof tp, "%d", c->tp);
        }
        printf("%3d %7s %2d %-5s %2d %3d %3d %4d %3d %4d %-7s %-9s %8.2f %8.0f %5.1f%% | %7.2f "
               "%6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f      | %11.3f %5.3f %5.3f %5.3f\n",
               i + 1, tp, c->pp, c->pp > 1 ? (c->fold ? "fold" : "1f1b") : "-", c->dp,
               c->mbs, c->M, c->s_p, c->s_g, c->s_os, shard_name(c, plan_dp_in_node(c->tp, c->pp, bed)),
               recompute_name(c->recompute), e->step * 1e3, e->tokens_per_s, 100 * e->mfu,
               e->compute * 1e3, e->tp * 1e3, e->p2p * 1e3, e->gather * 1e3, e->grad * 1e3,
               e->after * 1e3, e->bubble * 1e3, e->cores * 1e3, e->states / 1073741824.0,
               e->acts / 1073741824.0, e->comm / 1073741824.0, e->total / 1073741824.0);
    }
    if (sim > 0) { /* the simulated ones, ranked again by their simulated step */
        int ns = sim < fit ? sim : fit, order[64];
        for (int i = 0; i < ns; i++) {
            order[i] = i;
        }
        for (int i = 1; i < ns; i++) { /* insertion sort: a handful, ties keep the plan's order */
            for (int j = i; j > 0 && rows[order[j]].sim < rows[order[j - 1]].sim; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        }
        printf("the best %d simulated (helix simulate, analytic models of %s, 3 steps, the "
               "last), ranked again:\n  # plan  predicted_ms simulated_ms  simulated/predicted\n",
               ns, bed->dev.name);
        for (int i = 0; i < ns; i++) {
            const struct row *w = &rows[order[i]];
            printf("%3d %5d %13.2f %12.2f %20.2f\n", i + 1, order[i] + 1, w->e.step * 1e3,
                   w->sim * 1e3, w->sim / w->e.step);
        }
    }
    printf("command lines:\n");
    for (int i = 0; i < fit && i < top; i++) {
        printf("%3d  ", i + 1);
        command(&rows[i], bed, nrest, rest, stdout);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "helix plan: error: writing the plan to stdout failed\n");
        return 1;
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_opts o = { .top = 5, .memory_gib = -1 };
    char **rest = calloc((size_t)argc + 2, sizeof *rest);
    int nrest = 0;
    if (rest == NULL) {
        fprintf(stderr, "helix plan: error: out of memory\n");
        return 1;
    }
    int ret = parse(argc, argv, &o, rest, &nrest);
    if (ret == 0 && o.measure != NULL) { /* under mpirun: this bed's collectives, timed */
        free(rest);
        return plan_measure(argc, argv, o.measure, o.per_node);
    }
    struct plan_bed bed;
    ret = ret == 0 ? load_bed(&o, &bed) : ret;
    struct train_args a;
    struct flag_set s;
    struct fixed x;
    struct hx_gpt_config m;
    int inited = ret == 0;
    if (inited) {
        train_args_init(&a, &s);
        ret = train_args_parse(&a, &s, nrest, rest);
        ret = ret == TRAIN_HELP ? 1 : ret;
        ret = ret == 0 ? fixed_of(&a, &s, &x) : ret;
        if (ret == 0) {
            train_args_model(&a, &m);
            ret = hx_gpt_config_check(&m) == HX_OK ? 0 : 2;
        }
    }
    if (ret == 1) { /* --help */
        ret = 0;
        goto out;
    }
    struct row *rows = NULL;
    int n = 0, fit = 0;
    if (ret == 0 && plan_enumerate(&m, &a, &x, &bed, &rows, &n) != HX_OK) {
        ret = 1;
    }
    double least = INFINITY;
    for (int i = 0; ret == 0 && i < n; i++) { /* those that fit first */
        least = fmin(least, rows[i].e.total);
        if (bed.memory_bytes <= 0 || rows[i].e.total <= bed.memory_bytes) {
            struct row t = rows[fit];
            rows[fit++] = rows[i];
            rows[i] = t;
        }
    }
    if (ret == 0 && n == 0) {
        fprintf(stderr, "helix plan: error: no configuration of this model runs on %d ranks "
                "(%d a node) with the flags given: tp must divide the heads, key/value groups, "
                "FFN, vocabulary and sequence; pp the layers; dp the global batch of %d\n",
                bed.gpus, bed.per_node, a.global_batch);
        ret = 2;
    } else if (ret == 0 && fit == 0) {
        fprintf(stderr, "helix plan: error: none of the %d configurations fits in %.2f GiB a "
                "rank (the smallest needs %.2f GiB); raise --memory-per-gpu, or use more GPUs, "
                "a smaller model, micro-batch or sequence\n", n,
                bed.memory_bytes / 1073741824.0, least / 1073741824.0);
        ret = 2;
    }
    if (ret == 0) {
        qsort(rows, (size_t)fit, sizeof *rows, by_step);
        int sim = o.simulate_top < 64 ? o.simulate_top : 64;
        for (int i = 0; i < sim && i < fit && ret == 0; i++) {
            ret = simulate(&rows[i], &o, &bed, nrest, rest, &rows[i].sim) == HX_OK ? 0 : 1;
        }
        ret = ret == 0 ? report(rows, n, fit, o.top, sim, &m, &a, &bed, nrest, rest) : ret;
    }
    free(rows);
out:
    if (inited) {
        flags_free(&s);
    }
    free(rest);
    return ret;
}
