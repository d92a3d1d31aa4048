/* SPDX-License-Identifier: MIT */
/* tools/sample.c: text generation, and `helix sample`.  Each new token runs the forward of
 * micro-batch 0 on the last T tokens of the context (causal, so the logits at the last real
 * position see only the context; later positions are padding), then draws from
 * softmax(logits / temperature) restricted to the top k, with the seeded generator, so a seed
 * repeats a sample exactly.  Tokens are bytes here (vocabulary 256); other vocabularies print
 * their ids.  An empty prompt is a prompt: the context then starts from a newline byte (the
 * start of a line, what the byte-level models see before a text), which is not printed.  A
 * write that fails ends the sample with HX_EIO.  Tests: tests/cli/resume.sh,
 * tests/cli/hostile.sh. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rng.h"
#include "tools/train.h"

static int pick(const float *logits, int V, float temperature, int top_k, struct hx_rng *rng)
{
    if (temperature <= 0.0f) {
        int best = 0;
        for (int v = 1; v < V; v++) {
            best = logits[v] > logits[best] ? v : best;
        }
        return best;
    }
    /* threshold = the k-th largest logit (ties keep more than k: harmless) */
    float threshold = -INFINITY;
    if (top_k > 0 && top_k < V) {
        float *sorted = malloc(sizeof(float) * (size_t)V);
        memcpy(sorted, logits, sizeof(float) * (size_t)V);
        for (int i = 0; i < top_k; i++) { /* partial selection: k is small */
            int best = i;
            for (int v = i + 1; v < V; v++) {
                best = sorted[v] > sorted[best] ? v : best;
            }
            float t = sorted[i];
            sorted[i] = sorted[best];
            sorted[best] = t;
        }
        threshold = sorted[top_k - 1];
        free(sorted);
    }
    double maxl = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++) {
        maxl = logits[v] > maxl ? logits[v] : maxl;
    }
    for (int v = 0; v < V; v++) {
        if (logits[v] >= threshold) {
            sum += exp((logits[v] - maxl) / temperature);
        }
    }
    double u = hx_rng_uniform(rng) * sum, acc = 0;
    int last = 0;
    for (int v = 0; v < V; v++) {
        if (logits[v] >= threshold) {
            acc += exp((logits[v] - maxl) / temperature);
            last = v;
            if (u < acc) {
                return v;
            }
        }
    }
    return last;
}

int sample_generate(hx_gpt_t m, const char *prompt, int ntok, float temperature, int top_k,
                    uint64_t seed, FILE *out)
{
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    int T = c->seq_len, V = c->vocab_size, B = c->micro_batch_size;
    size_t plen = strlen(prompt);
    int32_t *ctx = malloc(sizeof(int32_t) * (plen + (size_t)ntok + 1));
    int32_t *tok = calloc((size_t)B * T, sizeof(int32_t));
    int32_t *tgt = calloc((size_t)B * T, sizeof(int32_t));
    float *logits = malloc(sizeof(float) * (size_t)B * T * V);
    if (ctx == NULL || tok == NULL || tgt == NULL || logits == NULL) {
        free(ctx), free(tok), free(tgt), free(logits);
        return HX_ERR(HX_ENOMEM, "sampling buffers for T=%d, V=%d", T, V);
    }
    size_t n = 0;
    for (size_t i = 0; i < plen; i++) {
        ctx[n++] = (unsigned char)prompt[i] % V;
    }
    if (n == 0) { /* an empty prompt: start from the start of a line */
        ctx[n++] = '\n' % V;
    }
    struct hx_rng rng;
    hx_rng_seed(&rng, seed);
    int ret = HX_OK;
    if (V == 256) {
        fwrite(prompt, 1, plen, out);
    }
    for (int k = 0; k < ntok && ret == HX_OK; k++) {
        size_t w = n < (size_t)T ? n : (size_t)T;  /* the window: last T tokens */
        for (int b = 0; b < B; b++) {              /* every sequence of the micro-batch alike */
            memcpy(tok + (size_t)b * T, ctx + n - w, sizeof(int32_t) * w);
        }
        double loss;
        ret = hx_gpt_eval(m, tok, tgt, &loss);
        ret = ret == HX_OK ? hx_gpt_read_logits(m, logits) : ret;
        if (ret != HX_OK) {
            break;
        }
        int next = pick(logits + (w - 1) * (size_t)V, V, temperature, top_k, &rng);
        ctx[n++] = next;
        if (V == 256) {
            fputc(next, out);
        } else {
            fprintf(out, "%s%d", k ? " " : "", next);
        }
        int err = tools_output_error(out); /* flushed per token: the text appears as it grows */
        if (err != 0) {
            ret = HX_ERR(HX_EIO, "writing the sample to %s failed (%s); nothing more is "
                         "generated", out == stdout ? "standard output" : "its file",
                         strerror(err));
        }
    }
    fputc('\n', out);
    int err = ret == HX_OK ? tools_output_error(out) : 0;
    if (err != 0) {
        ret = HX_ERR(HX_EIO, "writing the sample to %s failed (%s)",
                     out == stdout ? "standard output" : "its file", strerror(err));
    }
    free(ctx), free(tok), free(tgt), free(logits);
    return ret;
}

