/* SPDX-License-Identifier: MIT */
/**
 * @file helix/sched_plugin.h
 * @brief Scheduling policies as plug-ins: a shared object that `helix train --sched-plugin
 *        FILE.so` (or HX_SCHED_PLUGINS) loads, without rebuilding helix.
 *
 * A plug-in is one C file built against the installed helix:
 * @code
 *   #include <helix/sched_plugin.h>
 *   static struct starpu_sched_policy my_policy = { ..., .policy_name = "my-policy" };
 *   HX_SCHED_PLUGIN_ABI;                          // what it was built against
 *   int hx_sched_plugin_init(void)                // the entry point
 *   {
 *       return hx_sched_register(&my_policy, 0);  // one or more policies, with their needs
 *   }
 * @endcode
 *   cc -shared -fPIC -o my.so my.c $(pkg-config --cflags --libs helix)       # helix train
 *   cc -shared -fPIC -o my-sim.so my.c $(pkg-config --cflags --libs helix-sim)  # simulate
 *
 * Two rules beyond StarPU's locking (examples/policies/ follow them):
 *   - a policy that orders by priority sets its range in init_sched
 *     (starpu_sched_ctx_set_min_priority(ctx, -1000), ..._max_priority(ctx, 1000), as
 *     hx-prio does): helix gives a collective's tasks STARPU_MAX_PRIO, which is 0 otherwise;
 *   - push_task wakes a worker that can run the task, hx_sched_wake_worker_for(task): the
 *     SimGrid StarPU's idle workers sleep (Debian's poll), and a task nobody is woken for
 *     ends the simulation in SimGrid's "Deadlock detected".
 * A policy only orders and places tasks: its losses are every other policy's, bit for bit
 * (helix compare checks it), and a task it never hands to a worker ends the run through the
 * task watchdog (--comm-timeout, exit 3).
 *
 * helix loads it before it starts StarPU, checks what it was built against (the plug-in ABI
 * below, StarPU's major.minor, and whether its StarPU is the simulating one), then calls
 * hx_sched_plugin_init once.  A mismatch, a missing entry point, a name already taken or a
 * file that is no shared object stops the run before any work (exit 2, one line).
 *
 * The simulation flavour: `helix simulate` runs every simulated rank as its own copy of
 * helix-sim inside one process (SimGrid's SMPI), so a policy must call the StarPU of its own
 * rank.  A plug-in built with `pkg-config helix-sim` names helix-sim as a dependency under
 * helix-sim's placeholder soname; each rank loads its own copy of the plug-in with that name
 * pointed at its own copy of helix-sim (schedulers/plugin.c).  Its globals are per rank too.
 * Examples: examples/policies/ (README "Scheduling policies as plug-ins").
 */
#ifndef HELIX_SCHED_PLUGIN_H
#define HELIX_SCHED_PLUGIN_H

#include <starpu.h>

#include "helix/graph.h"
#include "helix/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The plug-in ABI: bumped whenever what a policy sees changes (struct hx_node, enum
 *  hx_sched_need, hx_sched_register), so a plug-in built before is refused, not misread. */
#define HX_SCHED_PLUGIN_ABI_VERSION 1

/** What a plug-in was built against; HX_SCHED_PLUGIN_ABI defines it, helix reads it. */
struct hx_sched_plugin_abi {
    unsigned abi;        /**< HX_SCHED_PLUGIN_ABI_VERSION */
    unsigned starpu;     /**< STARPU_MAJOR_VERSION * 100 + STARPU_MINOR_VERSION */
    unsigned simulation; /**< 1: built against StarPU's SimGrid mode (pkg-config helix-sim) */
};

#ifdef STARPU_SIMGRID
#define HX_SCHED_PLUGIN_SIMULATION_ 1
#else
#define HX_SCHED_PLUGIN_SIMULATION_ 0
#endif

/** Put this once in a plug-in, at file scope. */
#define HX_SCHED_PLUGIN_ABI                                                                  \
    const struct hx_sched_plugin_abi hx_sched_plugin_abi = {                                \
        HX_SCHED_PLUGIN_ABI_VERSION, STARPU_MAJOR_VERSION * 100 + STARPU_MINOR_VERSION,      \
        HX_SCHED_PLUGIN_SIMULATION_                                                          \
    }

/**
 * The entry point a plug-in defines: register its policies (hx_sched_register, each with
 * what it needs from the graph) and return HX_OK, or an hx error status to refuse to load
 * (after printing why).  Called once per process (per simulated rank), before StarPU starts.
 */
int hx_sched_plugin_init(void);

/**
 * Load the plug-ins of a ':'-separated list of paths (--sched-plugin, HX_SCHED_PLUGINS),
 * each file once: check what it was built against, then call its entry point.  Call before
 * hx_sched_resolve and hx_runtime_init.  @return HX_OK, or HX_EINVAL with one line printed
 * that names the file, what is wrong and how to build it right.
 */
int hx_sched_plugins_load(const char *paths);
/** The plug-in file policy @p name came from, or NULL (helix's, a program's or StarPU's). */
const char *hx_sched_plugin_of(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_SCHED_PLUGIN_H */
