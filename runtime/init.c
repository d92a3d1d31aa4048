/* SPDX-License-Identifier: MIT */
/* runtime/init.c: start and stop StarPU with its workers (devices: runtime/devices.c) and
 * the chosen policy.
 * Order matters (design/starpu.md): OpenBLAS is held to one thread before any worker exists,
 * STARPU_SCHED is removed so it cannot silently replace the chosen policy, and the worker
 * count is validated before anything starts.  With opts.mpi, StarPU-MPI starts StarPU on the
 * MPI that hx_mpi_init started (initialize_mpi = 0, so it neither initialises nor finalises
 * MPI; starpu.md §5) with the same explicit worker count: left unset, StarPU-MPI would keep
 * a core for its own thread, which drives worker 0 instead where opts.mpi_driver says so
 * (runtime/mpi_driver.c).  Waits go through the task watchdog (runtime/stall.c).
 * Tests: tests/schedulers/registry.c, tests/mpi/collectives.c. */
#define _GNU_SOURCE
#include <cblas.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "runtime/devices.h"
#include "runtime/mpi_driver.h"
#include "runtime/stall.h"

static int up, up_mpi;
static char sched_name[64];

void hx_runtime_opts_init(struct hx_runtime_opts *o)
{
    memset(o, 0, sizeof *o);
}

int hx_runtime_simulated(void)
{
#ifdef HX_SIMULATION
    return 1;
#else
    return 0;
#endif
}

double hx_clock_ms(void)
{
#ifdef HX_SIMULATION
    return starpu_timing_now() / 1e3; /* SimGrid's clock, in microseconds */
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
#endif
}

int hx_ncores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        return CPU_COUNT(&set);
    }
    return 1;
}

/* Worker count: explicit option, else STARPU_NCPU, else the cores (capped by the build). */
static int choose_workers(const struct hx_runtime_opts *o, int *workers)
{
    int n = o->workers;
    const char *env = getenv("STARPU_NCPU");
    if (n == 0 && env != NULL && *env != '\0') {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end != '\0' || v < 1) {
            return HX_ERR(HX_EINVAL, "STARPU_NCPU=%s is not a positive integer; set it to the "
                          "number of CPU workers (1..%d) or unset it", env, STARPU_MAXCPUS);
        }
        n = (int)v;
    }
    if (n == 0) {
        n = hx_ncores();
    }
    if (n < 1 || n > STARPU_MAXCPUS) {
        return HX_ERR(HX_EINVAL, "%d CPU workers requested, but this StarPU build supports 1..%d "
                      "per process (STARPU_MAXCPUS); use --workers 1..%d", n, STARPU_MAXCPUS,
                      STARPU_MAXCPUS);
    }
    if (n > hx_ncores()) {
        hx_warn("%d CPU workers on %d cores: busy workers share the cores (and StarPU's own "
                "policies spin idle ones), which slows every task; use --workers %d or fewer",
                n, hx_ncores(), hx_ncores());
    }
    *workers = n;
    return HX_OK;
}

static int choose_policy(const struct hx_runtime_opts *o, struct starpu_conf *conf)
{
    const char *source;
    const char *name = hx_sched_resolve(o->sched, &source); /* option, HX_SCHED, STARPU_SCHED */
    struct starpu_sched_policy *p = hx_sched_find(name);
    if (p != NULL) {
        conf->sched_policy = p;
        /* starpu_conf_init copied STARPU_SCHED here, and StarPU prefers the name */
        conf->sched_policy_name = NULL;
    } else if (hx_sched_is_starpu_builtin(name)) {
        conf->sched_policy_name = name;
    } else {
        char list[1024] = "";
        for (const char *const *n = hx_sched_names(); *n != NULL; n++) {
            if (strlen(list) + strlen(*n) + 3 < sizeof list) {
                strcat(list, list[0] ? ", " : "");
                strcat(list, *n);
            }
        }
        return HX_ERR(HX_EINVAL, "unknown scheduling policy '%s'%s%s; choose one of: %s", name,
                      source != NULL ? " in " : "", source != NULL ? source : "", list);
    }
    snprintf(sched_name, sizeof sched_name, "%s", name);
    return HX_OK;
}

