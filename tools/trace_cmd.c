/* SPDX-License-Identifier: MIT */
/* tools/trace_cmd.c: `helix trace summarize|svg`, over a trace of `helix train --trace`.
 * Exit codes: 0, 1 (a write failed), 2 (bad usage or a file that is no helix trace).
 * Test: tests/mpi/trace.sh. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"
#include "tools/tools.h"
#include "tools/trace_file.h"
#include "tools/trace_summary.h"
#include "tools/trace_svg.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: helix trace summarize TRACE [--baseline TRACE] [--json]\n"
            "       helix trace svg TRACE... -o OUT.svg [--step N|all] [--titles A,B,...]\n\n"
            "TRACE is a file of helix train --trace (every rank merged).\n\n"
            "summarize: per rank, means per training step (the first step, a warm-up, left\n"
            "  out when there are more): the step's span; busy time of the compute lane and of\n"
            "  each communication lane, and each lane's exposed time (its collectives in\n"
            "  flight while the rank computed nothing; time both lanes were exposed at once\n"
            "  counts in each, so the two may sum to more than all ops' exposed time); per\n"
            "  collective op its time in flight (post to MPI completion), the part hidden\n"
            "  under compute and the part exposed (the rank computed nothing meanwhile); the\n"
            "  bubble (compute idle and no data/tensor-parallel collective in flight:\n"
            "  pipeline waits and gaps).  --baseline gives a\n"
            "  trace of the same job without overlap (--sched serial-comm) for Flux's metrics:\n"
            "  effective communication time ECT = span - baseline compute, overlap efficiency\n"
            "  E = 1 - ECT / ECT(baseline), and per op 1 - exposed / exposed(baseline), the\n"
            "  share of that op's exposed time that overlap hid.  The tensor-parallel row is\n"
            "  every collective of the tp channels whatever the op (whole-op all-gathers and\n"
            "  reduce-scatters, or --tp-comm-overlap's tile shifts): its exposed time is the\n"
            "  tensor-parallel ECT, and its efficiency 1 - exposed / exposed(baseline).\n"
            "  Transfers: collectives (tile messages) started per step; MB: what the rank\n"
            "  sent.  --json prints one object:\n"
            "  {\"ranks\": [{\"rank\", \"span_ms\", \"steps\", \"lanes\": {...},\n"
            "  \"lane_exposed_ms\": {\"comm intra-node\", \"comm inter-node\"}, \"comm\": {op:\n"
            "  {\"ms\", \"exposed_ms\", \"hidden_ms\", \"transfers\", \"mb\", \"efficiency\"}},\n"
            "  \"tensor_parallel\": {the same}, \"comm_ms\",\n"
            "  \"exposed_comm_ms\", \"hidden_comm_ms\", \"hidden_share\", \"ect_ms\",\n"
            "  \"overlap_efficiency\", \"bubble_fraction\", \"strands\": {\"alpha_ms\", \"beta_ms\",\n"
            "  \"corun_ms\", \"corun_share\"}}]} (null where there is no baseline, strands null\n"
            "  without two strands).  A run with --strands adds a line per rank: each\n"
            "  strand's time at work (its tasks but pipeline sends and receives) and the time\n"
            "  both worked at once, the co-run DHelix's interleaving is for, also as a share\n"
            "  of the time either worked.\n"
            "svg: a timeline of one step (default: the last; --step N, or all) with a band per\n"
            "  rank and a row per worker and channel, tasks colored by op class, strand beta\n"
            "  hatched, and a legend; open it in a browser.  Several traces (the same job\n"
            "  under several policies, say) are drawn one above the other on one time scale\n"
            "  (the same ms per pixel: lengths compare), each under its title (--titles, one\n"
            "  per trace, comma-separated; default its path) with its step's span, by default\n"
            "  each trace's last step.\n");
}

static int load(const char *path, struct trace *t)
{
    char err[512];
    if (trace_load(path, t, err, sizeof err) != 0) {
        fprintf(stderr, "helix trace: error: %s\n", err);
        return 2;
    }
    return 0;
}

static void json_num(FILE *f, const char *key, double v, const char *sep)
{
    if (isnan(v)) {
        fprintf(f, "\"%s\": null%s", key, sep);
    } else {
        fprintf(f, "\"%s\": %.6g%s", key, v, sep);
    }
}

/* Of the time some strand works, the share both do */
static double corun_share(const struct rank_summary *s)
{
    double either = s->strand_ms[0] + s->strand_ms[1] - s->corun_ms;
    return either > 0 ? s->corun_ms / either : NAN;
}

