/* SPDX-License-Identifier: MIT */
/* tools/compare.c: `helix compare --sched A,B,... [compare flags] [train flags | simulate
 * [simulate flags]]`: the same graph under each policy, side by side (issue 26).
 *
 * Each run (tools/compare_run.c) is a child process: `helix train` (under the launcher with
 * --np, as mpirun or scripts/netbed would start it) or `helix simulate`, with --sched,
 * --log-json and --trace set here; everything else is passed as given.  Real runs go in
 * rounds, and each round runs the policies in the other order than the last (A B C, C B A,
 * ...), so a drift of the machine's speed weighs on all alike.  Per policy it prints:
 *   - the median step time (a run's median over its steps after the first, a warm-up; then
 *     the median over rounds) and its ratio to the first policy: the geometric mean of the
 *     per-round ratios, with its 95% confidence interval (Student's t on the logarithms, as
 *     bench/bench_stats.py) when there are several rounds;
 *   - exposed communication per lane and the bubble, from the trace (helix trace summarize's
 *     numbers, means over ranks and rounds);
 *   - the parity verdict: every step's loss and gradient norm, as --log-json writes them
 *     (%.9g, which round-trips a float), the same text as the first policy's first run.  A
 *     scheduler only orders and places tasks, so any difference is a bug of that policy: it
 *     is reported as wrong, and no speed is claimed for it.  A run that fails (a policy that
 *     loses a task ends in the watchdog's exit 3) is reported with its first error line.
 * A simulation has no numerics (no kernel runs): its verdict is "n/a", and it is
 * deterministic, so one round is the default there.  One SVG stacks the policies' timelines
 * of their last round (tools/trace_svg.c).  Exit: 0 when every policy ran and agreed, 1
 * otherwise (the table is printed all the same), 2 on bad usage before any run.
 * Test: tests/schedulers/compare.sh. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helix/sched.h"
#include "helix/sched_plugin.h"
#include "tools/compare.h"
#include "tools/trace_file.h"
#include "tools/trace_summary.h"
#include "tools/trace_svg.h"
#include "tools/tools.h"


static const char *usage_text =
    "usage: helix compare --sched A,B,... [--rounds N] [--np N] [--launcher CMD]\n"
    "                     [--out DIR] [--svg FILE] [--run-timeout S]\n"
    "                     [train flags | simulate [simulate flags]]\n\n"
    "Runs the same training under each scheduling policy and prints, per policy, the median\n"
    "step time and its ratio to the first policy (with a 95% interval over rounds), the\n"
    "exposed communication per lane and the bubble (from the traces), and the parity\n"
    "verdict: every step's loss and gradient norm must equal the first policy's bit for bit,\n"
    "since a policy only orders tasks; one that changes them is reported as wrong.\n\n"
    "  --sched A,B,...   the policies (helix's, StarPU's, or a --sched-plugin's); the first\n"
    "                    is the reference\n"
    "  --rounds N        real runs: N rounds, the order reversed every other round\n"
    "                    (default 3; a simulation: 1, it is deterministic)\n"
    "  --np N            ranks of each training run (default 1; more: under the launcher)\n"
    "  --launcher CMD    what starts N ranks, given `-np N helix train ...` after it\n"
    "                    (default \"mpirun --oversubscribe\"; a bed: \"scripts/netbed run\n"
    "                    --rate 1gbit --\")\n"
    "  --out DIR         where every run's log, --log-json and trace go (default: a new\n"
    "                    directory under TMPDIR, kept)\n"
    "  --svg FILE        the timelines, one policy above the other (default DIR/timelines.svg)\n"
    "  --run-timeout S   kill a run after S seconds (default 1800)\n\n"
    "The remaining flags are helix train's (or, after `simulate`, helix simulate's); --sched,\n"
    "--log-json and --trace are set per run.  --sched-plugin FILE (or HX_SCHED_PLUGINS)\n"
    "loads policies from plug-ins (include/helix/sched_plugin.h).\n"
    "Exit: 0 every policy ran and agreed, 1 one failed or differed, 2 bad usage.\n";

struct policy {
    const char *name;
    struct run runs[MAX_ROUNDS];
    char verdict[256];
    int wrong, failed;
};

/* ---- the command line ----------------------------------------------------------------- */

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "helix compare: error: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    return 2;
}

