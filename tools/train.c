/* SPDX-License-Identifier: MIT */
/* tools/train.c: `helix train`.  Everything the user gave is checked before any work
 * (tools/train_input.c: flags, the data, the checkpoint to resume and its agreement with the
 * flags, the save directory, the mesh; under mpirun the ranks agree on all of it).  Then:
 * build the step graph, check that the checkpoint fits it, start StarPU, initialise
 * (seed, --load or --load-llmc), and per step take the next global batch in order, run it,
 * report; validate every --eval-interval, save every --save-interval.
 * SIGINT/SIGTERM/SIGUSR1 finish the step, save, and exit 0.  A resumed run continues bitwise
 * as if never interrupted: data cursor, step and optimizer state are all in the checkpoint.
 * Under mpirun every rank runs this same program: every rank reads the same data and takes
 * its micro-batches of each global batch, checks the same input (only rank 0 prints), and
 * the ranks agree after every step on whether a signal stops them; rank 0 reports, writes
 * the JSON log and the checkpoint (gathered from every rank's shards).  SIGTERM and SIGINT
 * under mpirun come with its kill a second later: the ranks leave the last save to its
 * writer process and exit together (finish_saves, the end of cmd_train); SIGUSR1 waits.
 * Test: tests/cli/resume.sh, tests/cli/save_dir.sh, tests/mpi/sigterm.sh. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helix/plan.h"
#include "tools/progress.h"
#include "tools/train.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM";
}

struct run {
    struct train_input in;            /* the settings, data, checkpoint info and plan */
    struct hx_mesh mesh;              /* this rank's place in the job (serial: 1 x 1 x 1) */
    int mpi;                          /* launched by mpirun: MPI and StarPU-MPI are up */
    int quiet;                        /* not rank 0: says nothing on stdout */
    hx_gpt_t model;
    struct progress *progress;
    int runtime_up;
    int64_t writing;                  /* step of the last save started and not seen on disk */
    long writer;                      /* rank 0: its writer's pid, while it is still running */
    int stop;                         /* the stop signal the ranks agreed on, or 0 */
    int output_failed;                /* stdout or --log-json lost a write (every rank) */
    int log_failed;                   /* --log-json lost a write (every rank) */
    char output_error[512];           /* which and why (on the rank that writes) */
};

/* Under mpirun, a SIGTERM or SIGINT to mpirun also ends its forwarding of rank 0's stdout
 * (a pty): a step line written as the kill begins fails with EIO, sometimes just before the
 * rank's own signal arrives (tests/mpi/sigterm.sh, seen once in ~10 runs).  So a rank whose
 * stdout fails with EIO under mpirun waits up to HANGUP_WAIT_MS for that signal before the
 * loss counts as a failure of the run. */
#define HANGUP_WAIT_MS 2000

static void wait_for_launcher_signal(const struct run *r)
{
    if (!r->mpi || stop_signal != 0 || tools_output_error(stdout) != EIO) {
        return;
    }
    for (int ms = 0; ms < HANGUP_WAIT_MS && stop_signal == 0; ms += 10) {
        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
    }
}

/* A signal reaches the ranks at different moments: they stop after the same step, the
 * first one any rank saw, or their collectives would wait for each other forever. */
static int agreed_stop(struct run *r)
{
    /* lost output (stdout, --log-json: rank 0's) stops every rank the same way */
    int lost = progress_failed(r->progress, r->output_error, sizeof r->output_error) != 0;
    if (lost) {
        wait_for_launcher_signal(r);
    }
    int v[3] = { (int)stop_signal, lost, progress_log_failed(r->progress) };
    if (r->mesh.world_size > 1) { /* (a no-op in a simulation: runtime/comm.c) */
        hx_comm_host_allreduce(HX_GROUP_WORLD, v, 3, HX_I32, HX_MAX);
    }
    r->output_failed = v[1];
    r->log_failed = v[2];
    r->stop = v[0]; /* (not into stop_signal: one arriving meanwhile would be lost) */
    return v[0] != 0 || v[1] != 0;
}

/* Validation needs validation tokens, and losses: a simulation computes none. */
static int validating(const struct run *r)
{
    return r->in.val.ntokens > 0 && !hx_runtime_simulated();
}

