/* SPDX-License-Identifier: MIT */
/* tests/schedulers/stall.c: the task watchdog (runtime/stall.c).  Under a policy that
 * silently drops one task (push takes it, pop never returns it) a run with a 2 s
 * hx_runtime_opts.stall_timeout ends with HX_EXIT_COMM_TIMEOUT (3) instead of hanging in
 * hx_graph_wait, and its stderr names the policy, the tasks submitted and ready (the dropped
 * one, and the one that waits for it) and the hint.  Under the same policy without the drop,
 * three chained tasks that sleep 0.8 s each (2.4 s in all, past the timeout) end normally:
 * any termination is progress.  Each run is a forked child whose stderr comes back through
 * a pipe; an alarm ends a child that hangs (the bound), and nothing is timed. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

#define TIMEOUT_S 2.0
#define SLEEP_S 0.8 /* each of NSLEEPERS chained tasks: less than the timeout, more in all */
#define NSLEEPERS 3
#define BOUND_S 30  /* the child's alarm: only a hang reaches it */
#define M 256
#define K 32
#define TILE 64
#define VICTIM 1    /* node dropped: c's tile 1; d's tile 1 waits for it */

/* ---- the policy: one FIFO; "stall-drops-one" never hands out the victim's task ---- */

static const struct hx_node *victim; /* set in the child once the graph exists */

struct fifo {
    struct starpu_task_list ready;
    starpu_pthread_mutex_t lock;
    int drops;
};

static void fifo_init_common(unsigned ctx, int drops)
{
    struct fifo *s = malloc(sizeof *s);
    HX_ASSERT(s != NULL, "stall test policy: out of memory");
    starpu_task_list_init(&s->ready);
    STARPU_PTHREAD_MUTEX_INIT(&s->lock, NULL);
    s->drops = drops;
    starpu_sched_ctx_set_policy_data(ctx, s);
}

static void fifo_init(unsigned ctx)
{
    fifo_init_common(ctx, 0);
}

static void drops_init(unsigned ctx)
{
    fifo_init_common(ctx, 1);
}

static void fifo_deinit(unsigned ctx)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(ctx);
    STARPU_PTHREAD_MUTEX_DESTROY(&s->lock);
    free(s);
}

static int fifo_push(struct starpu_task *task)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(task->sched_ctx);
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    if (!(s->drops && victim != NULL && task->sched_data == victim)) {
        starpu_task_list_push_back(&s->ready, task);
    }
    starpu_push_task_end(task); /* the bug: StarPU now counts the dropped task as ready */
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return 0;
}

static struct starpu_task *fifo_pop(unsigned ctx)
{
    struct fifo *s = starpu_sched_ctx_get_policy_data(ctx);
    if (starpu_task_list_empty(&s->ready)) { /* unlocked peek: a miss waits one poll */
        return NULL;
    }
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&s->lock);
    starpu_worker_relax_off();
    struct starpu_task *t = starpu_task_list_empty(&s->ready)
                                ? NULL : starpu_task_list_pop_front(&s->ready);
    STARPU_PTHREAD_MUTEX_UNLOCK(&s->lock);
    return t;
}

static struct starpu_sched_policy fifo_policy = {
    .init_sched = fifo_init, .deinit_sched = fifo_deinit,
    .push_task = fifo_push, .pop_task = fifo_pop,
    .policy_name = "stall-fifo", .policy_description = "one FIFO (test)",
    .worker_type = STARPU_WORKER_LIST,
};

static struct starpu_sched_policy drops_policy = {
    .init_sched = drops_init, .deinit_sched = fifo_deinit,
    .push_task = fifo_push, .pop_task = fifo_pop,
    .policy_name = "stall-drops-one", .policy_description = "one FIFO that loses a task (test)",
    .worker_type = STARPU_WORKER_LIST,
};

/* ---- the work: c = a b, d = c e by row tiles; sleepers chained through one variable ---- */

static void add_product(hx_graph_t g, struct hx_tensor *c, struct hx_tensor *a,
                        struct hx_tensor *b, int tile)
{
    int m = hx_tile_nrows(a, tile);
    union hx_op_args args = { .mm = { .m = m, .n = K, .k = K, .alpha = 1.0f, .beta = 0.0f } };
    struct hx_ref refs[3] = { hx_ref_of(a, tile, HX_R), hx_ref_of(b, 0, HX_R),
                              hx_ref_of(c, tile, HX_W) };
    hx_graph_add(g, HX_OP_MATMUL, &args, 3, refs, 2.0 * m * K * K, 0);
}

static void sleep_cpu(void *buffers[], void *arg)
{
    (void)arg;
    struct timespec ts = { 0, (long)(SLEEP_S * 1e9) };
    while (nanosleep(&ts, &ts) != 0) {
    }
    *(int *)STARPU_VARIABLE_GET_PTR(buffers[0]) += 1;
}

static struct starpu_codelet sleep_cl = {
    .name = "sleep", .cpu_funcs = { sleep_cpu }, .nbuffers = 1, .modes = { STARPU_RW },
};

/* The child's run: 0 when everything ended, else a small code naming the step that failed
 * (the watchdog ends the process with 3 before any of this returns). */
