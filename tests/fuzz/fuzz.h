/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz.h: what harnesses share (header-only).
 * fuzz_file(data, size): the input as a file, for readers that take a path: a memfd (no disk
 * I/O, nothing left behind) rewritten on each call, named /proc/self/fd/N, a regular file to
 * stat/fopen/mmap.  fuzz_done(): forget the failures an input provoked (hx_run_failed is
 * process-wide), at the end of every input.  The library's error lines go to stderr: the
 * replay main keeps them (the test's log), scripts/fuzz closes the harness's stderr
 * (-close_fd_mask=2) so only libFuzzer's and the sanitizers' reports show. */
#ifndef HX_FUZZ_H
#define HX_FUZZ_H

#ifndef _GNU_SOURCE /* memfd_create; include this header first */
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helix/error.h"

static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("hx-fuzz", 0);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("writing the fuzz input to a memfd");
        abort();
    }
    return path;
}

static inline void fuzz_done(void)
{
    hx_run_status_reset();
}

#endif /* HX_FUZZ_H */
