/* SPDX-License-Identifier: MIT */
/* tests/graphs/determinism.c: the graph, not thread timing, fixes every reduction order.
 * The same seed and data give bitwise-identical losses, gradient norms and final parameters
 * with 1 and 2 workers and under hx-prio and StarPU's eager, prio and lws policies.  The
 * model has several row tiles and two micro-batches, so parallel tiles and accumulation
 * chains are exercised; 5 AdamW steps per run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "tap.h"

#define STEPS 5

struct run {
    double loss[STEPS], norm[STEPS];
    uint64_t param_hash;
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

static int train(int workers, const char *sched, struct run *out)
{
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = workers;
    ro.sched = sched;
    if (hx_runtime_init(&ro) != HX_OK) {
        return -1;
    }
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 2, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 3,
                               .num_micro_batches = 2, .attn_block = 16 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, STEPS);
    o.lr = 3e-3f;
    hx_gpt_t m;
    struct hx_dataset d;
    int ret = hx_gpt_build(&m, &c, &o);
    if (ret == HX_OK) {
        ret = hx_gpt_realize(m);
    }
    if (ret == HX_OK) {
        ret = hx_data_load_default(&d);
    }
    if (ret != HX_OK) {
        hx_runtime_shutdown();
        return -1;
    }
    hx_gpt_init_params(m, 99);
    int n = c.seq_len * c.micro_batch_size * c.num_micro_batches;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)n), *tgt = malloc(sizeof(int32_t) * (size_t)n);
    for (int s = 0; s < STEPS && ret == HX_OK; s++) {
        struct hx_step_result r;
        hx_data_next_batch(&d, c.micro_batch_size * c.num_micro_batches, c.seq_len, tok, tgt);
        ret = hx_gpt_set_batch(m, tok, tgt);
        ret = ret == HX_OK ? hx_gpt_step(m, s, &r) : ret;
        out->loss[s] = r.loss;
        out->norm[s] = r.grad_norm;
    }
    out->param_hash = 0xcbf29ce484222325ULL;
    for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
        hx_tensor_t p = hx_gpt_param(m, i);
        hx_tensor_begin_access(p, 'r');
        out->param_hash = fnv1a(out->param_hash, p->data, hx_tensor_bytes(p));
        hx_tensor_end_access(p);
    }
    free(tok);
    free(tgt);
    hx_data_free(&d);
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    return ret == HX_OK ? 0 : -1;
}

int main(void)
{
    static const struct { int workers; const char *sched; } runs[] = {
        { 1, "hx-prio" }, { 2, "hx-prio" }, { 1, "eager" }, { 2, "eager" },
        { 2, "prio" }, { 2, "lws" }, { 1, "lws" },
    };
    int nruns = (int)(sizeof runs / sizeof runs[0]);
    tap_plan(nruns);
    struct run base;
    memset(&base, 0, sizeof base);
    for (int i = 0; i < nruns; i++) {
        struct run r;
        memset(&r, 0, sizeof r);
        int ok = train(runs[i].workers, runs[i].sched, &r) == 0;
        if (i == 0) {
            base = r;
            tap_ok(ok, "%d worker(s), %s: baseline losses %.9f .. %.9f, params %016llx",
                   runs[i].workers, runs[i].sched, r.loss[0], r.loss[STEPS - 1],
                   (unsigned long long)r.param_hash);
            continue;
        }
        int same = ok && memcmp(r.loss, base.loss, sizeof r.loss) == 0 &&
                   memcmp(r.norm, base.norm, sizeof r.norm) == 0 &&
                   r.param_hash == base.param_hash;
        tap_ok(same, "%d worker(s), %s: losses, norms and parameters bitwise equal to the "
               "baseline (last loss %.9f vs %.9f, params %016llx)", runs[i].workers,
               runs[i].sched, r.loss[STEPS - 1], base.loss[STEPS - 1],
               (unsigned long long)r.param_hash);
    }
    return tap_exit();
}
