/* SPDX-License-Identifier: MIT */
/* codelets/collective_calls.h: one backend's collective calls (runtime/comm_internal.h's
 * hx_nccl_* or hx_smpi_*), and the codelet bodies written against them
 * (codelets/collective_calls.c).  HX_COLL_BACKEND(smpi) defines a backend's table of calls
 * and its codelet functions allreduce_smpi ... shift_smpi, one line each. */
#ifndef HX_COLLECTIVE_CALLS_H
#define HX_COLLECTIVE_CALLS_H

#include "codelets/codelets.h"
#include "runtime/comm_internal.h"

/* The calls of runtime/comm_internal.h, for one backend; `c` is its collective in flight. */
struct hx_coll_calls {
    void *(*begin)(int ch, int seq, const char *op, int dtype, const struct hx_group **g);
    int (*allreduce)(void *c, void *buf, long n, int reduce);
    int (*broadcast)(void *c, void *buf, long n, int root);
    int (*allgather)(void *c, const void *piece, void *full, long total);
    int (*reduce_scatter)(void *c, const void *full, void *piece, long total, int reduce,
                          int accumulate);
    int (*alltoall)(void *c, const void *in, void *out, long n);
    int (*send)(void *c, const void *buf, long n, int peer);
    int (*recv)(void *c, void *buf, long n, int peer);
    void (*end)(void *c, int ok);
};

/* Codelet bodies: buffers and cl_arg (the node) as StarPU passes them. */
void hx_coll_allreduce_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);
void hx_coll_broadcast_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);
void hx_coll_allgather_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);
void hx_coll_reduce_scatter_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);
void hx_coll_alltoall_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);
void hx_coll_p2p_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg, int send);
void hx_coll_shift_with(const struct hx_coll_calls *o, void *buffers[], void *cl_arg);

/* In a backend's codelet file: `static const struct hx_coll_calls <b>_calls` from hx_<b>_*,
 * and the CPU functions <op>_<b>(buffers, cl_arg) of its codelets. */
#define HX_COLL_BACKEND(b)                                                                    \
    static void *b##_begin(int ch, int seq, const char *op, int dtype,                        \
                           const struct hx_group **g)                                         \
    {                                                                                         \
        return hx_##b##_begin(ch, seq, op, dtype, g);                                         \
    }                                                                                         \
    static int b##_allreduce(void *c, void *buf, long n, int reduce)                          \
    {                                                                                         \
        return hx_##b##_allreduce(c, buf, n, reduce);                                         \
    }                                                                                         \
    static int b##_broadcast(void *c, void *buf, long n, int root)                            \
    {                                                                                         \
        return hx_##b##_broadcast(c, buf, n, root);                                           \
    }                                                                                         \
    static int b##_allgather(void *c, const void *piece, void *full, long total)              \
    {                                                                                         \
        return hx_##b##_allgather(c, piece, full, total);                                     \
    }                                                                                         \
    static int b##_reduce_scatter(void *c, const void *full, void *piece, long total,         \
                                  int reduce, int accumulate)                                 \
    {                                                                                         \
        return hx_##b##_reduce_scatter(c, full, piece, total, reduce, accumulate);            \
    }                                                                                         \
    static int b##_alltoall(void *c, const void *in, void *out, long n)                       \
    {                                                                                         \
        return hx_##b##_alltoall(c, in, out, n);                                              \
    }                                                                                         \
    static int b##_send(void *c, const void *buf, long n, int peer)                           \
    {                                                                                         \
        return hx_##b##_send(c, buf, n, peer);                                                \
    }                                                                                         \
    static int b##_recv(void *c, void *buf, long n, int peer)                                 \
    {                                                                                         \
        return hx_##b##_recv(c, buf, n, peer);                                                \
    }                                                                                         \
    static void b##_end(void *c, int ok)                                                      \
    {                                                                                         \
        hx_##b##_end(c, ok);                                                                  \
    }                                                                                         \
    static const struct hx_coll_calls b##_calls = {                                          \
        b##_begin,     b##_allreduce, b##_broadcast, b##_allgather, b##_reduce_scatter,       \
        b##_alltoall,  b##_send,      b##_recv,      b##_end,                                 \
    };                                                                                        \
    static void allreduce_##b(void *buffers[], void *cl_arg)                                  \
    {                                                                                         \
        hx_coll_allreduce_with(&b##_calls, buffers, cl_arg);                                  \
    }                                                                                         \
    static void broadcast_##b(void *buffers[], void *cl_arg)                                  \
    {                                                                                         \
        hx_coll_broadcast_with(&b##_calls, buffers, cl_arg);                                  \
    }                                                                                         \
    static void allgather_##b(void *buffers[], void *cl_arg)                                  \
    {                                                                                         \
        hx_coll_allgather_with(&b##_calls, buffers, cl_arg);                                  \
    }                                                                                         \
    static void reduce_scatter_##b(void *buffers[], void *cl_arg)                             \
    {                                                                                         \
        hx_coll_reduce_scatter_with(&b##_calls, buffers, cl_arg);                             \
    }                                                                                         \
    static void alltoall_##b(void *buffers[], void *cl_arg)                                   \
    {                                                                                         \
        hx_coll_alltoall_with(&b##_calls, buffers, cl_arg);                                   \
    }                                                                                         \
    static void send_##b(void *buffers[], void *cl_arg)                                       \
    {                                                                                         \
        hx_coll_p2p_with(&b##_calls, buffers, cl_arg, 1);                                     \
    }                                                                                         \
    static void recv_##b(void *buffers[], void *cl_arg)                                       \
    {                                                                                         \
        hx_coll_p2p_with(&b##_calls, buffers, cl_arg, 0);                                     \
    }                                                                                         \
    static void shift_##b(void *buffers[], void *cl_arg)                                      \
    {                                                                                         \
        hx_coll_shift_with(&b##_calls, buffers, cl_arg);                                      \
    }

#endif
