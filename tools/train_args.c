/* SPDX-License-Identifier: MIT */
/* tools/train_args.c: the flags of `helix train`, its presets, and the order in which sources
 * are applied.  Presets name whole model shapes (tiny, small, gpt2-124m); a config file holds
 * `key = value` lines with the flag names; the command line wins over both.  Everything a flag
 * can check alone is checked here; cross-checks (data, checkpoint) come in train.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/comm.h"
#include "helix/pipeline.h"
#include "helix/runtime.h"
#include "tools/train.h"

const char *const train_model_flags[] = { "num-layers", "hidden-size", "num-attention-heads",
                                          "max-position-embeddings", "vocab-size", "model",
                                          "normalization", "swiglu", "ffn-hidden-size",
                                          "position-embedding-type", "rotary-base",
                                          "num-query-groups", "group-query-attention",
                                          "untie-embeddings-and-output-weights",
                                          "disable-bias-linear", "norm-epsilon", NULL };
const char *const train_run_flags[] = { "load", "load-llmc", "save", "config", "preset",
                                        "log-json", "trace", "dump-dot", "workers", "sched",
                                        "sched-plugin",
                                        "opencl", "cuda", "compute-on", "comm-backend",
                                        "mpi-driver", "progress-bar", "train-iters",
                                        /* a checkpoint resumes on any mesh */
                                        "tensor-model-parallel-size", "tp-grid",
                                        "pipeline-model-parallel-size", "data-parallel-size",
                                        "sequence-parallel", "tp-comm-overlap", "ranks-per-node",
                                        "shard-params",
                                        "shard-grads", "shard-optim", "zero-stage", "mics",
                                        "ddp-bucket-size", "overlap-grad-reduce",
                                        "no-overlap-grad-reduce", "comm-timeout",
                                        "prefetch-memory", "recompute-activations",
                                        "no-overlap", NULL };
/* a rank's own machine: its workers and devices (numerics agree within the parity rule) */
const char *const train_rank_flags[] = { "workers", "opencl", "cuda", "compute-on",
                                         "progress-bar", "config", "preset", NULL };

static int parse_no_overlap(const char *v, unsigned *bits);

static struct flag table[96];
static int ntable;

struct preset {
    const char *name, *text;
};

/* Whole configurations; values a user passes still win. */
static const struct preset presets[] = {
    { "tiny", "num-layers = 2\nhidden-size = 64\nnum-attention-heads = 4\nseq-length = 64\n"
              "micro-batch-size = 8\ntrain-iters = 300\nlr = 3e-3\n" },
    { "small", "num-layers = 4\nhidden-size = 128\nnum-attention-heads = 4\nseq-length = 128\n"
               "micro-batch-size = 8\ntrain-iters = 600\nlr = 2e-3\n" },
    { "gpt2-124m", "num-layers = 12\nhidden-size = 768\nnum-attention-heads = 12\n"
                   "seq-length = 1024\nmax-position-embeddings = 1024\nvocab-size = 50257\n"
                   "micro-batch-size = 4\nlr = 6e-4\nmin-lr = 6e-5\nlr-warmup-iters = 700\n"
                   "train-iters = 5000\n" },
    /* the Llama family (--model llama): tiny for tests, then two real shapes, Llama-3's
     * vocabulary and RoPE base (their data: llm.c's uint32 shards, --data-path) */
    { "llama-tiny", "model = llama\nnum-layers = 2\nhidden-size = 64\n"
                    "num-attention-heads = 4\nnum-query-groups = 2\nffn-hidden-size = 176\n"
                    "seq-length = 64\nmicro-batch-size = 8\ntrain-iters = 300\nlr = 3e-3\n" },
    { "llama-3.2-1b", "model = llama\nnum-layers = 16\nhidden-size = 2048\n"
                      "num-attention-heads = 32\nnum-query-groups = 8\n"
                      "ffn-hidden-size = 8192\nvocab-size = 128256\nrotary-base = 500000\n"
                      "seq-length = 2048\nmicro-batch-size = 1\nlr = 3e-4\nmin-lr = 3e-5\n"
                      "lr-warmup-iters = 700\ntrain-iters = 5000\n" },
    { "llama-3.1-8b", "model = llama\nnum-layers = 32\nhidden-size = 4096\n"
                      "num-attention-heads = 32\nnum-query-groups = 8\n"
                      "ffn-hidden-size = 14336\nvocab-size = 128256\nrotary-base = 500000\n"
                      "seq-length = 2048\nmicro-batch-size = 1\nlr = 3e-4\nmin-lr = 3e-5\n"
                      "lr-warmup-iters = 700\ntrain-iters = 5000\n" },
};

#define F(n, t, d, lo, hi, h) table[ntable++] = (struct flag){ n, t, d, lo, hi, h }

