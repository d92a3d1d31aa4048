/* SPDX-License-Identifier: MIT */
/* codelets/kernels/attention.cl: causal self-attention on the device, the math of
 * the CPU form (codelets/attention.c) without its blocking (the node's `block` only shapes the
 * CPU's sgemm tiles; here keys are taken HX_BLOCK at a time, so results agree up to
 * rounding, within the tests' 1e-5).
 * Layouts (as on the CPU): qkv (nseq*T, C + 2 KV hs) rows ld_qkv floats apart = [q (NH
 * heads) | k (KV heads) | v (KV heads)], head j of a part in its columns j*hs .. (j+1)*hs - 1,
 * hs = C/NH; query head h reads kv head h / (NH/KV) (grouped-query attention; KV = NH:
 * multi-head); out, dout (nseq*T, C) ld_out, ld_dout; lse (nseq*T, NH) contiguous; dqkv like
 * qkv (ld_dqkv), every element written (=).
 * Row `row` = s*T + t is position t of sequence s; it attends to keys 0..t of its sequence.
 * scale = 1/sqrt(hs), computed by the launcher exactly as the CPU does.
 *
 * Forward, one work-group of HX_BLOCK items per (row, head): the keys 0..t go in chunks of
 * HX_BLOCK, item l scoring key c0 + l (s = scale q.k, a sequential dot over hs).  An online
 * softmax over the chunks (as codelets/attention.c explains) keeps a running max m and sum
 * lsum: per chunk the max and the sum of exp(s - m') are fixed trees (hx_block_max/sum), the
 * chunk's probabilities wait in local memory, and the items d < hs fold them into
 * out[d] = alpha out[d] + sum_j p_j v_j[d] in key order, alpha = exp(m - m').  At the end
 * out /= lsum and lse = m + log(lsum).  Local memory: 2 HX_BLOCK floats, whatever T is.
 *
 * Backward (flash-attention-2 math: P = exp(S - lse), dP = dO V^T, D_i = dO_i . O_i,
 * dS = P (dP - D), dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO), one launch of
 * nseq*T*(NH + KV) work-groups: the first nseq*T*NH, one per (query row, query head), write
 * dq of that row summing over keys 0..t; the rest, one per (key row, kv head), write dk and
 * dv of that row summing over the kv head's NH/KV query heads in head order and, for each,
 * over queries t..T-1.  So every dqkv element has exactly one writer and each sum runs in a
 * fixed order (heads in order, chunks of HX_BLOCK in order, then index order within a chunk)
 * with no atomics.  P, dP and D of a (query, key) pair are computed by both halves with the same
 * expressions (hx_attention_dot, arguments in the same order); D_i is recomputed per pair by
 * the key-row half (no scratch buffer holds it), a third hs-long dot.
 *
 * The launchers start exactly the groups above, and the kernels have no bound check: a
 * uniform early return ahead of barriers crashed PoCL 3.1 (see codelets/kernels/layernorm.cl).
 *
 * Parallelism is one work-group per row and head with hs of its items busy in the weighted
 * sums; a cuBLAS strided-batched GEMM path on CUDA (the (T x T) score tiles of all heads per
 * call, as the CPU form does with sgemm) is a possible later optimization, kept out for now
 * so that both backends run this one source.
 * Backends: codelets/opencl/attention.c, codelets/cuda/attention.cu. */

/* below every finite score: the max's identity for the items past the last key */
#define HX_ATTN_NEG (-3.0e38f)

/* a . b over n floats, in index order (every score and dP of both passes uses it) */
HX_INLINE float hx_attention_dot(HX_GLOBAL const float *a, HX_GLOBAL const float *b, int n)
{
    float acc = 0.0f;
    for (int d = 0; d < n; d++) {
        acc += a[d] * b[d];
    }
    return acc;
}

