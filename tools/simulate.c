/* SPDX-License-Identifier: MIT */
/* tools/simulate.c: `helix simulate --machine FILE [train flags]`: the training step of
 * `helix train` with the same graphs and the same policies, on a simulated machine (issue
 * 23; design/simulation.md).
 *
 * The simulation flavour, sim/helix-sim (configure --with-starpu-simgrid), is helix built
 * against StarPU's SimGrid mode: no kernel runs, each task takes its performance model's
 * time on the machine SimGrid simulates, and StarPU-MPI's messages cross SimGrid's network.
 * This command hides the launch: it writes the machine's platform files from the few numbers
 * of FILE (tools/sim_machine.c) into a work directory, beside links to the performance
 * models renamed for that machine, then runs
 *     starpu_smpirun -np RANKS -platform cluster.xml -hostfile hostfile helix-sim train ...
 * and summarizes the simulated trace as `helix trace summarize` does (per rank: compute,
 * exposed communication, bubble).  The step lines stream as they come (simulated time).
 *
 * Performance models are StarPU's own files (sampling/codelets/45/<symbol>.<host>): the
 * history that real runs with STARPU_CALIBRATE=1 write under $STARPU_HOME/.starpu/sampling,
 * made on the machine being simulated (this one, or a GPU).  Their <host> suffix is whatever machine
 * measured them; the simulated machine's name replaces it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "runtime/sim_device.h"
#include "tools/sim_machine.h"
#include "tools/tools.h"

#define PERFMODEL_VERSION "45" /* StarPU 1.3's codelets/<version>/ directory */

static const char *usage_text =
    "usage: helix simulate --machine FILE [--ranks N] [--perf-models DIR\n"
    "                      [--perf-models-host NAME] | --device FILE] [--keep DIR]\n"
    "                      [train flags | profile-overlap [its flags]]\n\n"
    "Simulates `helix train` with the same graphs and policies on the machine that FILE\n"
    "describes (machines/NAME.machine), through StarPU's SimGrid mode: no kernel runs, each\n"
    "task takes its performance model's time.  Prints the simulated step time and tokens/s,\n"
    "then per rank the compute, exposed communication and bubble (helix trace summarize).\n\n"
    "  --machine FILE          the machine (nodes, GPUs, links; machines/README.md)\n"
    "  --ranks N               simulated ranks (default: one per GPU of the machine, or one\n"
    "                          per node without GPUs); the mesh flags divide them as in train\n"
    "  --perf-models DIR       StarPU's sampling directory, with its codelets/45/ (default:\n"
    "                          $STARPU_HOME/.starpu/sampling, where STARPU_CALIBRATE=1 runs\n"
    "                          of helix train write them)\n"
    "  --perf-models-host NAME which host's models in DIR (needed when it holds several)\n"
    "  --device FILE           analytic models instead, from a device description\n"
    "                          (devices/NAME.device: peaks, bandwidths, efficiencies)\n"
    "  --keep DIR              write the platform, models and trace into DIR and keep them\n\n"
    "With profile-overlap after this command's flags, the simulated ranks run `helix\n"
    "profile-overlap` instead (its flags follow it): DHelix's overlap table of the simulated\n"
    "machine, in simulated time, for helix plan-strands.\n\n"
    "Every other flag is helix train's (helix train --help); --save, --load and sampling\n"
    "are refused or left out: a simulation computes no weights.  HX_SIM_SMPI_FLAGS adds\n"
    "SimGrid options (space-separated, e.g. --cfg=smpi/ois:0:0.002:0).  Needs the simulation\n"
    "flavour: scripts/setup --simgrid, then configure --with-starpu-simgrid.\n";

struct sim_opts {
    const char *machine, *models, *models_host, *keep, *device;
    int ranks;
};

/* The simulation flavour: $HX_SIM_BINARY, else the build tree's, else the installed one. */
static const char *sim_binary(void)
{
    const char *env = getenv("HX_SIM_BINARY");
    if (env != NULL && env[0] != '\0') {
        return env;
    }
#ifdef HX_SIM_BUILD_BINARY
    if (access(HX_SIM_BUILD_BINARY, R_OK) == 0) {
        return HX_SIM_BUILD_BINARY;
    }
#endif
#ifdef HX_PKGLIBEXECDIR
    if (access(HX_PKGLIBEXECDIR "/helix-sim", R_OK) == 0) {
        return HX_PKGLIBEXECDIR "/helix-sim";
    }
#endif
    return NULL;
}