static int evaluate(struct run *r, int step, double *val_loss)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(r->model);
    size_t n = (size_t)c->micro_batch_size * c->seq_len;
    int32_t *tok = malloc(n * sizeof(int32_t)), *tgt = malloc(n * sizeof(int32_t));
    double sum = 0;
    int ret = tok && tgt ? HX_OK : HX_ERR(HX_ENOMEM, "evaluation batch");
    r->in.val.cursor = 0; /* the same batches every time, so validation losses compare */
    for (int i = 0; i < r->in.a.eval_iters && ret == HX_OK; i++) {
        double l;
        hx_data_next_batch(&r->in.val, c->micro_batch_size, c->seq_len, tok, tgt);
        ret = hx_gpt_eval(r->model, tok, tgt, &l);
        sum += l;
    }
    free(tok);
    free(tgt);
    if (ret == HX_OK) {
        *val_loss = sum / r->in.a.eval_iters;
        progress_eval(r->progress, step, *val_loss);
    }
    return ret;
}

/* Wait for the checkpoint writers (helix/checkpoint.h), or with @p interrupt only until a
 * stop signal: that save then goes on in its writer process (finish_saves). */
static int wait_saved(struct run *r, const volatile sig_atomic_t *interrupt)
{
    long pending = 0;
    int ret = hx_checkpoint_save_wait(r->model, interrupt, &pending);
    if (ret == HX_OK && pending == 0 && r->writing >= 0) {
        printf("saved checkpoint of step %lld to %s\n", (long long)r->writing, r->in.a.save);
        tools_output_error(stdout); /* (the errno of a failure is kept for the report) */
        r->writing = -1;
    }
    r->writer = pending;
    return ret;
}

/* The end of a run with --save.  Under mpirun, a SIGTERM or SIGINT is followed by SIGKILL a
 * second later (odls_base_sigkill_timeout): the last save is left to its writer, a process
 * of its own session that the kill does not reach, and every rank exits 0 in time.
 * Otherwise (SIGUSR1, no signal, no mpirun) every save is waited for; after a failure a
 * save still in flight completes by itself. */
static int finish_saves(struct run *r, int ret)
{
    if (r->in.a.save == NULL || ret != HX_OK) { /* (a failed rank may be alone here: no wait) */
        return ret;
    }
    if (r->mpi && (r->stop == SIGTERM || r->stop == SIGINT)) {
        if (r->writer != 0) {
            printf("helix train: the checkpoint of step %lld is being written to %s by process "
                   "%ld, which outlives this job and mpirun's kill; %s/latest names it once it "
                   "is complete\n", (long long)r->writing, r->in.a.save, r->writer, r->in.a.save);
            tools_output_error(stdout);
        }
        return ret;
    }
    return wait_saved(r, NULL);
}

static int save(struct run *r, int64_t steps_done)
{
    r->in.info.model = *hx_gpt_config_of(r->model);
    train_args_optim(&r->in.a, &r->in.info.optim);
    r->in.info.state.step = steps_done;
    r->in.info.state.train_cursor = r->in.train.cursor;
    r->in.info.state.val_cursor = 0;
    r->in.info.state.seed = (uint64_t)r->in.a.seed;
    if (flags_write(&r->in.flags, r->in.info.args, sizeof r->in.info.args, train_run_flags) != 0) {
        return HX_ERR(HX_EINVAL, "settings do not fit in the checkpoint header");
    }
    progress_clear(r->progress); /* messages never share a line with the bar */
    int ret = hx_checkpoint_save_start(r->in.a.save, r->model, &r->in.info);
    r->writing = ret == HX_OK ? steps_done : r->writing;
    return ret == HX_OK ? wait_saved(r, &stop_signal) : ret;
}

static double flops_per_step(const struct run *r)
{
    /* (6 N' + 12 L C T) per token, N' = parameters without the position embedding */
    const struct hx_gpt_config *c = hx_gpt_config_of(r->model);
    double nprime = (double)hx_gpt_num_params(r->model) -
                    (double)c->max_seq_len * c->hidden_size;
    double tokens = (double)r->in.a.global_batch * c->seq_len;
    return (6.0 * nprime + 12.0 * c->num_layers * c->hidden_size * c->seq_len) * tokens;
}

