/* SPDX-License-Identifier: MIT */
/* tools/output.c: a write that fails (a full disk, /dev/full, a closed pipe) is a failure of
 * the command, not a detail: `helix version >/dev/full` exits 1, not 0 with nothing written.
 * stdio keeps only a sticky error flag, and after a failed flush glibc drops the buffer, so
 * the next flush succeeds and the errno is gone: the first one seen on stdout is kept here.
 * Test: tests/cli/hostile.sh. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helix/runtime.h"
#include "tools/tools.h"

static int stdout_errno; /* stdout's first failure, kept */

int tools_output_error(FILE *f)
{
    errno = 0;
    int err = fflush(f) != 0 ? (errno != 0 ? errno : EIO) : ferror(f) ? EIO : 0;
    if (f != stdout) {
        return err;
    }
    if (stdout_errno == 0) {
        stdout_errno = err;
    }
    return stdout_errno;
}

void tools_stdout_to_stderr(void)
{
    fflush(stderr);
    if (dup2(STDERR_FILENO, STDOUT_FILENO) >= 0) {
        clearerr(stdout);
        /* line by line, as on the pty it replaces: a pipe would buffer whole blocks, and a
         * process forked meanwhile (the checkpoint writer) would hold a copy of them */
        setvbuf(stdout, NULL, _IOLBF, 0);
        stdout_errno = 0;
    }
}

int tools_close_stdout(int status)
{
    int err = tools_output_error(stdout);
    errno = 0;
    /* (SimGrid runs every simulated rank in one process: they share stdout, which the
     * first to finish would close under the others, so the simulation flavour flushes) */
    if ((hx_runtime_simulated() ? fflush(stdout) : fclose(stdout)) != 0 && err == 0) {
        err = errno != 0 ? errno : EIO;
    }
    if (err == 0 || status != 0) {
        return status;
    }
    fprintf(stderr, "helix: error: writing standard output failed (%s): the output is lost or "
            "incomplete; write it where there is room (a full disk or a closed pipe?)\n",
            strerror(err));
    return 1;
}
