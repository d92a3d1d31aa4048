/* SPDX-License-Identifier: MIT */
/**
 * @file helix/graph.h
 * @brief The IR (design/architecture.md §1): a training step as plain data.
 *
 * A graph owns tensors and an ordered list of nodes.  One node is one task: an op, the tiles
 * it reads and writes with their access modes, its arguments, and the metadata schedulers,
 * planners and the simulator read (kind, lane, layer, micro-batch, strand, phase, flops,
 * bytes, segment).  The node order is the sequential task flow: dependencies are the
 * read/write conflicts on tiles in that order, exactly as StarPU derives them at submission,
 * and the barriers between nodes that share no data: control edges (hx_graph_control, e.g.
 * serial-comm's) and a strand plan's steps.  hx_graph_deps lists both kinds.  Building a
 * graph never touches StarPU.
 */
#ifndef HELIX_GRAPH_H
#define HELIX_GRAPH_H

#include <stdio.h>

#include "helix/ops.h"
#include "helix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hx_kind { HX_KIND_COMPUTE, HX_KIND_COMM };
enum hx_lane { HX_LANE_COMPUTE, HX_LANE_COMM_INTRA, HX_LANE_COMM_INTER };
enum hx_phase {
    HX_PHASE_FORWARD,
    HX_PHASE_BACKWARD_DATA,
    HX_PHASE_BACKWARD_WEIGHT,
    HX_PHASE_OPTIMIZER,
    HX_PHASE_RECOMPUTE /* a forward op run again inside the backward (--recompute-activations) */
};
#define HX_PHASE_COUNT 5
enum hx_strand { HX_STRAND_NONE = -1, HX_STRAND_ALPHA = 0, HX_STRAND_BETA = 1 };
enum hx_access { HX_R = 1, HX_W = 2, HX_RW = 3 };

#define HX_NODE_MAXREFS 32 /* a packed layer gather: token + 12 pieces + 12 parameters */

/** One tile of one tensor, as a node accesses it. */
struct hx_ref {
    int tensor;           /**< tensor id in the graph */
    int tile;             /**< row tile index */
    enum hx_access mode;
};

struct hx_node {
    int id;                     /**< position in submission order */
    enum hx_op op;
    enum hx_kind kind;
    enum hx_lane lane;
    enum hx_phase phase;
    int layer;                  /**< transformer block, -1 for embedding/head/optimizer */
    int microbatch;
    int strand;                 /**< enum hx_strand */
    int segment;                /**< pairing segment once a plan exists, else -1 */
    int block;                  /**< SI block a strand plan was applied to, else -1: its
                                 *   nodes run segment by segment, a barrier between
                                 *   consecutive segments (hx_graph_barrier_preds) */
    int priority;               /**< StarPU priority (higher runs first) */
    double flops;               /**< floating-point operations of this task */
    double bytes;               /**< bytes read + written by this task */
    int nrefs;
    struct hx_ref refs[HX_NODE_MAXREFS];
    union hx_op_args args;
};

/** Metadata stamped on every node added until changed (builders set it, then emit ops). */
struct hx_cursor {
    enum hx_phase phase;
    int layer, microbatch, strand;
    int priority;
    /** Row-tile order of the builders that loop over a tensor's tiles (graphs/layers.c), for
     *  tensors in the rotated layout of helix/tp_overlap.h (tile i*rot_p + j is group rank
     *  j's): rot_p <= 1 visits 0, 1, 2, ...; else each group of rot_p tiles is visited
     *  starting at rank rot_r's tile (rot_own_last = 0) or at rank rot_r + 1's, ending with
     *  rank rot_r's (rot_own_last = 1). */
    int rot_p, rot_r, rot_own_last;
};

/** The @p e-th tile of @p ntiles to emit under the cursor's tile order (see struct hx_cursor;
 *  a tile count that is not a multiple of rot_p keeps the natural order). */
static inline int hx_cursor_tile(const struct hx_cursor *c, int e, int ntiles)
{
    int p = c->rot_p;
    if (p <= 1 || ntiles % p != 0) {
        return e;
    }
    return e - e % p + (c->rot_r + e % p + (c->rot_own_last ? 1 : 0)) % p;
}

#define HX_GRAPH_CHANNELS 16

