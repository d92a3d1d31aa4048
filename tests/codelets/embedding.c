/* SPDX-License-Identifier: MIT */
/* tests/codelets/embedding.c: the embedding codelets, built with hx_embed_fwd / hx_embed_bwd
 * and run on 2 workers, match hx_ref_embed_fwd / hx_ref_embed_bwd (normwise rel. error
 * <= 1e-5, no NaN/Inf): out = wte[token] + wpe[position]; dwte, dwpe pre-filled so that they
 * must accumulate, with tokens repeated within a sequence, across sequences and across row
 * tiles (only 7 distinct ids plus V-1).  V = 257, C = 96, T = 17 (wpe with more rows than T)
 * with 3 tiles of one sequence and one tile; V = 50, T = 8 with 2 tiles.  out starts NaN.
 * Vocabulary parallel (hx_embed_fwd_vp / hx_embed_bwd_vp), V = 257 in 2 (129 | 128) and 3
 * (86 | 1 | 170) shards and V = 50 in 2 (17 | 33), position term on shard 0 only: each shard
 * matches hx_ref_embed_fwd_vp, the shards' outputs sum to the unsharded codelet's out and
 * their dwte concatenate to its dwte, dwpe equals its dwpe, all bit for bit, and the
 * unsharded out is fp32 wte + wpe bit for bit; a token outside the whole vocabulary is still
 * reported by a shard that does not hold it. */
#include "codelets/harness.h"

#include "testutil.h"

#define NSHAPES 3
#define MAXPARTS 3
#define NSPLITS 3
#define NCHECKS (NSHAPES * 3 + NSPLITS * 5 + 1)

struct shape {
    int nseq, T, C, V, maxT;
    int tile_rows; /* 0: one tile */
};

static void test_shape(const struct shape *s, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, V = s->V, tr = s->tile_rows;
    const size_t nc = (size_t)N * C;
    hx_graph_t g = graph_new();
    struct hx_tensor *tokens = hx_graph_tensor(g, "tokens", HX_I32, HX_ROLE_INPUT, N, 1, tr);
    struct hx_tensor *wte = tensor_f32(g, "wte", V, C, 0);
    struct hx_tensor *wpe = tensor_f32(g, "wpe", s->maxT, C, 0);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *dwte = tensor_f32(g, "dwte", V, C, 0);
    struct hx_tensor *dwpe = tensor_f32(g, "dwpe", s->maxT, C, 0);
    hx_embed_fwd(g, out, tokens, wte, wpe, s->T);
    hx_embed_bwd(g, dwte, dwpe, dout, tokens, s->T);
    graph_realize(g);

    int *tok = xcalloc((size_t)N, sizeof *tok);
    for (int i = 0; i < N; i++) {
        tok[i] = i % 5 == 3 ? V - 1 : rng_int(r, 7);
        hx_i32(tokens)[i] = tok[i];
    }
    struct hx_tensor *in[] = { wte, wpe, dout, dwte, dwpe };
    double *d[5];
    for (int i = 0; i < 5; i++) {
        fill_uniform(hx_f32(in[i]), hx_tensor_numel(in[i]), r, 1.0f, 0.0f);
        d[i] = dup_f64(hx_f32(in[i]), hx_tensor_numel(in[i]));
    }
    fill_nan(hx_f32(out), nc);

    graph_run(g);

    char sh[96];
    snprintf(sh, sizeof sh, "N=%d T=%d C=%d V=%d, %d tile%s", N, s->T, C, V, out->ntiles,
             out->ntiles > 1 ? "s" : "");
    double *ref = dalloc(nc);
    hx_ref_embed_fwd(ref, tok, d[0], d[1], N, s->T, C);
    check_tensor(label("embed_fwd out %s", sh), out, ref, TOL);
    hx_ref_embed_bwd(d[3], d[4], d[2], tok, N, s->T, C);
    check_tensor(label("embed_bwd dwte += (repeated tokens) %s", sh), dwte, d[3], TOL);
    check_tensor(label("embed_bwd dwpe (%d,%d) += %s", s->maxT, C, sh), dwpe, d[4], TOL);

    free(ref);
    free(tok);
    for (int i = 0; i < 5; i++) {
        free(d[i]);
    }
    hx_graph_destroy(g);
}

struct split {
    int shape; /* index into shapes[] */
    int parts;
    int rows[MAXPARTS]; /* Vl of each shard, summing to V, in vocabulary order */
};

/* Exact comparison of fp32 results: the reference is an fp32 array widened to double. */
static int check_exact(const char *name, const float *got, const float *want, size_t n)
{
    double *ref = dup_f64(want, n);
    int ok = check(name, got, ref, n, 0.0);
    free(ref);
    return ok;
}