static void print_json(const struct rank_summary *rs, int n)
{
    printf("{\"ranks\": [");
    for (int r = 0; r < n; r++) {
        const struct rank_summary *s = &rs[r];
        printf("%s\n{\"rank\": %d, \"steps\": %d, ", r ? "," : "", s->rank, s->steps);
        json_num(stdout, "span_ms", s->span_ms, ", ");
        printf("\"lanes\": {");
        json_num(stdout, "compute", s->compute_ms, ", ");
        json_num(stdout, "comm intra-node", s->lane_ms[0], ", ");
        json_num(stdout, "comm inter-node", s->lane_ms[1], "}, ");
        printf("\"lane_exposed_ms\": {");
        json_num(stdout, "comm intra-node", s->lane_exposed_ms[0], ", ");
        json_num(stdout, "comm inter-node", s->lane_exposed_ms[1], "}, ");
        printf("\"comm\": {");
        for (int i = 0; i < s->nops; i++) {
            const struct trace_comm *c = &s->ops[i];
            printf("%s\"%s\": {", i ? ", " : "", c->name);
            json_num(stdout, "ms", c->ms, ", ");
            json_num(stdout, "exposed_ms", c->exposed_ms, ", ");
            json_num(stdout, "hidden_ms", c->hidden_ms, ", ");
            json_num(stdout, "transfers", c->count, ", ");
            json_num(stdout, "mb", c->mb, ", ");
            json_num(stdout, "efficiency", c->efficiency, "}");
        }
        printf("}, \"tensor_parallel\": {");
        json_num(stdout, "ms", s->tp.ms, ", ");
        json_num(stdout, "exposed_ms", s->tp.exposed_ms, ", ");
        json_num(stdout, "hidden_ms", s->tp.hidden_ms, ", ");
        json_num(stdout, "transfers", s->tp.count, ", ");
        json_num(stdout, "mb", s->tp.mb, ", ");
        json_num(stdout, "efficiency", s->tp.efficiency, "}, ");
        json_num(stdout, "comm_ms", s->comm_ms, ", ");
        json_num(stdout, "exposed_comm_ms", s->exposed_ms, ", ");
        json_num(stdout, "hidden_comm_ms", s->hidden_ms, ", ");
        json_num(stdout, "hidden_share", s->comm_ms > 0 ? s->hidden_ms / s->comm_ms : NAN, ", ");
        json_num(stdout, "ect_ms", s->ect_ms, ", ");
        json_num(stdout, "overlap_efficiency", s->efficiency, ", ");
        json_num(stdout, "bubble_fraction", s->span_ms > 0 ? s->bubble_ms / s->span_ms : NAN,
                 ", ");
        if (s->strands) {
            printf("\"strands\": {");
            json_num(stdout, "alpha_ms", s->strand_ms[0], ", ");
            json_num(stdout, "beta_ms", s->strand_ms[1], ", ");
            json_num(stdout, "corun_ms", s->corun_ms, ", ");
            json_num(stdout, "corun_share", corun_share(s), "}}");
        } else {
            printf("\"strands\": null}");
        }
    }
    printf("\n]}\n");
}

static void print_text(const struct trace *t, const struct rank_summary *rs, int n, int nsteps,
                       int first, int with_base)
{
    if (nsteps > 0) {
        printf("means per training step over %d step%s from step %d%s\n", nsteps,
               nsteps > 1 ? "s" : "", first, first > 0 ? " (the first, a warm-up, left out)" : "");
    } else {
        printf("the trace has no step marks: all its tasks count as one step\n");
    }
    for (int r = 0; r < n; r++) {
        const struct rank_summary *s = &rs[r];
        printf("rank %d%s%s%s: step span %.2f ms\n", r, t->host[r][0] ? " (" : "", t->host[r],
               t->host[r][0] ? ")" : "", s->span_ms);
        printf("  busy       compute %.2f ms (%.1f%%), comm intra-node %.2f ms, comm inter-node "
               "%.2f ms\n", s->compute_ms, 100 * s->compute_ms / fmax(s->span_ms, 1e-9),
               s->lane_ms[0], s->lane_ms[1]);
        printf("  exposed    comm intra-node %.2f ms, comm inter-node %.2f ms (no compute "
               "meanwhile)\n", s->lane_exposed_ms[0], s->lane_exposed_ms[1]);
        printf("  %-16s %10s %10s %10s %8s %9s %9s%s\n", "communication", "in flight",
               "exposed", "hidden", "hidden", "transfers", "MB sent",
               with_base ? "  efficiency" : "");
        int tp = s->tp.count > 0;
        for (int i = 0; i <= s->nops + tp; i++) { /* the ops, "tensor-parallel", "all" */
            const struct trace_comm *c = i < s->nops ? &s->ops[i] : i == s->nops && tp ? &s->tp
                                                                                       : NULL;
            double ms = c ? c->ms : s->comm_ms, ex = c ? c->exposed_ms : s->exposed_ms;
            double hi = c ? c->hidden_ms : s->hidden_ms;
            printf("  %-16s %7.2f ms %7.2f ms %7.2f ms %7.1f%%", c ? c->name : "all", ms, ex,
                   hi, ms > 0 ? 100 * hi / ms : 0.0);
            if (c != NULL) {
                printf(" %9.1f %9.3f", c->count, c->mb);
            } else {
                printf(" %9s %9s", "", "");
            }
            if (with_base && c != NULL && !isnan(c->efficiency)) {
                printf("  %10.3f", c->efficiency);
            }
            printf("\n");
        }
        printf("  bubble     %.1f%% of the step (compute idle, no data/tensor-parallel "
               "collective in flight)\n", 100 * s->bubble_ms / fmax(s->span_ms, 1e-9));
        if (s->strands) {
            printf("  strands    alpha at work %.2f ms, beta %.2f ms, both at once %.2f ms "
                   "(%.1f%% of the time either is)\n", s->strand_ms[0], s->strand_ms[1],
                   s->corun_ms, 100 * corun_share(s));
        }
        if (with_base) {
            printf("  Flux       effective communication time %.2f ms, overlap efficiency "
                   "%s%.3f\n", s->ect_ms, isnan(s->efficiency) ? "n/a " : "",
                   isnan(s->efficiency) ? 0.0 : s->efficiency);
        }
    }
}

