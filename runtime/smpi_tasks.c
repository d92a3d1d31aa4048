/* SPDX-License-Identifier: MIT */
/* runtime/smpi_tasks.c: the StarPU-MPI backend's local tasks (runtime/smpi_internal.h): the
 * reduction acc := acc (+ | max) in, and the copies between a collective task's tile and
 * StarPU-allocated scratch.  Plain StarPU tasks with CPU implementations and history models
 * (what a simulation charges them), submitted at the collective's lane priority
 * (runtime/comm_smpi.c, lane_prio).  Each follows its handles' data dependencies, so the
 * algorithm, not the timing, fixes every sum. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "helix/error.h"
#include "helix/ops.h"
#include "helix/tensor.h"
#include "runtime/sim_models.h"
#include "runtime/smpi_internal.h"

/* ---- the reduction task: acc := acc (+ | max) in ---- */

struct acc_args {
    int dtype, reduce;
};

/* The reduction tasks' arguments, one per (dtype, op): cl_arg points here (never freed). */
static const struct acc_args acc_args[3][2] = {
    { { HX_F32, HX_SUM }, { HX_F32, HX_MAX } },
    { { HX_F64, HX_SUM }, { HX_F64, HX_MAX } },
    { { HX_I32, HX_SUM }, { HX_I32, HX_MAX } },
};

static void acc_cpu(void *buffers[], void *cl_arg)
{
    const struct acc_args *a = cl_arg;
    long n = (long)STARPU_VECTOR_GET_NX(buffers[0]);
    void *y = (void *)STARPU_VECTOR_GET_PTR(buffers[0]);
    const void *x = (const void *)STARPU_VECTOR_GET_PTR(buffers[1]);
    int max = a->reduce == HX_MAX;
    if (a->dtype == HX_F32) {
        float *u = y;
        const float *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    } else if (a->dtype == HX_F64) {
        double *u = y;
        const double *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    } else {
        int32_t *u = y;
        const int32_t *v = x;
        for (long i = 0; i < n; i++) {
            u[i] = max ? (v[i] > u[i] ? v[i] : u[i]) : u[i] + v[i];
        }
    }
}

/* History models, as every codelet of helix has: they are what a simulation (helix simulate)
 * charges these tasks, calibrated by real runs like the others. */
static struct starpu_perfmodel acc_model = { .type = STARPU_HISTORY_BASED,
                                             .symbol = "hx_smpi_reduce" };
static struct starpu_perfmodel copy_in_model = { .type = STARPU_HISTORY_BASED,
                                                 .symbol = "hx_smpi_copy_in" };
static struct starpu_perfmodel copy_out_model = { .type = STARPU_HISTORY_BASED,
                                                  .symbol = "hx_smpi_copy_out" };

static struct starpu_codelet acc_cl = {
    .cpu_funcs = { acc_cpu },
    .nbuffers = 2,
    .modes = { STARPU_RW, STARPU_R },
    .name = "smpi_reduce",
    .model = &acc_model,
};

/* ---- copies between tiles (pointers the collective's task holds) and scratch ----
 * cl_arg: struct copy_args (freed by StarPU with the task): the scratch handle's elements in
 * order are the segments' (one tile, or for a packed all-reduce the pieces of several tiles
 * that one chunk covers).  Copy-in gathers the segments into scratch; copy-out scatters
 * scratch back (or, for a reduce-scatter with accumulate, adds it). */

struct copy_args {
    int dtype, add, nseg;
    struct hx_smpi_seg seg[];
};

