/* SPDX-License-Identifier: MIT */
/* tests/codelets/attention.c: the blocked (flash-attention) codelets, built with
 * hx_attention_fwd / hx_attention_bwd (multi-head) or hx_gqa_attention_fwd / _bwd
 * (grouped-query) and run on 2 workers, match the full-softmax hx_ref_gqa_attention_fwd /
 * _bwd (normwise rel. error <= 1e-5, no NaN/Inf): forward out and lse, and backward dqkv
 * computed from the codelet's own out and lse.
 * Multi-head: T = 17 with C = 96, 3 heads, blocks of 5 and 8 (smaller than T, not dividing
 * it), 17 (equal), 64 and the default (larger); T = 32, 4 heads, block 16 (dividing T);
 * T = 300 with 2 heads of 260 columns (past the device kernels' work-group of 256 items in
 * both).  Grouped-query: 6 query heads of 16 columns on KV = 2 (groups of 3) and KV = 1
 * (multi-query), and T = 300 (4 query heads on 2, the device's dk, dv summed over chunks and
 * heads); a second run of each grouped-query graph is bitwise the first (dk, dv summed over
 * a kv head's query heads in a fixed order).  Row tiles of one sequence (3 tasks), and one
 * tile of all sequences.  Outputs start as NaN.  And hx_gqa_attention_fwd refuses 6 query
 * heads on 4 kv heads, naming both, before any task exists. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codelets/harness.h"

#define NCASES 12
#define NGQA 4 /* the cases with KV > 0, each also run twice */
#define NCHECKS (NCASES * 3 + NGQA + 1)

struct attn_case {
    int nseq, T, C, NH;
    int tile_rows; /* 0: one tile */
    int block;     /* 0: the builder's default (64) */
    int KV;        /* key/value heads; 0: multi-head through hx_attention_fwd/bwd */
};