void train_args_init(struct train_args *a, struct flag_set *s)
{
    memset(a, 0, sizeof *a);
    /* the "small" preset: ~0.84M parameters, ~1 minute for 600 steps on 2 cores */
    a->layers = 4, a->hidden = 128, a->heads = 4, a->seq_len = 128, a->vocab = 256;
    a->micro_batch = 8, a->iters = 600, a->warmup = 30;
    a->lr = 2e-3f, a->min_lr = 1e-4f, a->weight_decay = 0.1f, a->clip = 1.0f;
    a->beta1 = 0.9f, a->beta2 = 0.95f, a->adam_eps = 1e-8f, a->decay_style = "cosine";
    a->seed = 1234, a->split = "949,50,1", a->eval_interval = 100, a->eval_iters = 10;
    a->save_interval = 100, a->log_interval = 10, a->progress_bar = -1;
    a->sample_tokens = 200, a->sample_prompt = "The";
    a->tp = 1, a->pp = 1, a->comm_timeout = 300;
    ntable = 0;
    /* model */
    F("num-layers", FLAG_INT, &a->layers, 1, 1024, "transformer layers");
    F("hidden-size", FLAG_INT, &a->hidden, 1, 65536, "hidden size C");
    F("num-attention-heads", FLAG_INT, &a->heads, 1, 1024, "attention heads (must divide C)");
    F("seq-length", FLAG_INT, &a->seq_len, 1, 65536, "tokens per sequence T");
    F("max-position-embeddings", FLAG_INT, &a->max_pos, 0, 65536,
      "rows of the position embedding (0: --seq-length)");
    F("vocab-size", FLAG_INT, &a->vocab, 2, 1 << 20, "vocabulary (bytes: 256; GPT-2: 50257)");
    llama_flags_add(&a->llama, table, &ntable);
    /* batch and optimizer */
    F("micro-batch-size", FLAG_INT, &a->micro_batch, 1, 65536, "sequences per micro-batch");
    F("global-batch-size", FLAG_INT, &a->global_batch, 0, 1 << 20,
      "sequences per step, a multiple of the micro-batch (0: one per data-parallel rank)");
    F("train-iters", FLAG_INT, &a->iters, 1, 1 << 30, "training steps");
    F("lr", FLAG_FLOAT, &a->lr, 0, 10, "peak learning rate");
    F("min-lr", FLAG_FLOAT, &a->min_lr, 0, 10, "learning rate at the end of the decay");
    F("lr-warmup-iters", FLAG_INT, &a->warmup, 0, 1 << 30, "linear warmup steps");
    F("lr-decay-iters", FLAG_INT, &a->decay_iters, 0, 1 << 30,
      "step where the decay reaches --min-lr (0: --train-iters; a checkpoint keeps it)");
    F("lr-decay-style", FLAG_STRING, &a->decay_style, 0, 0, "cosine, linear or constant");
    F("weight-decay", FLAG_FLOAT, &a->weight_decay, 0, 10, "AdamW decoupled weight decay");
    F("clip-grad", FLAG_FLOAT, &a->clip, 0, 1e6, "global gradient-norm clip (0: off)");
    F("adam-beta1", FLAG_FLOAT, &a->beta1, 0, 0.999999, "Adam beta1");
    F("adam-beta2", FLAG_FLOAT, &a->beta2, 0, 0.999999, "Adam beta2");
    F("adam-eps", FLAG_FLOAT, &a->adam_eps, 1e-30, 1, "Adam epsilon");
    F("seed", FLAG_INT, &a->seed, 0, 2147483647, "seed of the initialisation and sampling");
    /* data */
    F("data-path", FLAG_STRING, &a->data_path, 0, 0,
      "text file (bytes) or llm.c token shard (default: the embedded corpus)");
    F("split", FLAG_STRING, &a->split, 0, 0, "train,valid,test weights of the data");
    F("eval-interval", FLAG_INT, &a->eval_interval, 0, 1 << 30,
      "steps between validation losses (0: only at the end)");
    F("eval-iters", FLAG_INT, &a->eval_iters, 1, 1 << 20, "micro-batches per validation");
    /* checkpoints */
    F("save", FLAG_STRING, &a->save, 0, 0, "directory for checkpoints");
    F("save-interval", FLAG_INT, &a->save_interval, 1, 1 << 30, "steps between checkpoints");
    F("load", FLAG_STRING, &a->load, 0, 0, "resume from a checkpoint directory or file");
    F("load-llmc", FLAG_STRING, &a->load_llmc, 0, 0,
      "start from llm.c GPT-2 weights (gpt2_124M.bin layout); the model's shape is the "
      "file's");
    /* run */
    F("preset", FLAG_STRING, &a->preset, 0, 0,
      "model preset: tiny, small, gpt2-124m, llama-tiny, llama-3.2-1b, llama-3.1-8b");
    F("config", FLAG_STRING, &a->config, 0, 0, "file of 'key = value' lines; flags win");
    F("sched", FLAG_STRING, &a->sched, 0, 0,
      "scheduling policy: hx-prio, hx-strand, hx-wavelet, hx-prefetch, serial-comm (no-overlap "
      "baseline) or a StarPU one (eager, prio, lws, dmda...)");
    F("sched-plugin", FLAG_STRING, &a->sched_plugin, 0, 0,
      "a shared object of scheduling policies to load (repeatable; also HX_SCHED_PLUGINS, "
      "':'-separated): its policies are --sched names (include/helix/sched_plugin.h)");
    F("workers", FLAG_INT, &a->workers, 0, 64, "CPU workers (0: STARPU_NCPU or all cores)");
    F("opencl", FLAG_INT, &a->opencl, 0, 64,
      "OpenCL device workers (0: STARPU_NOPENCL or none); PoCL makes the CPU one");
    F("cuda", FLAG_INT, &a->cuda, 0, 64,
      "CUDA device workers (0: STARPU_NCUDA or none); needs a CUDA-enabled StarPU");
    F("compute-on", FLAG_STRING, &a->compute_on, 0, 0,
      "where compute tasks run: any (the policy chooses, default), cpu, opencl or cuda; "
      "collectives always run on CPU workers");
    F("comm-backend", FLAG_STRING, &a->comm_backend, 0, 0,
      "who moves collective data: mpi (host memory; StarPU brings device tiles to RAM first), "
      "starpu-mpi (StarPU-MPI transfers and reduction tasks, ring or tree by size; "
      "HX_SMPI_ALGO=ring|tree|halving forces one) or nccl (the tiles' GPU copies, one GPU per rank; "
      "needs a CUDA-enabled StarPU); default nccl with --compute-on cuda, else mpi");
    F("mpi-driver", FLAG_STRING, &a->mpi_driver_name, 0, 0,
      "whether StarPU-MPI's thread runs worker 0's tasks between its polls (StarPU's MPI "
      "driver): on, off, or auto (the default: STARPU_MPI_DRIVER_CALL_FREQUENCY if set, else "
      "on with --comm-backend starpu-mpi where this machine's ranks, each with its workers "
      "and that thread, have more busy threads than cores)");
    F("log-interval", FLAG_INT, &a->log_interval, 1, 1 << 30, "steps between log lines");
    F("log-json", FLAG_STRING, &a->log_json, 0, 0, "write one JSON object per step to FILE");
    F("progress-bar", FLAG_INT, &a->progress_bar, -1, 1, "live bar: -1 when a terminal, 0, 1");
    F("trace", FLAG_STRING, &a->trace, 0, 0, "write a Chrome/Perfetto trace of the tasks");
    F("tile-seqs", FLAG_INT, &a->tile_seqs, 0, 65536, "sequences per row tile (0: 1)");
    F("attn-block", FLAG_INT, &a->attn_block, 0, 65536, "attention block (0: 64)");
    F("dump-dot", FLAG_STRING, &a->dump_dot, 0, 0, "write the step graph as Graphviz DOT");
    /* distribution (under mpirun) */
    F("tensor-model-parallel-size", FLAG_INT, &a->tp, 1, 1024,
      "tensor-parallel ranks (Megatron 1D: heads, MLP and vocabulary split)");
    F("tp-grid", FLAG_STRING, &a->tp_grid, 0, 0,
      "AxoNN's 3D tensor parallelism GxxGyxGz: X splits heads, MLP and vocabulary, Y the "
      "hidden size, Z the batch with every parameter sharded over it (tp = Gx Gy; dp = Gz x "
      "data replicas)");
    F("pipeline-model-parallel-size", FLAG_INT, &a->pp, 1, 1024, "pipeline stages (1)");
    F("pipeline-schedule", FLAG_STRING, &a->pipeline_schedule, 0, 0,
      "order of forwards and backwards on a stage: 1f1b (default), gpipe or fold");
    F("pipeline-fold", FLAG_BOOL, &a->pipeline_fold, 0, 1,
      "model folding (DHelix): stage s holds layer chunks s and 2p-1-s, a W-shaped pipeline");
    F("strands", FLAG_BOOL, &a->strands, 0, 1,
      "two strands (DHelix): a backward and the other strand's forward interleaved by layer");
    F("strand-plan", FLAG_STRING, &a->strand_plan, 0, 0,
      "with --strands: a pairing plan of `helix plan-strands --out`, run with --sched hx-strand");
    F("data-parallel-size", FLAG_INT, &a->dp, 0, 1 << 20,
      "data-parallel ranks (0: world / (tp x pp)); checked against the launch");
    F("sequence-parallel", FLAG_BOOL, &a->sequence_parallel, 0, 1,
      "shard LayerNorm and residual regions over the sequence within tp");
    F("tp-comm-overlap", FLAG_BOOL, &a->tp_comm_overlap, 0, 1,
      "with --sequence-parallel: Flux's tile-level overlap, each GEMM tile starting as its "
      "input tile arrives and each partial tile sent as soon as it is computed (tile size: "
      "--tile-seqs; 0 picks whole sequences up to 512 rows)");
    F("ranks-per-node", FLAG_INT, &a->ranks_per_node, 0, 1 << 20,
      "consecutive ranks sharing a node (0: Open MPI's local size)");
    F("shard-params", FLAG_STRING, &a->shard_p, 0, 0,
      "AMSP s_p: ranks sharing each parameter, N or AxB (A per node x B nodes)");
    F("shard-grads", FLAG_STRING, &a->shard_g, 0, 0, "AMSP s_g, as --shard-params");
    F("shard-optim", FLAG_STRING, &a->shard_os, 0, 0, "AMSP s_os, as --shard-params");
    F("zero-stage", FLAG_INT, &a->zero_stage, 0, 3,
      "ZeRO preset: 1 optimizer states, 2 + gradients, 3 + parameters sharded over dp");
    F("mics", FLAG_BOOL, &a->mics, 0, 1, "MiCS preset: everything sharded within a node");
    F("ddp-bucket-size", FLAG_INT, &a->ddp_bucket_size, 0, 2147483647,
      "gradient elements per all-reduce bucket (0: max(40M, 1M x dp))");
    F("overlap-grad-reduce", FLAG_BOOL, &a->overlap_grad_reduce, 0, 1,
      "all-reduce each bucket as the backward completes it (the default)");
    F("no-overlap-grad-reduce", FLAG_BOOL, &a->no_overlap_grad_reduce, 0, 1,
      "every gradient collective after the whole backward (baseline)");
    F("recompute-activations", FLAG_STRING, &a->recompute, 0, 0,
      "activation recomputation: selective (attention core and GELU again in the backward) "
      "or full (only each layer's output kept; its forward again in the backward)");
    F("prefetch-memory", FLAG_STRING, &a->prefetch_memory, 0, 0,
      "with --sched hx-prefetch and sharded parameters: bytes (K, M, G suffixes) for "
      "all-gathered layers; the look-ahead is the layers that fit less one (at least 1); "
      "with --sched serial-comm: hx-prefetch's graph order, serialized (its baseline)");
    F("no-overlap", FLAG_STRING, &a->no_overlap, 0, 0,
      "AxoNN's overlap optimisations to turn off, for measuring them (numbers unchanged): a "
      "comma list of dgrad-ar (O1: input-gradient all-reduces block instead of running under "
      "the weight-gradient GEMM), defer-rs (O2: weight-gradient reduce-scatters block), "
      "prefetch (O3: parameter all-gathers block instead of running layers ahead), cache "
      "(O4: the backward gathers every layer again instead of reusing the forward's), or all");
    F("comm-timeout", FLAG_FLOAT, &a->comm_timeout, 0, 1e6,
      "seconds (at least 1; 0: never) without collective progress, or without any task "
      "terminating while tasks wait (a policy that lost one), before every rank reports and "
      "exits");
    F("sample-tokens", FLAG_INT, &a->sample_tokens, 0, 1 << 20,
      "tokens sampled after training (0: none)");
    F("sample-prompt", FLAG_TEXT, &a->sample_prompt, 0, 0,
      "prompt of that sample (empty: from the start of a line)");
    flags_init(s, table, ntable);
    flags_repeatable(s, "sched-plugin");
}

