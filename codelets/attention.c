/* SPDX-License-Identifier: MIT */
/* codelets/attention.c: causal self-attention, multi-head or grouped-query, fp32 CPU kernels
 * blocked in the flash-attention style (forward: online softmax; backward: flash-attention-2
 * recompute).  NH query heads, KV key/value heads (KV divides NH), hs = C/NH:
 * qkv (nseq*T, C + 2 KV hs) ld_qkv = [q (NH heads) | k (KV heads) | v (KV heads)], head j of
 * a part in its columns j*hs..(j+1)*hs; query head h reads kv head h / (NH/KV) (GQA; with
 * KV = NH every head its own).  out (nseq*T, C) ld_out; lse (nseq*T, NH) contiguous; dqkv
 * like qkv, written (=), dk and dv of a kv head summed over its query heads in head order.
 * Scores never exceed one (block x block) tile; all products are cblas_sgemm (row-major),
 * in a fixed loop order, so results are bitwise reproducible.  T need not be a multiple of
 * block.  Device form (OpenCL and CUDA, unblocked): codelets/kernels/attention.cl; every
 * backend checks its buffers with codelets/attention.h.
 * Reference: codelets/ref/attention_ref.c (double); test: tests/codelets/attention.c */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cpu.h"
#include "codelets/vecmath.h"

/* One scratch allocation per call: ntiles (block x block) tiles followed by nvec vectors of
 * `block` floats, each part rounded to 64 bytes.  NULL on failure. */
static float *scratch_alloc(int block, int ntiles, int nvec)
{
    size_t n = (size_t)block * block * ntiles + (size_t)block * nvec;
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes);
}

/* No error channel exists in a void kernel: on allocation failure the outputs become NaN,
 * which the loss's non-finite check reports (HX_ENONFINITE) instead of training on garbage. */
static void fill_nan(float *x, int ld, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            x[(size_t)r * ld + c] = NAN;
        }
    }
}

/*
 * Forward.  For one (sequence, head) and one query block Q_i (nq x hs) the output is
 *   O_i = softmax(scale Q_i K^T + causal mask) V,
 * computed one key block K_j, V_j (nk x hs, j <= i) at a time without ever holding the full
 * (nq x T) score row.  Per query row r we keep the running max m_r and the running sum
 * l_r = sum_c exp(s_rc - m_r) over the key blocks seen so far, and accumulate the unnormalised
 * O_acc = sum_c exp(s_rc - m_r) v_c directly in the out tile.  When a new block raises the
 * max from m to m', every earlier term exp(s - m) must become exp(s - m'), i.e. be multiplied
 * by alpha = exp(m - m'): that is the rescaling of l and of O_acc.  Subtracting the running max
 * keeps every exp() <= 1, so nothing overflows.  At the end O = O_acc / l and
 * lse = m + log(l) = log sum_c exp(s_rc), which the backward uses to rebuild the softmax
 * probabilities P = exp(S - lse) block by block without recomputing the normaliser.
 *
 *   S (nq x nk, ld block) = scale Q_i K_j^T          sgemm, K_j used transposed
 *   P = exp(S - m'), zero above the diagonal when j == i
 *   O_acc (nq x hs, ld_out) = alpha O_acc + P V_j     sgemm (row scaling by alpha first)
 *
 * Key blocks before the diagonal are full (nk = block); the diagonal block starts at the
 * same row as the query block, so it has nk = nq keys and row r sees keys 0..r of it.
 */
