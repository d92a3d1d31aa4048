/* SPDX-License-Identifier: MIT */
/* tools/sim_machine_cmd.c: `helix sim-machine MACHINE --out DIR [--host NAME]`: check a
 * machine file and write the files that simulate it (tools/sim_machine.h), then say what
 * the model gives a message between typical ranks and how to launch a program on it.
 * Exit codes: 0, 1 (a file could not be written), 2 (bad usage or machine file).
 * Test: tests/tools/sim_machine.c (the library), tests/cli/sim_machine.sh (the command). */
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
#include "tools/sim_machine.h"
#include "tools/tools.h"

static const char usage_text[] =
    "usage: helix sim-machine MACHINE --out DIR [--host NAME]\n\n"
    "Check a machine file (machines/*.machine; format in machines/README.md) and write what\n"
    "StarPU's SimGrid mode and starpu_smpirun need to simulate it: DIR/bus/NAME.platform.v4.xml,\n"
    ".bandwidth and .latency (one rank's StarPU machine), DIR/cluster.xml and DIR/hostfile\n"
    "(one MPI rank per GPU, or per node without GPUs, in rank order) and DIR/smpirun.flags\n"
    "(SimGrid options so that messages take exactly what the links say).  Prints the path\n"
    "and one-way cost of a message between typical ranks, and the launch line.";

/* One line per kind of pair: the same node, another node, another NIC (rail) of it. */
static void print_paths(const struct hx_sim_machine *m)
{
    int g = m->gpus_per_node, ranks = hx_sim_machine_ranks(m);
    struct { int b; const char *what; } pair[3];
    int n = 0;
    if (g > 1) {
        pair[n].b = 1, pair[n++].what = "same node";
    }
    if (m->nodes > 1) {
        pair[n].b = g > 0 ? g : 1, pair[n++].what = g > 1 ? "other node, same GPU index"
                                                          : "other node";
        if (g > 0 && m->nics_per_node > 1) {
            pair[n].b = g + g / m->nics_per_node;
            pair[n++].what = "other node, GPU on another NIC";
        }
    }
    printf("one message, one way: latency + bytes / bandwidth (StarPU-MPI adds one latency "
           "for its envelope)\n");
    for (int i = 0; i < n && pair[i].b < ranks; i++) {
        struct hx_sim_path p;
        if (hx_sim_machine_path(m, 0, pair[i].b, &p) == HX_OK) {
            printf("  rank 0 -> %-4d %-31s %-16s %8.2f us  %8.4g GB/s\n", pair[i].b,
                   pair[i].what, p.via, p.latency_us, p.gbytes_per_s);
        }
    }
}

int cmd_sim_machine(int argc, char **argv)
{
    const char *out = NULL, *host = NULL;
    const struct flag flags[] = {
        { "out", FLAG_STRING, &out, 0, 0, "directory to write the files into (created)" },
        { "host", FLAG_STRING, &host, 0, 0,
          "STARPU_HOSTNAME the bus files are named after (default: the machine's name)" },
    };
    struct flag_set fs;
    flags_init(&fs, flags, (int)(sizeof flags / sizeof flags[0]));
    const char *machine = argc > 2 && strncmp(argv[2], "--", 2) != 0 ? argv[2] : NULL;
    int ret = flags_parse_argv(&fs, argc, argv, machine != NULL ? 3 : 2, usage_text);
    if (ret != 0) {
        flags_free(&fs);
        return ret == 1 ? 0 : 2;
    }
    if (machine == NULL || out == NULL) {
        fprintf(stderr, "helix: error: sim-machine needs a machine file and --out DIR, e.g. "
                "helix sim-machine machines/h100-sxm.machine --out sim-h100\n");
        flags_free(&fs);
        return 2;
    }
    struct hx_sim_machine m;
    if ((ret = hx_sim_machine_load(machine, &m)) == HX_OK) {
        ret = hx_sim_machine_write(&m, out, host);
    }
    if (ret != HX_OK) {
        flags_free(&fs);
        return ret == HX_EIO ? 1 : 2;
    }
    const char *h = host != NULL ? host : m.name;
    int ranks = hx_sim_machine_ranks(&m);
    printf("machine %s: %d node%s x %d %s%sGPU%s, %d rank%s of %d CPU worker%s, %s topology\n",
           m.name, m.nodes, m.nodes > 1 ? "s" : "", m.gpus_per_node, m.gpu_model,
           m.gpu_model[0] ? " " : "", m.gpus_per_node == 1 ? "" : "s", ranks, ranks > 1 ? "s" : "",
           m.cores_per_rank, m.cores_per_rank > 1 ? "s" : "",
           m.topology == HX_SIM_RAIL ? "rail" : "fat-tree");
    printf("wrote %s/bus/%s.platform.v4.xml, .bandwidth, .latency; %s/cluster.xml, "
           "%s/hostfile, %s/smpirun.flags\n", out, h, out, out, out);
    print_paths(&m);
    printf("run: STARPU_PERF_MODEL_DIR=%s STARPU_HOSTNAME=%s starpu_smpirun -platform "
           "%s/cluster.xml -hostfile %s/hostfile -np %d PROGRAM [ARGS] $(cat %s/smpirun.flags)\n",
           out, h, out, out, ranks, out);
    flags_free(&fs);
    return 0;
}
