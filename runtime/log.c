/* SPDX-License-Identifier: MIT */
/* runtime/log.c: leveled logging to stderr.  HX_LOG=error|warn|info|debug sets the level
 * once; messages carry the rank when more than one runs (set by the MPI runtime). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"

static int level = -1;

static enum hx_log_level level_from_env(void)
{
    const char *e = getenv("HX_LOG");
    static const char *names[] = { "error", "warn", "info", "debug" };
    if (e != NULL) {
        for (int i = 0; i < 4; i++) {
            if (strcmp(e, names[i]) == 0) {
                return (enum hx_log_level)i;
            }
        }
        fprintf(stderr, "helix: warning: HX_LOG=%s is not one of error, warn, info, debug; "
                "using info\n", e);
    }
    return HX_LOG_INFO;
}

void hx_log_set_level(enum hx_log_level l)
{
    level = (int)l;
}

enum hx_log_level hx_log_get_level(void)
{
    if (level < 0) {
        level = (int)level_from_env();
    }
    return (enum hx_log_level)level;
}

void hx_log(enum hx_log_level l, const char *fmt, ...)
{
    static const char *tags[] = { "error: ", "warning: ", "", "debug: " };
    va_list ap;
    if ((int)l > (int)hx_log_get_level()) {
        return;
    }
    int rank, size;
    hx_error_get_rank(&rank, &size);
    if (size > 1) {
        fprintf(stderr, "helix: [rank %d] %s", rank, tags[l]);
    } else {
        fprintf(stderr, "helix: %s", tags[l]);
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}
