/* SPDX-License-Identifier: MIT */
/* tools/launch.c: what the subcommands that run under mpirun share: knowing they were
 * launched by it, letting only rank 0 report bad input, the ranks agreeing on their input
 * before any work (one verdict for all, the same settings everywhere), and checking the
 * policy a run resolves to (--sched, else HX_SCHED, else STARPU_SCHED: hx_sched_resolve).
 * A rank other than 0 checks its input with stderr sent to a scratch file; when only it
 * fails, rank 0 prints that rank's line, so every rank stops with one message and nobody is
 * left waiting in a collective.
 * Tests: tests/mpi/bad_mesh.sh (one message from rank 0), tests/mpi/rank_flags.sh (ranks
 * given different flags), tests/cli/bad_input.sh. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "helix/sched_plugin.h"
#include "tools/tools.h"

static FILE *scratch;     /* where a muted rank's stderr goes */
static char muted[1024];  /* the line it caught: its first error, else its first line */

int tools_launched_by_mpirun(void)
{
    /* the simulation flavour always runs under starpu_smpirun, one rank or many */
    return hx_runtime_simulated() || getenv("OMPI_COMM_WORLD_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

int tools_mute_stderr(int rank)
{
    if (rank == 0 || hx_runtime_simulated()) { /* (simulated ranks share one process's fd 2) */
        return -1;
    }
    fflush(stderr);
    muted[0] = '\0';
    scratch = tmpfile(); /* unlinked already: nothing is left behind */
    int saved = dup(2), sink = scratch != NULL ? dup(fileno(scratch))
                                              : open("/dev/null", O_WRONLY);
    if (saved >= 0 && sink >= 0) {
        dup2(sink, 2);
    }
    if (sink >= 0) {
        close(sink);
    }
    return saved;
}

void tools_unmute_stderr(int saved)
{
    if (saved < 0) {
        return;
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (scratch == NULL) {
        return;
    }
    char line[sizeof muted];
    rewind(scratch);
    while (fgets(line, sizeof line, scratch) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "helix: error: ", 14) == 0 || muted[0] == '\0') {
            snprintf(muted, sizeof muted, "%s", line);
        }
        if (strncmp(line, "helix: error: ", 14) == 0) {
            break;
        }
    }
    fclose(scratch);
    scratch = NULL;
}

const char *tools_muted_line(void)
{
    return muted;
}

int tools_agree_verdict(int rank, int verdict)
{
    int worst = hx_mpi_max_int(verdict);
    if (worst == 0) {
        return 0;
    }
    char line[sizeof muted] = "";
    int holder = hx_mpi_first_flagged(verdict == worst, muted, line, sizeof line);
    if (rank == 0 && holder > 0 && verdict < worst && line[0] != '\0') {
        /* "helix: error: [rank R/S] file.c:LINE func: what" or "helix: error: what" */
        const char *what = line;
        if (strncmp(what, "helix: error: ", 14) == 0) {
            what += 14;
        }
        if (what[0] == '[' && strchr(what, ']') != NULL) {
            what = strchr(what, ']') + 1;
            what += strspn(what, " ");
        }
        fprintf(stderr, "helix: error: rank %d (rank 0 accepted its own input): %s\n", holder,
                what);
    }
    return worst;
}

/* The value of @p key in "key = value" lines, into out[n]; 0 if absent. */
static int value_of(const char *text, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = text; *p != '\0';) {
        const char *e = strchr(p, '\n');
        size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
        if (len >= kl + 3 && strncmp(p, key, kl) == 0 && strncmp(p + kl, " = ", 3) == 0) {
            snprintf(out, n, "%.*s", (int)(len - kl - 3), p + kl + 3);
            return 1;
        }
        p += len + (e != NULL);
    }
    return 0;
}

/* "--name value" for a flag; a pseudo-setting (a name with a blank) without the dashes */
static void setting(char *out, size_t n, const char *key, const char *value)
{
    snprintf(out, n, "%s%s %s", strchr(key, ' ') != NULL ? "" : "--", key,
             value != NULL ? flags_esc(value) : "(not set)");
}