static const char *smpirun_path(void)
{
    const char *env = getenv("HX_STARPU_SMPIRUN");
    if (env != NULL && env[0] != '\0') {
        return env;
    }
#ifdef HX_STARPU_SMPIRUN
    return HX_STARPU_SMPIRUN;
#else
    return NULL;
#endif
}

/* This command's flag @p a ("--name" or "--name=value") of the names in @p names: its index,
 * with its value (the next word for "--name") through @p value and @p i advanced; -1 if @p a
 * is none of them (a train flag). */
static int own_flag(const char *const *names, int argc, char **argv, int *i, const char **value)
{
    const char *a = argv[*i];
    for (int k = 0; names[k] != NULL; k++) {
        size_t len = strlen(names[k]);
        if (strncmp(a, names[k], len) != 0 || (a[len] != '\0' && a[len] != '=')) {
            continue;
        }
        *value = a[len] == '=' ? a + len + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        return k;
    }
    return -1;
}

/* Split argv[2..] into this command's flags (into @p o) and train's (into @p rest, count
 * returned through @p nrest).  0, 1 (--help printed) or 2 (message printed). */
static int parse(int argc, char **argv, struct sim_opts *o, char **rest, int *nrest)
{
    static const char *const names[] = { "--machine", "--perf-models", "--perf-models-host",
                                         "--keep", "--device", "--ranks", NULL };
    const char **dest[] = { &o->machine, &o->models, &o->models_host, &o->keep, &o->device,
                            NULL };
    *nrest = 0;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        int k = own_flag(names, argc, argv, &i, &v);
        if (k < 0) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (v == NULL || v[0] == '\0') {
            fprintf(stderr, "helix simulate: error: %s needs a value\n", names[k]);
            return 2;
        }
        if (dest[k] != NULL) {
            *dest[k] = v;
            continue;
        }
        char *end;
        long n = strtol(v, &end, 10);
        if (*end != '\0' || n < 1 || n > 1 << 16) {
            fprintf(stderr, "helix simulate: error: --ranks '%s' is not a count of ranks from "
                    "1 to 65536\n", flags_esc(v));
            return 2;
        }
        o->ranks = (int)n;
    }
    if (o->device != NULL && (o->models != NULL || o->models_host != NULL)) {
        fprintf(stderr, "helix simulate: error: --device and --perf-models are two sources of "
                "performance models: give one (--device FILE for analytic models, "
                "--perf-models DIR for calibrated ones)\n");
        return 2;
    }
    if (o->machine == NULL) {
        fprintf(stderr, "helix simulate: error: no --machine FILE: name the machine to simulate "
                "(machines/NAME.machine in helix's source tree)\n");
        return 2;
    }
    return 0;
}

/* The one host suffix of @p dir's models (into @p host), or the one asked for: 0 or 2. */
static int models_host(const char *dir, const char *want, char *host, size_t cap)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "helix simulate: error: cannot read the performance models in %s (%s): "
                "calibrate them with STARPU_CALIBRATE=1 helix train ... (README \"Simulation\"), "
                "or give --perf-models DIR\n", flags_esc(dir), strerror(errno));
        return 2;
    }
    int found = 0, nhosts = 0;
    char hosts[512] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.' || dot == NULL || dot[1] == '\0') {
            continue;
        }
        if (want != NULL) {
            found |= strcmp(dot + 1, want) == 0;
        } else if (strstr(hosts, dot) == NULL && strlen(hosts) + strlen(dot) + 2 < sizeof hosts) {
            strcat(strcat(hosts, dot), " "); /* ".host " entries */
            nhosts++;
            snprintf(host, cap, "%s", dot + 1);
        }
    }
    closedir(d);
    if (want != NULL && !found) {
        fprintf(stderr, "helix simulate: error: %s has no model of host '%s'\n", flags_esc(dir),
                flags_esc(want));
        return 2;
    }
    if (want != NULL) {
        snprintf(host, cap, "%s", want);
    } else if (nhosts != 1) {
        fprintf(stderr, "helix simulate: error: %s holds %s: name the host whose models to use "
                "with --perf-models-host (the suffix: %s)\n", flags_esc(dir),
                nhosts == 0 ? "no performance model" : "the models of several hosts",
                nhosts == 0 ? "none" : flags_esc(hosts));
        return 2;
    }
    return 0;
}

