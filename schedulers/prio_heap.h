/* SPDX-License-Identifier: MIT */
/* schedulers/prio_heap.h: the ready heaps of the heap policies (schedulers/hx_prio.c): a
 * binary heap of ready tasks in one of four orders, and the pop for one worker, which skips
 * the tasks that worker cannot run (task->where) and alternates strands (hx-strand,
 * hx-wavelet).  Not thread-safe: the policy's lock guards every call. */
#ifndef HX_PRIO_HEAP_H
#define HX_PRIO_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <starpu.h>

struct hx_heap_entry {
    struct starpu_task *task;
    uint64_t seq;     /* push order, breaks priority ties */
    uint64_t left_by; /* the kinds of worker that left the task to a faster one, bit
                       * kind_bit (place_pop; 0 on CPU-only runs) */
};

/* HX_ORDER_PRIO: priority (higher first), then push order.  HX_ORDER_STRAND: planned tasks
 * first, by (block, segment), then as PRIO, except that at equal priority a collective of
 * the intra-node lane goes before one of the inter-node lane.  HX_ORDER_WAVELET: as PRIO
 * (the strands alternate at pop).  HX_ORDER_TOPO: submission order (node id), a
 * topological order. */
enum hx_heap_order { HX_ORDER_PRIO, HX_ORDER_STRAND, HX_ORDER_WAVELET, HX_ORDER_TOPO };

struct hx_heap {
    struct hx_heap_entry *v;
    size_t n, cap;
    enum hx_heap_order order;
};

/* Entry a pops before entry b in @p order. */
int hx_heap_before(enum hx_heap_order order, const struct hx_heap_entry *a,
                   const struct hx_heap_entry *b);

/* Add a ready task; @p seq is its push order (ties). */
void hx_heap_push(struct hx_heap *h, struct starpu_task *task, uint64_t seq);

/* Remove the entry at index @p i and return its task. */
struct starpu_task *hx_heap_remove(struct hx_heap *h, size_t i);

/* The strand of an entry's node (HX_STRAND_NONE without one). */
int hx_heap_strand(const struct hx_heap_entry *e);

/* The index of the first task in heap order that @p worker can run (h->n if none), and in
 * *last_strand the strand that taking it records. */
size_t hx_heap_pick_for(const struct hx_heap *h, unsigned worker, int *last_strand);

/* Remove and return the task hx_heap_pick_for picks, NULL if none. */
struct starpu_task *hx_heap_pop_for(struct hx_heap *h, unsigned worker, int *last_strand);

#endif