/* Rank 0 (@p zero) against rank @p who (@p other): the first differing setting, both ways,
 * and the names of the others. */
static void report_difference(const char *zero, const char *other, int who)
{
    char first[2][1200] = { "", "" }, more[512] = "";
    int nmore = 0;
    for (int side = 0; side < 2; side++) { /* keys of rank 0's text, then keys only in other */
        const char *text = side == 0 ? zero : other, *against = side == 0 ? other : zero;
        for (const char *p = text; *p != '\0';) {
            const char *e = strchr(p, '\n');
            size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
            const char *eq = memchr(p, '=', len);
            char key[128], mine[4096], theirs[4096];
            if (eq != NULL && eq > p + 1 && (size_t)(eq - p) < sizeof key) {
                snprintf(key, sizeof key, "%.*s", (int)(eq - p - 1), p);
                int have = value_of(against, key, theirs, sizeof theirs);
                value_of(text, key, mine, sizeof mine);
                if ((side == 0 && (!have || strcmp(mine, theirs) != 0)) ||
                    (side == 1 && !have)) {
                    const char *v0 = side == 0 ? mine : NULL, *v1 = side == 0 ? theirs : mine;
                    if (side == 0 && !have) {
                        v1 = NULL;
                    }
                    if (first[0][0] == '\0') {
                        setting(first[0], sizeof first[0], key, v1);
                        setting(first[1], sizeof first[1], key, v0);
                    } else {
                        size_t l = strlen(more);
                        snprintf(more + l, sizeof more - l, "%s%s%s", nmore ? ", " : "",
                                 strchr(key, ' ') != NULL ? "" : "--", key);
                        nmore++;
                    }
                }
            }
            p += len + (e != NULL);
        }
    }
    fprintf(stderr, "helix: error: the ranks were given different settings: rank %d has %s, "
            "rank 0 has %s%s%s%s; give every rank the same flags, --config, --preset and "
            "checkpoint\n", who, first[0], first[1], nmore ? " (also differing: " : "", more,
            nmore ? ")" : "");
}

int tools_agree_settings(int rank, const char *text)
{
    enum { CAP = 1 << 16 };
    if (hx_runtime_simulated()) {
        return 0; /* starpu_smpirun gives every simulated rank the same argv (runtime/mpi.c) */
    }
    char *zero = malloc(CAP), *other = malloc(CAP);
    int ok = zero != NULL && other != NULL ? 1 : 0;
    if (hx_mpi_max_int(!ok) != 0) {
        free(zero), free(other);
        if (!ok) {
            HX_ERR(HX_ENOMEM, "2 x %d bytes to compare the ranks' settings", CAP);
        }
        return 1;
    }
    snprintf(zero, CAP, "%s", rank == 0 ? text : "");
    int ret = hx_mpi_bcast_text(zero, CAP);
    if (hx_mpi_max_int(ret != HX_OK) != 0) {
        free(zero), free(other);
        return 1;
    }
    int who = hx_mpi_first_flagged(strcmp(zero, text) != 0, text, other, CAP);
    if (who > 0 && rank == 0) {
        report_difference(zero, other, who);
    }
    free(zero), free(other);
    return who > 0 ? 2 : 0;
}

int tools_load_sched_plugins(const char *flag)
{
    if (hx_sched_plugins_load(getenv("HX_SCHED_PLUGINS")) != HX_OK ||
        hx_sched_plugins_load(flag) != HX_OK) {
        return 2;
    }
    return 0;
}

int tools_check_sched(const char *name)
{
    const char *source;
    name = hx_sched_resolve(name, &source);
    if (hx_sched_is_known(name)) {
        return 0;
    }
    if (source == NULL) {
        fprintf(stderr, "helix: error: unknown --sched '%s'; choose one of:", flags_esc(name));
    } else { /* named in the environment */
        fprintf(stderr, "helix: error: unknown scheduling policy %s='%s' (unset it or give "
                "--sched); choose one of:", source, flags_esc(name));
    }
    for (const char *const *n = hx_sched_names(); *n != NULL; n++) {
        fprintf(stderr, " %s", *n);
    }
    fprintf(stderr, "\n");
    return 2;
}