HX_VECTOR_CLONES
void hx_cpu_attention_fwd(float *out, int ld_out, float *lse, const float *qkv, int ld_qkv,
                          int nseq, int T, int C, int NH, int KV, int block)
{
    const int hs = C / NH;
    const int group = NH / KV; /* query heads per kv head */
    const size_t vpart = (size_t)KV * hs; /* v starts this far right of k */
    const float scale = 1.0f / sqrtf((float)hs);
    if (block <= 0 || block > T) {
        block = T;
    }
    /* S tile, then the running max m and running sum l of the current query block */
    float *S = scratch_alloc(block, 1, 2);
    if (S == NULL) {
        fill_nan(out, ld_out, nseq * T, C);
        fill_nan(lse, NH, nseq * T, NH);
        return;
    }
    float *m = S + (size_t)block * block;
    float *l = m + block;

    for (int s = 0; s < nseq; s++) {
        const size_t row0 = (size_t)s * T;
        for (int h = 0; h < NH; h++) {
            for (int qb = 0; qb < T; qb += block) {
                const int nq = (T - qb < block) ? T - qb : block;
                const float *q = qkv + (row0 + qb) * ld_qkv + (size_t)h * hs;
                float *o = out + (row0 + qb) * ld_out + (size_t)h * hs;

                for (int kb = 0; kb <= qb; kb += block) {
                    const int diag = (kb == qb);
                    const int nk = diag ? nq : block;
                    const float *k = qkv + (row0 + kb) * ld_qkv + C + (size_t)(h / group) * hs;
                    const float *v = k + vpart;

                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, scale, q,
                                ld_qkv, k, ld_qkv, 0.0f, S, block);

                    for (int r = 0; r < nq; r++) {
                        float *srow = S + (size_t)r * block;
                        const int nvis = diag ? r + 1 : nk; /* keys this row may see */
                        float mx = srow[0];
                        for (int c = 1; c < nvis; c++) {
                            mx = srow[c] > mx ? srow[c] : mx;
                        }
                        /* first block: nothing to rescale (alpha = 0, O_acc not yet set) */
                        const float mnew = (kb == 0 || mx > m[r]) ? mx : m[r];
                        const float alpha = (kb == 0) ? 0.0f : hx_expf(m[r] - mnew);
                        float sum = 0.0f;
                        for (int c = 0; c < nvis; c++) {
                            srow[c] = hx_expf(srow[c] - mnew);
                            sum += srow[c];
                        }
                        for (int c = nvis; c < nk; c++) {
                            srow[c] = 0.0f;
                        }
                        l[r] = (kb == 0) ? sum : alpha * l[r] + sum;
                        m[r] = mnew;
                        if (kb > 0 && alpha != 1.0f) {
                            float *orow = o + (size_t)r * ld_out;
                            for (int c = 0; c < hs; c++) {
                                orow[c] *= alpha;
                            }
                        }
                    }
                    /* beta = 0 on the first key block: out is write-only, never read stale */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, 1.0f, S,
                                block, v, ld_qkv, kb == 0 ? 0.0f : 1.0f, o, ld_out);
                }

                for (int r = 0; r < nq; r++) {
                    float *orow = o + (size_t)r * ld_out;
                    for (int c = 0; c < hs; c++) {
                        orow[c] /= l[r];
                    }
                    lse[(row0 + qb + r) * NH + h] = m[r] + logf(l[r]);
                }
            }
        }
    }
    free(S);
}

/*
 * Backward (flash-attention-2).  With P = softmax(S) row-wise, S = scale Q K^T masked, and
 * dO the gradient of out:
 *   dV = P^T dO,   dP = dO V^T,   dS = P * (dP - D) with D_r = sum_c P_rc dP_rc = dO_r . O_r,
 *   dQ = scale dS K,   dK = scale dS^T Q.
 * P is rebuilt one (nq x nk) tile at a time as exp(S - lse) from the forward's lse, so no
 * running max or sum is needed here, and D comes from dO and O without touching P at all.
 * Loop order: query block i outer, key block j <= i inner; D_i and lse_i are formed once per
 * query block, and dQ_i, dK_j, dV_j accumulate straight into their dqkv tiles (zeroed first),
 * so the only scratch is the S/P tile, the dP/dS tile and D_i.
 *
 *   S, P (nq x nk) = exp(scale Q_i K_j^T - lse_i)      sgemm, masked above the diagonal
 *   dV_j (nk x hs) += P^T dO_i                         sgemm
 *   dP (nq x nk)    = dO_i V_j^T                       sgemm
 *   dS              = P * (dP - D_i)                   in place in dP
 *   dQ_i (nq x hs) += scale dS K_j                     sgemm
 *   dK_j (nk x hs) += scale dS^T Q_i                   sgemm
 */
