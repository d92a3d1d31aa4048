/* SPDX-License-Identifier: MIT */
/* tools/compare_run.c: one run of `helix compare` (tools/compare.h): its command line, the
 * child process (its own process group, killed on --run-timeout), and what it left: the
 * --log-json steps (loss and gradient norm kept as the text "%.9g" wrote, for a bitwise
 * verdict), the median step, and the trace's exposed time per lane and bubble.
 * Test: tests/schedulers/compare.sh. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/compare.h"
#include "tools/trace_file.h"
#include "tools/trace_summary.h"

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* @p src into dst[cap], cut if longer (messages: a cut line still says what failed) */
void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* DIR/POLICY.rROUND.EXT into buf[cap]; 0, or -1 when the path does not fit */
int run_path(char *buf, size_t cap, const char *dir, const char *policy, int round,
                    const char *ext)
{
    int w = snprintf(buf, cap, "%s/%s.r%d.%s", dir, policy, round, ext);
    return w > 0 && (size_t)w < cap ? 0 : -1;
}

/* argv of one run into v[] (cap entries), pointing into o, paths and the static words */
int run_argv(const struct opts *o, const char *self, const char *policy,
                    const char *json, const char *trace, char **v, int cap, char *np,
                    char *launcher)
{
    int k = 0;
    if (!o->simulate && (o->np > 1 || o->launcher != NULL)) {
        const char *l = o->launcher != NULL ? o->launcher
                        : geteuid() == 0    ? "mpirun --oversubscribe --allow-run-as-root"
                                            : "mpirun --oversubscribe";
        strcpy(launcher, l);
        for (char *save = NULL, *t = strtok_r(launcher, " ", &save); t != NULL && k < 32;
             t = strtok_r(NULL, " ", &save)) {
            v[k++] = t;
        }
        sprintf(np, "%d", o->np);
        v[k++] = "-np";
        v[k++] = np;
    }
    v[k++] = (char *)self;
    v[k++] = o->simulate ? "simulate" : "train";
    for (int i = 0; i < o->nrest && k < cap - 10; i++) {
        v[k++] = o->rest[i];
    }
    v[k++] = "--sched";
    v[k++] = (char *)policy;
    v[k++] = "--log-json";
    v[k++] = (char *)json;
    v[k++] = "--trace";
    v[k++] = (char *)trace;
    v[k] = NULL;
    return k;
}

/* Run argv with stdout and stderr into log; its exit status, 128 + signal, or 124 when it
 * outlived the timeout (its process group killed). */
int spawn(char *const *argv, const char *log, double timeout)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0); /* mpirun and its ranks: killed together on a timeout */
        FILE *f = freopen(log, "w", stdout);
        if (f == NULL || dup2(fileno(stdout), 2) < 0) {
            _exit(126);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "helix compare: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    double t0 = now_s();
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            break;
        }
        if (w < 0 && errno != EINTR) {
            return -1;
        }
        if (now_s() - t0 > timeout) {
            kill(-pid, SIGTERM);
            sleep(2);
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 124;
        }
        usleep(50000);
    }
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* value text of "key": in a --log-json line ("%.9g", or null), or NULL */
static char *field(const char *line, const char *key)
{
    char pat[40];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    if (p == NULL) {
        return NULL;
    }
    p += strlen(pat);
    size_t n = strcspn(p, ",}");
    return strndup(p, n);
}

/* The run's steps from its --log-json: losses and norms as text, the median step time */
int read_log(const char *json, struct run *r)
{
    FILE *f = fopen(json, "r");
    if (f == NULL) {
        return -1;
    }
    char line[1024];
    double *ms = malloc(sizeof *ms * MAX_STEPS);
    int cap = 0, nms = 0;
    while (ms != NULL && fgets(line, sizeof line, f) != NULL && r->nsteps < MAX_STEPS) {
        char *loss = field(line, "loss"), *g = field(line, "grad_norm"), *t = field(line, "ms");
        if (loss == NULL || g == NULL) {
            free(loss), free(g), free(t);
            continue; /* an evaluation's line */
        }
        if (r->nsteps == cap) {
            cap = cap ? 2 * cap : 64;
            r->loss = realloc(r->loss, sizeof *r->loss * (size_t)cap);
            r->gnorm = realloc(r->gnorm, sizeof *r->gnorm * (size_t)cap);
            if (r->loss == NULL || r->gnorm == NULL) {
                abort();
            }
        }
        r->loss[r->nsteps] = loss;
        r->gnorm[r->nsteps++] = g;
        if (t != NULL && r->nsteps > 1) { /* the first step warms up */
            ms[nms++] = strtod(t, NULL);
        }
        free(t);
    }
    fclose(f);
    r->ms = nms > 0 ? median(ms, nms) : NAN;
    free(ms);
    return r->nsteps > 0 ? 0 : -1;
}

void read_trace(const char *path, struct run *r)
{
    struct trace t;
    char err[256];
    struct rank_summary *rs = NULL;
    int nsteps = 0, first = 0;
    if (trace_load(path, &t, err, sizeof err) != 0) {
        return;
    }
    if (trace_summarize(&t, &rs, &nsteps, &first) == 0 && t.nranks > 0) {
        for (int k = 0; k < t.nranks; k++) {
            r->lane_exposed[0] += rs[k].lane_exposed_ms[0] / t.nranks;
            r->lane_exposed[1] += rs[k].lane_exposed_ms[1] / t.nranks;
            r->exposed += rs[k].exposed_ms / t.nranks;
            r->bubble += rs[k].bubble_ms / t.nranks;
        }
        r->traced = 1;
    }
    free(rs);
    trace_free(&t);
}

/* the first line of the log that says error (else its last line) */
void first_error(const char *log, char *out, size_t cap)
{
    FILE *f = fopen(log, "r");
    char line[1024], last[1024] = "";
    out[0] = '\0';
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strstr(line, "error") != NULL) {
            copy_text(out, cap, line);
            break;
        }
        if (line[0] != '\0') {
            copy_text(last, sizeof last, line);
        }
    }
    if (out[0] == '\0') {
        copy_text(out, cap, last);
    }
    if (f != NULL) {
        fclose(f);
    }
}
