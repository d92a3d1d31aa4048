/* SPDX-License-Identifier: MIT */
/* tests/codelets/embedding.c: the embedding codelets, built with hx_embed_fwd / hx_embed_bwd
 * and run on 2 workers, match hx_ref_embed_fwd / hx_ref_embed_bwd (normwise rel. error
 * <= 1e-5, no NaN/Inf): out = wte[token] + wpe[position]; dwte, dwpe pre-filled so that they
 * must accumulate, with tokens repeated within a sequence, across sequences and across row
 * tiles (only 7 distinct ids plus V-1).  V = 257, C = 96, T = 17 (wpe with more rows than T)
 * with 3 tiles of one sequence and one tile; V = 50, T = 8 with 2 tiles.  out starts NaN. */
#include "codelets/harness.h"

#define NSHAPES 3
#define NCHECKS (NSHAPES * 3)

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

int main(void)
{
    static const struct shape shapes[NSHAPES] = {
        { 3, 17, 96, 257, 24, 17 }, /* one sequence per tile: 3 tasks per builder */
        { 2, 17, 96, 257, 17, 0 },  /* one tile */
        { 4, 8, 32, 50, 8, 16 },    /* 2 tiles of 2 sequences */
    };
    struct rng r = { 0x656d62656401ull };

    harness_start(NCHECKS);
    for (int i = 0; i < NSHAPES; i++) {
        test_shape(&shapes[i], &r);
    }
    return harness_end();
}
