/* SPDX-License-Identifier: MIT */
/* tools/train.h: the settings of `helix train` (Megatron-LM's flag names where one exists)
 * and how they are gathered: defaults < --preset < checkpoint (--load) < --config < argv. */
#ifndef HX_TRAIN_H
#define HX_TRAIN_H

#include <stdint.h>

#include "helix/checkpoint.h"
#include "helix/helix.h"
#include "tools/llama_flags.h"
#include "tools/tools.h"

struct train_args {
    /* model */
    int layers, hidden, heads, seq_len, max_pos, vocab;
    struct llama_flags llama;         /* the Llama settings (tools/llama_flags.h) */
    /* batch and schedule */
    int micro_batch, global_batch, iters, warmup, decay_iters;
    float lr, min_lr, weight_decay, clip, beta1, beta2, adam_eps;
    const char *decay_style;
    int seed;
    /* data and evaluation */
    const char *data_path, *split;
    int eval_interval, eval_iters;
    /* checkpoints */
    const char *save, *load, *load_llmc;
    int save_interval;
    /* run */
    const char *sched, *preset, *config, *log_json, *trace, *dump_dot;
    const char *sched_plugin; /* --sched-plugin: ':'-separated plug-in files */
    int workers, log_interval, tile_seqs, attn_block, progress_bar;
    int opencl, cuda;                 /* device workers (--opencl, --cuda) */
    const char *compute_on;           /* --compute-on any|cpu|opencl|cuda */
    int place;                        /* its enum hx_place (train_args_check) */
    const char *comm_backend;         /* --comm-backend mpi|nccl; NULL: by --compute-on */
    int backend;                      /* its enum hx_comm_backend, resolved (train_args_check) */
    const char *mpi_driver_name;      /* --mpi-driver auto|on|off; NULL: auto */
    int mpi_driver;                   /* its enum hx_mpi_driver, resolved (train_args_check) */
    /* distribution over MPI ranks (Megatron's names); shard factors "N" or "AxB" (A ranks
     * inside a node times B nodes) */
    int tp, pp, dp, sequence_parallel, ranks_per_node, zero_stage, mics;
    int world_size;                   /* ranks launched (set before parsing, not a flag) */
    const char *shard_p, *shard_g, *shard_os;
    const char *tp_grid;                 /* --tp-grid GxxGyxGz: AxoNN's 3D tensor parallelism */
    const char *pipeline_schedule;       /* "1f1b", "gpipe" or "fold" */
    int pipeline_fold;                   /* --pipeline-fold: the schedule "fold" */
    int strands;                         /* --strands: DHelix's two interleaved strands */
    int tp_comm_overlap;                 /* --tp-comm-overlap: Flux's tile-level overlap */
    const char *strand_plan;             /* --strand-plan FILE (helix plan-strands --out) */
    int ddp_bucket_size, overlap_grad_reduce, no_overlap_grad_reduce;
    const char *prefetch_memory;         /* --prefetch-memory BYTES[K|M|G] (hx-prefetch) */
    const char *recompute;               /* --recompute-activations full|selective */
    int recompute_mode;                  /* its enum hx_recompute (train_args_check) */
    double prefetch_bytes;               /* its value, parsed by train_args_check */
    const char *no_overlap;              /* --no-overlap LIST: AxoNN's optimisations off */
    unsigned no_overlap_bits;            /* its enum hx_no_overlap bits (train_args_check) */
    float comm_timeout;
    /* the sample printed at the end */
    int sample_tokens;
    const char *sample_prompt;
};

/* Fill @p a with defaults and @p s with the flag table over @p a.  The table is static. */
void train_args_init(struct train_args *a, struct flag_set *s);
/* --help was printed: not an error (exit 0), and distinct from every exit status, so a
 * runtime failure (1) is never mistaken for it. */
#define TRAIN_HELP (-1)
/* Gather argv, --config and --preset: 0 ok, TRAIN_HELP, 2 usage error. */
int train_args_parse(struct train_args *a, struct flag_set *s, int argc, char **argv);
/* Cross-flag checks, once every source (a checkpoint's settings too) is in: 0 or 2. */
int train_args_check(struct train_args *a);
/* The model and optimizer configurations the settings describe. */
void train_args_model(const struct train_args *a, struct hx_gpt_config *c);
void train_args_optim(const struct train_args *a, struct hx_optim_config *o);
/* enum hx_pipeline_schedule of --pipeline-schedule / --pipeline-fold, or -1 if unknown */
int train_args_schedule(const struct train_args *a);
/* The mesh the distribution flags ask for, for rank @p rank of @p size: 0 or 2 (reported;
 * quiet: checked without a message, for ranks other than 0). */
int train_args_mesh(const struct train_args *a, int size, int rank, int quiet,
                    struct hx_mesh *mesh);
/* Names of the flags that define the model's shape (must agree with a checkpoint). */
extern const char *const train_model_flags[];
/* Flags that are not stored in checkpoints (where and how a run happens, not what). */
extern const char *const train_run_flags[];
/* Flags each rank may set its own way under mpirun (its cores, its terminal, and the sources
 * --config and --preset, whose resolved values are compared instead); every other resolved
 * setting must be the same on every rank. */
extern const char *const train_rank_flags[];

/* What `helix train` was given, checked (tools/train_input.c). */
struct train_input {
    struct train_args a;
    struct flag_set flags;
    struct hx_dataset all, train, val;  /* the data, and its training and validation parts */
    struct hx_checkpoint_info info;     /* --load's, then the one each save writes */
    struct hx_plan plan;                /* --strand-plan, when given (have_plan) */
    int have_plan;
    char schedule_note[512];            /* --load: what the flags change of its LR schedule */
};

/* Parse and check everything `helix train` was given (argv, --config, --preset, the
 * checkpoint of --load, --load-llmc's shape, the data, --save, --trace, the mesh of rank
 * @p rank of @p size into @p mesh, --strand-plan), then claim --save.  Under mpirun (@p mpi)
 * the ranks agree: every rank returns the same status, and rank 0 said why.  0, TRAIN_HELP,
 * 1 (a runtime failure, e.g. data that does not fit in memory) or 2 (bad input). */
int train_input_read(struct train_input *in, int mpi, int rank, int size, int argc,
                     char **argv, struct hx_mesh *mesh);
void train_input_free(struct train_input *in);

/* tools/sample.c: generate @p ntok tokens after @p prompt with the model's micro-batch 0
 * (temperature 0 = greedy; top_k 0 = all) and write the text to @p out. */
int sample_generate(hx_gpt_t m, const char *prompt, int ntok, float temperature, int top_k,
                    uint64_t seed, FILE *out);

#endif /* HX_TRAIN_H */