/* One graph: the unsharded builders and, beside them, every shard's, on the same inputs. */
static void test_split(const struct shape *s, const struct split *sp, struct rng *r)
{
    const int N = s->nseq * s->T, C = s->C, V = s->V, tr = s->tile_rows, P = sp->parts;
    const size_t nc = (size_t)N * C, nte = (size_t)V * C, npe = (size_t)s->maxT * C;
    int v0[MAXPARTS];
    for (int t = 0, acc = 0; t < P; t++) {
        v0[t] = acc;
        acc += sp->rows[t];
    }
    hx_graph_t g = graph_new();
    struct hx_tensor *tokens = hx_graph_tensor(g, "tokens", HX_I32, HX_ROLE_INPUT, N, 1, tr);
    struct hx_tensor *wte = tensor_f32(g, "wte", V, C, 0);
    struct hx_tensor *wpe = tensor_f32(g, "wpe", s->maxT, C, 0);
    struct hx_tensor *out = tensor_f32(g, "out", N, C, tr);
    struct hx_tensor *dout = tensor_f32(g, "dout", N, C, tr);
    struct hx_tensor *dwte = tensor_f32(g, "dwte", V, C, 0);
    struct hx_tensor *dwpe = tensor_f32(g, "dwpe", s->maxT, C, 0);
    struct hx_tensor *dwpe0 = tensor_f32(g, "dwpe_shard0", s->maxT, C, 0);
    struct hx_tensor *wte_s[MAXPARTS], *out_s[MAXPARTS], *dwte_s[MAXPARTS];
    hx_embed_fwd(g, out, tokens, wte, wpe, s->T);
    hx_embed_bwd(g, dwte, dwpe, dout, tokens, s->T);
    for (int t = 0; t < P; t++) {
        wte_s[t] = tensor_f32(g, label("wte_shard%d", t), sp->rows[t], C, 0);
        out_s[t] = tensor_f32(g, label("out_shard%d", t), N, C, tr);
        dwte_s[t] = tensor_f32(g, label("dwte_shard%d", t), sp->rows[t], C, 0);
        hx_embed_fwd_vp(g, out_s[t], tokens, wte_s[t], wpe, s->T, v0[t], V, t == 0);
        hx_embed_bwd_vp(g, dwte_s[t], t == 0 ? dwpe0 : NULL, dout, tokens, s->T, v0[t], V);
    }
    graph_realize(g);

    /* tokens from every shard, repeated, with both ends of each shard */
    int *tok = xcalloc((size_t)N, sizeof *tok);
    for (int i = 0; i < N; i++) {
        int e = rng_int(r, P);
        tok[i] = i % 4 == 0 ? v0[e] : i % 4 == 1 ? v0[e] + sp->rows[e] - 1 : rng_int(r, V);
        hx_i32(tokens)[i] = tok[i];
    }
    fill_uniform(hx_f32(wte), nte, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(wpe), npe, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dout), nc, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dwte), nte, r, 1.0f, 0.0f);
    fill_uniform(hx_f32(dwpe), npe, r, 1.0f, 0.0f);
    memcpy(hx_f32(dwpe0), hx_f32(dwpe), npe * sizeof(float));
    fill_nan(hx_f32(out), nc);
    for (int t = 0; t < P; t++) {
        size_t off = (size_t)v0[t] * C, n = (size_t)sp->rows[t] * C;
        memcpy(hx_f32(wte_s[t]), hx_f32(wte) + off, n * sizeof(float));
        memcpy(hx_f32(dwte_s[t]), hx_f32(dwte) + off, n * sizeof(float));
        fill_nan(hx_f32(out_s[t]), nc);
    }
    double *wte_d = dup_f64(hx_f32(wte), nte), *wpe_d = dup_f64(hx_f32(wpe), npe);
    /* fp32 te + pe on the host: what the unsharded codelet has always computed */
    float *want = xcalloc(nc, sizeof *want);
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < C; c++) {
            want[(size_t)i * C + c] = hx_f32(wte)[(size_t)tok[i] * C + c] +
                                      hx_f32(wpe)[(size_t)(i % s->T) * C + c];
        }
    }

    graph_run(g);

    char sh[96];
    snprintf(sh, sizeof sh, "N=%d T=%d C=%d V=%d in %d parts, %d tile%s", N, s->T, C, V, P,
             out->ntiles, out->ntiles > 1 ? "s" : "");
    float *got = xcalloc((size_t)P * nc, sizeof *got), *whole = xcalloc(nc, sizeof *whole);
    float *sum = xcalloc(nc, sizeof *sum);
    double *ref = dalloc((size_t)P * nc);
    hx_tensor_read(out, whole);
    for (int t = 0; t < P; t++) {
        hx_tensor_read(out_s[t], got + (size_t)t * nc);
        hx_ref_embed_fwd_vp(ref + (size_t)t * nc, tok, wte_d + (size_t)v0[t] * C, v0[t],
                            sp->rows[t], t == 0 ? wpe_d : NULL, N, s->T, C);
        for (size_t k = 0; k < nc; k++) {
            sum[k] = t == 0 ? got[k] : sum[k] + got[(size_t)t * nc + k];
        }
    }
    check(label("embed_fwd_vp every shard vs hx_ref_embed_fwd_vp, %s", sh), got, ref,
          (size_t)P * nc, TOL);
    check_exact(label("embed_fwd unsharded out == fp32 wte + wpe bit for bit, %s", sh), whole,
                want, nc);
    check_exact(label("embed_fwd_vp sum over shards == unsharded out bit for bit, %s", sh), sum,
                whole, nc);
    float *dte = xcalloc(nte, sizeof *dte), *dte_whole = xcalloc(nte, sizeof *dte_whole);
    for (int t = 0; t < P; t++) {
        hx_tensor_read(dwte_s[t], dte + (size_t)v0[t] * C);
    }
    hx_tensor_read(dwte, dte_whole);
    check_exact(label("embed_bwd_vp dwte shards concatenated == unsharded dwte, %s", sh), dte,
                dte_whole, nte);
    float *dpe = xcalloc(npe, sizeof *dpe), *dpe_whole = xcalloc(npe, sizeof *dpe_whole);
    hx_tensor_read(dwpe0, dpe);
    hx_tensor_read(dwpe, dpe_whole);
    check_exact(label("embed_bwd_vp dwpe (shard 0 only) == unsharded dwpe, %s", sh), dpe,
                dpe_whole, npe);

    free(dpe);
    free(dpe_whole);
    free(dte);
    free(dte_whole);
    free(got);
    free(whole);
    free(sum);
    free(ref);
    free(want);
    free(wte_d);
    free(wpe_d);
    free(tok);
    hx_graph_destroy(g);
}

