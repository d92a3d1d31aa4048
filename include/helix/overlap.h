/* SPDX-License-Identifier: MIT */
/**
 * @file helix/overlap.h
 * @brief The overlap table (DHelix's offline operator profile, design/papers.md §2.2): solo
 *        times of one transformer layer's forward and backward operators and, for every
 *        (forward, backward) pair, the makespan when the two co-run, with the Overlap
 *        Effectiveness Factor
 *
 *            OEF(a,b) = (T(a) + T(b) - T(a||b)) / min(T(a), T(b))
 *
 *        T(x) the solo time, T(a||b) the co-run makespan.  1: the shorter operator is fully
 *        hidden; 0: no gain; < 0: co-running is slower than running one after the other.
 *
 * `helix profile-overlap` measures a table and writes it as JSON (schema "helix-overlap-1");
 * the planner reads it with hx_overlap_table_load.  Keys: "F<k>" is the k-th node of the
 * layer's forward list, "B<k>" of its backward list (tools/profile_overlap.c says which nodes
 * those are).  The file is:
 *
 *   {"schema": "helix-overlap-1",
 *    "model": {"num_layers":L, "hidden_size":C, "num_heads":H, "seq_length":T,
 *              "micro_batch_size":B, "vocab_size":V, "tp":tp, "sequence_parallel":0|1,
 *              "dp":dp, "num_micro_batches":M, and the Llama settings: "normalization":0|1,
 *              "swiglu":0|1, "ffn_hidden_size":F, "position_embedding":0|1,
 *              "rotary_base":x, "num_query_groups":G, "untie_embeddings":0|1,
 *              "disable_bias":0|1 (optional on reading: absent, GPT-2's 0)},
 *    "layer": l, "workers": W, "ranks": n, "repeats": R, "host": "...", "date": "...",
 *    "ops": [{"key":"F0", "op":"layernorm_fwd", "kind":"comp"|"comm",
 *             "lane":"compute"|"comm_intra"|"comm_inter", "flops":x, "bytes":x,
 *             "solo_ms":median, "solo_ms_min":min}, ...],
 *    "pairs": [{"a":"F0", "b":"B3", "corun_ms":median makespan, "a_ms":a's own median,
 *               "b_ms":b's own median, "oef":x, "serialized":false}, ...]}
 *
 * Every (F, B) pair appears exactly once.  "serialized": true marks two collectives of one
 * channel: the channel token runs them one after the other in any real execution, so they
 * are not co-run; their corun_ms is the sum of the solo medians, a_ms is a's solo median and
 * b_ms the sum (b waits for a), and their OEF is 0.  The planner reads any serialized pair so,
 * whatever times it holds (tables written before 2026-11-27 held b's solo median in b_ms).
 *
 * Classes (profile-overlap --classes): ops doing the same work (the row tiles of one
 * operation: same op, arguments, tile shapes, lane) form a class; each op then carries
 * "class": the key of its class's first op.  Every op of a class has the class's solo times
 * (all their runs pooled), and every pair takes the numbers measured on the pair of its two
 * classes' first ops.  Without --classes there is no "class" field and every op and pair is
 * measured on its own.
 * Test: tests/schedulers/overlap_table.c.
 */
#ifndef HELIX_OVERLAP_H
#define HELIX_OVERLAP_H