HX_VECTOR_CLONES
void hx_cpu_attention_bwd(float *dqkv, int ld_dqkv, const float *dout, int ld_dout,
                          const float *qkv, int ld_qkv, const float *out, int ld_out,
                          const float *lse, int nseq, int T, int C, int NH, int KV, int block)
{
    const int hs = C / NH;
    const int group = NH / KV;
    const size_t vpart = (size_t)KV * hs;
    const size_t width = C + 2 * vpart; /* columns of dqkv */
    const float scale = 1.0f / sqrtf((float)hs);
    if (block <= 0 || block > T) {
        block = T;
    }
    /* P tile, dP/dS tile, then D_i */
    float *P = scratch_alloc(block, 2, 1);
    if (P == NULL) {
        fill_nan(dqkv, ld_dqkv, nseq * T, (int)width);
        return;
    }
    float *dP = P + (size_t)block * block;
    float *D = dP + (size_t)block * block;

    for (size_t r = 0; r < (size_t)nseq * T; r++) {
        memset(dqkv + r * ld_dqkv, 0, width * sizeof(float));
    }

    for (int s = 0; s < nseq; s++) {
        const size_t row0 = (size_t)s * T;
        /* h ascending: the group of a kv head adds its dk, dv terms in head order */
        for (int h = 0; h < NH; h++) {
            const size_t hoff = (size_t)h * hs;
            const size_t kvoff = (size_t)(h / group) * hs;
            for (int qb = 0; qb < T; qb += block) {
                const int nq = (T - qb < block) ? T - qb : block;
                const float *q = qkv + (row0 + qb) * ld_qkv + hoff;
                const float *dO = dout + (row0 + qb) * ld_dout + hoff;
                const float *o = out + (row0 + qb) * ld_out + hoff;
                const float *lse_i = lse + (row0 + qb) * NH + h;
                float *dq = dqkv + (row0 + qb) * ld_dqkv + hoff;

                for (int r = 0; r < nq; r++) {
                    const float *dorow = dO + (size_t)r * ld_dout;
                    const float *orow = o + (size_t)r * ld_out;
                    float acc = 0.0f;
                    for (int c = 0; c < hs; c++) {
                        acc += dorow[c] * orow[c];
                    }
                    D[r] = acc;
                }

                for (int kb = 0; kb <= qb; kb += block) {
                    const int diag = (kb == qb);
                    const int nk = diag ? nq : block;
                    const float *k = qkv + (row0 + kb) * ld_qkv + C + kvoff;
                    const float *v = k + vpart;
                    float *dk = dqkv + (row0 + kb) * ld_dqkv + C + kvoff;
                    float *dv = dk + vpart;

                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, scale, q,
                                ld_qkv, k, ld_qkv, 0.0f, P, block);
                    for (int r = 0; r < nq; r++) {
                        float *prow = P + (size_t)r * block;
                        const float lr = lse_i[(size_t)r * NH];
                        const int nvis = diag ? r + 1 : nk;
                        for (int c = 0; c < nvis; c++) {
                            prow[c] = hx_expf(prow[c] - lr);
                        }
                        for (int c = nvis; c < nk; c++) {
                            prow[c] = 0.0f;
                        }
                    }

                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, 1.0f, P,
                                block, dO, ld_dout, 1.0f, dv, ld_dqkv);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, hs, 1.0f, dO,
                                ld_dout, v, ld_qkv, 0.0f, dP, block);
                    for (int r = 0; r < nq; r++) {
                        const float *prow = P + (size_t)r * block;
                        float *dsrow = dP + (size_t)r * block;
                        for (int c = 0; c < nk; c++) {
                            dsrow[c] = prow[c] * (dsrow[c] - D[r]);
                        }
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, hs, nk, scale, dP,
                                block, k, ld_qkv, 1.0f, dq, ld_dqkv);
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, hs, nq, scale, dP,
                                block, q, ld_qkv, 1.0f, dk, ld_dqkv);
                }
            }
        }
    }
    free(P);
}