static int apply_preset(struct flag_set *s, const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            return flags_parse_text(s, presets[i].text, FROM_PRESET, "preset");
        }
    }
    fprintf(stderr, "helix: error: unknown --preset '%s'; choose tiny, small, gpt2-124m, "
            "llama-tiny, llama-3.2-1b or llama-3.1-8b\n", flags_esc(name));
    return 2;
}

int train_args_parse(struct train_args *a, struct flag_set *s, int argc, char **argv)
{
    static const char usage[] =
        "usage: helix train [flags]\n\n"
        "Train a GPT-2 style model, on one rank or under mpirun on a dp x tp mesh.  Settings\n"
        "come from, in increasing priority: defaults, --preset, the checkpoint of --load,\n"
        "--config FILE, and the command line.";
    int ret = flags_parse_argv(s, argc, argv, 2, usage);
    if (ret != 0) {
        return ret == 1 ? TRAIN_HELP : ret;
    }
    if (a->config != NULL && (ret = flags_parse_file(s, a->config, FROM_CONFIG)) != 0) {
        return ret;
    }
    if (a->preset != NULL && (ret = apply_preset(s, a->preset)) != 0) {
        return ret;
    }
    return 0;
}

/* --mpi-driver, resolved: auto is for the StarPU-MPI backend only, whose transfers wait for
 * StarPU-MPI's thread; the others leave that thread idle, so it keeps its own.  0 or 2. */