/* Compare's own flags come first; the first other argument starts train's (or `simulate`). */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){ .rounds = 0, .np = 1, .timeout = 1800 };
    int i = 2;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        static const char *const own[] = { "--sched", "--rounds", "--np", "--launcher", "--out",
                                           "--svg", "--run-timeout", NULL };
        int k = 0;
        while (own[k] != NULL && strcmp(a, own[k]) != 0) {
            k++;
        }
        if (own[k] == NULL) {
            break;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            return bad("%s needs a value", a);
        }
        const char *v = argv[++i];
        char *end;
        long n;
        switch (k) {
        case 0: o->sched = v; break;
        case 1:
        case 2:
            n = strtol(v, &end, 10);
            if (*end != '\0' || n < 1 || n > (k == 1 ? MAX_ROUNDS : 4096)) {
                fprintf(stderr, "helix compare: error: %s %s: give a whole number from 1 to %d\n",
                        a, flags_esc(v), k == 1 ? MAX_ROUNDS : 4096);
                return 2;
            }
            *(k == 1 ? &o->rounds : &o->np) = (int)n;
            break;
        case 3: o->launcher = v; break;
        case 4: o->out = v; break;
        case 5: o->svg = v; break;
        default:
            o->timeout = strtod(v, &end);
            if (*end != '\0' || !(o->timeout >= 1)) {
                return bad("--run-timeout %s: give seconds, 1 or more", flags_esc(v));
            }
        }
    }
    o->rest = argv + i;
    o->nrest = argc - i;
    if (o->nrest > 0 && strcmp(o->rest[0], "simulate") == 0) {
        o->simulate = 1;
        o->rest++;
        o->nrest--;
    }
    if (o->sched == NULL) {
        return bad("%sgive the policies to compare: --sched A,B,... (the first is the "
                   "reference); helix compare --help", "");
    }
    if (o->rounds == 0) {
        o->rounds = o->simulate ? 1 : 3;
    }
    if (o->simulate && (o->np != 1 || o->launcher != NULL)) {
        return bad("%s--np and --launcher are for real runs: a simulation's ranks are helix "
                   "simulate's --ranks", "");
    }
    static const char *const set_here[] = { "sched", "log-json", "trace", NULL };
    for (int k = 0; set_here[k] != NULL; k++) {
        if (flags_peek_argv(o->nrest, o->rest, 0, set_here[k]) != NULL) {
            fprintf(stderr, "helix compare: error: --%s is set for each run by helix compare; "
                    "leave it out (the runs' files go to --out DIR)\n", set_here[k]);
            return 2;
        }
    }
    return 0;
}

/* The policies of --sched into p[]; their number, or -1 after a message. */
static int split_policies(const char *list, char *buf, size_t cap, struct policy *p)
{
    snprintf(buf, cap, "%s", list);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        if (n == MAX_POLICIES) {
            fprintf(stderr, "helix compare: error: more than %d policies in --sched\n",
                    MAX_POLICIES);
            return -1;
        }
        for (int k = 0; k < n; k++) {
            if (strcmp(p[k].name, t) == 0) {
                fprintf(stderr, "helix compare: error: --sched names %s twice; name each policy "
                        "once (--rounds repeats them)\n", flags_esc(t));
                return -1;
            }
        }
        memset(&p[n], 0, sizeof p[n]);
        p[n++].name = t;
    }
    if (n == 0) {
        fprintf(stderr, "helix compare: error: --sched %s names no policy\n", flags_esc(list));
    }
    return n > 0 ? n : -1;
}

/* Every policy must exist before the first run.  A simulation's plug-ins are built for
 * helix-sim and load only there: with --sched-plugin, its runs check their names. */
