/* SPDX-License-Identifier: MIT */
/* runtime/sim_device.c: a device description (devices/README.md) read into struct
 * hx_sim_device: `key = value` lines, `#` comments.  Every key is described once in `keys`
 * (range, unit, an example line); a message names FILE:LINE, the key and a line to write.
 * Test: tests/sim/analytic.sh (bad files). */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "runtime/kv_lines.h"
#include "runtime/sim_device.h"

struct key {
    const char *name;
    size_t offset; /* a double in struct hx_sim_device; the name and ints are special-cased */
    double min, max;
    const char *what, *example;
};

#define AT(f) offsetof(struct hx_sim_device, f)
static const struct key keys[] = {
    { "name", AT(name), 0, 0, "the device's name: letters, digits, '.', '_', '-'",
      "name = h100-sxm" },
    { "gpu_gemm_tflops", AT(gpu_gemm_tflops), 1e-3, 1e5,
      "peak TFLOP/s of the math helix's GEMMs run in (cuBLAS sgemm: fp32)",
      "gpu_gemm_tflops = 66.9" },
    { "gpu_gemm_efficiency", AT(gpu_gemm_efficiency), 1e-3, 1,
      "fraction of that peak a large GEMM reaches", "gpu_gemm_efficiency = 0.74" },
    { "gpu_gemm_tile", AT(gpu_gemm_tile), 1, 4096,
      "rows (= columns) of the output tile one thread block computes", "gpu_gemm_tile = 128" },
    { "gpu_sms", AT(gpu_sms), 1, 4096, "streaming multiprocessors of the GPU", "gpu_sms = 132" },
    { "gpu_vector_tflops", AT(gpu_vector_tflops), 1e-3, 1e5,
      "peak TFLOP/s of element-wise fp32 math", "gpu_vector_tflops = 66.9" },
    { "gpu_attention_efficiency", AT(gpu_attention_efficiency), 1e-4, 1,
      "fraction of gpu_gemm_tflops attention reaches", "gpu_attention_efficiency = 0.35" },
    { "gpu_memory_gbytes_per_s", AT(gpu_memory_gbytes_per_s), 1e-3, 1e6,
      "device memory bandwidth, GB/s of 1e9 bytes", "gpu_memory_gbytes_per_s = 3350" },
    { "gpu_memory_efficiency", AT(gpu_memory_efficiency), 1e-3, 1,
      "fraction of it a streaming kernel reaches", "gpu_memory_efficiency = 0.8" },
    { "gpu_launch_us", AT(gpu_launch_us), 0, 1e6, "fixed cost of a task on the GPU, us",
      "gpu_launch_us = 10" },
    { "cpu_gflops_per_core", AT(cpu_gflops_per_core), 1e-3, 1e6,
      "fp32 GEMM peak of one CPU core, GFLOP/s", "cpu_gflops_per_core = 121.6" },
    { "cpu_gemm_efficiency", AT(cpu_gemm_efficiency), 1e-3, 1,
      "fraction of it a large GEMM reaches on one core", "cpu_gemm_efficiency = 0.85" },
    { "cpu_memory_gbytes_per_s", AT(cpu_memory_gbytes_per_s), 1e-3, 1e6,
      "streaming bandwidth of one core, GB/s", "cpu_memory_gbytes_per_s = 10" },
    { "cpu_launch_us", AT(cpu_launch_us), 0, 1e6, "fixed cost of a task on a CPU worker, us",
      "cpu_launch_us = 2" },
};
#define NKEYS (int)(sizeof keys / sizeof *keys)

static int is_int_key(const struct key *k)
{
    return k->offset == AT(gpu_gemm_tile) || k->offset == AT(gpu_sms);
}

static int set(struct hx_sim_device *d, const struct key *k, const char *v, const char *path,
               int line)
{
    char *base = (char *)d + k->offset;
    if (k->offset == AT(name)) {
        size_t n = strlen(v);
        int ok = n > 0 && n < sizeof d->name;
        for (size_t i = 0; ok && i < n; i++) {
            ok = isalnum((unsigned char)v[i]) || strchr("._-", v[i]) != NULL;
        }
        if (!ok) {
            return HX_ERR(HX_EINVAL, "%s:%d: name '%s' is not %s (at most %zu); write e.g. "
                          "'%s'", path, line, v, k->what, sizeof d->name - 1, k->example);
        }
        memcpy(d->name, v, n + 1);
        return HX_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end != '\0' || errno != 0 || !(x >= k->min && x <= k->max) ||
        (is_int_key(k) && x != (int)x)) {
        return HX_ERR(HX_EINVAL, "%s:%d: %s = '%s': expected %s from %g to %g (%s); write "
                      "e.g. '%s'", path, line, k->name, v,
                      is_int_key(k) ? "an integer" : "a number", k->min, k->max, k->what,
                      k->example);
    }
    if (is_int_key(k)) {
        *(int *)(void *)base = (int)x;
    } else {
        *(double *)(void *)base = x;
    }
    return HX_OK;
}

int hx_sim_device_load(const char *path, struct hx_sim_device *d)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return HX_ERR(HX_EINVAL, "device description %s: %s; name a file such as "
                      "devices/h100-sxm.device (devices/README.md has the format)", path,
                      strerror(errno));
    }
    int seen[NKEYS] = { 0 }, line = 0, ret = HX_OK;
    char buf[1024], *name, *value;
    while (ret == HX_OK && (ret = hx_kv_next(f, path, buf, sizeof buf, &line,
                                             "gpu_sms = 132", &name, &value)) == 1) {
        int k = 0;
        while (k < NKEYS && strcmp(keys[k].name, name) != 0) {
            k++;
        }
        if (k == NKEYS) {
            ret = HX_ERR(HX_EINVAL, "%s:%d: unknown key '%s' (devices/README.md lists the "
                         "keys)", path, line, name);
        } else if (seen[k]) {
            ret = HX_ERR(HX_EINVAL, "%s:%d: %s is given twice (first on line %d); keep one",
                         path, line, name, seen[k]);
        } else {
            seen[k] = line;
            ret = set(d, &keys[k], value, path, line);
        }
    }
    fclose(f);
    for (int k = 0; ret == HX_OK && k < NKEYS; k++) {
        if (!seen[k]) {
            ret = HX_ERR(HX_EINVAL, "%s: %s is missing: %s; add a line such as '%s'", path,
                         keys[k].name, keys[k].what, keys[k].example);
        }
    }
    return ret;
}