static int check_mpi_driver(struct train_args *a)
{
    const char *n = a->mpi_driver_name != NULL ? a->mpi_driver_name : "auto";
    int d = HX_MPI_DRIVER_OFF;
    while (d <= HX_MPI_DRIVER_AUTO && strcmp(n, hx_mpi_driver_name((enum hx_mpi_driver)d)) != 0) {
        d++; /* the words are the library's (hx_mpi_driver_name) */
    }
    if (d > HX_MPI_DRIVER_AUTO) {
        fprintf(stderr, "helix: error: --mpi-driver %s is not a choice; use auto, on or off\n",
                flags_esc(n));
        return 2;
    }
    if (d == HX_MPI_DRIVER_AUTO && a->backend != HX_COMM_STARPU_MPI) {
        d = HX_MPI_DRIVER_OFF;
    }
    a->mpi_driver = (int)d;
    return 0;
}

/* --comm-backend, resolved: NCCL when the tiles live on CUDA devices (--compute-on cuda),
 * StarPU-MPI in a simulation (the only communication SimGrid runs), unless the flag says
 * otherwise, and refused here, before any work, where this build or this StarPU cannot run
 * it.  0 or 2 (reported). */
static int check_backend(struct train_args *a, enum hx_place place)
{
    enum hx_comm_backend b = hx_runtime_simulated()    ? HX_COMM_STARPU_MPI
                             : place == HX_PLACE_CUDA ? HX_COMM_NCCL
                                                      : HX_COMM_MPI;
    char why[512];
    if (a->comm_backend != NULL && hx_comm_backend_from_name(a->comm_backend, &b) != HX_OK) {
        fprintf(stderr, "helix: error: --comm-backend %s is not a backend; use mpi, "
                "starpu-mpi or nccl\n", flags_esc(a->comm_backend));
        return 2;
    }
    const char *chosen = a->comm_backend != NULL ? ""
                         : b == HX_COMM_NCCL    ? " (the default with --compute-on cuda)"
                                                : " (the default)";
    if (hx_comm_backend_usable(b, why, sizeof why) != HX_OK) {
        fprintf(stderr, "helix: error: --comm-backend %s%s: %s%s\n", hx_comm_backend_name(b),
                chosen, why, a->comm_backend != NULL ? "; or use --comm-backend mpi" : "");
        return 2;
    }
    if (b == HX_COMM_NCCL && a->cuda > 1) {
        fprintf(stderr, "helix: error: --comm-backend nccl%s drives one GPU per rank (one NCCL "
                "communicator per group on it), but --cuda %d asks for %d CUDA devices; launch "
                "one rank per GPU with --cuda 1\n", chosen, a->cuda, a->cuda);
        return 2;
    }
    a->backend = (int)b;
    return check_mpi_driver(a);
}