static int check_policies(const struct opts *o, const struct policy *p, int n)
{
    int plugins = flags_peek_argv(o->nrest, o->rest, 0, "sched-plugin") != NULL ||
                  getenv("HX_SCHED_PLUGINS") != NULL;
    if (!o->simulate) {
        for (int i = 0; i < o->nrest; i++) { /* every --sched-plugin, as train takes them */
            const char *v = NULL;
            if (strcmp(o->rest[i], "--sched-plugin") == 0 && i + 1 < o->nrest) {
                v = o->rest[++i];
            } else if (strncmp(o->rest[i], "--sched-plugin=", 15) == 0) {
                v = o->rest[i] + 15;
            }
            if (v != NULL && tools_load_sched_plugins(v) != 0) {
                return 2;
            }
        }
        if (tools_load_sched_plugins(NULL) != 0) {
            return 2;
        }
    }
    for (int k = 0; k < n; k++) {
        if (!hx_sched_is_known(p[k].name) && !(o->simulate && plugins)) {
            fprintf(stderr, "helix compare: error: --sched: '%s' is no policy; choose among:",
                    flags_esc(p[k].name));
            for (const char *const *s = hx_sched_names(); *s != NULL; s++) {
                fprintf(stderr, " %s", *s);
            }
            fprintf(stderr, "%s\n", plugins ? "" : " (or load one: --sched-plugin FILE.so)");
            return 2;
        }
    }
    return 0;
}

/* ---- the verdicts and the table ----------------------------------------------------------- */

static void verdict(struct policy *p, const struct run *ref, int rounds, int simulate)
{
    for (int r = 0; r < rounds; r++) {
        const struct run *x = &p->runs[r];
        if (x->rc != 0) {
            p->failed = 1;
            snprintf(p->verdict, sizeof p->verdict, "FAILED (exit %d, round %d): %s", x->rc,
                     r + 1, x->error);
            return;
        }
    }
    if (simulate) {
        snprintf(p->verdict, sizeof p->verdict, "n/a (simulated: no numerics)");
        return;
    }
    if (ref->rc != 0) {
        snprintf(p->verdict, sizeof p->verdict, "not checked (the reference failed)");
        return;
    }
    for (int r = 0; r < rounds; r++) {
        const struct run *x = &p->runs[r];
        if (x->nsteps != ref->nsteps) {
            p->wrong = 1;
            snprintf(p->verdict, sizeof p->verdict, "WRONG: %d steps logged, the reference %d",
                     x->nsteps, ref->nsteps);
            return;
        }
        for (int s = 0; s < x->nsteps; s++) {
            int dl = strcmp(x->loss[s], ref->loss[s]) != 0;
            if (dl || strcmp(x->gnorm[s], ref->gnorm[s]) != 0) {
                p->wrong = 1;
                snprintf(p->verdict, sizeof p->verdict, "WRONG: step %d's %s is %s, the "
                         "reference's %s (round %d): the policy changed the numbers", s + 1,
                         dl ? "loss" : "gradient norm", dl ? x->loss[s] : x->gnorm[s],
                         dl ? ref->loss[s] : ref->gnorm[s], r + 1);
                return;
            }
        }
    }
    snprintf(p->verdict, sizeof p->verdict, "%s",
             rounds > 1 ? "bitwise equal (every round)" : "bitwise equal");
}

static const double T95[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
                              2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
                              2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
                              2.048, 2.045, 2.042 };

/* geometric mean of per-round ratios q[0..n) and its 95% interval (lo = hi = NAN for n < 2) */
static double ratio_ci(const double *q, int n, double *lo, double *hi)
{
    double m = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        m += log(q[i]) / n;
    }
    for (int i = 0; i < n; i++) {
        ss += (log(q[i]) - m) * (log(q[i]) - m);
    }
    *lo = *hi = NAN;
    if (n >= 2) {
        double t = n - 1 <= 30 ? T95[n - 2] : 1.96 + 2.5 / (n - 1);
        double h = t * sqrt(ss / (n - 1)) / sqrt(n);
        *lo = exp(m - h), *hi = exp(m + h);
    }
    return exp(m);
}

