/* SPDX-License-Identifier: MIT */
/* tests/graphs/pipeline.c: pipeline schedules as data (include/helix/pipeline.h).
 *  - every order runs each micro-batch's forward once, before its backward, and the
 *    backwards in micro-batch order (so every schedule accumulates the same gradients);
 *  - 1F1B keeps at most min(p - s, m) micro-batches in flight on stage s, GPipe m;
 *  - with unit forwards and backwards of twice the cost, both leave the bubble
 *    (p-1)/(m+p-1) of the schedule;
 *  - the folded W (DHelix's waves): on every stage each B(k) with k + p < m listed right
 *    before F(k + p), of the other strand (an SI block with --strands); forwards only
 *    before the first B, backwards only after the last F;
 *  - a stage's graph holds only its layers, and as many activation sets as micro-batches
 *    in flight (built for rank 0 and 1 of a pp=2 mesh, never run). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/mesh.h"
#include "helix/pipeline.h"
#include "tap.h"

/* Each chunk of the stage: every micro-batch's F once, in order; its B once, in order, after
 * its F; a chunk's B after the later chunk's B (the gradient comes back through it) and its
 * F before the later chunk's F. */
static int order_ok(int sched, int p, int s, int m)
{
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m);
    int first[2], len[2], nch = hx_pipeline_chunks(sched, p, s, first, len);
    int nf[2] = { 0 }, nb[2] = { 0 };
    int n = t != NULL ? hx_pipeline_tasks(sched, p, s, m, t) : 0;
    int ok = n == 2 * m * nch;
    for (int k = 0; ok && k < n; k++) {
        int c = t[k].chunk, j = t[k].mb;
        if (t[k].fwd) {
            ok = j == nf[c] && (c == 0 || nf[0] > j);
            nf[c]++;
        } else {
            ok = j == nb[c] && nf[c] > j && (c == nch - 1 || nb[c + 1] > j);
            nb[c]++;
        }
    }
    free(t);
    return ok;
}

/* The waves' SI blocks on stage @p s: each B(k) with k + p < m right before F(k + p) of the
 * other strand, and no B before the first F ends the warm-up or F after the last B... */
static int waves_ok(int p, int s, int m)
{
    struct hx_pipe_task *t = malloc(sizeof *t * 4 * (size_t)m);
    int n = t != NULL ? hx_pipeline_tasks(HX_PIPE_FOLD, p, s, m, t) : 0, ok = n > 0;
    int pairs = 0, first_b = n, last_f = -1;
    for (int k = 0; ok && k < n; k++) {
        if (!t[k].fwd && t[k].mb + p < m) {
            const struct hx_pipe_task *f = k + 1 < n ? &t[k + 1] : NULL;
            ok = f != NULL && f->fwd && f->mb == t[k].mb + p &&
                 hx_pipeline_strand(HX_PIPE_FOLD, p, f->mb) !=
                     hx_pipeline_strand(HX_PIPE_FOLD, p, t[k].mb);
            pairs++;
        }
        first_b = !t[k].fwd && k < first_b ? k : first_b;
        last_f = t[k].fwd ? k : last_f;
    }
    int nch = n / (2 * m > 0 ? 2 * m : 1);
    /* warm-up: p forwards of chunk 0 at least; cool-down: backwards only */
    ok = ok && pairs == nch * (m > p ? m - p : 0) && first_b >= (m < p ? m : p) &&
         last_f < n - 1;
    free(t);
    return ok;
}

/* Activation tensors (role ACTIVATION) whose name says layer @p l ("h<l>.") */
static int layer_acts(hx_graph_t g, int l)
{
    char pre[16];
    snprintf(pre, sizeof pre, "h%d.", l);
    int n = 0;
    for (int i = 0; i < g->ntensors; i++) {
        n += g->tensors[i]->role == HX_ROLE_ACTIVATION &&
             strncmp(g->tensors[i]->name, pre, strlen(pre)) == 0 &&
             strstr(g->tensors[i]->name, ".dres") == NULL;
    }
    return n;
}