/* A path into @p buf (PATH_MAX bytes): 0, or 1 if it does not fit (said). */
static int pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pathf(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, PATH_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_MAX) {
        fprintf(stderr, "helix simulate: error: a path longer than %d bytes under %s; use a "
                "shorter --keep, TMPDIR or --perf-models\n", PATH_MAX, buf);
        return 1;
    }
    return 0;
}

/* @p work/codelets/45/<symbol>.<host> -> @p models_dir/<symbol>.<from>, for every model:
 * StarPU finds a model by STARPU_HOSTNAME, the simulated machine's name. */
static int link_models(const char *models_dir, const char *from, const char *work,
                       const char *host)
{
    char dst_dir[PATH_MAX], src[PATH_MAX], dst[PATH_MAX], abs_dir[PATH_MAX];
    if (realpath(models_dir, abs_dir) == NULL) {
        fprintf(stderr, "helix simulate: error: %s: %s\n", flags_esc(models_dir), strerror(errno));
        return 1;
    }
    if (pathf(dst_dir, "%s/codelets", work) != 0) {
        return 1;
    }
    mkdir(dst_dir, 0755);
    if (pathf(dst_dir, "%s/codelets/" PERFMODEL_VERSION, work) != 0) {
        return 1;
    }
    if (mkdir(dst_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "helix simulate: error: cannot create %s: %s\n", dst_dir, strerror(errno));
        return 1;
    }
    DIR *d = opendir(abs_dir);
    if (d == NULL) {
        fprintf(stderr, "helix simulate: error: %s: %s\n", abs_dir, strerror(errno));
        return 1;
    }
    size_t flen = strlen(from);
    int ret = 0;
    struct dirent *e;
    while (ret == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= flen + 1 || e->d_name[len - flen - 1] != '.' ||
            strcmp(e->d_name + len - flen, from) != 0) {
            continue;
        }
        ret = pathf(src, "%s/%s", abs_dir, e->d_name) ||
              pathf(dst, "%s/%.*s.%s", dst_dir, (int)(len - flen - 1), e->d_name, host);
        if (ret == 0) {
            unlink(dst);
            if (symlink(src, dst) != 0) {
                fprintf(stderr, "helix simulate: error: cannot link %s to %s: %s\n", dst, src,
                        strerror(errno));
                ret = 1;
            }
        }
    }
    closedir(d);
    return ret;
}

/* Run @p argv (a NULL-terminated vector) and wait: its exit status, or 1 if it could not run
 * or died of a signal (said). */
static int run_child(char *const *argv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "helix simulate: error: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "helix simulate: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "helix simulate: error: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "helix simulate: error: the simulation died of signal %d\n",
                WTERMSIG(status));
        return 1;
    }
    return WEXITSTATUS(status);
}