/* The simulation flavour (helix simulate) runs no kernel: the weights it would save, load
 * or sample from are never computed, so those flags are refused and the closing sample (on
 * by default) is left out, as validation is (tools/train.c). */
static int check_simulated(struct train_args *a)
{
    const char *flag = a->save        ? "--save"
                       : a->load      ? "--load"
                       : a->load_llmc ? "--load-llmc"
                                      : NULL;
    if (flag != NULL) {
        fprintf(stderr, "helix: error: %s in a simulation: no kernel runs there, so there are "
                "no weights to save or load; drop %s (helix simulate predicts time only)\n",
                flag, flag);
        return 2;
    }
    a->sample_tokens = 0;
    return 0;
}

int train_args_check(struct train_args *a)
{
    int ret;
    const char *ds = a->decay_style;
    if (strcmp(ds, "cosine") != 0 && strcmp(ds, "linear") != 0 && strcmp(ds, "constant") != 0) {
        fprintf(stderr, "helix: error: --lr-decay-style '%s' is not cosine, linear or constant\n",
                flags_esc(ds));
        return 2;
    }
    /* Megatron: the schedule is fixed by the flags that define it, so the decay length is
     * stored resolved (in the checkpoint's settings) and a resume with a longer --train-iters
     * keeps it instead of stretching the decay */
    if (a->decay_iters == 0) {
        a->decay_iters = a->iters;
    }
    if (llama_flags_check(&a->llama) != 0) {
        return 2;
    }
    if (a->load_llmc != NULL && llama_flags_any(&a->llama, a->heads, a->hidden)) {
        fprintf(stderr, "helix: error: --load-llmc reads llm.c's GPT-2 weights, but the flags "
                "ask for Llama settings (--model llama, --swiglu, --num-query-groups ...); drop "
                "them to start from those weights\n");
        return 2;
    }
    if (a->comm_timeout > 0 && a->comm_timeout < 1) { /* it would fire at every collective */
        fprintf(stderr, "helix: error: --comm-timeout %g is below the 1 s minimum: a healthy "
                "collective can wait that long; use 1 or more seconds, or 0 for no timeout\n",
                (double)a->comm_timeout);
        return 2;
    }
    if (a->global_batch == 0) { /* Megatron: one micro-batch per data-parallel rank */
        int per_replica = a->tp * a->pp;
        int dp = a->world_size % per_replica == 0 ? a->world_size / per_replica : 1;
        a->global_batch = a->micro_batch * (dp > 0 ? dp : 1);
    }
    if (a->global_batch % a->micro_batch != 0) {
        fprintf(stderr, "helix: error: --global-batch-size %d is not a multiple of "
                "--micro-batch-size %d; make it one (e.g. %d)\n", a->global_batch,
                a->micro_batch, (a->global_batch / a->micro_batch + 1) * a->micro_batch);
        return 2;
    }
    if (a->min_lr > a->lr) {
        fprintf(stderr, "helix: error: --min-lr %g is above --lr %g; the decay goes down to "
                "--min-lr\n", (double)a->min_lr, (double)a->lr);
        return 2;
    }
    if (tools_load_sched_plugins(a->sched_plugin) != 0 || tools_check_sched(a->sched) != 0) {
        return 2;
    }
    enum hx_place place = HX_PLACE_ANY;
    if (a->compute_on != NULL && hx_place_from_name(a->compute_on, &place) != HX_OK) {
        fprintf(stderr, "helix: error: --compute-on %s is not a placement; use any, cpu, "
                "opencl or cuda\n", a->compute_on);
        return 2;
    }
    a->place = (int)place;
    if ((ret = check_backend(a, place)) != 0) {
        return ret;
    }
    /* one policy for everything downstream (the graph's needs, these checks, the runtime,
     * the start-up line): --sched, else HX_SCHED, else STARPU_SCHED, else hx-prio */
    a->sched = hx_sched_resolve(a->sched, NULL);
    if ((hx_sched_needs(a->sched) & HX_SCHED_NEEDS_STRAND_PLAN) && a->strand_plan == NULL) {
        fprintf(stderr, "helix: error: policy %s executes a strand plan; add --strands "
                "--strand-plan FILE (helix plan-strands --out), or use hx-wavelet for two "
                "strands without a plan\n", a->sched);
        return 2;
    }
    a->recompute_mode = HX_RECOMPUTE_NONE;
    if (a->recompute != NULL) {
        if (strcmp(a->recompute, "full") == 0) {
            a->recompute_mode = HX_RECOMPUTE_FULL;
        } else if (strcmp(a->recompute, "selective") == 0) {
            a->recompute_mode = HX_RECOMPUTE_SELECTIVE;
        } else if (strcmp(a->recompute, "none") != 0) {
            fprintf(stderr, "helix: error: --recompute-activations '%s' is not a mode; use full, "
                    "selective or none\n", flags_esc(a->recompute));
            return 2;
        }
        if (a->recompute_mode != HX_RECOMPUTE_NONE && (a->pp > 1 || a->strands)) {
            fprintf(stderr, "helix: error: --recompute-activations %s with %s is not "
                    "supported; drop one of them\n", a->recompute,
                    a->pp > 1 ? "--pipeline-model-parallel-size > 1" : "--strands");
            return 2;
        }
    }
    if (a->prefetch_memory != NULL) {
        char *end = NULL;
        double v = strtod(a->prefetch_memory, &end);
        const char *units = "KMG";
        const char *u = end != NULL && *end != '\0' ? strchr(units, *end) : NULL;
        int ok = end != a->prefetch_memory && v > 0 && isfinite(v) &&
                 (*end == '\0' || (u != NULL && end[1] == '\0'));
        if (!ok) {
            fprintf(stderr, "helix: error: --prefetch-memory '%s' is not a size; give bytes, "
                    "optionally with K, M or G (e.g. 64M)\n", flags_esc(a->prefetch_memory));
            return 2;
        }
        a->prefetch_bytes = v * (u != NULL ? (double)(1L << (10 * (u - units + 1))) : 1.0);
        if (!(hx_sched_needs(a->sched) &
              (HX_SCHED_NEEDS_PREFETCH | HX_SCHED_NEEDS_SERIAL_COMM))) {
            fprintf(stderr, "helix: error: --prefetch-memory bounds hx-prefetch's look-ahead, "
                    "which policy %s does not run; add --sched hx-prefetch, or --sched "
                    "serial-comm for the same graph order without overlap (or drop "
                    "--prefetch-memory)\n", a->sched);
            return 2;
        }
    }
    if (parse_no_overlap(a->no_overlap, &a->no_overlap_bits) != 0) {
        return 2;
    }
    if (a->load != NULL && a->load_llmc != NULL) {
        fprintf(stderr, "helix: error: --load and --load-llmc both given; resume a helix "
                "checkpoint or start from llm.c weights, not both\n");
        return 2;
    }
    return hx_runtime_simulated() ? check_simulated(a) : 0;
}

