/* SPDX-License-Identifier: MIT */
/* tests/mpi/exit_status.c: the exit status of a process that is not our child, for
 * tests/mpi/sigterm.sh.  A rank's parent under mpirun is mpirun, which never reports it, and a
 * wrapper shell around the rank is in the rank's process group, which mpirun kills as soon as
 * another rank exits (so the wrapper dies before it can write the status down).  A tracer
 * outside that group sees the real status: PTRACE_SEIZE (no stop), pass every signal on
 * unchanged, and print how the process ended.
 *
 *   exit_status PID     prints "attached" once seized, then "exited N" or "killed by SIGNAL",
 *                       and then, when a SIGTERM reached it, "S s after SIGTERM": how long
 *                       it ran after its first SIGTERM (against mpirun's 1 s grace)
 * Exit status: 0 once it printed how PID ended; 2 bad usage; 77 when it may not trace PID
 * (not root under Yama's ptrace_scope >= 1: the caller skips its checks). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* after the line of how PID ended, the time since its first SIGTERM (t_term > 0) */
static int ended(double t_term)
{
    if (t_term > 0) {
        printf("%.2f s after SIGTERM\n", now_s() - t_term);
    }
    return 0;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long pid = argc == 2 ? strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || *end != '\0' || pid <= 0) {
        fprintf(stderr, "usage: exit_status PID\n");
        return 2;
    }
    /* only the main thread: a group exit is reported on it, with the process's status */
    if (ptrace(PTRACE_SEIZE, (pid_t)pid, NULL, NULL) != 0) {
        fprintf(stderr, "exit_status: cannot trace %ld: %s\n", pid, strerror(errno));
        return errno == EPERM ? 77 : 2;
    }
    printf("attached\n");
    fflush(stdout);
    double t_term = 0;
    for (;;) {
        int st;
        if (waitpid((pid_t)pid, &st, __WALL) < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "exit_status: waitpid %ld: %s\n", pid, strerror(errno));
            return 2;
        }
        if (WIFEXITED(st)) {
            printf("exited %d\n", WEXITSTATUS(st));
            return ended(t_term);
        }
        if (WIFSIGNALED(st)) {
            printf("killed by %s\n", sigabbrev_np(WTERMSIG(st)));
            return ended(t_term);
        }
        if (WIFSTOPPED(st)) {
            int sig = WSTOPSIG(st), event = st >> 16;
            if (event == PTRACE_EVENT_STOP && sig != SIGTRAP) { /* a group stop (SIGSTOP...):
                                                               * stopped until SIGCONT */
                ptrace(PTRACE_LISTEN, (pid_t)pid, NULL, NULL);
            } else if (event == PTRACE_EVENT_STOP) { /* the notice that SIGCONT resumed it */
                ptrace(PTRACE_CONT, (pid_t)pid, NULL, NULL);
            } else { /* a signal on its way: deliver it */
                t_term = sig == SIGTERM && t_term == 0 ? now_s() : t_term;
                ptrace(PTRACE_CONT, (pid_t)pid, NULL, (void *)(long)sig);
            }
        }
    }
}