int cmd_sample(int argc, char **argv)
{
    const char *load = NULL, *prompt = "", *sched = NULL;
    int tokens = 200, top_k = 0, seed = 1234, workers = 0;
    float temperature = 1.0f;
    const struct flag flags[] = {
        { "load", FLAG_STRING, &load, 0, 0, "checkpoint directory or file (required)" },
        { "prompt", FLAG_TEXT, &prompt, 0, 0,
          "text the sample continues (empty: from the start of a line)" },
        { "tokens", FLAG_INT, &tokens, 1, 1 << 20, "tokens to generate" },
        { "temperature", FLAG_FLOAT, &temperature, 0, 100, "softmax temperature (0: greedy)" },
        { "top-k", FLAG_INT, &top_k, 0, 1 << 20, "sample among the k likeliest (0: all)" },
        { "seed", FLAG_INT, &seed, 0, 2147483647, "seed of the sampler" },
        { "workers", FLAG_INT, &workers, 0, 64, "CPU workers (0: STARPU_NCPU or all cores)" },
        { "sched", FLAG_STRING, &sched, 0, 0, "scheduling policy" },
    };
    struct flag_set s;
    flags_init(&s, flags, (int)(sizeof flags / sizeof flags[0]));
    int ret = flags_parse_argv(&s, argc, argv, 2,
                               "usage: helix sample --load DIR [flags]\n\n"
                               "Continue a prompt with a trained model.");
    if (ret != 0) {
        return ret == 1 ? 0 : 2;
    }
    if (load == NULL) {
        fprintf(stderr, "helix: error: helix sample needs --load DIR (a checkpoint written by "
                "helix train --save DIR)\n");
        return 2;
    }
    if (sched != NULL && !hx_sched_is_known(sched)) {
        fprintf(stderr, "helix: error: unknown --sched '%s' (see helix train --help)\n",
                flags_esc(sched));
        return 2;
    }
    static struct hx_checkpoint_info info;
    if (hx_checkpoint_peek(load, &info) != HX_OK) {
        return 2;
    }
    struct hx_gpt_config c = info.model;
    c.micro_batch_size = 1;     /* one sequence is all sampling needs */
    c.num_micro_batches = 1;
    c.tile_seqs = 0;
    hx_gpt_t m = NULL;
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = workers;
    ro.sched = sched;
    ret = hx_gpt_build(&m, &c, &info.optim);
    /* the model takes the checkpoint: an input error, found before the runtime starts */
    ret = ret == HX_OK ? hx_checkpoint_check_model(load, &info, m) : ret;
    ret = ret == HX_OK ? hx_runtime_init(&ro) : ret;
    if (ret != HX_OK) {
        hx_gpt_destroy(m);
        return ret == HX_EINVAL ? 2 : 1;
    }
    ret = hx_gpt_realize(m);
    ret = ret == HX_OK ? hx_checkpoint_load(load, m, &info) : ret;
    ret = ret == HX_OK ? sample_generate(m, prompt, tokens, temperature, top_k, (uint64_t)seed,
                                         stdout)
                       : ret;
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    flags_free(&s);
    return ret == HX_OK ? 0 : 1;
}
