/* SPDX-License-Identifier: MIT */
/* tests/mpi/ckpt_compare.c: the parity oracle of the distributed tests.
 *   ckpt_compare REF OTHER TOL
 * loads two checkpoints (directories or files) of the same model into one serial model and
 * prints their difference D, "parameters: difference D (...)": the larger of the normwise
 * relative differences ||a - b|| / ||a|| of the whole model and of its worst tensor (with
 * HX_COMPARE_VERBOSE set, every tensor's too).  Exits 0 when D <= TOL (inf: only report), 1
 * otherwise (NaN included), 2 on unusable input.  TOL comes from the rule of tests/README.md
 * ("Parity tolerances"), or is 0 for a bitwise check.  One block is reported but not held to
 * TOL: the attention's key bias, whose gradient is zero in exact arithmetic, so Adam turns its
 * rounding noise into steps of about lr in any run; two correct runs that sum gradients in
 * another order disagree there by ~1e-4 of qkv_b's norm.  Distributed runs save the whole
 * (gathered) model, so a checkpoint of any mesh compares with the serial one.  Used by
 * tests/mpi/parity_lib.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"

static void free_all(float **v, int n)
{
    for (int i = 0; v != NULL && i < n; i++) {
        free(v[i]);
    }
    free(v);
}

static float **read_all(hx_gpt_t m, const char *path)
{
    int n = hx_gpt_num_param_tensors(m);
    float **v = calloc((size_t)n, sizeof *v);
    if (v == NULL || hx_checkpoint_load(path, m, NULL) != HX_OK) {
        free(v);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        v[i] = malloc(sizeof(float) * (size_t)rows * cols);
        if (v[i] == NULL || hx_gpt_gather_state(m, i, HX_STATE_PARAM, v[i]) != HX_OK) {
            free_all(v, n);
            return NULL;
        }
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: ckpt_compare REF OTHER TOL\n");
        return 2;
    }
    double tol = atof(argv[3]), worst = 0;
    struct hx_checkpoint_info info;
    struct hx_optim_config o;
    hx_gpt_t m;
    if (hx_checkpoint_peek(argv[1], &info) != HX_OK) {
        return 2;
    }
    hx_optim_config_default(&o, 1);
    if (hx_gpt_build(&m, &info.model, &o) != HX_OK || hx_runtime_init(NULL) != HX_OK ||
        hx_gpt_realize(m) != HX_OK) {
        return 2;
    }
    float **a = read_all(m, argv[1]), **b = a != NULL ? read_all(m, argv[2]) : NULL;
    if (a == NULL || b == NULL) {
        free_all(a, hx_gpt_num_param_tensors(m));
        return 2;
    }
    int n = hx_gpt_num_param_tensors(m), worst_i = 0;
    double all_d = 0, all_r = 0, kbias = 0;
    for (int i = 0; i < n; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        const char *name = hx_gpt_param_name(m, i);
        /* the key bias's gradient is zero in exact arithmetic (it shifts a whole row of
         * scores), so what Adam makes of it is rounding noise normalised to a step of ~lr:
         * it is reported, not held to the tolerance */
        size_t n_el = (size_t)rows * cols, k0 = n_el, k1 = n_el;
        if (strstr(name, "qkv_b") != NULL) {
            k0 = n_el / 3;
            k1 = 2 * n_el / 3;
        }
        double d = 0, r = 0, dk = 0;
        for (size_t k = 0; k < n_el; k++) {
            double diff = ((double)a[i][k] - b[i][k]) * ((double)a[i][k] - b[i][k]);
            all_d += diff;
            all_r += (double)a[i][k] * a[i][k];
            if (k >= k0 && k < k1) {
                dk += diff;
                continue;
            }
            d += diff;
            r += (double)a[i][k] * a[i][k];
        }
        double e = sqrt(d) / (sqrt(r) > 0 ? sqrt(r) : 1);
        if (k1 > k0) {
            kbias = fmax(kbias, sqrt(dk) / (sqrt(r) > 0 ? sqrt(r) : 1));
        }
        if (getenv("HX_COMPARE_VERBOSE") != NULL) {
            printf("%-16s %.3g (norm %.3g)\n", name, e, sqrt(r));
        }
        if (!(e <= worst)) {
            worst = e;
            worst_i = i;
        }
    }
    double global = sqrt(all_d) / sqrt(all_r);
    double diff = isnan(worst) || isnan(global) ? NAN : fmax(worst, global);
    printf("parameters: difference %.3g (the larger of the whole model's %.3g and the worst "
           "tensor's %.3g, %s), tolerance %.3g; key biases (zero gradient, Adam-normalised "
           "rounding noise) %.3g\n", diff, global, worst, hx_gpt_param_name(m, worst_i), tol,
           kbias);
    free_all(a, n);
    free_all(b, n);
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    return diff <= tol ? 0 : 1;
}