static void table(struct policy *p, int n, const struct opts *o)
{
    printf("\n%-22s %10s %7s %17s %9s %9s %9s  %s\n", "policy", "step ms", "ratio",
           o->rounds > 1 ? "95% interval" : "", "exp intra", "exp inter", "bubble", "parity");
    for (int k = 0; k < n; k++) {
        const struct policy *q = &p[k];
        double ms[MAX_ROUNDS], ratio[MAX_ROUNDS], e0 = 0, e1 = 0, b = 0;
        int nr = 0, traced = 0;
        for (int r = 0; r < o->rounds; r++) {
            if (q->runs[r].rc == 0 && p[0].runs[r].rc == 0) {
                ms[nr] = q->runs[r].ms;
                ratio[nr++] = q->runs[r].ms / p[0].runs[r].ms;
            }
            if (q->runs[r].traced) {
                e0 += q->runs[r].lane_exposed[0], e1 += q->runs[r].lane_exposed[1];
                b += q->runs[r].bubble;
                traced++;
            }
        }
        char name[40];
        snprintf(name, sizeof name, "%s", q->name);
        if (q->failed || nr == 0) {
            printf("%-22s %10s %7s %17s %9s %9s %9s  %s\n", name, "-", "-", "", "-", "-", "-",
                   q->verdict);
            continue;
        }
        double lo, hi, gm = ratio_ci(ratio, nr, &lo, &hi);
        char ci[32] = "", rs[16];
        if (!isnan(lo) && k > 0) { /* (the reference against itself: 1 exactly) */
            snprintf(ci, sizeof ci, "[%.3f, %.3f]", lo, hi);
        }
        snprintf(rs, sizeof rs, "%.3f", gm);
        char e0s[16] = "-", e1s[16] = "-", bs[16] = "-";
        if (traced > 0) {
            snprintf(e0s, sizeof e0s, "%.2f", e0 / traced);
            snprintf(e1s, sizeof e1s, "%.2f", e1 / traced);
            snprintf(bs, sizeof bs, "%.2f", b / traced);
        }
        /* a policy that changed the numbers has no speed to report */
        printf("%-22s %10.2f %7s %17s %9s %9s %9s  %s\n", name, median(ms, nr),
               q->wrong ? "-" : rs, q->wrong ? "" : ci, e0s, e1s, bs, q->verdict);
    }
    printf("(step ms: median over rounds of each run's median step after the first; ratio: "
           "to %s,\n geometric mean of the rounds' ratios; exposed communication per lane "
           "(intra-node,\n inter-node) and bubble: ms per step, means over ranks)\n", p[0].name);
}

/* ---- the command -------------------------------------------------------------------------- */