static int child_run(const char *policy, int drops)
{
    alarm(BOUND_S);
    struct hx_runtime_opts o;
    hx_runtime_opts_init(&o);
    o.workers = 2;
    o.sched = policy;
    o.stall_timeout = TIMEOUT_S;
    if (hx_runtime_init(&o) != HX_OK) {
        return 10;
    }
    hx_graph_t g = hx_graph_create();
    struct hx_tensor *a = hx_graph_tensor(g, "a", HX_F32, HX_ROLE_INPUT, M, K, TILE);
    struct hx_tensor *b = hx_graph_tensor(g, "b", HX_F32, HX_ROLE_INPUT, K, K, 0);
    struct hx_tensor *c = hx_graph_tensor(g, "c", HX_F32, HX_ROLE_ACTIVATION, M, K, TILE);
    struct hx_tensor *e = hx_graph_tensor(g, "e", HX_F32, HX_ROLE_INPUT, K, K, 0);
    struct hx_tensor *d = hx_graph_tensor(g, "d", HX_F32, HX_ROLE_ACTIVATION, M, K, TILE);
    for (int t = 0; t < a->ntiles; t++) {
        add_product(g, c, a, b, t);
    }
    for (int t = 0; t < a->ntiles; t++) {
        add_product(g, d, c, e, t);
    }
    int ret = hx_graph_realize(g), value = 0, code = 0;
    starpu_data_handle_t h;
    starpu_variable_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)&value, sizeof value);
    victim = drops ? &g->nodes[VICTIM] : NULL;
    ret = ret == HX_OK ? hx_graph_submit(g, 0, -1) : ret;
    for (int i = 0; i < NSLEEPERS && ret == HX_OK && !drops; i++) {
        ret = starpu_task_insert(&sleep_cl, STARPU_RW, h, 0) == 0 ? HX_OK : HX_ERUNTIME;
    }
    code = ret != HX_OK ? 11 : 0;
    ret = hx_graph_wait(g); /* (waits even after a failed submit) */
    code = code == 0 && ret != HX_OK ? 12 : code;
    starpu_data_unregister(h);
    code = code == 0 && !drops && value != NSLEEPERS ? 13 : code;
    hx_graph_destroy(g);
    hx_runtime_shutdown();
    return code;
}

/* Run child_run in a child; its stdout and stderr come back in err[n].  @return the wait
 * status, or -1 if the child could not be started. */
static int run_child(const char *policy, int drops, char *err, size_t n)
{
    int fd[2];
    err[0] = '\0';
    if (pipe(fd) != 0) {
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1); /* the TAP stream is the parent's */
        dup2(fd[1], 2);
        close(fd[1]);
        exit(child_run(policy, drops));
    }
    close(fd[1]);
    size_t len = 0;
    char sink[4096];
    for (;;) { /* to EOF (past n: discarded), so a chatty child never blocks on the pipe */
        int room = len + 1 < n;
        ssize_t r = room ? read(fd[0], err + len, n - 1 - len) : read(fd[0], sink, sizeof sink);
        if (r <= 0) {
            break;
        }
        len += room ? (size_t)r : 0;
    }
    err[len] = '\0';
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return status;
}

static void describe(int status, char *out, size_t n)
{
    if (status == -1) {
        snprintf(out, n, "the child could not be started");
    } else if (WIFEXITED(status)) {
        snprintf(out, n, "status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(out, n, "killed by signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (hung past the bound)" : "");
    } else {
        snprintf(out, n, "wait status %d", status);
    }
}

static void diag_lines(const char *text)
{
    char line[512];
    for (const char *p = text; *p != '\0';) {
        size_t k = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(k < sizeof line - 1 ? k : sizeof line - 1), p);
        tap_diag("  %s", line);
        p += k + (p[k] == '\n');
    }
}

int main(void)
{
    static char err[16384];
    char how[128];
    tap_plan(4);
    if (hx_sched_register(&fifo_policy, 0) != HX_OK ||
        hx_sched_register(&drops_policy, 0) != HX_OK) {
        tap_skip_all("cannot register the test policies");
    }

    int st = run_child("stall-drops-one", 1, err, sizeof err);
    describe(st, how, sizeof how);
    tap_ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == HX_EXIT_COMM_TIMEOUT,
                    "a policy that drops a task: the run ends with status %d "
                    "(HX_EXIT_COMM_TIMEOUT) within %d s (%s)", HX_EXIT_COMM_TIMEOUT, BOUND_S,
                    how);
    tap_ok(strstr(err, "helix: error: [rank 0] no task terminated for ") != NULL &&
                 strstr(err, "(--comm-timeout 2): 2 tasks submitted and not finished, 1 of "
                        "them ready (pushed to the scheduling policy 'stall-drops-one':") != NULL,
                 "... its stderr names the policy, the submitted tasks and the ready one");
    tap_ok(strstr(err, "helix: error: [rank 0] hint: a scheduling policy must hand every "
                        "task it is pushed to a worker (pop_task); raise --comm-timeout") != NULL,
                 "... and the hint");
    diag_lines(err); /* the watchdog's lines, for the log */

    st = run_child("stall-fifo", 0, err, sizeof err);
    describe(st, how, sizeof how);
    if (!tap_ok(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                    strstr(err, "no task terminated") == NULL,
                "a correct policy, %d chained tasks of %.1f s each (past the %.0f s timeout in "
                "all): the run ends normally (%s)", NSLEEPERS, SLEEP_S, TIMEOUT_S, how)) {
        diag_lines(err);
    }
    return tap_exit();
}