static void test_case(const struct attn_case *s, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, NH = s->NH, tr = s->tile_rows;
    const int KV = s->KV > 0 ? s->KV : NH, W = C + 2 * KV * (C / NH); /* q | k | v */
    hx_graph_t g = graph_new();
    struct hx_tensor *qkv = tensor_f32(g, "qkv", N, W, tr);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *lse = tensor_f32(g, "lse", N, NH, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *dqkv = tensor_f32(g, "dqkv", N, W, tr);
    if (s->KV == 0) {
        hx_attention_fwd(g, out, lse, qkv, s->T, NH, s->block);
        hx_attention_bwd(g, dqkv, qkv, out, dout, lse, s->T, NH, s->block);
    } else {
        hx_gqa_attention_fwd(g, out, lse, qkv, s->T, NH, KV, s->block);
        hx_gqa_attention_bwd(g, dqkv, qkv, out, dout, lse, s->T, NH, KV, s->block);
    }
    graph_realize(g);

    /* scores of std ~1.3: softmax rows neither flat nor one-hot */
    fill_uniform(hx_f32(qkv), hx_tensor_numel(qkv), r, 2.0f, 0.0f);
    fill_uniform(hx_f32(dout), hx_tensor_numel(dout), r, 1.0f, 0.0f);
    fill_nan(hx_f32(out), hx_tensor_numel(out));
    fill_nan(hx_f32(lse), hx_tensor_numel(lse));
    fill_nan(hx_f32(dqkv), hx_tensor_numel(dqkv));
    double *qkv_d = dup_f64(hx_f32(qkv), hx_tensor_numel(qkv));
    double *dout_d = dup_f64(hx_f32(dout), hx_tensor_numel(dout));

    graph_run(g);

    char sh[96];
    snprintf(sh, sizeof sh, "nseq=%d T=%d C=%d NH=%d%s block=%d, %d tile%s", s->nseq, s->T, C,
             NH, s->KV > 0 ? label(" KV=%d", KV) : "", s->block, qkv->ntiles,
             qkv->ntiles > 1 ? "s" : "");
    double *out_ref = dalloc(hx_tensor_numel(out)), *lse_ref = dalloc(hx_tensor_numel(lse));
    double *dqkv_ref = dalloc(hx_tensor_numel(dqkv));
    hx_ref_gqa_attention_fwd(out_ref, lse_ref, qkv_d, s->nseq, s->T, C, NH, KV);
    hx_ref_gqa_attention_bwd(dqkv_ref, dout_d, qkv_d, s->nseq, s->T, C, NH, KV);
    check_tensor(label("attention_fwd out %s", sh), out, out_ref, TOL);
    check_tensor(label("attention_fwd lse %s", sh), lse, lse_ref, TOL);
    check_tensor(label("attention_bwd dqkv %s", sh), dqkv, dqkv_ref, TOL);

    if (s->KV > 0) {
        /* the inputs are unchanged and every output is written (=): run the graph again */
        size_t n = hx_tensor_numel(dqkv), no = hx_tensor_numel(out);
        float *first = malloc((n + no) * sizeof(float));
        if (first == NULL) {
            tap_diag("out of memory");
            exit(1);
        }
        hx_tensor_begin_access(dqkv, 'r');
        memcpy(first, hx_f32(dqkv), n * sizeof(float));
        hx_tensor_end_access(dqkv);
        hx_tensor_begin_access(out, 'r');
        memcpy(first + n, hx_f32(out), no * sizeof(float));
        hx_tensor_end_access(out);
        graph_run(g);
        hx_tensor_begin_access(dqkv, 'r');
        int same = memcmp(first, hx_f32(dqkv), n * sizeof(float)) == 0;
        hx_tensor_end_access(dqkv);
        hx_tensor_begin_access(out, 'r');
        same = same && memcmp(first + n, hx_f32(out), no * sizeof(float)) == 0;
        hx_tensor_end_access(out);
        tap_ok(same && hx_run_status() == HX_OK, "attention out and dqkv bitwise repeatable, %s",
               sh);
        free(first);
    }

    free(out_ref);
    free(lse_ref);
    free(dqkv_ref);
    free(qkv_d);
    free(dout_d);
    hx_graph_destroy(g);
}

/* In a child (no runtime: builders never touch StarPU), build GQA with NH % KV != 0: it must
 * abort with a message naming both counts.  1 if so; the message's start in msg. */
static int refuses_uneven_groups(char *msg, size_t size)
{
    int fd[2];
    msg[0] = '\0';
    if (pipe(fd) != 0) {
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        hx_graph_t g = graph_new();
        struct hx_tensor *qkv = tensor_f32(g, "qkv", 17, 14 * 8, 17); /* (6 + 2 x 4) x hs 8 */
        struct hx_tensor *out = tensor_f32(g, "out", 17, 48, 17);
        struct hx_tensor *lse = tensor_f32(g, "lse", 17, 6, 17);
        hx_gqa_attention_fwd(g, out, lse, qkv, 17, 6, 4, 0);
        _exit(0); /* accepted: the caller fails */
    }
    close(fd[1]);
    /* to the end: stderr is unbuffered, so the message may come in several writes (one read
     * took only its first on the CI machine) */
    size_t got = 0;
    ssize_t n;
    while (got < size - 1 && (n = read(fd[0], msg + got, size - 1 - got)) > 0) {
        got += (size_t)n;
    }
    msg[got] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, "6 query heads") != NULL &&
           strstr(msg, "multiple of 4 key/value heads") != NULL;
}

int main(void)
{
    static const struct attn_case cases[NCASES] = {
        { 3, 17, 96, 3, 17, 5, 0 },  /* one sequence per tile, block < T */
        { 3, 17, 96, 3, 17, 8, 0 },  /* block < T */
        { 3, 17, 96, 3, 17, 17, 0 }, /* block == T */
        { 3, 17, 96, 3, 17, 64, 0 }, /* block > T */
        { 3, 17, 96, 3, 0, 8, 0 },   /* one tile of 3 sequences */
        { 2, 17, 96, 3, 0, 0, 0 },   /* default block (64) */
        { 2, 32, 64, 4, 32, 16, 0 }, /* block divides T */
        /* T and hs above 256 (HX_BLOCK): the device kernels' second chunk of keys (online
         * softmax rescale, dq/dk/dv summed across chunks) and second pass over a head's
         * columns (codelets/kernels/attention.cl) */
        { 2, 300, 520, 2, 0, 64, 0 },
        /* grouped-query: query heads 0-2 read kv head 0, 3-5 kv head 1 */
        { 3, 17, 96, 6, 17, 5, 2 },
        { 3, 17, 96, 6, 0, 8, 2 },
        { 2, 17, 96, 6, 0, 0, 1 }, /* multi-query: one kv head for all */
        { 2, 300, 128, 4, 0, 64, 2 },
    };
    struct rng r = { 0x617474656e01ull };
    char msg[512];
    int refused = refuses_uneven_groups(msg, sizeof msg);

    harness_start(NCHECKS);
    tap_ok(refused, "hx_gqa_attention_fwd with NH=6, KV=4 aborts naming both: %s", msg);
    for (int i = 0; i < NCASES; i++) {
        test_case(&cases[i], &r);
    }
    return harness_end();
}