/* ---- StarPU codelets (added by the runtime glue) ---- */
/* The codelets take their shape from node->args.attn (nseq, T, C, NH, KV, block); the tiles
 * are the whole (nseq*T)-row slab of the sequences they cover, as the kernels index them. */
#include "codelets/attention.h"
#include "codelets/codelets.h"

int hx_attention_kv(const struct hx_attention_args *a)
{
    return a->KV > 0 ? a->KV : a->NH;
}

void hx_attention_check(void *buffers[], const struct hx_attention_args *a, int qkv, int out,
                        int lse, const char *op)
{
    int rows = a->nseq * a->T, KV = hx_attention_kv(a);
    HX_ASSERT(a->NH > 0 && a->C % a->NH == 0 && a->NH % KV == 0,
              "%s: C %d, NH %d, KV %d: C must be a multiple of NH and NH of KV; the graph "
              "builder (graphs/layers.c) should have refused them", op, a->C, a->NH, KV);
    int width = a->C + 2 * KV * (a->C / a->NH); /* q | k | v */
    HX_ASSERT(HX_BUF_ROWS(buffers, qkv) == rows && HX_BUF_COLS(buffers, qkv) == width,
              "%s: qkv tile (%d,%d), expected (%d,%d); a graph-builder bug (graphs/layers.c)",
              op, HX_BUF_ROWS(buffers, qkv), HX_BUF_COLS(buffers, qkv), rows, width);
    HX_ASSERT(HX_BUF_ROWS(buffers, out) == rows && HX_BUF_COLS(buffers, out) == a->C,
              "%s: out tile (%d,%d), expected (%d,%d); a graph-builder bug (graphs/layers.c)",
              op, HX_BUF_ROWS(buffers, out), HX_BUF_COLS(buffers, out), rows, a->C);
    /* the kernels index lse with stride NH */
    HX_ASSERT(HX_BUF_ROWS(buffers, lse) == rows && HX_BUF_COLS(buffers, lse) == a->NH &&
                  HX_BUF_LD(buffers, lse) == a->NH,
              "%s: lse tile (%d,%d) ld %d, expected (%d,%d) contiguous; a graph-builder bug "
              "(graphs/layers.c)", op, HX_BUF_ROWS(buffers, lse), HX_BUF_COLS(buffers, lse),
              HX_BUF_LD(buffers, lse), rows, a->NH);
}

/* buffers: qkv, out, lse */
static void attention_fwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 2, "attention_fwd");
    hx_cpu_attention_fwd(HX_BUF_F32(buffers, 1), HX_BUF_LD(buffers, 1), HX_BUF_F32(buffers, 2),
                         HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0), a->nseq, a->T, a->C,
                         a->NH, hx_attention_kv(a), a->block);
}

/* buffers: qkv, out, dout, lse, dqkv */
static void attention_bwd_cpu(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 3, "attention_bwd");
    hx_attention_check(buffers, a, 4, 2, 3, "attention_bwd");
    hx_cpu_attention_bwd(HX_BUF_F32(buffers, 4), HX_BUF_LD(buffers, 4), HX_BUF_F32(buffers, 2),
                         HX_BUF_LD(buffers, 2), HX_BUF_F32(buffers, 0), HX_BUF_LD(buffers, 0),
                         HX_BUF_F32(buffers, 1), HX_BUF_LD(buffers, 1), HX_BUF_F32(buffers, 3),
                         a->nseq, a->T, a->C, a->NH, hx_attention_kv(a), a->block);
}

HX_CODELET_DEV(attention_fwd, "attention_fwd", attention_fwd_cpu);
HX_CODELET_DEV(attention_bwd, "attention_bwd", attention_bwd_cpu);
