/* SPDX-License-Identifier: MIT */
/* runtime/sim_models.c: the model files a simulation needs (runtime/sim_models.h).  StarPU
 * reads a codelet's history from $STARPU_PERF_MODEL_DIR/codelets/45/<symbol>.<host>
 * (default directory $STARPU_HOME/.starpu/sampling; <host> is $STARPU_HOSTNAME, else the
 * host's name), which `helix simulate` points at the models of --perf-models renamed for
 * the simulated machine; or, with $HX_SIM_DEVICE, gives it the analytic model of that device
 * description instead (runtime/sim_analytic.c).  Each codelet is looked up once per process.
 * Test: tests/sim/simulate.sh (an empty models directory). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "helix/error.h"
#include "runtime/sim_analytic.h"
#include "runtime/sim_models.h"

#define SEEN_MAX 128
static const struct starpu_codelet *seen[SEEN_MAX];
static int nseen;
static starpu_pthread_mutex_t seen_lock = STARPU_PTHREAD_MUTEX_INITIALIZER;

static int known(const struct starpu_codelet *cl, int add)
{
    int found = 0;
    starpu_pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nseen && !found; i++) {
        found = seen[i] == cl;
    }
    if (!found && add && nseen < SEEN_MAX) {
        seen[nseen++] = cl;
    }
    starpu_pthread_mutex_unlock(&seen_lock);
    return found;
}

int hx_sim_model_file_check(const struct starpu_codelet *cl, const char *what)
{
    if ((cl->flags & STARPU_CODELET_SIMGRID_EXECUTE) || known(cl, 0)) {
        return HX_OK;
    }
    if (cl->model == NULL || cl->model->symbol == NULL) {
        return HX_ERR(HX_EINVAL, "simulation: %s (codelet %s) has no performance model, so "
                      "SimGrid cannot time it; give its codelet a history model (as "
                      "codelets/codelets.h's HX_PERFMODEL) and calibrate it", what,
                      cl->name ? cl->name : "unnamed");
    }
    const char *device = getenv("HX_SIM_DEVICE");
    if (device != NULL && device[0] != '\0') { /* analytic models (runtime/sim_analytic.c) */
        if (!hx_sim_analytic_on()) {
            return HX_ERR(HX_EINVAL, "simulation: no analytic model for %s: the device "
                          "description %s did not load (the error above)", what, device);
        }
        hx_sim_analytic_attach((struct starpu_codelet *)cl);
        known(cl, 1);
        return HX_OK;
    }
    const char *dir = getenv("STARPU_PERF_MODEL_DIR"), *host = getenv("STARPU_HOSTNAME");
    const char *home = getenv("STARPU_HOME") ? getenv("STARPU_HOME") : getenv("HOME");
    char name[256] = "", path[PATH_MAX];
    if (host == NULL) {
        gethostname(name, sizeof name - 1);
        host = name;
    }
    int n = dir != NULL ? snprintf(path, sizeof path, "%s/codelets/45/%s.%s", dir,
                                   cl->model->symbol, host)
                        : snprintf(path, sizeof path, "%s/.starpu/sampling/codelets/45/%s.%s",
                                   home ? home : ".", cl->model->symbol, host);
    if (n < 0 || n >= (int)sizeof path || access(path, R_OK) != 0) {
        return HX_ERR(HX_EINVAL, "simulation: no performance model of %s for host '%s' (%s is "
                      "missing): calibrate it with a real run of the same model and mesh "
                      "(STARPU_CALIBRATE=1 helix train ...; with --comm-backend starpu-mpi "
                      "for the collectives' tasks) and pass its sampling directory to helix "
                      "simulate --perf-models", what, host, path);
    }
    known(cl, 1);
    return HX_OK;
}
