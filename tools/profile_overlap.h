/* SPDX-License-Identifier: MIT */
/* tools/profile_overlap.h: the measuring half of `helix profile-overlap`
 * (tools/overlap_measure.c), apart from its command line (tools/profile_overlap.c). */
#ifndef HX_PROFILE_OVERLAP_H
#define HX_PROFILE_OVERLAP_H

#include "helix/helix.h"
#include "helix/overlap.h"

/* Two instances of one model: forward nodes are run from x, backward nodes from y, so a
 * forward and a backward node never share a tensor and may co-run without a data conflict. */
struct overlap_setup {
    hx_gpt_t x, y;
    int layer;          /* the profiled transformer layer */
    int bwd_microbatch; /* the rank's last micro-batch (the backward list's) */
    int *fwd, nfwd;     /* node ids of the forward list, in x's graph (submission order) */
    int *bwd, nbwd;     /* node ids of the backward list, in y's graph */
    int repeats;
    int classes;        /* 1: measure one op per class of identical work, one pair per pair
                         * of classes, and give the others their numbers (--classes) */
    int ranks;          /* > 1: every rank runs the same sequence; times are maxima over ranks */
    int verbose;        /* progress lines on stderr */
};

/* The forward list (phase forward, @p layer, micro-batch 0) and the backward list
 * (backward-data or backward-weight, @p layer, micro-batch @p bwd_mb) of @p m's graph, in
 * submission order.  @return HX_OK or HX_ENOMEM; the lists are malloc'ed. */
int overlap_lists(hx_gpt_t m, int layer, int bwd_mb, int **fwd, int *nfwd, int **bwd,
                  int *nbwd);

/* 1 when nodes @p a and @p b are collectives of one channel: never co-run (the channel
 * token serializes them in every real execution). */
int overlap_serialized(const struct hx_node *a, const struct hx_node *b);

/* 1 when nodes @p p of @p gp and @p q of @p gq do the same work: same op, kind, lane, flops
 * and bytes, the same arguments (a collective's sequence number aside), and tiles of the
 * same shapes and types in the same access modes. */
int overlap_same_work(const struct hx_graph *gp, const struct hx_node *p,
                      const struct hx_graph *gq, const struct hx_node *q);

/* Measure solo times of every listed node and co-run times of every (forward, backward)
 * pair, R times each, into @p t (initialised by the caller with nfwd x nbwd ops; fills ops'
 * op/kind/lane/flops/bytes/times/class and every pair).  Needs StarPU up with profiling and >= 2
 * workers, both models realized and stepped once.  @return HX_OK or a failure (reported). */
int overlap_measure(const struct overlap_setup *s, struct hx_overlap_table *t);

#endif /* HX_PROFILE_OVERLAP_H */
