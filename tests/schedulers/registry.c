/* SPDX-License-Identifier: MIT */
/* tests/schedulers/registry.c: the policy registry of include/helix/sched.h.
 * hx_sched_names() is NULL-terminated, without duplicates, hx-prio first, then registered
 * policies, then StarPU's; hx_sched_find/hx_sched_is_known/hx_sched_is_starpu_builtin agree on
 * helix, registered, StarPU and unknown names; registering a taken name (ours, StarPU's or an
 * earlier one), unknown needs or past the 16-entry table fails with HX_EINVAL; each policy's
 * needs (helix's five, a registered one's, StarPU's none); hx_sched_resolve takes the request,
 * then HX_SCHED, then STARPU_SCHED, then hx-prio, and says which; hx_runtime_init rejects an
 * unknown name with HX_EINVAL, runs a registered policy, ignores STARPU_SCHED when given a
 * name, and resolves the environment the same way; hx_sched_task_is_comm reads the node
 * kind.  Runs StarPU only briefly (1 worker). */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "tap.h"

/* Index of @p name in hx_sched_names(), or -1. */
static int index_of(const char *name)
{
    const char *const *names = hx_sched_names();
    for (int i = 0; names[i] != NULL; i++) {
        if (strcmp(names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

/* Start the runtime with @p sched on 1 worker; the name of the policy StarPU runs (StarPU
 * keeps a copy of the policy struct, so names are compared, not pointers), or NULL. */
static const char *run_with(const char *sched, int *status)
{
    struct hx_runtime_opts o;
    hx_runtime_opts_init(&o);
    o.workers = 1;
    o.sched = sched;
    *status = hx_runtime_init(&o);
    if (*status != HX_OK) {
        return NULL;
    }
    const char *name = starpu_sched_ctx_get_sched_policy(0)->policy_name;
    hx_runtime_shutdown();
    return name;
}

int main(void)
{
    setenv("STARPU_NCPU", "1", 1);
    unsetenv("HX_SCHED");
    unsetenv("STARPU_SCHED");
    tap_plan(19);

    /* ---- the list before anything is registered ---- */
    const char *const *names = hx_sched_names();
    int n = 0, dup = 0, unknown = 0;
    while (n < 1000 && names[n] != NULL) {
        n++;
    }
    for (int i = 0; i < n; i++) {
        unknown += !hx_sched_is_known(names[i]);
        for (int j = 0; j < i; j++) {
            dup += strcmp(names[i], names[j]) == 0;
        }
    }
    tap_ok(n > 1 && n < 1000 && strcmp(names[0], "hx-prio") == 0,
           "hx_sched_names(): %d names, NULL-terminated, first \"%s\"", n, n ? names[0] : "");
    tap_ok(dup == 0 && unknown == 0, "every listed name is known and listed once (%d duplicates, "
           "%d unknown)", dup, unknown);

    tap_ok(hx_sched_find("hx-prio") == &hx_sched_prio && hx_sched_is_known("hx-prio") &&
               !hx_sched_is_starpu_builtin("hx-prio"),
           "hx-prio is helix's: found, known, not a StarPU built-in");

    static const char *const builtin[] = { "eager", "prio", "lws", "ws", "dmda", "random" };
    int bad = 0;
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        if (hx_sched_find(builtin[i]) != NULL || !hx_sched_is_starpu_builtin(builtin[i]) ||
            !hx_sched_is_known(builtin[i]) || index_of(builtin[i]) < 1) {
            tap_diag("StarPU policy %s misclassified", builtin[i]);
            bad++;
        }
    }
    tap_ok(bad == 0, "StarPU's eager, prio, lws, ws, dmda, random: known and listed, not helix's");

    tap_ok(hx_sched_find("no-such-policy") == NULL && !hx_sched_is_known("no-such-policy") &&
               !hx_sched_is_starpu_builtin("no-such-policy") && !hx_sched_is_known("") &&
               hx_sched_find(NULL) == NULL && !hx_sched_is_known(NULL),
           "unknown, empty and NULL names are not known");

    tap_ok(hx_sched_needs("hx-prio") == 0 &&
               hx_sched_needs("hx-strand") == HX_SCHED_NEEDS_STRAND_PLAN &&
               hx_sched_needs("hx-wavelet") == 0 &&
               hx_sched_needs("hx-prefetch") == HX_SCHED_NEEDS_PREFETCH &&
               hx_sched_needs("serial-comm") == HX_SCHED_NEEDS_SERIAL_COMM &&
               hx_sched_needs("eager") == 0 && hx_sched_needs("no-such-policy") == 0 &&
               hx_sched_needs(NULL) == 0,
           "needs: hx-strand a strand plan, hx-prefetch its order, serial-comm serialized "
           "communication; hx-prio, hx-wavelet, StarPU's and unknown names none");

    /* ---- resolving: the request, then HX_SCHED, then STARPU_SCHED, then hx-prio ---- */
    const char *src = "unset";
    const char *res0 = hx_sched_resolve(NULL, &src);
    int dflt = strcmp(res0, "hx-prio") == 0 && src != NULL && strcmp(src, "the default") == 0;
    setenv("STARPU_SCHED", "eager", 1);
    const char *res1 = hx_sched_resolve(NULL, &src);
    int starpu = strcmp(res1, "eager") == 0 && src != NULL && strcmp(src, "STARPU_SCHED") == 0;
    setenv("HX_SCHED", "hx-prefetch", 1);
    const char *res2 = hx_sched_resolve("", &src);
    int hx = res2 == hx_sched_prefetch.policy_name && src != NULL && strcmp(src, "HX_SCHED") == 0;
    const char *res3 = hx_sched_resolve("serial-comm", &src);
    int flag = res3 == hx_sched_serial_comm.policy_name && src == NULL;
    tap_ok(dflt && starpu && hx && flag,
           "hx_sched_resolve: nothing set -> %s; STARPU_SCHED=eager -> %s; HX_SCHED=hx-prefetch "
           "too, request \"\" -> %s (the registry's string); request serial-comm -> %s", res0, res1,
           res2, res3);
    setenv("HX_SCHED", "no-such-policy", 1);
    const char *res4 = hx_sched_resolve(NULL, &src);
    tap_ok(strcmp(res4, "no-such-policy") == 0 && src != NULL && strcmp(src, "HX_SCHED") == 0 &&
               !hx_sched_is_known(res4),
           "an unknown HX_SCHED comes back as given, with its source, to be reported (%s from %s)",
           res4, src ? src : "NULL");
    unsetenv("HX_SCHED");
    unsetenv("STARPU_SCHED");

    /* ---- registering ---- */
    int nhelix = 0; /* helix's own policies lead the list */
    while (names[nhelix] != NULL && hx_sched_find(names[nhelix]) != NULL) {
        nhelix++;
    }
    static struct starpu_sched_policy copy, same_name, starpu_name, noname;
    copy = hx_sched_prio; /* a working policy under another name */
    copy.policy_name = "test-copy";
    static struct starpu_sched_policy odd_needs;
    odd_needs = hx_sched_prio;
    odd_needs.policy_name = "test-odd-needs";
    int rodd = hx_sched_register(&odd_needs, 1u << 9);
    hx_run_status_reset();
    unsigned want = HX_SCHED_NEEDS_PREFETCH | HX_SCHED_NEEDS_SERIAL_COMM;
    int ret = hx_sched_register(&copy, want);
    names = hx_sched_names();
    tap_ok(ret == HX_OK && hx_sched_find("test-copy") == &copy && hx_sched_is_known("test-copy") &&
               nhelix >= 5 && index_of("test-copy") == nhelix,
           "registered test-copy: found, and listed right after helix's policies (index %d)",
           index_of("test-copy"));
    tap_ok(hx_sched_needs("test-copy") == want && rodd == HX_EINVAL &&
               !hx_sched_is_known("test-odd-needs"),
           "a registered policy keeps its needs (0x%x), and a need that is no enum hx_sched_need "
           "is refused (%d)", hx_sched_needs("test-copy"), rodd);

    same_name = hx_sched_prio;
    starpu_name = hx_sched_prio;
    starpu_name.policy_name = "eager";
    noname = hx_sched_prio;
    noname.policy_name = "";
    int r1 = hx_sched_register(&copy, 0), r2 = hx_sched_register(&same_name, 0);
    int r3 = hx_sched_register(&starpu_name, 0), r4 = hx_sched_register(&noname, 0);
    int r5 = hx_sched_register(NULL, 0);
    tap_ok(r1 == HX_EINVAL && r2 == HX_EINVAL && r3 == HX_EINVAL && r4 == HX_EINVAL &&
               r5 == HX_EINVAL && hx_sched_find("eager") == NULL,
           "taken or missing names fail: test-copy again %d, hx-prio %d, eager %d, \"\" %d, "
           "NULL %d", r1, r2, r3, r4, r5);
    hx_run_status_reset();

    static struct starpu_sched_policy fill[20];
    static char fill_names[20][16];
    int accepted = 0;
    for (int i = 0; i < 20; i++) {
        fill[i] = hx_sched_prio;
        snprintf(fill_names[i], sizeof fill_names[i], "test-fill-%d", i);
        fill[i].policy_name = fill_names[i];
        if (hx_sched_register(&fill[i], 0) == HX_OK) {
            accepted++;
        }
    }
    hx_run_status_reset();
    names = hx_sched_names();
    int listed = 0;
    for (int i = 0; i < accepted; i++) {
        listed += index_of(fill_names[i]) == nhelix + 1 + i; /* after helix's and test-copy */
    }
    tap_ok(accepted == 15 && listed == accepted,
           "the table holds 16 registered policies: %d more accepted after test-copy, %d listed in "
           "order", accepted, listed);
    int m = 0;
    while (names[m] != NULL) {
        m++;
    }
    tap_ok(m == n + 16 && strcmp(names[0], "hx-prio") == 0,
           "hx_sched_names() after registering: %d names (%d + 16), still hx-prio first", m, n);

    /* ---- what the runtime does with the names ---- */
    int status = 0;
    const char *p = run_with("no-such-policy", &status);
    tap_ok(p == NULL && status == HX_EINVAL && !hx_runtime_is_up(),
           "hx_runtime_init(sched=\"no-such-policy\") returns HX_EINVAL (%d) and starts nothing",
           status);
    hx_run_status_reset();

    p = run_with("test-copy", &status);
    tap_ok(p != NULL && strcmp(p, "test-copy") == 0,
           "hx_runtime_init(sched=\"test-copy\") runs the registered policy (%s)",
           p ? p : "init failed");

    setenv("STARPU_SCHED", "eager", 1);
    p = run_with("hx-prio", &status);
    unsetenv("STARPU_SCHED");
    tap_ok(p != NULL && strcmp(p, "hx-prio") == 0,
           "with STARPU_SCHED=eager, sched=\"hx-prio\" still runs hx-prio (%s)",
           p ? p : "init failed");

    setenv("STARPU_SCHED", "eager", 1);
    setenv("HX_SCHED", "test-copy", 1);
    p = run_with(NULL, &status);
    unsetenv("HX_SCHED");
    const char *q = run_with(NULL, &status); /* hx_runtime_init unset STARPU_SCHED */
    tap_ok(p != NULL && strcmp(p, "test-copy") == 0 && q != NULL && strcmp(q, "hx-prio") == 0,
           "no name given: HX_SCHED=test-copy wins over STARPU_SCHED=eager (%s), and with "
           "neither left the default runs (%s)", p ? p : "init failed", q ? q : "init failed");

    p = run_with("prio", &status);
    tap_ok(p != NULL && strcmp(p, "prio") == 0,
           "hx_runtime_init(sched=\"prio\") runs StarPU's prio (%s)", p ? p : "init failed");

    /* ---- classifying tasks by their node ---- */
    struct hx_node comm = { .kind = HX_KIND_COMM }, compute = { .kind = HX_KIND_COMPUTE };
    struct starpu_task t;
    starpu_task_init(&t);
    int none = hx_sched_task_is_comm(&t);
    t.sched_data = &compute;
    int is_compute = hx_sched_task_is_comm(&t);
    t.sched_data = &comm;
    int is_comm = hx_sched_task_is_comm(&t);
    t.sched_data = NULL;
    starpu_task_clean(&t);
    tap_ok(!none && !is_compute && is_comm,
           "hx_sched_task_is_comm: no node %d, compute node %d, comm node %d", none, is_compute,
           is_comm);

    return tap_exit();
}
