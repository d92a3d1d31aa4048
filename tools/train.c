/* SPDX-License-Identifier: MIT */
/* tools/train.c: `helix train`.  Everything the user gave is checked before any work: flags,
 * the data (format, size, split), the checkpoint to resume and its agreement with the flags,
 * the save directory and the JSON log.  Then: build the step graph, start StarPU, initialise
 * (seed, --load or --load-llmc), and per step take the next global batch in order, run it,
 * report; validate every --eval-interval, save every --save-interval.  SIGINT/SIGTERM finish
 * the step, save, and exit 0.  A resumed run continues bitwise as if never interrupted:
 * data cursor, step and optimizer state are all in the checkpoint.
 * Under mpirun every rank runs this same program: every rank reads the same data and takes
 * its micro-batches of each global batch, checks the same input (only rank 0 prints), and
 * the ranks agree after every step on whether a signal stops them; rank 0 reports, writes
 * the JSON log and the checkpoint (gathered from every rank's shards). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/progress.h"
#include "helix/pipeline.h"
#include "helix/plan.h"
#include "tools/train.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --save DIR must be a writable directory, or creatable: checked before training, so a
 * long run never ends in "cannot save". */
static int check_save_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "helix: error: --save %s exists and is not a directory; give a "
                    "directory\n", dir);
            return 2;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            fprintf(stderr, "helix: error: --save directory %s is not writable (%s); choose "
                    "another or fix its permissions\n", dir, strerror(errno));
            return 2;
        }
        return 0;
    }
    /* it will be created (mkdir -p): the nearest existing ancestor must be a writable dir */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    for (;;) {
        char *slash = strrchr(parent, '/');
        if (slash == NULL) {
            snprintf(parent, sizeof parent, ".");
        } else if (slash == parent) {
            parent[1] = '\0';
        } else {
            *slash = '\0';
        }
        if (stat(parent, &st) == 0 || strcmp(parent, ".") == 0 || strcmp(parent, "/") == 0) {
            break;
        }
    }
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode) || access(parent, W_OK | X_OK) != 0) {
        fprintf(stderr, "helix: error: --save %s cannot be created: %s is not a writable "
                "directory; create it or choose another\n", dir, parent);
        return 2;
    }
    return 0;
}

/* Value of `name` in "key = value" lines, or NULL. */
static const char *args_lookup(const char *args, const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    for (const char *p = args; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && strncmp(p + len, " = ", 3) == 0) {
            const char *v = p + len + 3, *e = strchr(v, '\n');
            size_t vl = e ? (size_t)(e - v) : strlen(v);
            snprintf(out, n, "%.*s", (int)vl, v);
            return out;
        }
    }
    return NULL;
}

/* The settings stored in a checkpoint fill every flag the user did not give; a model-shape
 * flag the user did give must agree with the checkpoint. */
static int apply_checkpoint_args(struct flag_set *s, const struct hx_checkpoint_info *info,
                                 const char *path)
{
    for (const char *const *name = train_model_flags; *name != NULL; name++) {
        const struct flag *f = flags_find(s, *name);
        char given[64], stored[64];
        flags_format(f, given, sizeof given);
        if (s->origin[f - s->flags] >= FROM_CONFIG &&
            args_lookup(info->args, *name, stored, sizeof stored) != NULL &&
            strcmp(stored, given) != 0) {
            fprintf(stderr, "helix: error: --%s %s contradicts the checkpoint %s, which has "
                    "--%s %s; drop the flag or load another checkpoint\n", *name, given, path,
                    *name, stored);
            return 2;
        }
    }
    return flags_parse_text(s, info->args, FROM_CHECKPOINT, path);
}