static int train(struct run *r)
{
    struct train_args *a = &r->in.a;
    int64_t first = a->load ? r->in.info.state.step : 0;
    if (a->load) {
        r->in.train.cursor = r->in.info.state.train_cursor;
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
    if (ret == HX_OK && first == 0 && validating(r)) {
        ret = evaluate(r, -1, &val); /* the starting point the later validation losses beat */
    }
    for (; ret == HX_OK && step < a->iters && !agreed_stop(r); step++) {
        struct hx_step_result res;
        hx_data_next_batch(&r->in.train, a->global_batch, a->seq_len, tok, tgt);
        double t0 = hx_clock_ms();
        ret = hx_gpt_set_batch(r->model, tok, tgt);
        hx_trace_set_step((int)step);
        ret = ret == HX_OK ? hx_gpt_step(r->model, (int)step, &res) : ret;
        hx_trace_set_step(-1);
        if (ret != HX_OK) {
            progress_clear(r->progress);
        }
        char latest[256];
        if (ret == HX_ENONFINITE && a->save != NULL) { /* the error line named the step */
            if (hx_checkpoint_latest(a->save, latest, sizeof latest) > 0) {
                printf("helix train: stopped; the last good checkpoint, %s/%s, is kept\n",
                       a->save, latest);
            } else {
                printf("helix train: stopped; no checkpoint was saved in %s\n", a->save);
            }
        }
        if (ret != HX_OK) {
            break;
        }
        progress_step(r->progress, (int)step, res.loss, res.lr, res.grad_norm, hx_clock_ms() - t0);
        first_loss = step == first ? res.loss : first_loss;
        last_loss = res.loss;
        if (a->eval_interval > 0 && (step + 1) % a->eval_interval == 0 && validating(r)) {
            ret = evaluate(r, (int)step, &val);
        }
        if (ret == HX_OK && a->save && (step + 1) % a->save_interval == 0) {
            ret = save(r, step + 1);
            last_saved = step + 1;
        }
    }
    if (ret == HX_OK && r->stop && r->output_failed && !r->log_failed) {
        /* stdout lost to the stop itself (wait_for_launcher_signal): the stop goes on as
         * asked, and says so on stderr, which mpirun still forwards */
        if (tools_output_error(stdout) != 0) { /* (the rank that lost it: rank 0) */
            fprintf(stderr, "helix train: %s as %s arrived (mpirun ending its output "
                    "forwarding); the rest goes to standard error\n", r->output_error,
                    signal_name(r->stop));
            tools_stdout_to_stderr();
        }
        r->output_failed = 0;
    }
    if (ret == HX_OK && r->output_failed) { /* the steps are good, what they said is lost */
        int saved = a->save != NULL && last_saved != step ? save(r, step) : HX_OK;
        progress_close(r->progress, NULL, 0);
        r->progress = NULL;
        if (saved == HX_OK && r->output_error[0] != '\0') { /* (a failed save said why) */
            char where[600];
            if (a->save == NULL) {
                snprintf(where, sizeof where, "no --save directory was given");
            } else if (step > first) {
                snprintf(where, sizeof where, "its checkpoint is saved in %s (resume with "
                         "--load)", flags_esc(a->save));
            } else {
                snprintf(where, sizeof where, "nothing was saved");
            }
            fprintf(stderr, "helix: error: %s; stopped %s step %lld, %s\n", r->output_error,
                    step > first ? "after" : "before", (long long)(step > first ? step : step + 1),
                    where);
        }
        ret = saved != HX_OK ? saved : HX_EIO;
    }
    if (ret == HX_OK && r->stop) { /* (a signal after the last agreement: too late) */
        progress_close(r->progress, NULL, 0);
        r->progress = NULL;
        printf("helix train: %s received; stopping after step %lld\n",
               signal_name(r->stop), (long long)step);
        if (a->save && last_saved != step) {
            ret = save(r, step);
        } else if (!a->save) {
            printf("helix train: no --save directory given, so nothing was saved\n");
        }
    } else if (ret == HX_OK) {
        if (validating(r) && (a->eval_interval == 0 || step % a->eval_interval != 0)) {
            ret = evaluate(r, (int)step - 1, &val);
        }
        if (ret == HX_OK && a->save && last_saved != step) {
            ret = save(r, step);
        }
        char lost[512];
        if (progress_close(r->progress, lost, sizeof lost) != 0 && ret == HX_OK) {
            fprintf(stderr, "helix: error: %s at the end of the run, which itself completed%s%s\n",
                    lost, a->save ? "; its checkpoint is saved in " : "",
                    a->save ? flags_esc(a->save) : "");
            ret = HX_EIO;
        }
        r->progress = NULL;
        if (ret == HX_OK && step > first && hx_runtime_simulated()) {
            if (!r->quiet) {
                printf("done: %lld simulated steps\n", (long long)(step - first));
            }
        } else if (ret == HX_OK && step > first) {
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
    ret = finish_saves(r, ret);
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

/* Compute tasks may run on an OpenCL or CUDA worker.  MFU is then not against the CPU's sgemm
 * peak (on an H100, --compute-on cuda showed "MFU 234%"), and helix does not know the device's
 * peak: no MFU is printed. */
static int computes_on_device(const struct train_args *a)
{
    if (a->place == HX_PLACE_CPU) {
        return 0;
    }
    const char *nopencl = getenv("STARPU_NOPENCL"), *ncuda = getenv("STARPU_NCUDA");
    return a->place != HX_PLACE_ANY || a->opencl > 0 || a->cuda > 0 ||
           (nopencl != NULL && atoi(nopencl) > 0) || (ncuda != NULL && atoi(ncuda) > 0);
}

/* What rank 0 says before the first step: the model, data, devices, mesh and memory, and
 * the prefetch and strand arrangements. */
static void print_header(const struct run *r, const struct hx_gpt_config *c,
                         const struct progress_opts *po, const struct hx_parallel_config *par)
{
    const struct train_args *a = &r->in.a;
    char peak[64];
    if (po->peak_flops > 0) {
        snprintf(peak, sizeof peak, "%.1f GFLOP/s", po->peak_flops / 1e9);
    } else {
        snprintf(peak, sizeof peak, "not measured (%s: no MFU)",
                 hx_runtime_simulated() ? "simulated" : "compute on a device");
    }
    printf("helix train: %zu parameters, %d layers, C=%d, %d heads, T=%d, "
           "batch %d x %d micro-batches, %d tasks/step, %d workers, policy %s, "
           "sgemm peak %s\n"
           "data: %s, %zu training and %zu validation tokens%s%s\n",
           hx_gpt_num_params(r->model), c->num_layers, c->hidden_size, c->num_heads, c->seq_len,
           c->micro_batch_size, c->num_micro_batches, hx_gpt_graph(r->model)->nnodes,
           hx_runtime_workers(), hx_runtime_sched_name(), peak,
           r->in.all.source, r->in.train.ntokens, r->in.val.ntokens,
           a->load ? "; resuming from " : "", a->load ? a->load : "");
    const struct hx_gpt_config *mc = hx_gpt_config_of(r->model);
    if (!hx_gpt_is_gpt2(mc)) { /* what the Llama settings made of the layers */
        printf("model: %s, %s MLP of %d, %s, %d key/value heads for %d query heads, %s "
               "output layer, %s\n",
               mc->normalization == HX_NORM_RMSNORM ? "RMSNorm" : "LayerNorm",
               mc->swiglu ? "SwiGLU" : "GELU",
               mc->ffn_hidden_size ? mc->ffn_hidden_size : 4 * mc->hidden_size,
               mc->position_embedding == HX_POS_ROPE ? "rotary positions" : "learned positions",
               mc->num_query_groups ? mc->num_query_groups : mc->num_heads, mc->num_heads,
               mc->untie_embeddings ? "untied" : "tied",
               mc->disable_bias ? "no biases" : "biases");
    }
    if (hx_runtime_opencl_workers() + hx_runtime_cuda_workers() > 0) {
        printf("devices: %d OpenCL and %d CUDA workers beside the CPU ones; compute tasks "
               "on %s\n", hx_runtime_opencl_workers(), hx_runtime_cuda_workers(),
               a->compute_on != NULL && strcmp(a->compute_on, "any") != 0
                   ? a->compute_on : "the device or CPU the policy picks");
    }
    if (r->in.schedule_note[0] != '\0') { /* Megatron's rule: the flags define the schedule */
        printf("learning-rate schedule changed from the checkpoint's: %s; from step %lld on "
               "the new one applies\n", r->in.schedule_note, (long long)r->in.info.state.step + 1);
    }
    print_memory(r);
    if ((par->prefetch || (par->sched_needs & HX_SCHED_NEEDS_PREFETCH)) &&
        hx_gpt_prefetch_depth(r->model) > 0) {
        printf("prefetch: each layer's parameters all-gathered %d layer%s ahead (%d "
               "slots%s), reduce-scatters behind the next gather\n",
               hx_gpt_prefetch_depth(r->model), hx_gpt_prefetch_depth(r->model) > 1 ? "s" : "",
               hx_gpt_prefetch_depth(r->model) + 1,
               a->prefetch_memory ? ", from --prefetch-memory" : "");
    }
    if (a->no_overlap_bits != 0) { /* AxoNN's optimisations off: the edges that do it */
        hx_graph_t g = hx_gpt_graph(r->model);
        int gathers = 0;
        for (int i = 0; i < g->nnodes; i++) {
            gathers += g->nodes[i].op == HX_OP_ALLGATHER &&
                       g->nodes[i].args.coll.channel == HX_GROUP_SHARD_P;
        }
        printf("--no-overlap %s: %d control edges hold every task after a blocking "
               "collective; %d parameter all-gathers\n", a->no_overlap, g->nctrl, gathers);
    }
    if (a->strands) {
        int pairs, planned, uncoupled;
        hx_gpt_strand_stats(r->model, &pairs, &planned, &uncoupled);
        printf("strands: alpha and beta, interleaved layer by layer in %d (backward, forward) "
               "layer pairs%s%s: %d of them planned", pairs,
               r->in.have_plan ? "; strand plan " : "", r->in.have_plan ? a->strand_plan : "",
               planned);
        if (uncoupled > 0) { /* why a plan reaches so few pairs of a pipeline */
            printf("; %d in blocks whose forward and backward exchange with one stage in "
                   "opposite directions, where a plan's barriers could close a cycle across "
                   "stages, so they run unplanned", uncoupled);
        }
        printf("\n");
    }
}

/* Where this rank's threads spent the run (helix/threads.h), on its stderr (the first 8
 * ranks, and any starved one after them), and a note when its communication threads waited
 * for a core longer than they ran.  Only with more than one rank: the communication threads
 * are what it is about.  Each rank says its own, with no collective: a run that ends on an
 * error or a signal must not wait on a peer for it. */
static void print_threads(void)
{
    int rank = hx_mpi_world_rank();
    struct hx_thread_usage u;
    hx_threads_usage(&u); /* (zero where the kernel does not say: the line says so) */
    int starved = hx_threads_starved(&u);
    if (rank >= 8 && starved < 0) {
        return;
    }
    char line[512];
    hx_threads_format(&u, rank, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    if (starved >= 0) {
        fprintf(stderr, "note: on rank %d, %s waited for a core %.1f s, longer than on one "
                "(%.1f s): the rank has more busy threads than cores, so its transfers start "
                "late; leave them a core (fewer --workers or ranks per node)\n", rank,
                hx_threads_kind_name((enum hx_thread_kind)starved), u.wait_s[starved],
                u.run_s[starved]);
    }
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
    ret = train_input_read(&r.in, r.mpi, rank, size, argc, argv, &r.mesh);
    if (ret != 0) {
        train_input_free(&r.in);
        if (r.mpi) {
            hx_mpi_finalize();
        }
        return ret == TRAIN_HELP ? 0 : ret; /* --help printed: success */
    }
    /* rank 0 reports; simulated ranks share this process's stdout, so they stay quiet by
     * not printing (r.quiet) instead of closing it */
    r.quiet = rank != 0;
    if (r.quiet && !hx_runtime_simulated() && freopen("/dev/null", "w", stdout) == NULL) {
        hx_warn("cannot silence stdout of rank %d", rank);
    }
    struct train_args *a = &r.in.a;
    struct hx_gpt_config c;
    struct hx_optim_config o;
    train_args_model(a, &c);
    train_args_optim(a, &o);
    struct progress_opts po = { .total_steps = a->iters, .log_interval = a->log_interval,
                                .json_path = rank == 0 ? a->log_json : NULL,
                                .force_bar = rank == 0 ? a->progress_bar : 0,
                                .first_step = a->load ? (int)r.in.info.state.step : 0 };
    struct hx_parallel_config par = { .mesh = &r.mesh, .ddp_bucket_size = a->ddp_bucket_size,
                                      .serialize_grad_reduce = a->no_overlap_grad_reduce,
                                      .pipeline_schedule = train_args_schedule(a),
                                      .strands = a->strands,
                                      .tp_comm_overlap = a->tp_comm_overlap,
                                      .strand_plan = r.in.have_plan ? &r.in.plan : NULL,
                                      /* what the policy (resolved by train_args_check)
                                       * needs from the graph; serial-comm with
                                       * --prefetch-memory: hx-prefetch's order, the
                                       * no-overlap reference of it */
                                      .sched_needs = hx_sched_needs(a->sched),
                                      .prefetch = a->prefetch_memory != NULL,
                                      .prefetch_memory = a->prefetch_bytes,
                                      .recompute = a->recompute_mode,
                                      .no_overlap = a->no_overlap_bits };
    if (hx_gpt_build_parallel(&r.model, &c, &o, &par) != HX_OK) {
        ret = 2;
        goto out;
    }
    if (a->load != NULL) { /* the model takes the checkpoint: checked before the runtime starts */
        int muted = tools_mute_stderr(rank);
        ret = hx_checkpoint_check_model(a->load, &r.in.info, r.model) != HX_OK ? 2 : 0;
        tools_unmute_stderr(muted);
        if (ret != 0) {
            goto out;
        }
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
    /* measured before StarPU's workers start spinning on the cores; a simulation has no core
     * of its own to measure (its machine's peak is the performance models') */
    po.peak_flops = rank == 0 && !hx_runtime_simulated() && !computes_on_device(a)
                        ? progress_measure_sgemm_peak(a->workers > 0 ? a->workers : hx_ncores())
                        : 0;
    if (!r.quiet && progress_open(&r.progress, &po) != HX_OK) {
        ret = 2;
        goto out;
    }
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = a->workers;
    ro.opencl = a->opencl;
    ro.cuda = a->cuda;
    ro.compute_on = (enum hx_place)a->place;
    ro.sched = a->sched;
    ro.mpi = r.mpi;
    ro.mpi_driver = (enum hx_mpi_driver)a->mpi_driver;
    ro.nccl = r.mpi && a->backend == HX_COMM_NCCL; /* (one process alone opens no channel) */
    /* the task watchdog takes --comm-timeout too, so a policy that drops a task ends a run
     * of one process, which opens no channel, as the engine's watchdog ends a lost rank's */
    ro.stall_timeout = a->comm_timeout > 0 ? a->comm_timeout : -1;
    if ((ret = hx_runtime_init(&ro)) != HX_OK) {
        ret = ret == HX_EINVAL ? 2 : 1;
        goto out;
    }
    r.runtime_up = 1;
    struct hx_comm_opts co = { .timeout = a->comm_timeout,
                               .backend = (enum hx_comm_backend)a->backend };
    if (r.mpi && (ret = hx_comm_open(&r.mesh, &co)) != HX_OK) {
        ret = 1;
        goto out;
    }
    /* (after the channels: they choose the collectives' codelets) */
    if (hx_graph_check_sim_models(hx_gpt_graph(r.model)) != HX_OK) { /* (said) */
        ret = 2;
        goto out;
    }
    ret = a->trace ? hx_trace_start() : HX_OK;
    ret = ret == HX_OK ? hx_gpt_realize(r.model) : ret;
    if (ret == HX_OK) {
        if (a->load) {
            ret = hx_checkpoint_load(a->load, r.model, &r.in.info);
        } else {
            hx_gpt_init_params(r.model, (uint64_t)a->seed);
            ret = a->load_llmc ? hx_llmc_import(a->load_llmc, r.model) : HX_OK;
        }
    }
    if (ret == HX_OK) {
        signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error the run stops on cleanly */
        if (!r.quiet) {
            print_header(&r, &c, &po, &par);
        }
        tools_output_error(stdout); /* (a failed write stops train() before step 1) */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL); /* the stop that mpirun forwards without killing */
        r.writing = -1;
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
    if (ret == HX_OK && r.mpi && hx_mpi_world_size() > 1 && !hx_runtime_simulated()) {
        print_threads();
    }
    ret = ret == HX_OK ? 0 : 1;
out:
    progress_close(r.progress, NULL, 0); /* a failure was reported */
    if (r.mpi && (r.stop == SIGTERM || r.stop == SIGINT)) {
        /* mpirun's SIGKILL follows within a second, and the step took part of it: no
         * teardown (StarPU's shutdown, the frees: hundreds of ms under ASan), nor
         * MPI_Finalize, which would wait for the kill.  Open MPI 4.1's mpirun also ends the
         * grace period as soon as one rank exits (the SIGCHLD cuts its sleep short) and
         * SIGKILLs the others, so every rank meets here and then exits at once, its
         * checkpoint with its writer, which holds its own copy of the state. */
        hx_mpi_max_int(0);
        fflush(NULL);
        _exit(ret);
    }
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
    train_input_free(&r.in);
    return ret;
}
