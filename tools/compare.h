/* SPDX-License-Identifier: MIT */
/* tools/compare.h: between `helix compare`'s command (tools/compare.c: the rounds, verdicts
 * and table) and its runs (tools/compare_run.c: one child process, its log, JSON and trace). */
#ifndef HX_TOOLS_COMPARE_H
#define HX_TOOLS_COMPARE_H

#include <stddef.h>

#define MAX_POLICIES 16
#define MAX_ROUNDS 50
#define MAX_STEPS 100000

struct run {
    int rc;                  /* exit status; 128 + signal; -1 not run */
    char error[512];         /* its first error line when rc != 0 */
    double ms;               /* median step time */
    int nsteps;
    char **loss, **gnorm;    /* each step's text as --log-json wrote it */
    double lane_exposed[2], exposed, bubble; /* means over ranks */
    int traced;
};

struct opts {
    const char *sched, *launcher, *out, *svg;
    int rounds, np, simulate;
    double timeout;
    int nrest;
    char **rest; /* train's (or simulate's, without the word) flags */
};

double now_s(void);
/* the median of v[0..n) (sorts v); NAN for n = 0 */
double median(double *v, int n);
/* @p src into dst[cap], cut if longer (messages: a cut line still says what failed) */
void copy_text(char *dst, size_t cap, const char *src);
/* DIR/POLICY.rROUND.EXT into buf[cap]; 0, or -1 when the path does not fit */
int run_path(char *buf, size_t cap, const char *dir, const char *policy, int round,
             const char *ext);
/* argv of one run of @p policy into v[cap] (launcher words in launcher[], -np in np[]) */
int run_argv(const struct opts *o, const char *self, const char *policy, const char *json,
             const char *trace, char **v, int cap, char *np, char *launcher);
/* run argv, its output into log: exit status, 128 + signal, 124 after timeout s, -1 */
int spawn(char *const *argv, const char *log, double timeout);
/* the steps of a --log-json into r (losses and norms as text, the median step): 0 or -1 */
int read_log(const char *json, struct run *r);
/* exposed time per lane and bubble, means over ranks, from a --trace file (r->traced) */
void read_trace(const char *path, struct run *r);
/* the first line of @p log that says error, else its last line */
void first_error(const char *log, char *out, size_t cap);

#endif /* HX_TOOLS_COMPARE_H */