struct run {
    struct train_args a;
    struct hx_mesh mesh;              /* this rank's place in the job (serial: 1 x 1 x 1) */
    int mpi;                          /* launched by mpirun: MPI and StarPU-MPI are up */
    struct flag_set flags;
    struct hx_dataset all, train, val;
    struct hx_checkpoint_info info;   /* loaded (with --load), then the one we save */
    hx_gpt_t model;
    struct progress *progress;
    int runtime_up;
    struct hx_plan plan;              /* --strand-plan, when given (have_plan) */
    int have_plan;
};

/* --strand-plan FILE: read before any work (exit 2 on a bad file); it needs --strands */
static int load_strand_plan(struct run *r)
{
    const struct train_args *a = &r->a;
    if (a->strand_plan == NULL) {
        return 0;
    }
    if (!a->strands) {
        fprintf(stderr, "helix: error: --strand-plan %s pairs the ops of two strands; add "
                "--strands\n", a->strand_plan);
        return 2;
    }
    if (hx_plan_read_json(a->strand_plan, &r->plan) != HX_OK) {
        return 2; /* the reader named the file and the problem */
    }
    r->have_plan = 1;
    return 0;
}

/* A signal reaches the ranks at different moments: they stop after the same step, the
 * first one any rank saw, or their collectives would wait for each other forever. */
static int agreed_stop(struct run *r)
{
    int sig = (int)stop_signal;
    if (r->mesh.world_size > 1) {
        hx_comm_host_allreduce(HX_GROUP_WORLD, &sig, 1, HX_I32, HX_MAX);
        stop_signal = sig;
    }
    return sig != 0;
}

static int evaluate(struct run *r, int step, double *val_loss)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(r->model);
    size_t n = (size_t)c->micro_batch_size * c->seq_len;
    int32_t *tok = malloc(n * sizeof(int32_t)), *tgt = malloc(n * sizeof(int32_t));
    double sum = 0;
    int ret = tok && tgt ? HX_OK : HX_ERR(HX_ENOMEM, "evaluation batch");
    r->val.cursor = 0; /* the same batches every time, so validation losses compare */
    for (int i = 0; i < r->a.eval_iters && ret == HX_OK; i++) {
        double l;
        hx_data_next_batch(&r->val, c->micro_batch_size, c->seq_len, tok, tgt);
        ret = hx_gpt_eval(r->model, tok, tgt, &l);
        sum += l;
    }
    free(tok);
    free(tgt);
    if (ret == HX_OK) {
        *val_loss = sum / r->a.eval_iters;
        progress_eval(r->progress, step, *val_loss);
    }
    return ret;
}

static int save(struct run *r, int64_t steps_done)
{
    r->info.model = *hx_gpt_config_of(r->model);
    train_args_optim(&r->a, &r->info.optim);
    r->info.state.step = steps_done;
    r->info.state.train_cursor = r->train.cursor;
    r->info.state.val_cursor = 0;
    r->info.state.seed = (uint64_t)r->a.seed;
    if (flags_write(&r->flags, r->info.args, sizeof r->info.args, train_run_flags) != 0) {
        return HX_ERR(HX_EINVAL, "settings do not fit in the checkpoint header");
    }
    progress_clear(r->progress); /* messages never share a line with the bar */
    int ret = hx_checkpoint_save(r->a.save, r->model, &r->info);
    if (ret == HX_OK) {
        printf("saved checkpoint of step %lld to %s\n", (long long)steps_done, r->a.save);
        fflush(stdout);
    }
    return ret;
}