/* Shard 1 of 2 of V = 257 sees token 257: outside the whole vocabulary, so reported although
 * no shard would index it; the message names the vocabulary. */
static void test_bad_token(void)
{
    const int T = 17, C = 8;
    hx_graph_t g = graph_new();
    struct hx_tensor *tokens = hx_graph_tensor(g, "tokens", HX_I32, HX_ROLE_INPUT, T, 1, 0);
    struct hx_tensor *wte = tensor_f32(g, "wte_shard1", 128, C, 0);
    struct hx_tensor *wpe = tensor_f32(g, "wpe", T, C, 0);
    struct hx_tensor *out = tensor_f32(g, "out", T, C, 0);
    hx_embed_fwd_vp(g, out, tokens, wte, wpe, T, 129, 257, 0);
    graph_realize(g);
    hx_i32(tokens)[3] = 257;
    char dir[] = "/tmp/hx-embed-XXXXXX", msg[512] = "";
    int status = HX_OK;
    if (mkdtemp(dir) != NULL) {
        int saved = capture_begin(dir);
        hx_graph_submit(g, 0, -1);
        hx_graph_wait(g);
        status = hx_run_status();
        capture_end(saved, msg, sizeof msg);
        rmdir(dir);
    }
    int ok = status == HX_EINVAL && strstr(msg, "token 257 outside the vocabulary [0,257)");
    tap_ok(ok, "embed_fwd_vp shard [129,257): token 257 reported (status %s)",
           hx_status_str(status));
    if (!ok) {
        tap_diag_lines(msg);
    }
    hx_run_status_reset();
    hx_graph_destroy(g);
}

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 257, 24, 17 }, /* one sequence per tile: 3 tasks per builder */
        { 2, 17, 96, 257, 17, 0 },  /* one tile */
        { 4, 8, 32, 50, 8, 16 },    /* 2 tiles of 2 sequences */
    };
    static const struct split splits[NSPLITS] = {
        { 0, 2, { 129, 128 } },   /* the uneven rule of the collectives: 257/2 + (t < 1) */
        { 0, 3, { 86, 1, 170 } }, /* any split: a one-row shard in the middle */
        { 2, 2, { 17, 33 } },
    };
    struct rng r = { 0x656d62656401ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    for (int i = 0; i < NSPLITS; i++) {
        test_split(&shapes[splits[i].shape], &splits[i], &r);
    }
    test_bad_token();
    return harness_end();
}