int cmd_simulate(int argc, char **argv)
{
    if (hx_runtime_simulated()) {
        fprintf(stderr, "helix simulate: error: this is the simulation flavour itself; run "
                "`helix simulate` from the helix command\n");
        return 2;
    }
    struct sim_opts o = { 0 };
    char **rest = calloc((size_t)argc + 16, sizeof *rest);
    int nrest = 0, ret;
    if (rest == NULL) {
        fprintf(stderr, "helix simulate: error: out of memory\n");
        return 1;
    }
    if ((ret = parse(argc, argv, &o, rest, &nrest)) != 0) {
        free(rest);
        return ret == 1 ? 0 : ret;
    }
    const char *bin = sim_binary(), *smpirun = smpirun_path();
    if (bin == NULL || smpirun == NULL) {
        fprintf(stderr, "helix simulate: error: this helix was built without the simulation "
                "flavour (no %s); build it with `scripts/setup --simgrid` and `./configure "
                "--with-starpu-simgrid`, or point HX_SIM_BINARY and HX_STARPU_SMPIRUN at one "
                "(README \"Simulation\")\n", bin == NULL ? "sim/helix-sim" : "starpu_smpirun");
        free(rest);
        return 2;
    }
    struct hx_sim_machine m;
    if (hx_sim_machine_load(o.machine, &m) != 0) {
        free(rest);
        return 2; /* (said where and why) */
    }
    int ranks = o.ranks > 0 ? o.ranks : hx_sim_machine_ranks(&m);
    if (ranks > hx_sim_machine_ranks(&m)) {
        fprintf(stderr, "helix simulate: error: --ranks %d, but %s has %d ranks' worth of "
                "devices; lower --ranks or describe a larger machine\n", ranks,
                flags_esc(o.machine), hx_sim_machine_ranks(&m));
        free(rest);
        return 2;
    }

    const char *workers = flags_peek_argv(nrest, rest, 0, "workers");
    if (workers != NULL && atoi(workers) > m.cores_per_rank) {
        fprintf(stderr, "helix simulate: error: --workers %s, but each rank of %s has %d CPU "
                "core%s (cores_per_rank); ask for at most that many, or describe more cores\n",
                flags_esc(workers), flags_esc(o.machine), m.cores_per_rank,
                m.cores_per_rank == 1 ? "" : "s");
        free(rest);
        return 2;
    }

    /* the performance models to use, and the work directory */
    char models[PATH_MAX], from[256], work[PATH_MAX];
    const char *home = getenv("STARPU_HOME") ? getenv("STARPU_HOME") : getenv("HOME");
    if (o.models != NULL) {
        snprintf(models, sizeof models, "%s/codelets/" PERFMODEL_VERSION, o.models);
    } else {
        snprintf(models, sizeof models, "%s/.starpu/sampling/codelets/" PERFMODEL_VERSION,
                 home ? home : ".");
    }
    char device[PATH_MAX] = "";
    if (o.device != NULL) {
        struct hx_sim_device d;
        if (hx_sim_device_load(o.device, &d) != HX_OK || realpath(o.device, device) == NULL) {
            free(rest);
            return 2; /* (said) */
        }
        snprintf(from, sizeof from, "%s", d.name);
    } else if ((ret = models_host(models, o.models_host, from, sizeof from)) != 0) {
        free(rest);
        return ret;
    }
    if (o.keep != NULL) {
        snprintf(work, sizeof work, "%s", o.keep);
        if (mkdir(work, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "helix simulate: error: cannot create --keep %s: %s\n",
                    flags_esc(work), strerror(errno));
            free(rest);
            return 1;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(work, sizeof work, "%s/helix-simulate.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (mkdtemp(work) == NULL) {
            fprintf(stderr, "helix simulate: error: cannot create a work directory: %s\n",
                    strerror(errno));
            free(rest);
            return 1;
        }
    }
    const char *host = m.name; /* STARPU_HOSTNAME: names the bus files and the models */
    ret = hx_sim_machine_write(&m, work, host) != 0 ? 1
          : device[0] != '\0'                        ? 0
                                                     : link_models(models, from, work, host);

    /* starpu_smpirun -np N -platform P -hostfile H helix-sim train REST --trace T --log=...
     * (or helix-sim profile-overlap REST: a table, no trace) */
    int profile = nrest > 0 && strcmp(rest[0], "profile-overlap") == 0;
    char rpn[16];
    int per_node = m.gpus_per_node > 0 ? m.gpus_per_node : 1; /* (fewer: the first node's) */
    snprintf(rpn, sizeof rpn, "%d", ranks < per_node ? ranks : per_node);
    char np[16], platform[PATH_MAX + 16], hostfile[PATH_MAX + 16], trace[PATH_MAX + 16];
    snprintf(np, sizeof np, "%d", ranks);
    snprintf(platform, sizeof platform, "%s/cluster.xml", work);
    snprintf(hostfile, sizeof hostfile, "%s/hostfile", work);
    const char *user_trace = profile ? NULL : flags_peek_argv(nrest, rest, 0, "trace");
    snprintf(trace, sizeof trace, "%s", user_trace ? user_trace : "");
    if (user_trace == NULL) {
        snprintf(trace, sizeof trace, "%s/trace.json", work);
    }
    const char *head[] = { smpirun, "-np", np, "-platform", platform, "-hostfile", hostfile,
                           bin, profile ? "profile-overlap" : "train" };
    const int nhead = (int)(sizeof head / sizeof *head);
    int nflags = 0;
    while (hx_sim_smpi_flags[nflags] != NULL) {
        nflags++;
    }
    /* HX_SIM_SMPI_FLAGS: more SimGrid options, space-separated (e.g. SMPI's per-message
     * software overheads, --cfg=smpi/ois:...: bench/sim_validate.sh) */
    char *extra_text = getenv("HX_SIM_SMPI_FLAGS") ? strdup(getenv("HX_SIM_SMPI_FLAGS")) : NULL;
    char *extra[16];
    int nextra = 0;
    for (char *tok = extra_text ? strtok(extra_text, " ") : NULL; tok != NULL && nextra < 16;
         tok = strtok(NULL, " ")) {
        extra[nextra++] = tok;
    }
    char eager[64]; /* the machine's eager limit (mpi_eager_kib) */
    hx_sim_machine_eager_flag(&m, eager, sizeof eager);
    char **all = calloc((size_t)(nhead + nrest + nflags + 7 + nextra), sizeof *all);
    int k = 0;
    if (all == NULL) {
        fprintf(stderr, "helix simulate: error: out of memory\n");
        ret = 1;
    } else {
        for (int i = 0; i < nhead; i++) {
            all[k++] = (char *)head[i];
        }
        for (int i = profile; i < nrest; i++) {
            all[k++] = rest[i];
        }
        if (user_trace == NULL && !profile) {
            all[k++] = "--trace";
            all[k++] = trace;
        }
        if (flags_peek_argv(nrest, rest, 0, "ranks-per-node") == NULL) {
            /* one process holds every simulated rank, so MPI's local size says nothing: the
             * machine's ranks per node do (intra- and inter-node lanes, MiCS, hierarchical
             * collectives) */
            all[k++] = "--ranks-per-node";
            all[k++] = rpn;
        }
        for (int i = 0; i < nflags; i++) { /* SimGrid's, after the program's arguments */
            all[k++] = (char *)hx_sim_smpi_flags[i];
        }
        all[k++] = eager;
        all[k++] = "--log=root.thres:error"; /* SimGrid's start-up notes are noise here */
        for (int i = 0; i < nextra; i++) { /* HX_SIM_SMPI_FLAGS: the user's, last */
            all[k++] = extra[i];
        }
        all[k] = NULL;
    }
    if (ret == 0) {
        /* STARPU_HOSTNAME picks the generated bus/<host>.* and the linked models */
        setenv("STARPU_PERF_MODEL_DIR", work, 1);
        setenv("STARPU_HOSTNAME", host, 1);
        /* a rank's CPU workers are its platform's CPUs, not this machine's cores */
        char ncpu[16];
        snprintf(ncpu, sizeof ncpu, "%d", m.cores_per_rank);
        setenv("STARPU_NCPU", ncpu, 1);
        setenv("STARPU_SILENT", "1", 0); /* (StarPU-MPI finds SMPI single-threaded: noise) */
        /* A simulated CUDA worker with a task in flight asks the policy for the next one
         * (StarPU's CUDA pipeline) and, when hx-prio has none for it yet, asks again without
         * blocking: SimGrid then steps it through the whole task in tiny increments.  With no
         * pipeline it blocks until the task ends.  Measured (1 rank, a C=1024 layer on a
         * slowed GPU): 27.5 s of wall time for 3 steps, 0.32 s without; the simulated step
         * 3042.8 and 3043.6 ms (the next launch no longer overlaps the running task). */
        setenv("STARPU_CUDA_PIPELINE", "0", 0);
        if (device[0] != '\0') {
            setenv("HX_SIM_DEVICE", device, 1); /* runtime/sim_analytic.c */
            printf("helix simulate: %s, %d rank%s; analytic models of device %s (%s); work "
                   "directory %s\n", m.name, ranks, ranks == 1 ? "" : "s", from, device, work);
        } else {
            unsetenv("HX_SIM_DEVICE");
            printf("helix simulate: %s, %d rank%s; models of host '%s' from %s; work "
                   "directory %s\n", m.name, ranks, ranks == 1 ? "" : "s", from, models, work);
        }
        ret = run_child(all);
    }
    if (ret == 0 && !profile) {
        char *sum[] = { "helix", "trace", "summarize", trace, NULL };
        printf("simulated trace (%s):\n", trace);
        ret = cmd_trace(4, sum);
    }
    if (o.keep == NULL) {
        char rm[PATH_MAX + 32];
        snprintf(rm, sizeof rm, "rm -rf '%s'", work); /* (mkdtemp's name: no quote in it) */
        if (system(rm) != 0) {
            fprintf(stderr, "helix simulate: warning: could not remove %s\n", work);
        }
    }
    free(all);
    free(extra_text);
    free(rest);
    return ret;
}