/* Everything that can be wrong with the input, before any work.  0, or 2 (reported). */
static int prepare(struct run *r, int world_size, int argc, char **argv)
{
    struct train_args *a = &r->a;
    train_args_init(a, &r->flags);
    a->world_size = world_size;
    int ret = train_args_parse(a, &r->flags, argc, argv);
    if (ret != 0) {
        return ret;
    }
    if (a->load != NULL) {
        if (hx_checkpoint_peek(a->load, &r->info) != HX_OK) {
            return 2;
        }
        if ((ret = apply_checkpoint_args(&r->flags, &r->info, a->load)) != 0) {
            return ret;
        }
    }
    if ((ret = train_args_check(a)) != 0) {
        return ret;
    }
    struct hx_gpt_config c;
    train_args_model(a, &c);
    if (a->load_llmc != NULL) {
        struct hx_gpt_config lc;
        if (hx_llmc_peek(a->load_llmc, &lc) != HX_OK) {
            return 2;
        }
        if (lc.vocab_size != c.vocab_size || lc.num_layers != c.num_layers ||
            lc.hidden_size != c.hidden_size || lc.num_heads != c.num_heads ||
            lc.max_seq_len != (c.max_seq_len ? c.max_seq_len : c.seq_len)) {
            fprintf(stderr, "helix: error: --load-llmc %s holds a model with --vocab-size %d "
                    "--num-layers %d --hidden-size %d --num-attention-heads %d "
                    "--max-position-embeddings %d; pass those flags (or --preset gpt2-124m)\n",
                    a->load_llmc, lc.vocab_size, lc.num_layers, lc.hidden_size, lc.num_heads,
                    lc.max_seq_len);
            return 2;
        }
    }
    if (hx_gpt_config_check(&c) != HX_OK) {
        return 2;
    }
    ret = a->data_path ? hx_data_load(&r->all, a->data_path) : hx_data_load_default(&r->all);
    if (ret != HX_OK) {
        return ret == HX_ENOMEM ? 1 : 2;
    }
    if (r->all.vocab_size > a->vocab) {
        fprintf(stderr, "helix: error: %s is tokenized for a vocabulary of %d, but --vocab-size "
                "is %d; use --vocab-size %d\n", r->all.source, r->all.vocab_size, a->vocab,
                r->all.vocab_size);
        return 2;
    }
    if (hx_data_split(&r->all, a->split, a->seq_len, &r->train, &r->val) != HX_OK) {
        return 2;
    }
    if (a->save != NULL && check_save_dir(a->save) != 0) {
        return 2;
    }
    if (a->trace != NULL) { /* created now, so a bad path fails before the run, not after */
        FILE *f = fopen(a->trace, "w");
        if (f == NULL) {
            fprintf(stderr, "helix: error: cannot create --trace %s: %s; create its directory "
                    "or choose another file\n", a->trace, strerror(errno));
            return 2;
        }
        fclose(f);
    }
    return 0;
}

static double flops_per_step(const struct run *r)
{
    /* (6 N' + 12 L C T) per token, N' = parameters without the position embedding */
    const struct hx_gpt_config *c = hx_gpt_config_of(r->model);
    double nprime = (double)hx_gpt_num_params(r->model) -
                    (double)c->max_seq_len * c->hidden_size;
    double tokens = (double)r->a.global_batch * c->seq_len;
    return (6.0 * nprime + 12.0 * c->num_layers * c->hidden_size * c->seq_len) * tokens;
}

