/* SPDX-License-Identifier: MIT */
/* schedulers/prio_heap.c: the ready heaps of the heap policies (schedulers/prio_heap.h).
 * Sift up and down on an array; a pop for a worker scans past the tasks it cannot run.
 * Test: tests/schedulers/priority_order.c, every_task_once.c. */
#include <stdlib.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "schedulers/prio_heap.h"

static const struct hx_node *node_of(const struct hx_heap_entry *e)
{
    return e->task->sched_data;
}

/* hx-strand: a planned task before any other, then by (block, segment); 0 if equal */
static int plan_cmp(const struct hx_heap_entry *a, const struct hx_heap_entry *b)
{
    const struct hx_node *na = node_of(a), *nb = node_of(b);
    int pa = na != NULL && na->block >= 0, pb = nb != NULL && nb->block >= 0;
    if (pa != pb) {
        return pa ? -1 : 1;
    }
    if (!pa) {
        return 0;
    }
    if (na->block != nb->block) {
        return na->block < nb->block ? -1 : 1;
    }
    return na->segment == nb->segment ? 0 : na->segment < nb->segment ? -1 : 1;
}

/* 1 for a collective of the inter-node lane (graphs/collectives.c stamps node->lane) */
static int inter_node(const struct hx_heap_entry *e)
{
    return node_of(e) != NULL && node_of(e)->lane == HX_LANE_COMM_INTER;
}

int hx_heap_before(enum hx_heap_order order, const struct hx_heap_entry *a,
                   const struct hx_heap_entry *b)
{
    int c = order == HX_ORDER_STRAND ? plan_cmp(a, b) : 0;
    if (c != 0) {
        return c < 0;
    }
    if (order == HX_ORDER_TOPO && node_of(a) != NULL && node_of(b) != NULL) {
        return node_of(a)->id < node_of(b)->id; /* submission order: a topological order */
    }
    if (a->task->priority != b->task->priority) {
        return a->task->priority > b->task->priority;
    }
    if (order == HX_ORDER_STRAND && inter_node(a) != inter_node(b)) {
        return inter_node(b); /* equal priority: the intra-node lane's collective first */
    }
    return a->seq < b->seq;
}

static void swap(struct hx_heap_entry *a, struct hx_heap_entry *b)
{
    struct hx_heap_entry t = *a;
    *a = *b;
    *b = t;
}

static void sift_up(struct hx_heap *h, size_t i)
{
    while (i > 0 && hx_heap_before(h->order, &h->v[i], &h->v[(i - 1) / 2])) {
        swap(&h->v[i], &h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct hx_heap *h, size_t i)
{
    for (;;) {
        size_t best = i, l = 2 * i + 1, r = 2 * i + 2;
        if (l < h->n && hx_heap_before(h->order, &h->v[l], &h->v[best])) {
            best = l;
        }
        if (r < h->n && hx_heap_before(h->order, &h->v[r], &h->v[best])) {
            best = r;
        }
        if (best == i) {
            return;
        }
        swap(&h->v[i], &h->v[best]);
        i = best;
    }
}

void hx_heap_push(struct hx_heap *h, struct starpu_task *task, uint64_t seq)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        struct hx_heap_entry *v = realloc(h->v, cap * sizeof *v);
        /* push cannot fail in StarPU's contract, and losing a task would hang the run */
        HX_ASSERT(v != NULL, "hx-prio: out of memory growing a ready heap to %zu tasks", cap);
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n] = (struct hx_heap_entry){ task, seq, 0 };
    sift_up(h, h->n++);
}

struct starpu_task *hx_heap_remove(struct hx_heap *h, size_t i)
{
    struct starpu_task *task = h->v[i].task;
    h->v[i] = h->v[--h->n];
    if (i < h->n) {
        sift_down(h, i);
        sift_up(h, i);
    }
    return task;
}

int hx_heap_strand(const struct hx_heap_entry *e)
{
    return node_of(e) != NULL ? node_of(e)->strand : HX_STRAND_NONE;
}

/* hx-strand, hx-wavelet: when the top is of the strand taken last, the best task of the
 * other strand that is as good as the top for the order (same plan step for hx-strand; any
 * for hx-wavelet, which alternates round-robin), so the two strands share the workers. */
static size_t other_strand(const struct hx_heap *h, int last, unsigned worker)
{
    if (h->order == HX_ORDER_PRIO || h->n < 2 || last == HX_STRAND_NONE ||
        hx_heap_strand(&h->v[0]) != last) {
        return 0;
    }
    size_t best = 0;
    for (size_t i = 1; i < h->n; i++) {
        int s = hx_heap_strand(&h->v[i]);
        if (s == HX_STRAND_NONE || s == last ||
            (h->order == HX_ORDER_STRAND && plan_cmp(&h->v[i], &h->v[0]) != 0) ||
            !starpu_worker_can_execute_task_first_impl(worker, h->v[i].task, NULL)) {
            continue;
        }
        if (best == 0 || hx_heap_before(h->order, &h->v[i], &h->v[best])) {
            best = i;
        }
    }
    return best;
}

/* The index of the first task in heap order that @p worker can run (h->n if none), and in
 * *last_strand the strand that taking it records.  On CPU-only runs that is the top; a task
 * restricted to other workers (task->where) makes us scan for the best one we can run. */
size_t hx_heap_pick_for(const struct hx_heap *h, unsigned worker, int *last_strand)
{
    if (h->n == 0) {
        return h->n;
    }
    size_t alt = other_strand(h, *last_strand, worker);
    if (alt > 0) {
        *last_strand = hx_heap_strand(&h->v[alt]);
        return alt;
    }
    if (h->order != HX_ORDER_PRIO && hx_heap_strand(&h->v[0]) != HX_STRAND_NONE) {
        *last_strand = hx_heap_strand(&h->v[0]);
    }
    if (starpu_worker_can_execute_task_first_impl(worker, h->v[0].task, NULL)) {
        return 0;
    }
    size_t best = h->n;
    for (size_t i = 1; i < h->n; i++) {
        if ((best == h->n || hx_heap_before(h->order, &h->v[i], &h->v[best])) &&
            starpu_worker_can_execute_task_first_impl(worker, h->v[i].task, NULL)) {
            best = i;
        }
    }
    return best;
}

struct starpu_task *hx_heap_pop_for(struct hx_heap *h, unsigned worker, int *last_strand)
{
    size_t i = hx_heap_pick_for(h, worker, last_strand);
    return i < h->n ? hx_heap_remove(h, i) : NULL;
}
