/* SPDX-License-Identifier: MIT */
/* tools/train.c: `helix train`, single-rank training on a byte-level corpus.
 * Order: parse and validate every flag and the data before StarPU starts; build the step
 * graph; realize and initialise from --seed; then per step load the next global batch in
 * order, run the step, and print one line with loss, lr, gradient norm and speed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helix/helix.h"
#include "tools/tools.h"

struct train_args {
    int layers, hidden, heads, seq_len, vocab, micro_batch, global_batch, iters, warmup;
    float lr, min_lr, weight_decay, clip, beta1, beta2;
    int seed, workers, log_interval, tile_seqs, attn_block;
    const char *data_path, *sched, *dump_dot;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int cmd_train(int argc, char **argv)
{
    struct train_args a = {
        /* the default model: ~0.84M parameters, ~1 minute for 600 steps on 2 cores */
        .layers = 4, .hidden = 128, .heads = 4, .seq_len = 128, .vocab = 256, .micro_batch = 8,
        .global_batch = 0, .iters = 600, .warmup = 30, .lr = 2e-3f, .min_lr = 1e-4f,
        .weight_decay = 0.1f, .clip = 1.0f, .beta1 = 0.9f, .beta2 = 0.95f, .seed = 1234,
        .workers = 0, .log_interval = 10, .tile_seqs = 0, .attn_block = 0,
    };
    const struct flag flags[] = {
        { "num-layers", FLAG_INT, &a.layers, 1, 1024, "transformer layers" },
        { "hidden-size", FLAG_INT, &a.hidden, 1, 65536, "hidden size C" },
        { "num-attention-heads", FLAG_INT, &a.heads, 1, 1024, "attention heads (divide C)" },
        { "seq-length", FLAG_INT, &a.seq_len, 1, 1 << 16, "tokens per sequence T" },
        { "vocab-size", FLAG_INT, &a.vocab, 256, 1 << 20, "vocabulary (bytes: 256)" },
        { "micro-batch-size", FLAG_INT, &a.micro_batch, 1, 1 << 16, "sequences per micro-batch" },
        { "global-batch-size", FLAG_INT, &a.global_batch, 0, 1 << 20,
          "sequences per step, a multiple of the micro-batch (0: one micro-batch)" },
        { "train-iters", FLAG_INT, &a.iters, 1, 1 << 30, "training steps" },
        { "lr", FLAG_FLOAT, &a.lr, 0, 10, "peak learning rate" },
        { "min-lr", FLAG_FLOAT, &a.min_lr, 0, 10, "final learning rate of the cosine" },
        { "lr-warmup-iters", FLAG_INT, &a.warmup, 0, 1 << 30, "linear warmup steps" },
        { "weight-decay", FLAG_FLOAT, &a.weight_decay, 0, 10, "AdamW decoupled weight decay" },
        { "clip-grad", FLAG_FLOAT, &a.clip, 0, 1e6, "global gradient-norm clip (0: off)" },
        { "adam-beta1", FLAG_FLOAT, &a.beta1, 0, 0.999999, "Adam beta1" },
        { "adam-beta2", FLAG_FLOAT, &a.beta2, 0, 0.999999, "Adam beta2" },
        { "seed", FLAG_INT, &a.seed, 0, 2147483647, "seed of the initialisation" },
        { "data-path", FLAG_STRING, &a.data_path, 0, 0,
          "byte-level text file (default: the embedded corpus)" },
        { "sched", FLAG_STRING, &a.sched, 0, 0,
          "scheduling policy: hx-prio or a StarPU one (eager, prio, lws, dmda...)" },
        { "workers", FLAG_INT, &a.workers, 0, 64, "CPU workers (0: STARPU_NCPU or all cores)" },
        { "log-interval", FLAG_INT, &a.log_interval, 1, 1 << 30, "steps between log lines" },
        { "tile-seqs", FLAG_INT, &a.tile_seqs, 0, 1 << 16, "sequences per row tile (0: 1)" },
        { "attn-block", FLAG_INT, &a.attn_block, 0, 1 << 16, "attention block (0: 64)" },
        { "dump-dot", FLAG_STRING, &a.dump_dot, 0, 0, "write the step graph as Graphviz DOT" },
    };
    int nflags = (int)(sizeof flags / sizeof flags[0]);
    int ret = flags_parse(flags, nflags, argc, argv, 2,
                          "usage: helix train [flags]\n\nTrain a GPT-2 style model on one rank "
                          "and print the loss of every step.");
    if (ret != 0) {
        return ret == 1 ? 0 : 2;
    }
    if (a.global_batch == 0) {
        a.global_batch = a.micro_batch;
    }
    if (a.global_batch % a.micro_batch != 0) {
        fprintf(stderr, "helix: error: --global-batch-size %d is not a multiple of "
                "--micro-batch-size %d; make it one (e.g. %d)\n", a.global_batch, a.micro_batch,
                (a.global_batch / a.micro_batch + 1) * a.micro_batch);
        return 2;
    }
    if (a.sched != NULL && !hx_sched_is_known(a.sched)) {
        fprintf(stderr, "helix: error: unknown --sched '%s'; choose one of:", a.sched);
        for (const char *const *n = hx_sched_names(); *n != NULL; n++) {
            fprintf(stderr, " %s", *n);
        }
        fprintf(stderr, "\n");
        return 2;
    }
    struct hx_gpt_config cfg = {
        .vocab_size = a.vocab, .num_layers = a.layers, .num_heads = a.heads,
        .hidden_size = a.hidden, .seq_len = a.seq_len, .micro_batch_size = a.micro_batch,
        .num_micro_batches = a.global_batch / a.micro_batch, .tile_seqs = a.tile_seqs,
        .attn_block = a.attn_block,
    };
    if (hx_gpt_config_check(&cfg) != HX_OK) {
        return 2;
    }
    struct hx_dataset data;
    ret = a.data_path ? hx_data_load_bytes(&data, a.data_path) : hx_data_load_default(&data);
    if (ret != HX_OK) {
        return ret == HX_ENOMEM ? 1 : 2; /* a bad --data-path is bad input */
    }
    if (hx_data_check(&data, a.seq_len) != HX_OK) {
        hx_data_free(&data);
        return 2;
    }
    struct hx_optim_config opt;
    hx_optim_config_default(&opt, a.iters);
    opt.lr = a.lr;
    opt.min_lr = a.min_lr < a.lr ? a.min_lr : a.lr;
    opt.warmup_iters = a.warmup;
    opt.weight_decay = a.weight_decay;
    opt.clip_grad = a.clip;
    opt.beta1 = a.beta1;
    opt.beta2 = a.beta2;

    hx_gpt_t model = NULL;
    ret = hx_gpt_build(&model, &cfg, &opt);
    if (ret != HX_OK) {
        hx_data_free(&data);
        return 2;
    }
    if (a.dump_dot != NULL) {
        FILE *f = fopen(a.dump_dot, "w");
        if (f == NULL || hx_graph_write_dot(hx_gpt_graph(model), f) != HX_OK) {
            fprintf(stderr, "helix: error: cannot write --dump-dot %s\n", a.dump_dot);
            if (f) {
                fclose(f);
            }
            hx_gpt_destroy(model);
            hx_data_free(&data);
            return 1;
        }
        fclose(f);
    }
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = a.workers;
    ro.sched = a.sched;
    ret = hx_runtime_init(&ro);
    if (ret != HX_OK) {
        hx_gpt_destroy(model);
        hx_data_free(&data);
        return ret == HX_EINVAL ? 2 : 1;
    }
    ret = hx_gpt_realize(model);
    if (ret == HX_OK) {
        hx_gpt_init_params(model, (uint64_t)a.seed);
        printf("helix train: %zu parameters, %d layers, C=%d, %d heads, T=%d, batch %d x %d "
               "micro-batches, %d graph tasks/step, %d workers, policy %s, data %s (%zu tokens)\n",
               hx_gpt_num_params(model), a.layers, a.hidden, a.heads, a.seq_len, a.micro_batch,
               cfg.num_micro_batches, hx_gpt_graph(model)->nnodes, hx_runtime_workers(),
               hx_runtime_sched_name(), data.source, data.ntokens);
        fflush(stdout);
    }
    size_t ntok = (size_t)a.global_batch * a.seq_len;
    int32_t *tokens = malloc(ntok * sizeof(int32_t)), *targets = malloc(ntok * sizeof(int32_t));
    double first_loss = NAN, last_loss = NAN;
    for (int step = 0; ret == HX_OK && step < a.iters; step++) {
        struct hx_step_result r;
        hx_data_next_batch(&data, a.global_batch, a.seq_len, tokens, targets);
        double t0 = now_ms();
        ret = hx_gpt_set_batch(model, tokens, targets);
        if (ret == HX_OK) {
            ret = hx_gpt_step(model, step, &r);
        }
        double ms = now_ms() - t0;
        if (ret != HX_OK) {
            break;
        }
        if (step == 0) {
            first_loss = r.loss;
        }
        last_loss = r.loss;
        if (step % a.log_interval == 0 || step == a.iters - 1) {
            printf("step %5d/%d | loss %.6f | lr %.3e | grad norm %.4f | %7.1f ms | %8.0f tok/s\n",
                   step + 1, a.iters, r.loss, (double)r.lr, r.grad_norm, ms, ntok / (ms / 1e3));
            fflush(stdout);
        }
    }
    if (ret == HX_OK) {
        printf("done: %d steps, loss %.4f -> %.4f\n", a.iters, first_loss, last_loss);
    }
    free(tokens);
    free(targets);
    hx_gpt_destroy(model);
    hx_runtime_shutdown();
    hx_data_free(&data);
    return ret == HX_OK ? 0 : 1;
}
