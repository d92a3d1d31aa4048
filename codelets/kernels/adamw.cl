/* SPDX-License-Identifier: MIT */
/* codelets/kernels/adamw.cl: one AdamW step on contiguous tiles of n floats (param, grad,
 * m, v), one item per element; codelets/adamw.c's hx_cpu_adamw is the CPU form, and this is
 * its loop body, operation for operation:
 *   g = clip_coef grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   param -= lr (wd param + (m rbc1) / (sqrt(v rbc2) + eps))
 * The launchers read the f64 squared gradient norm back to the host and get clip_coef,
 * rbc1 = 1/(1-b1^t) and rbc2 = 1/(1-b2^t) from hx_adamw_scalars (codelets/adamw.h), the
 * CPU's own code, so every backend uses the same three floats.
 * Launch: global n (rounded up to HX_BLOCK).  Backends: codelets/opencl/adamw.c,
 * codelets/cuda/adamw.cu. */

HX_KERNEL void hx_adamw(HX_GLOBAL float *HX_RESTRICT param, long param_off,
                        HX_GLOBAL const float *HX_RESTRICT grad, long grad_off,
                        HX_GLOBAL float *HX_RESTRICT m, long m_off,
                        HX_GLOBAL float *HX_RESTRICT v, long v_off, long n, float lr, float b1,
                        float b2, float eps, float wd, float clip_coef, float rbc1, float rbc2)
{
    long i = HX_GID();
    param += param_off;
    grad += grad_off;
    m += m_off;
    v += v_off;
    if (i < n) {
        float g = clip_coef * grad[i];
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = param[i];
        float u = (mi * rbc1) / (HX_SQRT(vi * rbc2) + eps);
        param[i] = p - lr * (wd * p + u);
    }
}