/* --no-overlap "dgrad-ar,defer-rs,prefetch,cache" or "all": 0 ok, 2 bad */
static int parse_no_overlap(const char *v, unsigned *bits)
{
    static const struct { const char *name; unsigned bit; } items[] = {
        { "dgrad-ar", HX_NO_OVERLAP_DGRAD_AR }, { "defer-rs", HX_NO_OVERLAP_DEFER_RS },
        { "prefetch", HX_NO_OVERLAP_PREFETCH }, { "cache", HX_NO_OVERLAP_CACHE },
        { "all", HX_NO_OVERLAP_ALL },
    };
    *bits = 0;
    for (const char *p = v; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof items / sizeof items[0]; k++) {
            bit = strlen(items[k].name) == n && strncmp(p, items[k].name, n) == 0 ? items[k].bit
                                                                                 : bit;
        }
        if (bit == 0) {
            fprintf(stderr, "helix: error: --no-overlap '%s': '%.*s' is not an optimisation; "
                    "list dgrad-ar, defer-rs, prefetch and cache (comma-separated) or all\n",
                    flags_esc(v), (int)n, p);
            return 2;
        }
        *bits |= bit;
        p += n + (p[n] == ',');
    }
    return 0;
}

void train_args_model(const struct train_args *a, struct hx_gpt_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = a->vocab;
    c->max_seq_len = a->max_pos;
    c->num_layers = a->layers;
    c->num_heads = a->heads;
    c->hidden_size = a->hidden;
    c->seq_len = a->seq_len;
    c->micro_batch_size = a->micro_batch;
    c->num_micro_batches = a->global_batch / a->micro_batch;
    c->tile_seqs = a->tile_seqs;
    c->attn_block = a->attn_block;
    llama_flags_apply(&a->llama, c);
}