static int train(struct run *r)
{
    struct train_args *a = &r->a;
    int64_t first = a->load ? r->info.state.step : 0;
    if (a->load) {
        r->train.cursor = r->info.state.train_cursor;
    }
    size_t ntok = (size_t)a->global_batch * a->seq_len;
    int32_t *tok = malloc(ntok * sizeof(int32_t)), *tgt = malloc(ntok * sizeof(int32_t));
    int ret = tok && tgt ? HX_OK : HX_ERR(HX_ENOMEM, "batch of %zu tokens", ntok);
    int64_t step = first, last_saved = first;
    double val = 0, first_loss = NAN, last_loss = NAN;
    if (first >= a->iters) {
        printf("helix train: the checkpoint is at step %lld, --train-iters is %d: nothing to "
               "train\n", (long long)first, a->iters);
    }
    if (ret == HX_OK && first == 0 && r->val.ntokens > 0) {
        ret = evaluate(r, -1, &val); /* the starting point the later validation losses beat */
    }
    for (; ret == HX_OK && step < a->iters && !agreed_stop(r); step++) {
        struct hx_step_result res;
        hx_data_next_batch(&r->train, a->global_batch, a->seq_len, tok, tgt);
        double t0 = now_ms();
        ret = hx_gpt_set_batch(r->model, tok, tgt);
        hx_trace_set_step((int)step);
        ret = ret == HX_OK ? hx_gpt_step(r->model, (int)step, &res) : ret;
        hx_trace_set_step(-1);
        if (ret != HX_OK) {
            progress_clear(r->progress);
        }
        if (ret == HX_ENONFINITE && a->save != NULL) { /* the error line named the step */
            printf("helix train: stopped; the last good checkpoint in %s is kept\n", a->save);
        }
        if (ret != HX_OK) {
            break;
        }
        progress_step(r->progress, (int)step, res.loss, res.lr, res.grad_norm, now_ms() - t0);
        first_loss = step == first ? res.loss : first_loss;
        last_loss = res.loss;
        if (a->eval_interval > 0 && (step + 1) % a->eval_interval == 0 && r->val.ntokens > 0) {
            ret = evaluate(r, (int)step, &val);
        }
        if (ret == HX_OK && a->save && (step + 1) % a->save_interval == 0) {
            ret = save(r, step + 1);
            last_saved = step + 1;
        }
    }
    if (ret == HX_OK && stop_signal) {
        progress_close(r->progress);
        r->progress = NULL;
        printf("helix train: %s received; stopping after step %lld\n",
               stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)step);
        if (a->save && last_saved != step) {
            ret = save(r, step);
        } else if (!a->save) {
            printf("helix train: no --save directory given, so nothing was saved\n");
        }
    } else if (ret == HX_OK) {
        if (r->val.ntokens > 0 && (a->eval_interval == 0 || step % a->eval_interval != 0)) {
            ret = evaluate(r, (int)step - 1, &val);
        }
        if (ret == HX_OK && a->save && last_saved != step) {
            ret = save(r, step);
        }
        progress_close(r->progress);
        r->progress = NULL;
        if (ret == HX_OK && step > first) {
            printf("done: %lld steps, loss %.4f -> %.4f\n", (long long)(step - first), first_loss,
                   last_loss);
        }
        if (ret == HX_OK && a->sample_tokens > 0 && r->mesh.pp > 1) {
            printf("(no sample: the logits live on the last of %d pipeline stages)\n",
                   r->mesh.pp);
        } else if (ret == HX_OK && a->sample_tokens > 0 && r->mesh.tp > 1) {
            printf("(no sample: the logits are split over %d tensor-parallel ranks)\n",
                   r->mesh.tp);
        } else if (ret == HX_OK && a->sample_tokens > 0) {
            printf("sample (%d tokens, temperature 0.8, top-k 40):\n", a->sample_tokens);
            ret = sample_generate(r->model, a->sample_prompt ? a->sample_prompt : "",
                                  a->sample_tokens, 0.8f, 40, (uint64_t)a->seed, stdout);
        }
    }
    free(tok);
    free(tgt);
    return ret;
}

/* Memory this rank allocates, by what it holds, with AMSP's model-state formula. */
static void print_memory(const struct run *r)
{
    struct hx_gpt_memory mem;
    char mesh[256];
    hx_gpt_memory(r->model, &mem);
    hx_mesh_describe(&r->mesh, mesh, sizeof mesh);
    double mb = 1.0 / (1 << 20), states = mem.params + mem.grads + mem.optim;
    printf("mesh: %s\n"
           "memory of rank 0: params %.2f MB, grads %.2f MB, optimizer %.2f MB (model states "
           "%.2f MB; AMSP formula 4/s_p + 4/s_g + 8/s_os of %.2f MB), activations %.2f MB, "
           "communication buffers %.2f MB, inputs %.2f MB\n",
           mesh, mem.params * mb, mem.grads * mb, mem.optim * mb, states * mb,
           mem.formula_model_state * mb, mem.activations * mb, mem.comm * mb,
           mem.inputs * mb);
}

