/* SPDX-License-Identifier: MIT */
/**
 * @file helix/ops.h
 * @brief The operations of the IR: one enum value per codelet, with its arguments and the
 *        order of its buffers.  Shapes use N = rows of a row tile (tokens), C = channels,
 *        OC = output channels, V = vocabulary, T = sequence length, NH = heads, hs = C/NH.
 *
 * Gradient rule (llm.c): parameter gradients are accumulated (+=) by their backward-weight
 * tasks, in submission order, so the graph fixes every reduction order; activation
 * gradients are written (=) unless an op says it adds a residual.
 */
#ifndef HELIX_OPS_H
#define HELIX_OPS_H

#ifdef __cplusplus
extern "C" {
#endif

enum hx_op {
    /* C(m,n) = alpha * op(A) op(B) + beta * C [+ bias(n) on every row]
     * buffers: A (R), B (R), C (W if beta == 0 else RW) [, bias (R)] */
    HX_OP_MATMUL,
    /* dbias(1,n) += column sums of dout(m,n).  buffers: dout (R), dbias (RW) */
    HX_OP_BIAS_BWD,
    /* The MLP's first linear fused with its activation: pre(m,n) = A B^T + bias, out =
     * gelu(pre), one pass over the tile while it is in cache; pre is kept for the backward.
     * buffers: A (R), B (R), pre (W), bias (R), out (W) */
    HX_OP_MATMUL_GELU,
    /* out = LayerNorm(inp) * w + b, keeps mean and rstd for the backward.
     * buffers: inp (N,C) R, w (1,C) R, b (1,C) R, out (N,C) W, mean (N,1) W, rstd (N,1) W */
    HX_OP_LAYERNORM_FWD,
    /* The residual connection fused with the LayerNorm that follows it: sum = a + b, then
     * out = LayerNorm(sum) w + bias in the same task, while the tile is in cache.
     * buffers: a R, b R, w R, bias R, sum (N,C) W, out (N,C) W, mean W, rstd W */
    HX_OP_ADD_LAYERNORM_FWD,
    /* dinp = [resid +] dLN/dinp^T dout.
     * buffers: dout R, inp R, w R, mean R, rstd R, dinp W [, resid (N,C) R] */
    HX_OP_LAYERNORM_BWD_DATA,
    /* dw += sum_rows dout * xhat, db += sum_rows dout.
     * buffers: dout R, inp R, mean R, rstd R, dw (1,C) RW, db (1,C) RW */
    HX_OP_LAYERNORM_BWD_WEIGHT,
    /* out = gelu(inp), tanh approximation (GPT-2).  buffers: inp R, out W */
    HX_OP_GELU_FWD,
    /* dinp = gelu'(inp) * dout.  buffers: inp R, dout R, dinp W */
    HX_OP_GELU_BWD,
    /* Causal self-attention over nseq sequences of T tokens, blocked with an online softmax
     * (flash-attention): never more than one (block x block) score tile.  NH query heads,
     * KV key/value heads (grouped-query attention; KV = NH: multi-head), C = NH hs.
     * qkv (nseq*T, (NH + 2 KV) hs) holds q (NH heads) | k (KV heads) | v (KV heads), head j
     * of a part in its columns j*hs .. (j+1)*hs; query head h reads kv head h / (NH/KV).
     * buffers: qkv R, out (nseq*T, C) W, lse (nseq*T, NH) W  (log-sum-exp per query row) */
    HX_OP_ATTENTION_FWD,
    /* dqkv has qkv's layout; dk, dv of a kv head sum its NH/KV query heads in head order.
     * buffers: qkv R, out R, dout R, lse R, dqkv (nseq*T, (NH + 2 KV) hs) W */
    HX_OP_ATTENTION_BWD,
    /* losses(N,1) = -log softmax(logits)[target]; lse kept for the backward.
     * buffers: logits (N,V) R, targets (N,1) i32 R, losses (N,1) W, lse (N,1) W */
    HX_OP_XENT_FWD,
    /* logits := scale * (softmax(logits) - onehot(target)), in place.
     * buffers: logits (N,V) RW, targets R, lse R */
    HX_OP_XENT_BWD,
    /* Both in one pass per row while the row of V logits is in cache (training): losses and
     * lse as XENT_FWD, then the logits become scale (softmax - onehot) in place.
     * buffers: logits (N,V) RW, targets R, losses (N,1) W, lse (N,1) W */
    HX_OP_XENT_FUSED,
    /* out[r] = wte[token[r]] + wpe[pos0 + r mod T].  buffers: tokens (N,1) i32 R, wte (V,C) R,
     * wpe (maxT,C) R (absent with no_pos), out (N,C) W */
    HX_OP_EMBED_FWD,
    /* dwte[token[r]] += dout[r], dwpe[r mod T] += dout[r], rows in order.
     * buffers: dout R, tokens R, dwte RW, dwpe RW (absent with no_pos) */
    HX_OP_EMBED_BWD,
    /* out = a + b (residual connection).  buffers: a R, b R, out W; or, accumulating (a
     * gradient shard), x R, acc RW: acc += x */
    HX_OP_ADD,
    /* acc(1,1) f64 += sum(x) or sum(x^2) in double, elements in order.  buffers: x R, acc RW */
    HX_OP_REDUCE,
    /* Fill a tile with a constant.  buffers: x W */
    HX_OP_FILL,
    /* AdamW with decoupled weight decay and global-norm clipping: the clip factor
     * min(1, max_norm / (sqrt(gnorm_sumsq) + 1e-6)) is computed from the reduced squared norm.
     * buffers: param RW, grad R, m RW, v RW, gnorm_sumsq (1,1) f64 R */
    HX_OP_ADAMW,

    /* ---- vocabulary-parallel embedding and loss (Megatron): rank t of tp holds vocabulary
     * rows [v0, v0 + Vl) of wte; see struct hx_xent_vp_args and hx_embed_args.v0 ---- */
    /* Per row of a logits tile (N,Vl) of one vocabulary shard: stats(N,2) = { log-sum-exp
     * over the shard's columns, the target's logit if v0 <= target < v0+Vl else 0 }.
     * buffers: logits R, targets (N,1) i32 R, stats (N,2) W */
    HX_OP_XENT_VP_STATS,
    /* The loss from every shard's stats, gathered rank-major per tile: all (parts*N, 2),
     * rows t*N + n for shard t.  lse = log sum_t exp(all[t*N+n][0]), loss = lse -
     * sum_t all[t*N+n][1]; with grad, logits := scale (softmax - onehot) of the shard.
     * buffers: logits (N,Vl) RW (R without grad), targets R, all R, losses (N,1) W, lse W */
    HX_OP_XENT_VP,

    /* ---- Llama's layers: RMSNorm (no mean subtraction, no bias) and the SwiGLU MLP ---- */
    /* out = x rstd * w, rstd = 1/sqrt(mean_c(x^2) + eps) per row, kept for the backward.
     * buffers: inp (N,C) R, w (1,C) R, out (N,C) W, rstd (N,1) W */
    HX_OP_RMSNORM_FWD,
    /* The residual connection fused with the RMSNorm that follows it: sum = a + b, then
     * out = RMSNorm(sum) w in the same task, while the tile is in cache.
     * buffers: a (N,C) R, b (N,C) R, w (1,C) R, sum (N,C) W, out (N,C) W, rstd (N,1) W */
    HX_OP_ADD_RMSNORM_FWD,
    /* xhat = x rstd, g = dout * w: dinp = [resid +] rstd (g - xhat mean_c(g xhat)).
     * buffers: dout R, inp R, w R, rstd R, dinp W [, resid (N,C) R] */
    HX_OP_RMSNORM_BWD_DATA,
    /* dw += sum_rows dout * xhat, rows in order.  buffers: dout R, inp R, rstd R, dw (1,C) RW */
    HX_OP_RMSNORM_BWD_WEIGHT,
    /* inp (N,2F) = [gate | up] (Megatron's --swiglu: one fc1 of 2F outputs, chunked in two
     * halves), out (N,F) = silu(gate) * up, silu(x) = x / (1 + exp(-x)); args.rows.cols = F.
     * buffers: inp R, out W */
    HX_OP_SWIGLU_FWD,
    /* dinp (N,2F) = [dout up silu'(gate) | dout silu(gate)], silu'(g) = s(g) (1 + g (1 - s(g))),
     * s the logistic sigmoid.  buffers: inp R, dout (N,F) R, dinp W */
    HX_OP_SWIGLU_BWD,

    /* Rotary position embeddings (RoFormer; Llama's non-interleaved "rotate_half" form), in
     * place on the q and k heads of a qkv tile (rows, (NH + 2 KV) hs) laid out as for
     * attention; v is not touched.  Row r is position r mod T (tiles hold whole sequences).
     * For i < hs/2 the pair (x_i, x_{i+hs/2}) of every q and k head turns by the angle
     * pos inv_freq_i, inv_freq_i = base^(-2i/hs) (struct hx_rope_args).
     * buffers: qkv RW */
    HX_OP_ROPE_FWD,
    /* the transpose (angle -> -angle) on the gradient: buffers: dqkv RW */
    HX_OP_ROPE_BWD,

    /* ---- norms over rows whose C_total columns are split over a group of ranks (AxoNN's
     * 3D tensor parallelism, Y axis; graphs/layers_norm_split.c): inp, out, dout, dinp,
     * resid are this rank's (N,C) column slice, w, b its (1,C) slice; the row statistics are
     * partial sums over the slice, all-reduced over the group between the ops below
     * (struct hx_norm_split_args; C = cols, C_total = cols_total).  Sums in double, stored
     * as float. ---- */
    /* s = this slice's partial row sums, by args.nsplit.mode (enum hx_norm_part_mode):
     *   LN_SUM  s = sum x                                 buffers: inp R, s (N,1) W
     *   LN_VAR  s = { sum (x-m)^2, sum (x-m) }, m = S/C_total, S = LN_SUM's all-reduced s
     *                                                     buffers: inp R, S (N,1) R, s (N,2) W
     *   RMS_SQ  s = sum x^2                               buffers: inp R, s (N,1) W
     *   LN_BWD  s = { sum g, sum g xhat }, g = dout w, xhat = (x - mean) rstd
     *                           buffers: dout R, inp R, w R, mean R, rstd R, s (N,2) W
     *   RMS_BWD s = sum g xhat, xhat = x rstd   buffers: dout R, inp R, w R, rstd R, s (N,1) W */
    HX_OP_NORM_PART,
    /* The forward from the all-reduced sums, per row (args.nsplit.rms):
     *   LayerNorm: m = S1/C_total, c = S2[1]/C_total, mean = m + c,
     *              rstd = 1/sqrt(max(S2[0]/C_total - c^2, 0) + eps),
     *              out = (x - mean) rstd w + b
     *              buffers: inp R, w R, b R, S1 (N,1) R, S2 (N,2) R, out W, mean W, rstd W
     *   RMSNorm:   rstd = 1/sqrt(S/C_total + eps), out = x rstd w
     *              buffers: inp R, w R, S (N,1) R, out W, rstd W */
    HX_OP_NORM_FWD_APPLY,
    /* The data gradient from the all-reduced sums (args.nsplit.rms), g and xhat as above:
     *   LayerNorm: dinp = [resid +] rstd (g - S[0]/C_total - xhat S[1]/C_total)
     *              buffers: dout R, inp R, w R, mean R, rstd R, S (N,2) R, dinp W [, resid R]
     *   RMSNorm:   dinp = [resid +] rstd (g - xhat S/C_total)
     *              buffers: dout R, inp R, w R, rstd R, S (N,1) R, dinp W [, resid R] */
    HX_OP_NORM_BWD_APPLY,

    /* ---- collectives (kind COMM) over the channel's group (helix/comm.h, runtime/comm.c).
     * Buffer 0 is always the channel's token (1,1) i32 RW: every collective of a channel
     * takes it, so a channel's collectives start in submission order on every rank
     * (architecture.md §3).  Element type: args.coll.dtype.  Uneven splits follow one rule:
     * of `total` elements, group rank j holds count_j = total/p + (j < total%p) elements at
     * offset sum_{i<j} count_i. ---- */
    /* data := sum (or max) over the group, element-wise.  buffers: token, d1..dk RW; k > 1
     * tensors travel as one packed message (a DDP bucket) */
    HX_OP_ALLREDUCE,
    /* out (total) = concatenation of every rank's in (count_j).  buffers: token, in R, out W */
    HX_OP_ALLGATHER,
    /* out (count_rank) = this rank's part of the sum of every rank's in (total); with
     * accumulate, out += it.  buffers: token, in R, out W (RW with accumulate) */
    HX_OP_REDUCE_SCATTER,
    /* data := root's data.  buffers: token, d1..dk RW (packed as for ALLREDUCE) */
    HX_OP_BROADCAST,
    /* out block j (total/p elements) = rank j's in block rank.  buffers: token, in R, out W */
    HX_OP_ALLTOALL,
    /* point to point with group rank args.coll.peer.  SEND buffers: token, data R;
     * RECV buffers: token, data W */
    HX_OP_SEND,
    HX_OP_RECV,
    /* one step of a ring shift (Flux's tile-level all-gather and reduce-scatter,
     * graphs/tp_overlap.c): with k = args.coll.peer (0 < |k| < p), group rank r sends in to
     * rank (r - k) mod p and receives out from rank (r + k) mod p; every rank of the group
     * runs the same k at the same position on the channel, so the pairs always match.
     * buffers: token, in R, out W (same element count) */
    HX_OP_SHIFT,
    /* no data moves and nothing is computed: the channel's later collectives start only
     * after these tiles' writers finished (the serialized baseline's "after the whole
     * backward").  buffers: token RW, tiles R */
    HX_OP_FENCE,
    HX_OP_COUNT
};

struct hx_matmul_args {
    int transa, transb; /**< 0 or 1 */
    int m, n, k;        /**< C is (m,n); op(A) is (m,k); op(B) is (k,n) */
    float alpha, beta;
    int has_bias;       /**< add bias(1,n) to every row (requires beta == 0) */
};

struct hx_rows_args {     /* bias_bwd, layernorm_*, rmsnorm_*, gelu_*, swiglu_*, add, reduce,
                           * fill, xent_* */
    int rows, cols;       /**< swiglu_*: cols = F, the width of out (inp is 2F wide) */
    float eps;            /**< layernorm and rmsnorm epsilon */
    float scale;          /**< xent_bwd: gradient scale (1 / tokens in the global batch) */
    float value;          /**< fill value */
    int has_resid;        /**< layernorm_bwd_data, rmsnorm_bwd_data: add the residual
                           *   gradient buffer */
    int sumsq;            /**< reduce: 1 = sum of squares, 0 = sum */
};

struct hx_attention_args {
    int nseq, T, C, NH;   /**< C = NH hs: the width of q, out and dout */
    int block;            /**< query/key block size of the blocked kernel */
    int KV;               /**< key/value heads, dividing NH; 0 means NH: multi-head */
};

/** RoPE on a qkv tile of rows = nseq*T rows: NH query and KV key heads of hs (even) columns
 *  are rotated.  Angle of pair i at position pos, in float32 as PyTorch (HF Llama, Megatron)
 *  computes it: pos * inv_freq_i, inv_freq_i = fl32(1 / fl32(base^fl32(2i/hs))), each fl32()
 *  a correct rounding (codelets/rope.h says why). */
struct hx_rope_args {
    int rows, T, NH, KV, hs;
    float base;           /**< 10000 (Llama 2), 500000 (Llama 3) */
};

struct hx_embed_args {
    int rows, T, C, V;    /**< rows = nseq*T of this tile; V rows of this wte (shard) */
    int v0;               /**< first vocabulary id of the wte shard (0 unsharded): tokens
                           *   outside [v0, v0+V) contribute zero rows */
    int no_pos;           /**< 1: skip the position embedding (all but one tp rank); the
                           *   backward then takes no dwpe buffer */
    int vocab;            /**< global vocabulary: a token outside [0, vocab) is reported;
                           *   0 means v0 + V (unsharded callers leave it 0) */
};

struct hx_xent_vp_args {
    int rows, V;          /**< rows of the tile, columns of the logits shard */
    int v0;               /**< first vocabulary id of the shard */
    int parts;            /**< shards (tp) whose stats are gathered */
    int grad;             /**< 1: turn the logits into scale (softmax - onehot) */
    float scale;
};

/** Element-wise reduction of HX_OP_ALLREDUCE. */
enum hx_reduce_op { HX_SUM = 0, HX_MAX = 1 };

struct hx_coll_args {
    int channel;          /**< enum hx_group_kind: the group, hence the communicator */
    int seq;              /**< position among the channel's collectives in the graph (for
                           *   diagnostics: the watchdog prints it) */
    int dtype;            /**< enum hx_dtype of every data buffer */
    int reduce;           /**< enum hx_reduce_op (ALLREDUCE, REDUCE_SCATTER) */
    int peer;             /**< BROADCAST: root; SEND/RECV: the other rank (group ranks);
                           *   SHIFT: the signed distance k */
    int accumulate;       /**< REDUCE_SCATTER: out += result */
};

struct hx_adamw_args {
    int n;                  /**< elements of the parameter */
    float lr, beta1, beta2, eps, weight_decay;
    float max_norm;         /**< global-norm clipping threshold; <= 0 disables clipping */
    int t;                  /**< 1-based step for bias correction; set before each step */
};

/** What HX_OP_NORM_PART sums over this rank's columns of each row (ops.h above). */
enum hx_norm_part_mode {
    HX_NORM_LN_SUM = 0, /**< LayerNorm forward, first pass: sum x */
    HX_NORM_LN_VAR,     /**< second pass: { sum (x - m)^2, sum (x - m) } about the first
                         *   pass's m = S/C_total; the second sum corrects m's rounding */
    HX_NORM_RMS_SQ,     /**< RMSNorm forward: sum x^2 */
    HX_NORM_LN_BWD,     /**< LayerNorm data gradient: { sum g, sum g xhat } */
    HX_NORM_RMS_BWD     /**< RMSNorm data gradient: sum g xhat */
};

/** The column-split norms (HX_OP_NORM_*): a (rows, cols) tile of this rank's column slice of
 *  rows cols_total wide. */
struct hx_norm_split_args {
    int rows, cols;       /**< the tile: rows of the row tile, this rank's columns */
    int cols_total;       /**< C_total, the whole row's width: the statistics divide by it */
    int mode;             /**< NORM_PART: enum hx_norm_part_mode */
    int rms;              /**< *_APPLY: 1 RMSNorm, 0 LayerNorm */
    float eps;            /**< NORM_FWD_APPLY */
    int has_resid;        /**< NORM_BWD_APPLY: add the residual gradient buffer */
};

union hx_op_args {
    struct hx_matmul_args mm;
    struct hx_rows_args rows;
    struct hx_attention_args attn;
    struct hx_rope_args rope;
    struct hx_embed_args emb;
    struct hx_adamw_args adamw;
    struct hx_xent_vp_args xvp;
    struct hx_coll_args coll;
    struct hx_norm_split_args nsplit;
};

/** Stable name of an op ("matmul", "layernorm_fwd", ...), used for tasks, traces and DOT. */
const char *hx_op_name(enum hx_op op);

/** The collectives' split rule (above): of @p total elements over @p p ranks, rank @p j
 *  holds hx_split_count elements at offset hx_split_offset = sum_{i<j} count_i. */
static inline long hx_split_count(long total, int p, int j)
{
    return total / p + (j < total % p);
}
static inline long hx_split_offset(long total, int p, int j)
{
    return j * (total / p) + (j < total % p ? j : total % p);
}

#ifdef __cplusplus
}
#endif

#endif /* HELIX_OPS_H */
