/* SPDX-License-Identifier: MIT */
/* codelets/kernels/embedding.cl: token + position embedding and its backward, whole or one
 * vocabulary shard, the device forms of codelets/embedding.c (same cases, same order of
 * additions, so a device result is bitwise the CPU's):
 *   tokens (N,1) int32; wte, dwte (V,C) vocabulary rows [v0, v0+V), contiguous; wpe, dwpe
 *   (maxT,C) contiguous; out, dout (N,C) row stride ld; N = nseq*T, row r at position r % T.
 *   hx_embed_fwd:     out[r] = wte[tok - v0] + wpe[r % T], a term left out (not added as
 *                     0.0f) when another shard holds the token or has_pos is 0.
 *   hx_embed_bwd_wte: dwte[tok - v0] += dout[r] for r = 0..N-1 in order.
 *   hx_embed_bwd_wpe: dwpe[p] += dout[r] for r = p, p+T, ... in order.
 * The backward is a scatter-add with repeated tokens and there are no float atomics (nor
 * would their order be fixed): instead every output element has exactly one owner that
 * adds its contributions in row order, as the CPU loop does.  For dwte that owner is found
 * by a search: a work-group per vocabulary row scans all N tokens (staged HX_BLOCK at a
 * time in local memory), and its items add the matching dout rows, item l owning columns
 * l, l + HX_BLOCK, ...  That costs V * N token compares (from local memory) plus N * C adds:
 * for GPT-2 with 8 sequences of 1024 in a tile, 50257 x 8192 = 4e8 compares (an estimate,
 * not measured: no GPU here) against N * C work for the forward; in exchange the result is
 * bitwise repeatable and equal to the CPU's, with no sort of the tokens.  The launchers
 * checked every token is in the whole vocabulary first; the kernels still form an index
 * only from one in the shard.
 * Launches: fwd, an item per output element (global N * C); bwd_wte, a work-group of
 * HX_BLOCK items per vocabulary row (global V * HX_BLOCK); bwd_wpe, an item per element of
 * the T rows of dwpe the tile touches (global T * C).  Backends: codelets/opencl/embedding.c,
 * codelets/cuda/embedding.cu. */

/* the shard's row of token @p tok, or -1 when another shard holds it (64-bit: tok - v0
 * cannot overflow) */
HX_INLINE long hx_embed_row(int tok, int v0, int V)
{
    long id = (long)tok - v0;
    return id >= 0 && id < V ? id : -1;
}

HX_KERNEL void hx_embed_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off, int ld,
                            HX_GLOBAL const int *HX_RESTRICT tokens, long tokens_off,
                            HX_GLOBAL const float *HX_RESTRICT wte, long wte_off, int v0, int V,
                            HX_GLOBAL const float *HX_RESTRICT wpe, long wpe_off, int has_pos,
                            int N, int T, int C)
{
    long g = HX_GID();
    out += out_off;
    tokens += tokens_off;
    wte += wte_off;
    wpe += wpe_off;
    if (g < (long)N * C) {
        long r = g / C;
        int i = (int)(g - r * C);
        long id = hx_embed_row(tokens[r], v0, V);
        float v;
        /* each case writes its terms alone (no + 0.0f), as the CPU: shard outputs then sum
         * to the unsharded output bit for bit */
        if (id >= 0 && has_pos) {
            v = wte[id * C + i] + wpe[(r % T) * C + i];
        } else if (id >= 0) {
            v = wte[id * C + i];
        } else if (has_pos) {
            v = wpe[(r % T) * C + i];
        } else {
            v = 0.0f;
        }
        out[r * ld + i] = v;
    }
}

/* a work-group per vocabulary row v of the shard (global V * HX_BLOCK) */
HX_KERNEL void hx_embed_bwd_wte(HX_GLOBAL float *HX_RESTRICT dwte, long dwte_off,
                                HX_GLOBAL const float *HX_RESTRICT dout, long dout_off, int ld,
                                HX_GLOBAL const int *HX_RESTRICT tokens, long tokens_off,
                                int v0, int V, int N, int C)
{
    HX_LOCAL long ids[HX_BLOCK]; /* 2 KB: the shard rows of HX_BLOCK tokens */
    long v = HX_GROUP();
    int l = HX_LID();
    dwte += dwte_off;
    dout += dout_off;
    tokens += tokens_off;
    HX_GLOBAL float *dte = dwte + v * C;
    for (int base = 0; base < N; base += HX_BLOCK) {
        int n = N - base < HX_BLOCK ? N - base : HX_BLOCK;
        ids[l] = l < n ? hx_embed_row(tokens[base + l], v0, V) : -1;
        HX_BARRIER();
        for (int k = 0; k < n; k++) {
            if (ids[k] == v) { /* the same for every item: no divergence around barriers */
                HX_GLOBAL const float *d = dout + (long)(base + k) * ld;
                for (int i = l; i < C; i += HX_BLOCK) {
                    dte[i] += d[i];
                }
            }
        }
        HX_BARRIER(); /* ids is refilled next */
    }
}

/* an item per element (p, i) of dwpe's first T rows (global T * C): the rows r = p, p+T, ...
 * of the tile in order, accumulated in a float as the CPU's += rounds */
HX_KERNEL void hx_embed_bwd_wpe(HX_GLOBAL float *HX_RESTRICT dwpe, long dwpe_off,
                                HX_GLOBAL const float *HX_RESTRICT dout, long dout_off, int ld,
                                int N, int T, int C)
{
    long g = HX_GID();
    dwpe += dwpe_off;
    dout += dout_off;
    if (g < (long)T * C) {
        long p = g / C;
        int i = (int)(g - p * C);
        float acc = dwpe[g];
        for (long r = p; r < N; r += T) {
            acc += dout[r * ld + i];
        }
        dwpe[g] = acc;
    }
}