/** A control edge: node @c to waits for node @c from (from < to). */
struct hx_edge {
    int from, to;
};

/** What hx_graph_submit keeps per graph until hx_graph_wait (graphs/submit.c), so graphs in
 *  flight at once never share a StarPU tag. */
struct hx_graph_tags {
    unsigned long long base;  /**< the tag of node i is base + i: a range of 2^32 ids taken
                               *   from a process-wide counter at the graph's first
                               *   submission that needs tags (0: none taken yet) */
    int n, cap;
    int *nodes;               /**< nodes whose tags were declared since the last wait */
    unsigned char *declared;  /**< per node (cap_declared entries): 1 while declared */
    int cap_declared;
};

struct hx_graph {
    int ntensors, cap_tensors;
    struct hx_tensor **tensors;
    int *by_name, cap_by_name;       /**< open-addressing table of tensor ids + 1 by name
                                      *   (hx_graph_find; 0: empty), at most half full */
    int nnodes, cap_nodes;
    struct hx_node *nodes;
    struct hx_cursor cur;
    int coll_seq[HX_GRAPH_CHANNELS]; /**< collectives emitted so far per channel */
    struct hx_tensor *tokens[HX_GRAPH_CHANNELS]; /**< channel tokens, created on first use */
    int chan_lane[HX_GRAPH_CHANNELS]; /**< enum hx_lane of each channel (0: intra-node) */
    int nctrl, cap_ctrl;
    struct hx_edge *ctrl;            /**< control edges, sorted by (to, from), no repeats */
    struct hx_graph_tags tags;       /**< submission state (graphs/submit.c) */
};

typedef struct hx_graph *hx_graph_t;

hx_graph_t hx_graph_create(void);
/** Frees nodes and tensors (releasing realized ones). */
void hx_graph_destroy(hx_graph_t g);

/**
 * Add a tensor of (rows, cols) cut into row tiles of @p tile_rows (<= 0: one tile).
 * @return the tensor (owned by the graph).  Names should be unique; shapes are checked.
 */
struct hx_tensor *hx_graph_tensor(hx_graph_t g, const char *name, enum hx_dtype dt,
                                  enum hx_tensor_role role, int rows, int cols, int tile_rows);
/** Tensor by name, or NULL. */
struct hx_tensor *hx_graph_find(hx_graph_t g, const char *name);

/**
 * Append a node with the cursor's metadata.  @p refs has @p nrefs entries in the op's buffer
 * order (include/helix/ops.h).  The returned pointer is valid until the next append.
 */
struct hx_node *hx_graph_add(hx_graph_t g, enum hx_op op, const union hx_op_args *args,
                             int nrefs, const struct hx_ref *refs, double flops, double bytes);

/** Shorthand for a tile reference. */
static inline struct hx_ref hx_ref_of(const struct hx_tensor *t, int tile, enum hx_access mode)
{
    struct hx_ref r = { t->id, tile, mode };
    return r;
}

/** Allocate and register every tensor (see hx_tensor_realize). */
int hx_graph_realize(hx_graph_t g);

/* ---- control edges: orders the data do not imply ---- */

/**
 * Make node @p to wait for node @p from, with no tile between them: a barrier a policy
 * needs (include/helix/sched.h) or a program wants.  from < to, so the node order stays a
 * topological order; add control edges once the order is final (a strand plan reorders
 * nodes as they are emitted).  hx_graph_deps lists the edge, --dump-dot draws it and
 * hx_graph_submit makes it a StarPU tag dependency.  An edge given twice is kept once.
 * @return HX_OK, or HX_EINVAL (reported) for ids out of order or range.
 */
int hx_graph_control(hx_graph_t g, int from, int to);
/**
 * serial-comm's barriers (HX_SCHED_NEEDS_SERIAL_COMM), as control edges: nodes
 * [first, last) are cut into runs of compute nodes and runs of collectives, in node order,
 * and every node waits for every node of the run before its own, so a collective starts
 * after all earlier compute and compute after the collectives before it.  Collectives of
 * one run stay unordered among themselves and post together, so a pipeline's send and recv
 * emitted side by side still meet.  Nodes outside the range get no edge: call it once per
 * range that is submitted as one (a training step, evaluation's tail).
 * @return HX_OK, or HX_EINVAL for a range outside the graph.
 */