int hx_runtime_init(const struct hx_runtime_opts *o)
{
    struct hx_runtime_opts defaults;
    struct starpu_conf conf;
    int workers = 0, ret;

    if (up) {
        return HX_ERR(HX_EINVAL, "hx_runtime_init called twice; call hx_runtime_shutdown first");
    }
    if (o == NULL) {
        hx_runtime_opts_init(&defaults);
        o = &defaults;
    }
    struct hx_devices devices;
    if ((ret = choose_workers(o, &workers)) != HX_OK ||
        (ret = hx_devices_choose(o, &devices)) != HX_OK) {
        return ret;
    }
    starpu_conf_init(&conf);
    if ((ret = choose_policy(o, &conf)) != HX_OK) {
        return ret;
    }
    /* STARPU_SCHED would override conf.sched_policy without a word (starpu.md §2) */
    unsetenv("STARPU_SCHED");
    conf.ncpus = workers;
    hx_devices_apply(&devices, &conf);
    conf.precedence_over_environment_variables = 1;
    /* BLAS runs inside tasks: one thread per worker, or both fight for the cores (-40%) */
    openblas_set_num_threads(1);
    if (o->profiling) {
        starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    }
    if (o->mpi) {
        int inited = hx_runtime_simulated(); /* (StarPU-MPI's actor did it: runtime/mpi.c) */
        if (!inited) {
            MPI_Initialized(&inited);
        }
        if (!inited) {
            return HX_ERR(HX_EINVAL, "hx_runtime_init with opts.mpi = 1 before MPI is up: "
                          "call hx_mpi_init first");
        }
        hx_mpi_driver_choose(o->mpi_driver, workers);
        ret = starpu_mpi_init_conf(NULL, NULL, 0, MPI_COMM_WORLD, &conf);
    } else {
        ret = starpu_init(&conf);
    }
    if (ret != 0) {
        return HX_ERR(HX_ERUNTIME, "%s(ncpus=%d, sched=%s) failed: %s%s",
                      o->mpi ? "starpu_mpi_init_conf" : "starpu_init", workers, sched_name,
                      strerror(-ret), ret == -ENODEV ? " (no worker could be started)" : "");
    }
    up_mpi = o->mpi;
    up = 1;
    hx_stall_configure(o->stall_timeout);
    if ((up_mpi && (ret = hx_mpi_driver_start()) != HX_OK) ||
        (ret = hx_devices_check(&conf)) != HX_OK) {
        hx_runtime_shutdown();
        return ret;
    }
    if (o->profiling) {
        starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    }
    hx_debug("StarPU up: %u CPU, %u OpenCL, %u CUDA workers, policy %s%s",
             starpu_cpu_worker_get_count(), starpu_opencl_worker_get_count(),
             starpu_cuda_worker_get_count(), sched_name,
             hx_runtime_driven_worker() >= 0 ? ", worker 0 driven by StarPU-MPI's thread" : "");
    return HX_OK;
}

void hx_runtime_shutdown(void)
{
    if (!up) {
        return;
    }
    hx_stall_wait_for_all();
    hx_stall_stop();
    hx_devices_shutdown();
    if (up_mpi) {
        hx_mpi_driver_stop();
        starpu_mpi_shutdown(); /* stops StarPU too; MPI stays up for hx_mpi_finalize */
    } else {
        starpu_shutdown();
    }
    up = 0;
    up_mpi = 0;
}

int hx_runtime_is_up(void)
{
    return up;
}

int hx_runtime_workers(void)
{
    return up ? (int)starpu_cpu_worker_get_count() : 0;
}

const char *hx_runtime_sched_name(void)
{
    return sched_name;
}
