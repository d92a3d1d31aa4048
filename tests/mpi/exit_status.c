/* SPDX-License-Identifier: MIT */
/* tests/mpi/exit_status.c: the exit status of a process that is not our child, for
 * tests/mpi/sigterm.sh.  A rank's parent under mpirun is mpirun, which never reports it, and a
 * wrapper shell around the rank is in the rank's process group, which mpirun kills as soon as
 * another rank exits (so the wrapper dies before it can write the status down).  A tracer
 * outside that group sees the real status: PTRACE_SEIZE (no stop), pass every signal on
 * unchanged, and print how the process ended.
 *
 *   exit_status PID     prints "attached" once seized, then "exited N" or "killed by SIGNAL"
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
            return 0;
        }
        if (WIFSIGNALED(st)) {
            printf("killed by %s\n", sigabbrev_np(WTERMSIG(st)));
            return 0;
        }
        if (WIFSTOPPED(st)) {
            int sig = WSTOPSIG(st), event = st >> 16;
            if (event == PTRACE_EVENT_STOP && sig != SIGTRAP) { /* a group stop (SIGSTOP...):
                                                               * stopped until SIGCONT */
                ptrace(PTRACE_LISTEN, (pid_t)pid, NULL, NULL);
            } else if (event == PTRACE_EVENT_STOP) { /* the notice that SIGCONT resumed it */
                ptrace(PTRACE_CONT, (pid_t)pid, NULL, NULL);
            } else { /* a signal on its way: deliver it */
                ptrace(PTRACE_CONT, (pid_t)pid, NULL, (void *)(long)sig);
            }
        }
    }
}