int hx_graph_serialize_comm(hx_graph_t g, int first, int last);

/* ---- topology: dependencies implied by the sequential task flow ---- */

/** Edges as CSR: the predecessors of node i are pred[off[i] .. off[i+1]-1], each < i. */
struct hx_deps {
    int n;
    int *off;
    int *pred;
};

/**
 * The nodes node @p i waits for with no data between them, each once: its control edges'
 * sources, and at a strand plan's barrier every node of its block's previous segment (a
 * block's nodes are contiguous, in segment order).  Writes at most @p max ids into
 * @p preds (NULL: only count) and returns how many there are.
 */
int hx_graph_barrier_preds(const struct hx_graph *g, int i, int *preds, int max);
/** Read-after-write, write-after-read and write-after-write dependencies on tiles, and the
 *  barriers (control edges and strand plans' steps). */
int hx_graph_deps(const struct hx_graph *g, struct hx_deps *d);
void hx_deps_free(struct hx_deps *d);
/** Longest path in flops from any source (critical path), and per-node level (depth). */
double hx_graph_critical_path(const struct hx_graph *g, const struct hx_deps *d, int *level);
/**
 * Set every node's priority to its bottom level: the flops of the longest path from the node
 * to the end of the graph, scaled to 0..@p max_prio, so a priority scheduler runs the critical
 * path first.  Orders tasks only; numerics are fixed by the graph.
 */
void hx_graph_prioritize(struct hx_graph *g, const struct hx_deps *d, int max_prio);
/** Checks that @p order (n node ids) is a topological order of @p d; returns 1 if so. */
int hx_deps_is_topological(const struct hx_deps *d, const int *order);

/** Write the graph in Graphviz DOT: one box per node, colored by phase, with its edges
 *  (hx_graph_deps: data dependencies and barriers). */
int hx_graph_write_dot(const struct hx_graph *g, FILE *f);

/* ---- submission (graphs/submit.c) ---- */

/**
 * Submit every node in order as one StarPU task carrying the node (task->sched_data and
 * cl_arg point to it); returns once all are queued.  Nodes [first, last) only, -1 = all.
 * Barriers (hx_graph_barrier_preds) become StarPU tag dependencies, in this graph's own
 * range of tags: on the barrier's nodes submitted since the last hx_graph_wait of @p g
 * (others are not in flight).  Other graphs may be in flight at the same time; one thread
 * submits and waits.  A node with a barrier is submitted at most once between waits.
 * @return HX_OK or a negative status (reported).
 */
int hx_graph_submit(hx_graph_t g, int first, int last);
/**
 * In a simulation (helix simulate; hx_runtime_simulated), check that every node's codelet
 * has a performance model for the simulated host: StarPU's SimGrid mode would abort on the
 * first task without one.  HX_OK (always outside a simulation), or HX_EINVAL, reported with
 * the missing file and the calibration that makes it.
 */
int hx_graph_check_sim_models(hx_graph_t g);
/** When one task of hx_graph_submit_timed ran (StarPU's clock, microseconds). */
struct hx_task_time {
    const struct hx_node *node; /**< the task's node, set at submission */
    double start_us;            /**< a worker started the codelet */
    double end_us;              /**< the task terminated: for a collective, whose codelet only
                                 *   posts the transfer, when the transfer completed */
    int worker;                 /**< StarPU worker id, -1 without profiling */
    long order;                 /**< 1-based rank of its termination among every timed task
                                 *   of this process: the completion order, for a collective
                                 *   the order in which the engine finished them */
    int done;                   /**< set to 1 (release store) once the fields are written */
};

/**
 * hx_graph_submit of nodes [first, last), recording when each one ran into
 * @p times[i - first] (last - first entries, owned by the caller, alive until the tasks
 * terminated).  Start times need StarPU's profiling (hx_runtime_opts.profiling); without it
 * start_us = end_us = the termination time.  Used by the overlap profiler.
 */
int hx_graph_submit_timed(hx_graph_t g, int first, int last, struct hx_task_time *times);
/** Wait for all submitted tasks (of every graph), then release @p g's tags, so its next
 *  submission can declare them again; @return the run status (HX_OK if no task failed). */
int hx_graph_wait(hx_graph_t g);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_GRAPH_H */