int cmd_train(int argc, char **argv)
{
    static struct run r;
    int rank = 0, size = 1, ret;
    r.mpi = tools_launched_by_mpirun();
    if (r.mpi) {
        if (hx_mpi_init(&argc, &argv) != HX_OK) {
            return 1;
        }
        rank = hx_mpi_world_rank();
        size = hx_mpi_world_size();
    }
    int muted = tools_mute_stderr(rank);
    ret = prepare(&r, size, argc, argv);
    if (ret == 0) {
        ret = train_args_mesh(&r.a, size, rank, rank != 0, &r.mesh);
    }
    if (ret == 0) {
        ret = load_strand_plan(&r);
    }
    tools_unmute_stderr(muted);
    if (ret != 0) {
        flags_free(&r.flags);
        if (r.mpi) {
            hx_mpi_finalize();
        }
        return ret == TRAIN_HELP ? 0 : ret; /* --help printed: success */
    }
    if (rank != 0 && freopen("/dev/null", "w", stdout) == NULL) { /* rank 0 reports */
        hx_warn("cannot silence stdout of rank %d", rank);
    }
    struct train_args *a = &r.a;
    struct hx_gpt_config c;
    struct hx_optim_config o;
    train_args_model(a, &c);
    train_args_optim(a, &o);
    struct progress_opts po = { .total_steps = a->iters, .log_interval = a->log_interval,
                                .json_path = rank == 0 ? a->log_json : NULL,
                                .force_bar = rank == 0 ? a->progress_bar : 0,
                                .first_step = a->load ? (int)r.info.state.step : 0 };
    struct hx_parallel_config par = { .mesh = &r.mesh, .ddp_bucket_size = a->ddp_bucket_size,
                                      .serialize_grad_reduce = a->no_overlap_grad_reduce,
                                      .pipeline_schedule = train_args_schedule(a),
                                      .strands = a->strands,
                                      .strand_plan = r.have_plan ? &r.plan : NULL,
                                      /* serial-comm with --prefetch-memory: the same
                                       * graph order, the no-overlap reference of it */
                                      .prefetch = a->sched != NULL &&
                                                  (strcmp(a->sched, "hx-prefetch") == 0 ||
                                                   a->prefetch_memory != NULL),
                                      .prefetch_memory = a->prefetch_bytes,
                                      .recompute = a->recompute_mode };
    if (hx_gpt_build_parallel(&r.model, &c, &o, &par) != HX_OK) {
        ret = 2;
        goto out;
    }
    po.flops_per_step = flops_per_step(&r);
    po.tokens_per_step = (double)a->global_batch * a->seq_len;
    if (a->dump_dot != NULL) {
        FILE *f = fopen(a->dump_dot, "w");
        int ok = f != NULL && hx_graph_write_dot(hx_gpt_graph(r.model), f) == HX_OK;
        ok = (f != NULL && fclose(f) == 0) && ok;
        if (!ok) {
            fprintf(stderr, "helix: error: cannot write --dump-dot %s\n", a->dump_dot);
            ret = 2;
            goto out;
        }
    }
    /* measured before StarPU's workers start spinning on the cores */
    po.peak_flops = rank == 0 ? progress_measure_sgemm_peak(a->workers > 0 ? a->workers
                                                                           : hx_ncores())
                              : 0;
    if (progress_open(&r.progress, &po) != HX_OK) {
        ret = 2;
        goto out;
    }
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = a->workers;
    ro.sched = a->sched;
    ro.mpi = r.mpi;
    if ((ret = hx_runtime_init(&ro)) != HX_OK) {
        ret = ret == HX_EINVAL ? 2 : 1;
        goto out;
    }
    r.runtime_up = 1;
    struct hx_comm_opts co = { .timeout = a->comm_timeout };
    if (r.mpi && (ret = hx_comm_open(&r.mesh, &co)) != HX_OK) {
        ret = 1;
        goto out;
    }
    ret = a->trace ? hx_trace_start() : HX_OK;
    ret = ret == HX_OK ? hx_gpt_realize(r.model) : ret;
    if (ret == HX_OK) {
        if (a->load) {
            ret = hx_checkpoint_load(a->load, r.model, &r.info);
        } else {
            hx_gpt_init_params(r.model, (uint64_t)a->seed);
            ret = a->load_llmc ? hx_llmc_import(a->load_llmc, r.model) : HX_OK;
        }
    }
    if (ret == HX_OK) {
        printf("helix train: %zu parameters, %d layers, C=%d, %d heads, T=%d, "
               "batch %d x %d micro-batches, %d tasks/step, %d workers, policy %s, "
               "sgemm peak %.1f GFLOP/s\n"
               "data: %s, %zu training and %zu validation tokens%s%s\n",
               hx_gpt_num_params(r.model), c.num_layers, c.hidden_size, c.num_heads, c.seq_len,
               c.micro_batch_size, c.num_micro_batches, hx_gpt_graph(r.model)->nnodes,
               hx_runtime_workers(), hx_runtime_sched_name(), po.peak_flops / 1e9,
               r.all.source, r.train.ntokens, r.val.ntokens, a->load ? "; resuming from " : "",
               a->load ? a->load : "");
        print_memory(&r);
        if (par.prefetch && hx_gpt_prefetch_depth(r.model) > 0) {
            printf("prefetch: each layer's parameters all-gathered %d layer%s ahead (%d "
                   "slots%s), reduce-scatters behind the next gather\n",
                   hx_gpt_prefetch_depth(r.model), hx_gpt_prefetch_depth(r.model) > 1 ? "s" : "",
                   hx_gpt_prefetch_depth(r.model) + 1,
                   a->prefetch_memory ? ", from --prefetch-memory" : "");
        }
        if (a->strands) {
            int pairs, planned, uncoupled;
            hx_gpt_strand_stats(r.model, &pairs, &planned, &uncoupled);
            printf("strands: alpha and beta, interleaved layer by layer in %d (backward, forward) "
                   "layer pairs%s%s: %d of them planned", pairs,
                   r.have_plan ? "; strand plan " : "", r.have_plan ? a->strand_plan : "",
                   planned);
            if (uncoupled > 0) { /* why a plan reaches so few pairs of a pipeline */
                printf("; %d in blocks whose forward and backward exchange with one stage in "
                       "opposite directions, where a plan's barriers could close a cycle across "
                       "stages, so they run unplanned", uncoupled);
            }
            printf("\n");
        }
        fflush(stdout);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        ret = train(&r);
    }
    if (a->trace != NULL) { /* every rank's tasks, merged by rank 0 into one file */
        int tret = hx_trace_write(a->trace);
        if (tret == HX_OK && rank == 0) {
            printf("trace: %ld tasks written to %s (rank 0's, %d rank%s merged; open it in "
                   "ui.perfetto.dev, or run helix trace summarize %s)\n", hx_trace_count(),
                   a->trace, hx_mpi_world_size(), hx_mpi_world_size() > 1 ? "s" : "", a->trace);
        }
        ret = ret == HX_OK ? tret : ret;
        hx_trace_stop();
    }
    ret = ret == HX_OK ? 0 : 1;
out:
    progress_close(r.progress);
    if (hx_comm_is_open()) {
        hx_comm_close();
    }
    hx_gpt_destroy(r.model);
    if (r.runtime_up) {
        hx_runtime_shutdown();
    }
    if (r.mpi) {
        hx_mpi_finalize();
    }
    if (r.have_plan) {
        hx_plan_free(&r.plan);
    }
    hx_data_free(&r.all);
    hx_data_free(&r.train);
    hx_data_free(&r.val);
    flags_free(&r.flags);
    return ret;
}