static int summarize(int argc, char **argv)
{
    const char *path = NULL, *base_path = NULL;
    int json = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--baseline") == 0 && i + 1 < argc) {
            base_path = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "helix trace summarize: error: unknown or incomplete flag '%s'; "
                    "see helix trace --help\n", argv[i]);
            return 2;
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "helix trace summarize: error: one trace only ('%s' and '%s'); the "
                    "no-overlap one goes after --baseline\n", path, argv[i]);
            return 2;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "helix trace summarize: error: give a trace file (helix train --trace "
                "FILE writes one)\n");
        return 2;
    }
    struct trace t, b;
    if (load(path, &t) != 0) {
        return 2;
    }
    if (base_path != NULL && load(base_path, &b) != 0) {
        trace_free(&t);
        return 2;
    }
    if (base_path != NULL && b.nranks != t.nranks) {
        fprintf(stderr, "helix trace summarize: error: the baseline '%s' has %d ranks, the "
                "trace '%s' %d: give a baseline of the same job\n", base_path, b.nranks, path,
                t.nranks);
        trace_free(&t), trace_free(&b);
        return 2;
    }
    struct rank_summary *rs = NULL, *bs = NULL;
    int nsteps, first, bn, bfirst, ret = 0;
    if (trace_summarize(&t, &rs, &nsteps, &first) != 0 ||
        (base_path != NULL && trace_summarize(&b, &bs, &bn, &bfirst) != 0)) {
        fprintf(stderr, "helix trace summarize: error: out of memory for %d events\n", t.n);
        ret = 1;
    } else {
        for (int r = 0; base_path != NULL && r < t.nranks; r++) {
            trace_against_baseline(&rs[r], &bs[r]);
        }
        if (json) {
            print_json(rs, t.nranks);
        } else {
            print_text(&t, rs, t.nranks, nsteps, first, base_path != NULL);
        }
    }
    free(rs), free(bs);
    trace_free(&t);
    if (base_path != NULL) {
        trace_free(&b);
    }
    return ret;
}

#define SVG_MAX_TRACES 32

/* Draw @p np >= 2 loaded traces stacked into @p f; @return as main's exit codes. */
static int svg_stack(struct trace *t, const char *const *paths, const char *const *titles,
                     int np, const char *step_arg, int step, FILE *f)
{
    const struct trace *tp[SVG_MAX_TRACES];
    for (int i = 0; i < np; i++) {
        tp[i] = &t[i];
    }
    if (step_arg == NULL) {
        step = TRACE_SVG_LAST;
    } else if (strcmp(step_arg, "all") == 0) {
        step = TRACE_SVG_ALL;
    }
    int r = trace_svg_stack(tp, titles != NULL ? titles : paths, np, step, f);
    if (r > 0 && step == TRACE_SVG_LAST) {
        fprintf(stderr, "helix trace svg: error: '%s' has no task\n", paths[r - 1]);
    } else if (r > 0) {
        fprintf(stderr, "helix trace svg: error: '%s' has no task of step %d; give a step of "
                "every trace or --step all\n", paths[r - 1], step);
    }
    if (r > 0) {
        return 2;
    }
    return r < 0;
}

