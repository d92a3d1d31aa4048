/* SPDX-License-Identifier: MIT */
/**
 * @file helix/mesh.h
 * @brief Process meshes (design/architecture.md §5): the world of W ranks seen as
 *        pp x dp x tp, tensor parallel innermost (Megatron's order), plus AMSP's sharding
 *        factors inside the data-parallel group (papers.md §4.2).
 *
 *   world rank  r = (pp_rank * dp + dp_rank) * tp + tp_rank
 *   node of r   = r / ranks_per_node          (contiguous blocks, Open MPI's default mapping)
 *
 * AxoNN's 3D tensor parallelism (--tp-grid GxxGyxGz, papers.md §1.2) is the same order:
 * the tp group is a Gx x Gy grid, X innermost (tp_rank = tpy_rank * Gx + tpx_rank), and Z
 * is the innermost part of dp (dp_rank = z + Gz * data replica), whose parameters,
 * gradients and optimizer states are sharded over Z (s_p = s_g = s_os = Gz at least):
 *   x = r mod Gx,  y = (r / Gx) mod Gy,  z = (r / (Gx Gy)) mod Gz,  d = r / (Gx Gy Gz).
 * Without a grid, tpx = tp and tpy = 1: Megatron's 1D tensor parallelism is the grid Gx x 1.
 *
 * Sharding inside the data-parallel group of size dp (shard index = dp_rank):
 *   P-shard group: the block of s_p consecutive dp ranks holding dp_rank; each holds 1/s_p
 *     of every parameter (flat, all-gathered before use, gradients reduce-scattered).
 *   replica group: the dp/s_p ranks with the same index inside their P block.
 *   G group / OS group: inside the block of s_g (s_os) dp ranks, the members of the replica
 *     group: s_g/s_p (s_os/s_p) ranks that split the gradients (optimizer states) of the
 *     P shard they share, whole pieces to one owner (inter-tensor, balanced by size).
 * ZeRO-1 is s_os = dp; ZeRO-2 s_g = s_os = dp; ZeRO-3 s_p = s_g = s_os = dp; MiCS
 * s_p = s_g = s_os = ranks of a node.  Rule: s_p <= s_g <= s_os <= dp, each divides the
 * next, s_g in {s_p, s_os}, and the intra-/inter-node parts obey it componentwise.
 *
 * A mesh is plain data: building one needs no MPI, so graphs can be built (and planned)
 * for any rank of any mesh.  runtime/comm.c gives each group its communicator.
 */
#ifndef HELIX_MESH_H
#define HELIX_MESH_H