static void copy_in_cpu(void *buffers[], void *cl_arg)
{
    const struct copy_args *a = cl_arg;
    size_t esize = STARPU_VECTOR_GET_ELEMSIZE(buffers[0]);
    char *dst = (char *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (int i = 0; i < a->nseg; i++) {
        memcpy(dst, a->seg[i].p, (size_t)a->seg[i].n * esize);
        dst += (size_t)a->seg[i].n * esize;
    }
}

void hx_smpi_put(void *dst, const void *src, long n, int dtype, int add)
{
    if (!add) {
        memcpy(dst, src, (size_t)n * hx_dtype_size((enum hx_dtype)dtype));
    } else if (dtype == HX_F32) {
        for (long i = 0; i < n; i++) {
            ((float *)dst)[i] += ((const float *)src)[i];
        }
    } else if (dtype == HX_F64) {
        for (long i = 0; i < n; i++) {
            ((double *)dst)[i] += ((const double *)src)[i];
        }
    } else {
        for (long i = 0; i < n; i++) {
            ((int32_t *)dst)[i] += ((const int32_t *)src)[i];
        }
    }
}

static void copy_out_cpu(void *buffers[], void *cl_arg)
{
    const struct copy_args *a = cl_arg;
    size_t esize = STARPU_VECTOR_GET_ELEMSIZE(buffers[0]);
    const char *src = (const char *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (int i = 0; i < a->nseg; i++) {
        hx_smpi_put(a->seg[i].p, src, a->seg[i].n, a->dtype, a->add);
        src += (size_t)a->seg[i].n * esize;
    }
}

static struct starpu_codelet copy_in_cl = {
    .cpu_funcs = { copy_in_cpu },
    .nbuffers = 1,
    .modes = { STARPU_W },
    .name = "smpi_copy_in",
    .model = &copy_in_model,
};

static struct starpu_codelet copy_out_cl = {
    .cpu_funcs = { copy_out_cpu },
    .nbuffers = 1,
    .modes = { STARPU_R },
    .name = "smpi_copy_out",
    .model = &copy_out_model,
};

void hx_smpi_reduce(struct hx_smpi_coll *c, starpu_data_handle_t acc, starpu_data_handle_t in,
                    int op)
{
    if (c->failed) {
        return;
    }
    if (hx_sim_model_check(&acc_cl, "StarPU-MPI's reduction task") != HX_OK) {
        c->failed = 1; /* (said) */
        return;
    }
    int d = c->dtype == HX_F32 ? 0 : c->dtype == HX_F64 ? 1 : 2;
    const struct acc_args *a = &acc_args[d][op == HX_MAX];
    struct hx_smpi_op *o = hx_smpi_op_new(c, 't', -1, -1, -1);
    if (o == NULL) {
        return;
    }
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    int ret = starpu_task_insert(&acc_cl, STARPU_RW, acc, STARPU_R, in, STARPU_CL_ARGS_NFREE,
                                 a, sizeof *a, STARPU_CALLBACK_WITH_ARG_NFREE, hx_smpi_op_done, o,
                                 STARPU_PRIORITY, c->prio, 0);
    if (ret != 0) {
        o->done = 1; /* (never submitted) */
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        hx_smpi_fail(c, "submitting a reduction task", ret);
    }
}

static void copy(struct hx_smpi_coll *c, struct starpu_codelet *cl, starpu_data_handle_t h,
                 const struct hx_smpi_seg *seg, int nseg, int add)
{
    if (c->failed) {
        return;
    }
    if (hx_sim_model_check(cl, "StarPU-MPI's copy task") != HX_OK) {
        c->failed = 1; /* (said) */
        return;
    }
    size_t size = sizeof(struct copy_args) + (size_t)nseg * sizeof *seg;
    struct copy_args *a = malloc(size);
    struct hx_smpi_op *o = a != NULL ? hx_smpi_op_new(c, 'c', -1, -1, -1) : NULL;
    if (o == NULL) {
        if (a == NULL) {
            hx_smpi_fail(c, "allocating a copy task's arguments", ENOMEM);
        }
        free(a);
        return;
    }
    a->dtype = c->dtype;
    a->add = add;
    a->nseg = nseg;
    memcpy(a->seg, seg, (size_t)nseg * sizeof *seg);
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    int ret = starpu_task_insert(cl, cl == &copy_in_cl ? STARPU_W : STARPU_R, h, STARPU_CL_ARGS,
                                 a, size, STARPU_CALLBACK_WITH_ARG_NFREE, hx_smpi_op_done, o,
                                 STARPU_PRIORITY, c->prio, 0);
    if (ret != 0) {
        o->done = 1; /* (never submitted) */
        __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        free(a);
        hx_smpi_fail(c, "submitting a copy task", ret);
    }
}

void hx_smpi_copy_in(struct hx_smpi_coll *c, starpu_data_handle_t h, const void *tile)
{
    struct hx_smpi_seg seg = { (void *)tile, (long)starpu_vector_get_nx(h) };
    copy(c, &copy_in_cl, h, &seg, 1, 0);
}

void hx_smpi_copy_out(struct hx_smpi_coll *c, starpu_data_handle_t h, void *tile, int add)
{
    struct hx_smpi_seg seg = { tile, (long)starpu_vector_get_nx(h) };
    copy(c, &copy_out_cl, h, &seg, 1, add);
}

void hx_smpi_gather(struct hx_smpi_coll *c, starpu_data_handle_t h, const struct hx_smpi_seg *seg,
                    int nseg)
{
    copy(c, &copy_in_cl, h, seg, nseg, 0);
}

void hx_smpi_scatter(struct hx_smpi_coll *c, starpu_data_handle_t h, const struct hx_smpi_seg *seg,
                     int nseg, int add)
{
    copy(c, &copy_out_cl, h, seg, nseg, add);
}