void train_args_optim(const struct train_args *a, struct hx_optim_config *o)
{
    hx_optim_config_default(o, a->decay_iters > 0 ? a->decay_iters : a->iters); /* resolved */
    o->lr = a->lr;
    o->min_lr = a->min_lr;
    o->warmup_iters = a->warmup;
    o->decay_style = strcmp(a->decay_style, "linear") == 0     ? HX_LR_LINEAR
                     : strcmp(a->decay_style, "constant") == 0 ? HX_LR_CONSTANT
                                                               : HX_LR_COSINE;
    o->weight_decay = a->weight_decay;
    o->clip_grad = a->clip;
    o->beta1 = a->beta1;
    o->beta2 = a->beta2;
    o->eps = a->adam_eps;
}

/* A positive count of ranks in decimal digits only, at most FACTOR_MAX: 0 ok, -1 not one. */
#define FACTOR_MAX (1 << 20)
static int parse_count(const char *v, const char **end, int *out)
{
    long x = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        x = x * 10 + (*p - '0');
        if (x > FACTOR_MAX) {
            return -1;
        }
    }
    *end = p;
    *out = (int)x;
    return p > v && x > 0 ? 0 : -1;
}

/* "N" or "AxB" (A ranks inside a node times B nodes); 0 when absent.  0 ok, 2 bad.  Each
 * number and the product stay at most FACTOR_MAX (ranks), so nothing overflows. */
static int parse_factor(const char *flag, const char *v, int *s, int *s0)
{
    *s = *s0 = 0;
    if (v == NULL) {
        return 0;
    }
    int a = 0, b = 0;
    const char *e = v;
    int ok = parse_count(v, &e, &a) == 0;
    if (ok && *e == 'x') {
        ok = parse_count(e + 1, &e, &b) == 0;
        if (ok && (long)a * b > FACTOR_MAX) {
            fprintf(stderr, "helix: error: --%s %dx%d asks for %ld ranks, more than the %d "
                    "helix supports; use a factor that divides the launched ranks\n", flag, a,
                    b, (long)a * b, FACTOR_MAX);
            return 2;
        }
    }
    if (!ok || *e != '\0') {
        fprintf(stderr, "helix: error: --%s '%s' is not a sharding factor; write N (ranks) or "
                "AxB (A ranks inside a node times B nodes, each 1..%d), e.g. 4 or 2x2\n", flag,
                flags_esc(v), FACTOR_MAX);
        return 2;
    }
    *s = b > 0 ? a * b : a;
    *s0 = b > 0 ? a : 0;
    return 0;
}