HX_KERNEL void hx_attention_fwd(HX_GLOBAL float *HX_RESTRICT out, long out_off,
                                HX_GLOBAL float *HX_RESTRICT lse, long lse_off,
                                HX_GLOBAL const float *HX_RESTRICT qkv, long qkv_off, int T,
                                int C, int NH, int KV, int ld_qkv, int ld_out, float scale)
{
    HX_LOCAL float red[HX_BLOCK]; /* the block reductions' tree */
    HX_LOCAL float p[HX_BLOCK];   /* exp(s - m') of the chunk's keys */
    const long g = HX_GROUP(); /* exactly nseq*T*NH groups run (see the top) */
    const int lid = HX_LID();
    const int hs = C / NH;
    const long row = g / NH;
    const int h = (int)(g % NH);
    const int t = (int)(row % T);
    const long row0 = row - t; /* key 0 of this sequence */
    qkv += qkv_off;
    HX_GLOBAL const float *q = qkv + row * ld_qkv + (long)h * hs;
    const int kvh = h / (NH / KV);
    HX_GLOBAL const float *k0 = qkv + row0 * ld_qkv + C + (long)kvh * hs; /* key j: + j ld_qkv */
    HX_GLOBAL const float *v0 = k0 + (long)KV * hs;
    HX_GLOBAL float *o = out + out_off + row * ld_out + (long)h * hs;

    float m = 0.0f;    /* running max of the scores seen (set by the first chunk) */
    float lsum = 0.0f; /* running sum of exp(s - m) */
    for (int c0 = 0; c0 <= t; c0 += HX_BLOCK) {
        const int j = c0 + lid;
        const int nk = t - c0 + 1 < HX_BLOCK ? t - c0 + 1 : HX_BLOCK; /* keys in the chunk */
        float s = HX_ATTN_NEG;
        if (j <= t) {
            s = scale * hx_attention_dot(q, k0 + (long)j * ld_qkv, hs);
        }
        const float cmax = hx_block_max(red, s); /* the chunk's max: every item calls it */
        const float mnew = c0 == 0 ? cmax : HX_FMAX(m, cmax);
        const float e = j <= t ? HX_EXP(s - mnew) : 0.0f;
        p[lid] = e;
        /* hx_block_sum's first barrier also publishes p[] to the whole group */
        const float esum = hx_block_sum(red, e);
        const float alpha = c0 == 0 ? 0.0f : HX_EXP(m - mnew);
        lsum = c0 == 0 ? esum : alpha * lsum + esum;
        m = mnew;
        for (int d = lid; d < hs; d += HX_BLOCK) {
            float acc = 0.0f;
            for (int jj = 0; jj < nk; jj++) {
                acc += p[jj] * v0[(long)(c0 + jj) * ld_qkv + d];
            }
            /* the first chunk writes: out starts as garbage (NaN in the tests) */
            o[d] = c0 == 0 ? acc : alpha * o[d] + acc;
        }
        HX_BARRIER(); /* p[] is read above before the next chunk overwrites it */
    }
    for (int d = lid; d < hs; d += HX_BLOCK) {
        o[d] /= lsum;
    }
    if (lid == 0) {
        lse[lse_off + row * NH + h] = m + HX_LOG(lsum);
    }
}