#ifdef __cplusplus
extern "C" {
#endif

#define HX_OVERLAP_SCHEMA "helix-overlap-1"

/** One operator (one IR node) of the profiled layer. */
struct hx_overlap_op {
    char key[16];        /**< "F<k>" or "B<k>" */
    char op[32];         /**< hx_op_name of the node */
    int comm;            /**< 0: "comp", 1: "comm" */
    int lane;            /**< enum hx_lane (helix/graph.h) */
    double flops, bytes; /**< of the node */
    double solo_ms;      /**< median solo time */
    double solo_ms_min;  /**< fastest solo time */
    int cls;             /**< index in ops of the first op of its class ("class"), its own
                          *   index when the table has no classes */
};

/** One (forward, backward) pair. */
struct hx_overlap_pair {
    int a, b;            /**< indices into ops: a forward op, b a backward op */
    double corun_ms;     /**< median makespan of a and b started together */
    double a_ms, b_ms;   /**< medians of each one's own duration while co-running */
    double oef;          /**< hx_oef(solo a, solo b, corun_ms) */
    int serialized;      /**< 1: two collectives of one channel, never co-run (see above) */
};

/** The model the table was measured on (the flags of helix profile-overlap). */
struct hx_overlap_model {
    int num_layers, hidden_size, num_heads, seq_length, micro_batch_size, vocab_size;
    int tp, sequence_parallel, dp, num_micro_batches;
    /** the Llama settings (struct hx_gpt_config's fields of the same names; all 0: GPT-2).
     *  Optional in a table: one written before them is GPT-2's. */
    int normalization, swiglu, ffn_hidden_size, position_embedding;
    float rotary_base;
    int num_query_groups, untie_embeddings, disable_bias;
};

struct hx_overlap_table {
    struct hx_overlap_model model;
    int layer, workers, ranks, repeats;
    int classes;                   /**< 1: ops carry "class" (measured by class) */
    char host[128], date[64];
    int nops;                      /**< nfwd + nbwd */
    struct hx_overlap_op *ops;     /**< F0..F(nfwd-1), then B0..B(nbwd-1) */
    int nfwd, nbwd;
    int npairs;                    /**< nfwd * nbwd */
    struct hx_overlap_pair *pairs; /**< pair (Fi, Bj) at index i * nbwd + j */
};

/** OEF from the solo times @p ta, @p tb and the co-run makespan @p tab (any unit); 0 when
 *  a solo time is not positive. */
double hx_oef(double ta, double tb, double tab);

/**
 * Allocate an empty table of @p nfwd forward and @p nbwd backward ops: keys "F0".. and
 * "B0".. filled in, every op its own class, pair (i, j) at i * nbwd + j with a = i,
 * b = nfwd + j, everything else 0.
 * @return HX_OK or HX_ENOMEM.
 */
int hx_overlap_table_init(struct hx_overlap_table *t, int nfwd, int nbwd);

/**
 * Read a table written by helix profile-overlap.  Checks the JSON syntax, the schema name,
 * every field's presence and type, that the keys are F0..F(n-1) and B0..B(m-1), that a
 * "class" names an earlier or the same op of its side, and that every (F, B) pair appears
 * exactly once.
 * @return HX_OK; HX_EIO (file missing or unreadable), HX_EFORMAT (bad JSON, wrong schema, a
 *         missing or mistyped field, a missing or repeated pair); the message, already
 *         printed, names the file and the field.  @p t is empty (freeable) on failure.
 */
int hx_overlap_table_load(const char *path, struct hx_overlap_table *t);

/**
 * Write @p t as JSON to @p path ("-" or NULL: stdout).  A file is written beside its final
 * name and renamed into place, so a reader never sees half a table.
 * @return HX_OK or HX_EIO (message printed).
 */
int hx_overlap_table_write(const struct hx_overlap_table *t, const char *path);

void hx_overlap_table_free(struct hx_overlap_table *t);

/** The op of key @p key ("F3", "B0"), or NULL. */
const struct hx_overlap_op *hx_overlap_solo(const struct hx_overlap_table *t, const char *key);
/** The pair of forward key @p fkey and backward key @p bkey, or NULL. */
const struct hx_overlap_pair *hx_overlap_pair(const struct hx_overlap_table *t,
                                              const char *fkey, const char *bkey);
/** Name of a lane in the file ("compute", "comm_intra", "comm_inter"). */
const char *hx_overlap_lane_name(int lane);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_OVERLAP_H */
