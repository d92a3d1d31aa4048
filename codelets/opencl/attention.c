/* SPDX-License-Identifier: MIT */
/* codelets/opencl/attention.c: OpenCL launchers of hx_cl_attention_fwd/bwd, kernels in
 * codelets/kernels/attention.cl; buffers and checks as in codelets/attention.c
 * (codelets/attention.h).  Forward: exactly one work-group of HX_BLOCK items per (row, query
 * head) of the tile's nseq*T rows (the kernels have no bound check); backward: those, for the
 * query rows' dq, then one per (row, kv head) for the key rows' dk and dv.  Each buffer's own
 * ld is passed (a device copy is packed, ld = cols; a host tile need not be). */
#include <math.h>

#include "codelets/attention.h"
#include "codelets/codelets.h"
#include "codelets/kernels/dialect.h"

#if HX_OPENCL

/* buffers: qkv, out, lse */
void hx_attention_fwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 2, "attention_fwd");
    cl_int nseq = a->nseq, T = a->T, C = a->C, NH = a->NH, KV = hx_attention_kv(a);
    cl_int ld_qkv = HX_BUF_LD(buffers, 0), ld_out = HX_BUF_LD(buffers, 1);
    cl_float scale = 1.0f / sqrtf((float)(C / NH)); /* the CPU's expression */
    if (hx_ocl_begin(&l, "attention_fwd", "hx_attention_fwd") == 0) {
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 0);
        HX_OCL_VAL(&l, T);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, NH);
        HX_OCL_VAL(&l, KV);
        HX_OCL_VAL(&l, ld_qkv);
        HX_OCL_VAL(&l, ld_out);
        HX_OCL_VAL(&l, scale);
        hx_ocl_end(&l, (size_t)nseq * T * NH * HX_BLOCK, HX_BLOCK);
    }
}

/* buffers: qkv, out, dout, lse, dqkv */
void hx_attention_bwd_opencl(void *buffers[], void *cl_arg)
{
    const struct hx_node *node = cl_arg;
    const struct hx_attention_args *a = &node->args.attn;
    struct hx_ocl_launch l;
    if (hx_run_failed()) {
        return;
    }
    hx_attention_check(buffers, a, 0, 1, 3, "attention_bwd");
    hx_attention_check(buffers, a, 4, 2, 3, "attention_bwd");
    cl_int nseq = a->nseq, T = a->T, C = a->C, NH = a->NH, KV = hx_attention_kv(a);
    cl_int ld_dqkv = HX_BUF_LD(buffers, 4), ld_qkv = HX_BUF_LD(buffers, 0);
    cl_int ld_out = HX_BUF_LD(buffers, 1), ld_dout = HX_BUF_LD(buffers, 2);
    cl_float scale = 1.0f / sqrtf((float)(C / NH));
    if (hx_ocl_begin(&l, "attention_bwd", "hx_attention_bwd") == 0) {
        hx_ocl_buf(&l, buffers, 4);
        hx_ocl_buf(&l, buffers, 0);
        hx_ocl_buf(&l, buffers, 1);
        hx_ocl_buf(&l, buffers, 2);
        hx_ocl_buf(&l, buffers, 3);
        HX_OCL_VAL(&l, nseq);
        HX_OCL_VAL(&l, T);
        HX_OCL_VAL(&l, C);
        HX_OCL_VAL(&l, NH);
        HX_OCL_VAL(&l, KV);
        HX_OCL_VAL(&l, ld_dqkv);
        HX_OCL_VAL(&l, ld_qkv);
        HX_OCL_VAL(&l, ld_out);
        HX_OCL_VAL(&l, ld_dout);
        HX_OCL_VAL(&l, scale);
        hx_ocl_end(&l, (size_t)nseq * T * (NH + KV) * HX_BLOCK, HX_BLOCK);
    }
}

#endif