HX_KERNEL void hx_attention_bwd(HX_GLOBAL float *HX_RESTRICT dqkv, long dqkv_off,
                                HX_GLOBAL const float *HX_RESTRICT qkv, long qkv_off,
                                HX_GLOBAL const float *HX_RESTRICT out, long out_off,
                                HX_GLOBAL const float *HX_RESTRICT dout, long dout_off,
                                HX_GLOBAL const float *HX_RESTRICT lse, long lse_off, int nseq,
                                int T, int C, int NH, int KV, int ld_dqkv, int ld_qkv,
                                int ld_out, int ld_dout, float scale)
{
    HX_LOCAL float pl[HX_BLOCK];  /* P of the chunk's pairs (key-row half) */
    HX_LOCAL float dsl[HX_BLOCK]; /* scale dS of the chunk's pairs */
    const long nrh = (long)nseq * T * NH;
    long g = HX_GROUP(); /* exactly nseq*T*(NH + KV) groups run (see the top) */
    const int key_half = g >= nrh; /* uniform: both halves never share a group */
    if (key_half) {
        g -= nrh;
    }
    const int lid = HX_LID();
    const int hs = C / NH;
    const int group = NH / KV; /* query heads per kv head */
    const int nh = key_half ? KV : NH; /* this half's heads per row */
    const long row = g / nh;
    const int h = (int)(g % nh); /* a query head, or in the key half a kv head */
    const int t = (int)(row % T);
    const long row0 = row - t;
    const long hoff = (long)h * hs;
    const long vpart = (long)KV * hs; /* v starts this far right of k */
    qkv += qkv_off;
    out += out_off;
    dout += dout_off;
    lse += lse_off;
    dqkv += dqkv_off;

    if (!key_half) {
        /* dq_t = sum_{j <= t} scale P_tj (dP_tj - D_t) k_j */
        HX_GLOBAL const float *q = qkv + row * ld_qkv + hoff;
        HX_GLOBAL const float *dO = dout + row * ld_dout + hoff;
        HX_GLOBAL const float *k0 = qkv + row0 * ld_qkv + C + (long)(h / group) * hs;
        HX_GLOBAL float *dq = dqkv + row * ld_dqkv + hoff;
        const float D = hx_attention_dot(dO, out + row * ld_out + hoff, hs);
        const float lse_t = lse[row * NH + h];
        for (int c0 = 0; c0 <= t; c0 += HX_BLOCK) {
            const int j = c0 + lid;
            const int nk = t - c0 + 1 < HX_BLOCK ? t - c0 + 1 : HX_BLOCK;
            float ds = 0.0f;
            if (j <= t) {
                HX_GLOBAL const float *k = k0 + (long)j * ld_qkv;
                const float P = HX_EXP(scale * hx_attention_dot(q, k, hs) - lse_t);
                const float dP = hx_attention_dot(dO, k + vpart, hs); /* k + vpart: v_j */
                ds = scale * (P * (dP - D));
            }
            dsl[lid] = ds;
            HX_BARRIER();
            for (int d = lid; d < hs; d += HX_BLOCK) {
                float acc = 0.0f;
                for (int jj = 0; jj < nk; jj++) {
                    acc += dsl[jj] * k0[(long)(c0 + jj) * ld_qkv + d];
                }
                dq[d] = c0 == 0 ? acc : dq[d] + acc;
            }
            HX_BARRIER(); /* dsl[] is read above before the next chunk overwrites it */
        }
    } else {
        /* kv head h of key row t, summed over its query heads qh in order:
         *   dv_t = sum_qh sum_{i >= t} P_it dO_i,
         *   dk_t = sum_qh sum_{i >= t} scale P_it (dP_it - D_i) q_i   (P, D, q, dO of head qh) */
        HX_GLOBAL const float *k = qkv + row * ld_qkv + C + hoff;
        HX_GLOBAL const float *v = k + vpart;
        HX_GLOBAL float *dk = dqkv + row * ld_dqkv + C + hoff;
        HX_GLOBAL float *dv = dk + vpart;
        for (int qh = h * group; qh < (h + 1) * group; qh++) {
            const long qoff = (long)qh * hs;
            HX_GLOBAL const float *q0 = qkv + row0 * ld_qkv + qoff; /* query i: + i ld_qkv */
            HX_GLOBAL const float *dO0 = dout + row0 * ld_dout + qoff;
            HX_GLOBAL const float *O0 = out + row0 * ld_out + qoff;
            for (int c0 = t; c0 < T; c0 += HX_BLOCK) {
                const int i = c0 + lid;
                const int nq = T - c0 < HX_BLOCK ? T - c0 : HX_BLOCK; /* queries in the chunk */
                const int first = qh == h * group && c0 == t; /* dk, dv start as garbage */
                float P = 0.0f;
                float ds = 0.0f;
                if (i < T) {
                    HX_GLOBAL const float *dO = dO0 + (long)i * ld_dout;
                    const float D = hx_attention_dot(dO, O0 + (long)i * ld_out, hs);
                    P = HX_EXP(scale * hx_attention_dot(q0 + (long)i * ld_qkv, k, hs) -
                               lse[(row0 + i) * NH + qh]);
                    const float dP = hx_attention_dot(dO, v, hs);
                    ds = scale * (P * (dP - D));
                }
                pl[lid] = P;
                dsl[lid] = ds;
                HX_BARRIER();
                for (int d = lid; d < hs; d += HX_BLOCK) {
                    float acc_v = 0.0f;
                    float acc_k = 0.0f;
                    for (int ii = 0; ii < nq; ii++) {
                        acc_v += pl[ii] * dO0[(long)(c0 + ii) * ld_dout + d];
                        acc_k += dsl[ii] * q0[(long)(c0 + ii) * ld_qkv + d];
                    }
                    dv[d] = first ? acc_v : dv[d] + acc_v;
                    dk[d] = first ? acc_k : dk[d] + acc_k;
                }
                HX_BARRIER(); /* pl[], dsl[] are read above before the next chunk overwrites them */
            }
        }
    }
}