/* --tp-grid "GxxGyxGz": three counts; 0 ok (g zero when absent), 2 bad */
static int parse_grid(const char *v, int *g)
{
    g[0] = g[1] = g[2] = 0;
    if (v == NULL) {
        return 0;
    }
    const char *e = v;
    int ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        ok = parse_count(k == 0 ? e : e + 1, &e, &g[k]) == 0 && *e == (k < 2 ? 'x' : '\0');
    }
    if (!ok || (long)g[0] * g[1] * g[2] > FACTOR_MAX) {
        fprintf(stderr, "helix: error: --tp-grid '%s' is not a grid; write GxxGyxGz, three "
                "positive counts whose product is at most %d (e.g. 2x2x1)\n", flags_esc(v),
                FACTOR_MAX);
        g[0] = g[1] = g[2] = 0;
        return 2;
    }
    return 0;
}

int train_args_schedule(const struct train_args *a)
{
    if (a->pipeline_schedule != NULL) {
        return hx_pipeline_schedule_parse(a->pipeline_schedule);
    }
    return a->pipeline_fold ? HX_PIPE_FOLD : HX_PIPE_1F1B;
}

int train_args_mesh(const struct train_args *a, int size, int rank, int quiet,
                    struct hx_mesh *mesh)
{
    if (a->overlap_grad_reduce && a->no_overlap_grad_reduce) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --overlap-grad-reduce and --no-overlap-grad-reduce "
                    "contradict each other; give one\n");
        }
        return 2;
    }
    struct hx_mesh_request r = {
        .world_size = size, .world_rank = rank, .dp = a->dp, .tp = a->tp, .pp = a->pp,
        .ranks_per_node = a->ranks_per_node, .sequence_parallel = a->sequence_parallel,
        .zero_stage = a->zero_stage, .mics = a->mics, .num_heads = a->heads,
        .hidden_size = a->hidden, .vocab_size = a->vocab, .num_layers = a->layers,
        .seq_len = a->seq_len, .micro_batches = a->global_batch / a->micro_batch,
    };
    if (parse_grid(a->tp_grid, r.tp_grid) != 0 ||
        parse_factor("shard-params", a->shard_p, &r.shard_p, &r.shard_p0) != 0 ||
        parse_factor("shard-grads", a->shard_g, &r.shard_g, &r.shard_g0) != 0 ||
        parse_factor("shard-optim", a->shard_os, &r.shard_os, &r.shard_os0) != 0) {
        return 2;
    }
    if (r.ranks_per_node == 0) { /* Open MPI tells each rank how many share its node */
        int local = hx_mpi_local_size();
        r.ranks_per_node = local > 0 && size % local == 0 ? local : size;
    }
    int sched = train_args_schedule(a);
    if (sched < 0) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --pipeline-schedule '%s' is not a schedule; use "
                    "1f1b, gpipe or fold\n", flags_esc(a->pipeline_schedule));
        }
        return 2;
    }
    if (a->pipeline_fold && a->pipeline_schedule != NULL && sched != HX_PIPE_FOLD) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --pipeline-fold and --pipeline-schedule %s "
                    "contradict each other; give one\n", flags_esc(a->pipeline_schedule));
        }
        return 2;
    }
    const char *policy = hx_sched_resolve(a->sched, NULL);
    if (sched == HX_PIPE_FOLD && a->pp > 1 &&
        (hx_sched_needs(policy) & HX_SCHED_NEEDS_SERIAL_COMM)) {
        if (!quiet) { /* measured: serialized in submission order, fold stages deadlock */
            fprintf(stderr, "helix: error: policy %s cannot run the folded W: it runs "
                    "collectives and compute in submission order, and the W's sends and "
                    "receives, emitted apart, then wait on each other across stages; take the "
                    "no-overlap baseline on a 1F1B pipeline (drop --pipeline-fold)\n", policy);
        }
        return 2;
    }
    int nvs = hx_pipeline_virtual_stages(sched, a->pp);
    if (sched == HX_PIPE_FOLD && a->layers % nvs != 0) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --pipeline-fold cuts --num-layers %d into 2 x %d = "
                    "%d equal chunks; choose a layer count divisible by %d\n", a->layers,
                    a->pp, nvs, nvs);
        }
        return 2;
    }
    if (r.tp_grid[0] > 0 && a->strands) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --tp-grid and --strands: the two strands' "
                    "collectives have their own channels on Megatron's tp group only; drop "
                    "one\n");
        }
        return 2;
    }
    if (hx_mesh_init(mesh, &r, quiet) != HX_OK) {
        return 2;
    }
    if (a->tp_comm_overlap) {
        struct hx_gpt_config c;
        train_args_model(a, &c);
        if (hx_gpt_check_tp_overlap(&c, mesh, quiet) != HX_OK) {
            return 2;
        }
    }
    if (a->prefetch_memory != NULL && mesh->sp.s == 1) {
        if (!quiet) {
            fprintf(stderr, "helix: error: --prefetch-memory: this mesh shards no parameter "
                    "(s_p 1), so nothing is all-gathered; use --zero-stage 3 or "
                    "--shard-params N\n");
        }
        return 2;
    }
    return 0;
}