static int svg(int argc, char **argv)
{
    const char *paths[SVG_MAX_TRACES], *out = NULL, *step_arg = NULL, *titles_arg = NULL;
    const char *titles[SVG_MAX_TRACES];
    int np = 0, nt = 0;
    for (int i = 3; i < argc; i++) {
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--step") == 0 && i + 1 < argc) {
            step_arg = argv[++i];
        } else if (strcmp(argv[i], "--titles") == 0 && i + 1 < argc) {
            titles_arg = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "helix trace svg: error: unknown or incomplete flag '%s'; see helix "
                    "trace --help\n", argv[i]);
            return 2;
        } else if (np == SVG_MAX_TRACES) {
            fprintf(stderr, "helix trace svg: error: at most %d traces in one SVG\n",
                    SVG_MAX_TRACES);
            return 2;
        } else {
            paths[np++] = argv[i];
        }
    }
    if (np == 0 || out == NULL) {
        fprintf(stderr, "helix trace svg: error: give a trace and -o OUT.svg (helix trace svg "
                "TRACE -o OUT.svg)\n");
        return 2;
    }
    int step = -1;
    char *end = NULL;
    if (step_arg != NULL && strcmp(step_arg, "all") != 0 &&
        ((step = (int)strtol(step_arg, &end, 10)) < 0 || *end != '\0' || end == step_arg)) {
        fprintf(stderr, "helix trace svg: error: --step takes a training step (0, 1, ...) or "
                "'all', not '%s'\n", step_arg);
        return 2;
    }
    char *tcopy = titles_arg != NULL ? strdup(titles_arg) : NULL;
    if (titles_arg != NULL && tcopy == NULL) {
        fprintf(stderr, "helix trace svg: error: out of memory\n");
        return 1;
    }
    for (char *c = tcopy, *next; c != NULL && nt < SVG_MAX_TRACES + 1; c = next) {
        next = strchr(c, ',');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (nt < SVG_MAX_TRACES) {
            titles[nt] = c;
        }
        nt++;
    }
    if (titles_arg != NULL && nt != np) {
        fprintf(stderr, "helix trace svg: error: --titles names %d trace%s, %d given: one "
                "title per trace, comma-separated\n", nt, nt == 1 ? "" : "s", np);
        free(tcopy);
        return 2;
    }
    struct trace t[SVG_MAX_TRACES];
    int nl = 0;
    while (nl < np && load(paths[nl], &t[nl]) == 0) {
        nl++;
    }
    int ret = nl < np ? 2 : 0;
    FILE *f = NULL;
    if (ret == 0 && (f = fopen(out, "w")) == NULL) {
        fprintf(stderr, "helix trace svg: error: cannot create '%s': %s\n", out, strerror(errno));
        ret = 1;
    }
    if (ret == 0 && np > 1) {
        ret = svg_stack(t, paths, titles_arg != NULL ? titles : NULL, np, step_arg, step, f);
    } else if (ret == 0) { /* one trace: its own scale */
        int *steps = malloc(sizeof(int) * ((size_t)t[0].n + 1));
        int ns = steps != NULL ? trace_steps(&t[0], steps) : 0;
        if (step_arg != NULL && strcmp(step_arg, "all") == 0) {
            step = TRACE_SVG_ALL;
        } else if (step_arg == NULL) {
            step = ns > 0 ? steps[ns - 1] : TRACE_SVG_ALL; /* the last step, warm */
        }
        free(steps);
        int r = trace_svg(&t[0], step, titles_arg != NULL ? titles[0] : paths[0], f);
        if (r == 1) {
            fprintf(stderr, "helix trace svg: error: '%s' has no task of step %d; give one of "
                    "its steps or --step all\n", paths[0], step);
        }
        ret = r == 1 ? 2 : r < 0;
    }
    if (f != NULL && fclose(f) != 0 && ret == 0) {
        ret = 1;
    }
    for (int i = 0; i < nl; i++) {
        trace_free(&t[i]);
    }
    free(tcopy);
    if (ret == 2 && f != NULL) {
        remove(out);
    }
    if (ret == 1 && f != NULL) {
        fprintf(stderr, "helix trace svg: error: writing '%s' failed\n", out);
    }
    if (ret == 0) {
        printf("wrote %s\n", out);
    }
    return ret;
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0) {
        usage(argc < 3 ? stderr : stdout);
        return argc < 3 ? 2 : 0;
    }
    if (strcmp(argv[2], "summarize") == 0) {
        return summarize(argc, argv);
    }
    if (strcmp(argv[2], "svg") == 0) {
        return svg(argc, argv);
    }
    fprintf(stderr, "helix trace: error: unknown subcommand '%s'; use summarize or svg (helix "
            "trace --help)\n", argv[2]);
    return 2;
}