int cmd_compare(int argc, char **argv)
{
    struct opts o;
    int ret = parse(argc, argv, &o);
    if (ret != 0) {
        return ret == 1 ? 0 : ret;
    }
    static struct policy p[MAX_POLICIES];
    char names[4096];
    int n = split_policies(o.sched, names, sizeof names, p);
    if (n < 0 || check_policies(&o, p, n) != 0) {
        return 2;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "helix compare: error: cannot find this helix (/proc/self/exe)\n");
        return 1;
    }
    self[len] = '\0';
    char dir[PATH_MAX];
    if (o.out != NULL) {
        snprintf(dir, sizeof dir, "%s", o.out);
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "helix compare: error: cannot create --out %s: %s\n",
                    flags_esc(dir), strerror(errno));
            return 2;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/helix-compare.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(dir) == NULL) {
            fprintf(stderr, "helix compare: error: cannot create a directory under TMPDIR: %s; "
                    "give --out DIR\n", strerror(errno));
            return 2;
        }
    }
    printf("helix compare: %d %s, %d round%s%s; %s; runs in %s\n", n,
           n == 1 ? "policy" : "policies", o.rounds, o.rounds == 1 ? "" : "s",
           o.rounds > 1 ? " (the order reversed every other round)" : "",
           o.simulate ? "helix simulate" : o.np > 1 ? "helix train under the launcher"
                                                    : "helix train",
           dir);
    for (int r = 0; r < o.rounds; r++) {
        for (int j = 0; j < n; j++) {
            struct policy *q = &p[r % 2 ? n - 1 - j : j];
            struct run *x = &q->runs[r];
            char json[PATH_MAX], trace[PATH_MAX], log[PATH_MAX];
            if (run_path(json, sizeof json, dir, q->name, r + 1, "json") != 0 ||
                run_path(trace, sizeof trace, dir, q->name, r + 1, "trace") != 0 ||
                run_path(log, sizeof log, dir, q->name, r + 1, "log") != 0) {
                fprintf(stderr, "helix compare: error: the run files' paths under %s are too "
                        "long; give a shorter --out\n", flags_esc(dir));
                return 2;
            }
            char *v[64 + 4096], np[16], launcher[4096];
            run_argv(&o, self, q->name, json, trace, v, (int)(sizeof v / sizeof *v), np,
                     launcher);
            printf("round %d/%d: %-22s ", r + 1, o.rounds, q->name);
            fflush(stdout);
            double t0 = now_s();
            unlink(json);
            x->rc = spawn(v, log, o.timeout);
            if (x->rc == 0 && read_log(json, x) != 0) {
                x->rc = 1;
                copy_text(x->error, sizeof x->error, "no step in its --log-json");
            } else if (x->rc != 0) {
                first_error(log, x->error, sizeof x->error);
                if (x->rc == 124) {
                    snprintf(x->error, sizeof x->error, "killed after --run-timeout %.0f s "
                             "(its log: %.400s)", o.timeout, log);
                }
            }
            if (x->rc == 0) {
                read_trace(trace, x);
                printf("median step %.2f ms (%.1f s)\n", x->ms, now_s() - t0);
            } else {
                printf("failed, exit %d (%.1f s): %s\n", x->rc, now_s() - t0, x->error);
            }
        }
    }
    int bad_runs = 0;
    for (int k = 0; k < n; k++) {
        verdict(&p[k], &p[0].runs[0], o.rounds, o.simulate);
        bad_runs += p[k].failed || p[k].wrong;
    }
    if (p[0].failed) {
        printf("the reference policy %s failed: no ratio or parity can be reported\n", p[0].name);
    }
    table(p, n, &o);

    /* the timelines of the last round, one policy above the other */
    char svg[PATH_MAX];
    if (snprintf(svg, sizeof svg, "%s%s", o.svg != NULL ? o.svg : dir,
                 o.svg != NULL ? "" : "/timelines.svg") >= (int)sizeof svg) {
        copy_text(svg, sizeof svg, "timelines.svg");
    }
    struct trace traces[MAX_POLICIES];
    const struct trace *tp[MAX_POLICIES];
    const char *titles[MAX_POLICIES];
    char title[MAX_POLICIES][96];
    int nt = 0;
    for (int k = 0; k < n; k++) {
        char path[PATH_MAX], err[256];
        if (p[k].runs[o.rounds - 1].rc != 0 ||
            run_path(path, sizeof path, dir, p[k].name, o.rounds, "trace") != 0 ||
            trace_load(path, &traces[nt], err, sizeof err) != 0) {
            continue;
        }
        snprintf(title[nt], sizeof title[nt], "%s%s", p[k].name,
                 p[k].wrong ? " (WRONG: changed the numbers)" : "");
        titles[nt] = title[nt];
        tp[nt] = &traces[nt];
        nt++;
    }
    if (nt > 0) {
        FILE *f = fopen(svg, "w");
        int w = f != NULL ? trace_svg_stack(tp, titles, nt, TRACE_SVG_LAST, f) : -1;
        if (f == NULL || fclose(f) != 0 || w != 0) {
            fprintf(stderr, "helix compare: warning: could not write the timelines %s\n", svg);
        } else {
            printf("timelines (%s): %s\n", o.rounds > 1 ? "the last round" : "each policy", svg);
        }
    }
    for (int k = 0; k < nt; k++) {
        trace_free(&traces[k]);
    }
    for (int k = 0; k < n; k++) {
        for (int r = 0; r < o.rounds; r++) {
            for (int s = 0; s < p[k].runs[r].nsteps; s++) {
                free(p[k].runs[r].loss[s]), free(p[k].runs[r].gnorm[s]);
            }
            free(p[k].runs[r].loss), free(p[k].runs[r].gnorm);
        }
    }
    if (bad_runs > 0) {
        printf("%d of %d policies failed or changed the numbers (parity column)\n", bad_runs, n);
    }
    return bad_runs > 0 ? 1 : 0;
}
