/* SPDX-License-Identifier: MIT */
/* runtime/smpi_ops.c: the records of the operations a StarPU-MPI collective submits (its
 * transfers, reductions and copies; runtime/smpi_internal.h, struct hx_smpi_op), and what
 * the watchdog prints from them when the collective hangs (hx_smpi_describe, the request's
 * describe hook, called by runtime/comm_engine.c).  Each operation's callback is
 * hx_smpi_op_done with its record: it marks the record done, then counts the collective's
 * pending operations down, as runtime/comm_smpi.c's poll reads them.
 * Test: tests/mpi/watchdog.sh (a killed rank: the survivors list what they wait for). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/smpi_internal.h"

struct hx_smpi_op *hx_smpi_op_new(struct hx_smpi_coll *c, char kind, int peer, int tensor,
                                  int step)
{
    /* (only the collective's own task adds records, while it submits: no lock) */
    struct hx_smpi_ops *b = c->ops_last;
    if (b == NULL || b->n == SMPI_OPS_PER_BLOCK) {
        if ((b = malloc(sizeof *b)) == NULL) {
            hx_smpi_fail(c, "keeping the record of an operation", ENOMEM);
            return NULL;
        }
        b->next = NULL;
        b->n = 0;
        *(c->ops_last != NULL ? &c->ops_last->next : &c->ops) = b;
        c->ops_last = b;
    }
    struct hx_smpi_op *o = &b->op[b->n++];
    *o = (struct hx_smpi_op){ c, kind, peer, tensor, step, 0 };
    return o;
}

void hx_smpi_free_ops(struct hx_smpi_coll *c)
{
    while (c->ops != NULL) {
        struct hx_smpi_ops *b = c->ops;
        c->ops = b->next;
        free(b);
    }
    c->ops_last = NULL;
}

void hx_smpi_op_done(void *arg)
{
    struct hx_smpi_op *o = arg;
    struct hx_smpi_coll *c = o->c;
    int lane = c->r.lane; /* (read first: once pending is 0 the engine may free c and o) */
    __atomic_store_n(&o->done, 1, __ATOMIC_RELAXED);
    /* the lane sleeps until kicked (hx_comm_post_kicked, runtime/comm_engine.c) */
    if (__atomic_sub_fetch(&c->pending, 1, __ATOMIC_RELEASE) == 0) {
        hx_comm_engine_kick(lane);
    }
}

/* The watchdog's view of a hung collective: its operations not done, oldest first, so the
 * first receive listed is the message the rank waits for; comparing it with the peer's list
 * (a send it says is done) tells a lost message from a peer that never got there. */
#define DESCRIBE_MAX 8
void hx_smpi_describe(const struct hx_coll_req *r, FILE *f, const char *prefix)
{
    const struct hx_smpi_coll *c = (const struct hx_smpi_coll *)r;
    const struct hx_smpi_op *left[DESCRIBE_MAX];
    int nleft = 0, total = 0, nops = 0;
    for (const struct hx_smpi_ops *b = c->ops; b != NULL; b = b->next) {
        for (int k = 0; k < b->n; k++, nops++) {
            if (!__atomic_load_n(&b->op[k].done, __ATOMIC_RELAXED)) {
                if (nleft < DESCRIBE_MAX) {
                    left[nleft++] = &b->op[k];
                }
                total++;
            }
        }
    }
    fprintf(f, "%s%d of its %d StarPU-MPI operations not done%s\n", prefix, total, nops,
            total > 0 ? ", oldest first:" : "");
    for (int i = 0; i < nleft; i++) {
        const struct hx_smpi_op *o = left[i];
        if (o->kind == 's' || o->kind == 'r') {
            fprintf(f, "%s  %s world rank %d, tensor %d step %d\n", prefix,
                    o->kind == 's' ? "send to" : "receive from", o->peer, o->tensor, o->step);
        } else {
            fprintf(f, "%s  a %s task\n", prefix, o->kind == 't' ? "reduction" : "copy");
        }
    }
    if (total > nleft) {
        fprintf(f, "%s  and %d more\n", prefix, total - nleft);
    }
}
