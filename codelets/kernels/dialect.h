/* SPDX-License-Identifier: MIT */
/* codelets/kernels/dialect.h: the spellings that differ between OpenCL C 1.2 and CUDA, so
 * that one kernel source (codelets/kernels/<family>.cl) serves both backends: the OpenCL
 * build embeds dialect.h + every .cl into one program string (build-aux/embed-kernels) that
 * StarPU compiles for each OpenCL device at start; each codelets/cuda/<family>.cu includes
 * dialect.h and its .cl and adds the host launchers.  So the code nvcc compiles is the code
 * PoCL runs in `make check`.
 *
 * Conventions of every kernel (what the launchers rely on):
 * - 1-D launches.  HX_GID() is the global index; reductions run in work-groups of exactly
 *   HX_BLOCK items (a power of two) with a fixed tree in local memory, never float atomics,
 *   so a device run is bitwise repeatable.
 * - A buffer is passed as (pointer, offset in elements): StarPU's OpenCL buffers are cl_mem
 *   plus a byte offset; the CUDA launchers pass the device pointer and offset 0.  The kernel
 *   starts with `p += p_off`.
 * - Sizes and indices are `long` where a tile can reach 2^31 elements, `int` otherwise; both
 *   are 64/32 bits in OpenCL C and in CUDA on LP64 hosts.
 * - Math through HX_EXP/HX_TANH/... (OpenCL C overloads exp(float); CUDA spells expf).
 * Host C files include it for HX_BLOCK only. */
#ifndef HX_KERNELS_DIALECT_H
#define HX_KERNELS_DIALECT_H

#define HX_BLOCK 256

#ifdef __OPENCL_VERSION__
/* the f64 accumulators (loss sum, squared gradient norm) are doubles on the device too */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define HX_KERNEL __kernel
#define HX_GLOBAL __global
#define HX_LOCAL __local /* a work-group array declared inside the kernel */
#define HX_LOCAL_PTR __local /* a pointer parameter into such an array */
#define HX_RESTRICT restrict
#define HX_INLINE static inline
#define HX_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define HX_GID() ((long)get_global_id(0))
#define HX_LID() ((int)get_local_id(0))
#define HX_GROUP() ((long)get_group_id(0))
#define HX_LSIZE() ((int)get_local_size(0))
#define HX_NGROUPS() ((long)get_num_groups(0))
#define HX_EXP(x) exp(x)
#define HX_LOG(x) log(x)
#define HX_TANH(x) tanh(x)
#define HX_SQRT(x) sqrt(x)
#define HX_RSQRT(x) rsqrt(x)
#define HX_FMAX(a, b) fmax(a, b)
#define HX_FABS(x) fabs(x)
#elif defined(__CUDACC__)
#define HX_KERNEL __global__
#define HX_GLOBAL
#define HX_LOCAL __shared__
#define HX_LOCAL_PTR
#define HX_RESTRICT __restrict__
#define HX_INLINE static __device__ __forceinline__
#define HX_BARRIER() __syncthreads()
#define HX_GID() ((long)blockIdx.x * blockDim.x + threadIdx.x)
#define HX_LID() ((int)threadIdx.x)
#define HX_GROUP() ((long)blockIdx.x)
#define HX_LSIZE() ((int)blockDim.x)
#define HX_NGROUPS() ((long)gridDim.x)
#define HX_EXP(x) expf(x)
#define HX_LOG(x) logf(x)
#define HX_TANH(x) tanhf(x)
#define HX_SQRT(x) sqrtf(x)
#define HX_RSQRT(x) rsqrtf(x)
#define HX_FMAX(a, b) fmaxf(a, b)
#define HX_FABS(x) fabsf(x)
#endif

/* host C (codelets/opencl/): only HX_BLOCK above */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC__)

/* HX_BLOCK_SUM(name, T): T name(s, v), the sum of v over a work-group of HX_BLOCK items by a
 * fixed tree in local memory @p s (HX_BLOCK T's); every item gets the total.  Items must all
 * call it (barriers). */
#define HX_BLOCK_SUM(name, T)                                                                 \
    HX_INLINE T name(HX_LOCAL_PTR T *s, T v)                                                  \
    {                                                                                         \
        int l = HX_LID();                                                                     \
        s[l] = v;                                                                             \
        HX_BARRIER();                                                                         \
        for (int w = HX_BLOCK / 2; w > 0; w /= 2) {                                           \
            if (l < w) {                                                                      \
                s[l] += s[l + w];                                                             \
            }                                                                                 \
            HX_BARRIER();                                                                     \
        }                                                                                     \
        T total = s[0];                                                                       \
        HX_BARRIER(); /* s is free for the next call */                                       \
        return total;                                                                         \
    }

/* in float; and in double (s: HX_BLOCK doubles, 2 KB) for the row sums the CPU also keeps in
 * double (LayerNorm's moments, the sum of up to V = 50k exp() terms of cross-entropy, the
 * gradient norm's partial sums) */
HX_BLOCK_SUM(hx_block_sum, float)
HX_BLOCK_SUM(hx_block_sum_f64, double)

/* the maximum of v over a work-group, as hx_block_sum */
HX_INLINE float hx_block_max(HX_LOCAL_PTR float *s, float v)
{
    int l = HX_LID();
    s[l] = v;
    HX_BARRIER();
    for (int w = HX_BLOCK / 2; w > 0; w /= 2) {
        if (l < w) {
            s[l] = HX_FMAX(s[l], s[l + w]);
        }
        HX_BARRIER();
    }
    float m = s[0];
    HX_BARRIER();
    return m;
}

#endif /* a device compile */
#endif /* HX_KERNELS_DIALECT_H */
