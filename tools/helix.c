/* SPDX-License-Identifier: MIT */
/* tools/helix.c: the `helix` command: dispatch to a subcommand.
 * Exit codes: 0 success, 1 runtime failure (output that could not be written included),
 * 2 usage error (bad flag, value or input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/helix.h"
#include "tools/tools.h"
#ifdef HX_SIMULATION
/* main becomes starpu_main: StarPU's own main starts SimGrid's MPI, lets StarPU-MPI's actor
 * initialise it, and runs ours in an actor of its own (design/simulation.md) */
#include <starpu_simgrid_wrap.h>
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: helix <command> [flags]\n\n"
               "commands:\n"
               "  train     train a GPT-2 style model (helix train --help)\n"
               "  sample    continue a prompt with a trained checkpoint (helix sample --help)\n"
               "  bench     training speed on fixed configurations, against PyTorch "
               "(helix bench --help)\n"
               "  profile-overlap  how well a layer's operators overlap, pair by pair (OEF)\n"
               "            (helix profile-overlap --help)\n"
               "  plan-strands  DHelix's pairing plan of one layer from an overlap table "
               "(helix plan-strands --help)\n"
               "  trace     summarize a --trace file (hidden and exposed communication, Flux's\n"
               "            overlap efficiency, bubble) or draw it as SVG (helix trace --help)\n"
               "  simulate  train on a simulated machine (GPU clusters) through StarPU's SimGrid\n"
               "            mode: step time, exposed communication, bubble\n"
               "            (helix simulate --help)\n"
               "  sim-machine  check a simulated machine's file and write its SimGrid platform\n"
               "            (helix sim-machine --help)\n"
               "  plan      which configuration to run on N GPUs: every mesh, sharding,\n"
               "            micro-batch and recomputation, priced and ranked (helix plan --help)\n"
               "  compare   the same training under several scheduling policies, side by\n"
               "            side: step time, exposed communication, bubble, parity\n"
               "            (helix compare --help)\n"
               "  version   print the version\n\n"
               "Environment: STARPU_NCPU (workers), HX_SCHED (policy), HX_SCHED_PLUGINS (policy\n"
               "plug-ins, ':'-separated), HX_LOG (log level).\n"
               "Exit codes: 0 success, 1 runtime failure, 2 bad usage or input.\n");
}

static int run(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "train") == 0) {
        return cmd_train(argc, argv);
    }
    if (strcmp(argv[1], "sample") == 0) {
        return cmd_sample(argc, argv);
    }
    if (strcmp(argv[1], "bench") == 0) {
        return cmd_bench(argc, argv);
    }
    if (strcmp(argv[1], "profile-overlap") == 0) {
        return cmd_profile_overlap(argc, argv);
    }
    if (strcmp(argv[1], "plan-strands") == 0) {
        return cmd_plan_strands(argc, argv);
    }
    if (strcmp(argv[1], "trace") == 0) {
        return cmd_trace(argc, argv);
    }
    if (strcmp(argv[1], "simulate") == 0) {
        return cmd_simulate(argc, argv);
    }
    if (strcmp(argv[1], "sim-machine") == 0) {
        return cmd_sim_machine(argc, argv);
    }
    if (strcmp(argv[1], "plan") == 0) {
        return cmd_plan(argc, argv);
    }
    if (strcmp(argv[1], "compare") == 0) {
        return cmd_compare(argc, argv);
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("helix %s\n", HX_VERSION);
        return 0;
    }
    fprintf(stderr, "helix: error: unknown command '%s'; run 'helix --help'\n",
            flags_esc(argv[1]));
    return 2;
}

int main(int argc, char **argv)
{
    /* every subcommand's stdout: output that did not reach its file is a failure (exit 1) */
    int status = tools_close_stdout(run(argc, argv));
    if (status != 0 && hx_runtime_simulated()) {
        fflush(stderr);
        exit(status); /* every simulated rank lives in this process: a failure ends them all */
    }
    return status;
}