#ifdef __cplusplus
extern "C" {
#endif

/** The groups a rank belongs to; each one is a collective channel (helix/comm.h). */
enum hx_group_kind {
    HX_GROUP_WORLD,   /**< every rank */
    HX_GROUP_DP,      /**< data parallel: same tp and pp coordinates */
    HX_GROUP_TP,      /**< tensor parallel: same dp and pp coordinates */
    HX_GROUP_PP,      /**< pipeline: same dp and tp coordinates */
    HX_GROUP_SHARD_P, /**< parameter shard group (s_p ranks of the dp group) */
    HX_GROUP_REPLICA, /**< dp ranks holding the same parameter shard (dp/s_p) */
    HX_GROUP_SHARD_G, /**< gradient owners of one P shard (s_g/s_p) */
    HX_GROUP_SHARD_OS,/**< optimizer-state owners of one P shard (s_os/s_p) */
    HX_GROUP_PP_BWD,  /**< the pipeline group again: its own channel for the gradients that
                       *   travel back, so the two directions never wait on one token */
    HX_GROUP_EMBED,   /**< first and last pipeline stage (same dp, tp): the two copies of the
                       *   tied embedding sum their gradients; one rank elsewhere */
    HX_GROUP_FOLD_F,  /**< the pipeline group: activations on their way back up a folded
                       *   pipeline (model folding, papers.md §2.6) */
    HX_GROUP_FOLD_B,  /**< the pipeline group: gradients going down a folded pipeline */
    HX_GROUP_TP_BETA, /**< the tensor-parallel group again: strand beta's collectives, so the
                       *   two strands never wait on one token (graphs/schedule.c) */
    HX_GROUP_TP_X,    /**< AxoNN's X: the tp ranks with the same y (Gx, consecutive) */
    HX_GROUP_TP_Y,    /**< AxoNN's Y: the tp ranks with the same x (Gy, stride Gx) */
    HX_GROUP_COUNT
};

#define HX_MESH_MAX_RANKS 1024

struct hx_group {
    enum hx_group_kind kind;
    int size;            /**< ranks in the group */
    int rank;            /**< this rank's index in the group (members in world-rank order) */
    int first, stride;   /**< members are world ranks first + i*stride, i < size */
    int intra_node;      /**< 1 if every member lives on this rank's node */
    int nodes;           /**< nodes the group spans */
};

/** A sharding factor split into the ranks inside a node times the nodes (s = s0 * s1). */
struct hx_factor {
    int s, s0, s1;
};

struct hx_mesh {
    int world_size, world_rank;
    int dp, tp, pp;
    int dp_rank, tp_rank, pp_rank;
    int tpx, tpy, tpz;   /**< the 3D grid (tpx = tp, tpy = tpz = 1 without --tp-grid); tpz
                          *   is the Z part of dp */
    int tpx_rank, tpy_rank;
    int tp_grid;         /**< 1: the run asked for --tp-grid (its messages name the grid) */
    int ranks_per_node;  /**< consecutive world ranks per node */
    int sequence_parallel;
    struct hx_factor sp, sg, sos; /**< AMSP factors within the dp group */
    struct hx_group groups[HX_GROUP_COUNT];
};

/** What the user asked for; 0 means "derive" (dp = world / (tp*pp), factors 1). */
struct hx_mesh_request {
    int world_size, world_rank;
    int dp, tp, pp;
    int tp_grid[3];          /**< AxoNN's Gx, Gy, Gz (--tp-grid); 0 = no grid */
    int ranks_per_node;      /**< 0 = the world is one node */
    int sequence_parallel;
    int shard_p, shard_g, shard_os; /**< AMSP factors; 0 = 1 */
    int shard_p0, shard_g0, shard_os0; /**< their ranks inside a node as given ("2x2"); 0 =
                                        *   derive (helix fills a node first) */
    int zero_stage;          /**< 0..3: preset for the factors (conflicts with explicit ones) */
    int mics;                /**< preset: s_p = s_g = s_os = dp ranks inside one node */
    /* model shape, to check divisibility */
    int num_heads, hidden_size, vocab_size, num_layers, seq_len, micro_batches;
};

/**
 * Check a request and fill @p m.  Every violation (world not divisible, tp not dividing heads,
 * hidden or vocabulary, factors against the dependency rule, micro-batches not divisible by
 * dp, more pipeline ranks than layers) returns HX_EINVAL with one message naming the numbers
 * and the fix; @p quiet suppresses the message (planners enumerating meshes).
 */
int hx_mesh_init(struct hx_mesh *m, const struct hx_mesh_request *r, int quiet);

/** One rank's mesh: the serial run (1 x 1 x 1, no sharding). */
void hx_mesh_serial(struct hx_mesh *m);

/** World rank of member @p i of group @p g. */
int hx_group_member(const struct hx_group *g, int i);

/** Node of world rank @p r. */
static inline int hx_mesh_node(const struct hx_mesh *m, int r)
{
    return r / m->ranks_per_node;
}

/** Group name ("dp", "tp", "shard_p", ...). */
const char *hx_group_name(enum hx_group_kind k);

/** One line such as "world 4 = pp 1 x dp 2 x tp 2, 2 ranks/node, s_p 1 s_g 1 s_os 2 (1x2)". */
void hx_mesh_describe(const struct hx_mesh *m, char *buf, int len);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_MESH_H */