int main(void)
{
    static const int ps[] = { 1, 2, 4 }, ms[] = { 1, 2, 4, 8 };
    tap_plan(4 + 3 + 4 + 3);
    int orders = 1, flight = 1, bubble = 1, fold_worse = 0, waves = 1;
    double worst = 0;
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 4; b++) {
            int p = ps[a], m = ms[b];
            for (int s = 0; s < p; s++) { /* the folded W's waves */
                waves &= waves_ok(p, s, m);
            }
            for (int sched = HX_PIPE_1F1B; sched <= HX_PIPE_FOLD; sched++) {
                for (int s = 0; s < p; s++) {
                    orders &= order_ok(sched, p, s, m);
                    int want = sched == HX_PIPE_GPIPE ? m : (p - s < m ? p - s : m);
                    int got = hx_pipeline_in_flight(sched, p, s, m);
                    flight &= sched == HX_PIPE_FOLD ? got >= 1 && got <= 2 * p : got == want;
                }
                double span = hx_pipeline_makespan(sched, p, m, 1.0, 2.0);
                double got = 1.0 - m * 3.0 / span, want = (p - 1.0) / (m + p - 1.0);
                if (sched == HX_PIPE_FOLD) { /* twice the virtual stages on p stages */
                    got = 1.0 - m * 3.0 * 2 / span;
                    fold_worse |= got > want + 1e-12;
                    continue;
                }
                worst = fmax(worst, fabs(got - want));
                bubble &= fabs(got - want) < 1e-12;
            }
        }
    }
    tap_ok(orders, "1F1B, GPipe and folded orders: each chunk's forwards and backwards once, "
           "in micro-batch order, a backward after its forward (p 1, 2, 4; m 1, 2, 4, 8)");
    tap_ok(flight, "in flight on stage s: min(p-s, m) with 1F1B, m with GPipe, at most 2p "
           "folded");
    tap_ok(!fold_worse, "the folded W's bubble is at most 1F1B's (p-1)/(m+p-1)");
    tap_ok(bubble, "bubble fraction (p-1)/(m+p-1) for both (worst difference %.2g)", worst);
    tap_ok(waves, "folded W (waves): each B(k) right before F(k+p), of the other strand, "
           "forwards only first and backwards only last (p 1, 2, 4; m 1, 2, 4, 8)");
    tap_ok(hx_pipeline_schedule_parse("1f1b") == HX_PIPE_1F1B &&
               hx_pipeline_schedule_parse("gpipe") == HX_PIPE_GPIPE &&
               hx_pipeline_schedule_parse("fold") == HX_PIPE_FOLD &&
               hx_pipeline_schedule_parse("zigzag") == -1,
           "schedule names parse, and an unknown one is refused");
    tap_ok(strcmp(hx_pipeline_schedule_name(HX_PIPE_GPIPE), "gpipe") == 0,
           "schedule names print");

    /* stage graphs of a 4-layer model on pp=2, 8 micro-batches */
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 4, .num_heads = 4,
                               .hidden_size = 64, .seq_len = 32, .micro_batch_size = 2,
                               .num_micro_batches = 8 };
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    for (int sched = HX_PIPE_1F1B; sched <= HX_PIPE_GPIPE; sched++) {
        int sets[2][4] = { { 0 } }, held[2] = { 0 }, ok = 1;
        for (int r = 0; r < 2; r++) {
            struct hx_mesh_request q = { .world_size = 2, .world_rank = r, .pp = 2 };
            struct hx_mesh mesh;
            struct hx_parallel_config par = { .mesh = &mesh, .pipeline_schedule = sched };
            hx_gpt_t m;
            if (hx_mesh_init(&mesh, &q, 0) != HX_OK ||
                hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
                ok = 0;
                break;
            }
            for (int l = 0; l < 4; l++) {
                sets[r][l] = layer_acts(hx_gpt_graph(m), l);
            }
            for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
                held[r] += hx_gpt_param(m, i) != NULL;
            }
            hx_gpt_destroy(m);
        }
        /* 13 activation tensors per layer and set (without the backward's dres/dres_mid) */
        int f0 = sched == HX_PIPE_GPIPE ? 8 : 2, f1 = sched == HX_PIPE_GPIPE ? 8 : 1;
        tap_ok(ok && sets[0][0] == 13 * f0 && sets[0][1] == 13 * f0 && sets[0][2] == 0 &&
                   sets[1][2] == 13 * f1 && sets[1][3] == 13 * f1 && sets[1][0] == 0,
               "%s: stage 0 holds layers 0-1 in %d activation sets (%d, %d tensors), stage 1 "
               "layers 2-3 in %d (%d, %d)", hx_pipeline_schedule_name(sched), f0, sets[0][0],
               sets[0][1], f1, sets[1][2], sets[1][3]);
        /* wte wpe + 2 layers on stage 0; 2 layers + wte (tied head) + lnf_w lnf_b on 1 */
        tap_ok(ok && held[0] == 2 + 2 * 12 && held[1] == 2 * 12 + 3,
               "%s: stage 0 keeps %d parameter tensors (want 26), stage 1 %d (want 27)",
               hx_pipeline_schedule_name(sched), held[0], held[1]);
    }
    /* folded: stage 0 holds chunks 0 and 3 (layers 0 and 3) with the embedding and the
     * head, stage 1 the turn (layers 1 and 2) */
    {
        int held[2] = { 0 }, acts[2][4] = { { 0 } }, ok = 1;
        for (int r = 0; r < 2; r++) {
            struct hx_mesh_request q = { .world_size = 2, .world_rank = r, .pp = 2 };
            struct hx_mesh mesh;
            struct hx_parallel_config par = { .mesh = &mesh, .pipeline_schedule = HX_PIPE_FOLD };
            hx_gpt_t m;
            if (hx_mesh_init(&mesh, &q, 0) != HX_OK ||
                hx_gpt_build_parallel(&m, &c, &o, &par) != HX_OK) {
                ok = 0;
                break;
            }
            for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
                held[r] += hx_gpt_param(m, i) != NULL;
            }
            for (int l = 0; l < 4; l++) {
                acts[r][l] = layer_acts(hx_gpt_graph(m), l) > 0;
            }
            hx_gpt_destroy(m);
        }
        tap_ok(ok && acts[0][0] && !acts[0][1] && !acts[0][2] && acts[0][3] && !acts[1][0] &&
                   acts[1][1] && acts[1][2] && !acts[1][3],
               "fold: stage 0 runs layers 0 and 3, stage 1 layers 1 and 2");
        tap_ok(ok && held[0] == 2 + 2 * 12 + 2 && held[1] == 2 * 12,
               "fold: stage 0 keeps wte, wpe, 2 layers and the final LayerNorm (%d tensors, "
               "want 28; one wte for embedding and head), stage 1 %d (want 24)", held[0],
               held[1]);
    }
    /* the W's phases on stage 0 (p 2, m 8): forwards only, then forwards and backwards
     * interleaved, then backwards only */
    {
        struct hx_pipe_task t[32];
        int n = hx_pipeline_tasks(HX_PIPE_FOLD, 2, 0, 8, t), k = 0, warm, steady = 0;
        while (k < n && t[k].fwd) {
            k++;
        }
        warm = k;
        int last_f = n - 1;
        while (last_f >= 0 && !t[last_f].fwd) {
            last_f--;
        }
        for (int j = warm; j <= last_f; j++) {
            steady += !t[j].fwd;
        }
        tap_ok(warm >= 2 && steady >= 4 && n - 1 - last_f >= 2,
               "fold p 2 m 8, stage 0: warm-up of %d forwards, a steady phase with %d "
               "backwards among the forwards, cool-down of %d backwards", warm, steady,
               n - 1 - last_f);
    }
    return tap_exit();
}
