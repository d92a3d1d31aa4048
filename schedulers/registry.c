/* SPDX-License-Identifier: MIT */
/* schedulers/registry.c: every scheduling policy selectable by name (include/helix/sched.h).
 * helix's own policies come first (hx-prio leads), then those a program registers (at most
 * HX_SCHED_MAX_REGISTERED), then StarPU's built-ins as starpu_sched_get_predefined_policies()
 * lists them; that call works before starpu_init.  A name is never in two of these groups:
 * registering a taken name fails.  Each of ours and each registered one says what it needs
 * from the graph (enum hx_sched_need).  hx_sched_resolve is the one place that turns the
 * request and the environment into the policy a run uses.  Main thread only, before
 * hx_runtime_init.
 * Test: tests/schedulers/registry.c; every name is run by tests/schedulers/every_task_once.c. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/sched.h"
#include "helix/sched_plugin.h"
#include "schedulers/registry_origin.h"

#define HX_SCHED_MAX_REGISTERED 16
/* StarPU 1.3 has 34 built-in policies; names past this bound are left out of hx_sched_names */
#define HX_SCHED_MAX_STARPU 64

struct entry {
    struct starpu_sched_policy *policy;
    unsigned needs;     /* enum hx_sched_need bits */
    const char *origin; /* the plug-in file that registered it, or NULL */
};

static const struct entry helix_policies[] = {
    { &hx_sched_prio, 0, NULL },
    { &hx_sched_strand, HX_SCHED_NEEDS_STRAND_PLAN, NULL },
    { &hx_sched_wavelet, 0, NULL },
    { &hx_sched_prefetch, HX_SCHED_NEEDS_PREFETCH, NULL },
    { &hx_sched_serial_comm, HX_SCHED_NEEDS_SERIAL_COMM, NULL },
};
#define NHELIX (sizeof helix_policies / sizeof helix_policies[0])

static struct entry registered[HX_SCHED_MAX_REGISTERED];
static int nregistered;
static const char *loading; /* the plug-in whose entry point runs now (registry_origin.h) */

void hx_sched_registry_loading(const char *plugin)
{
    loading = plugin;
}

/* " in plug-in FILE" while a plug-in registers, else "" (for messages) */
static const char *from_where(char *buf, size_t cap)
{
    if (loading == NULL) {
        return "";
    }
    snprintf(buf, cap, " in plug-in %s", loading);
    return buf;
}

/* helix + registered + StarPU + NULL; rebuilt on the next hx_sched_names after a register */
static const char *names[NHELIX + HX_SCHED_MAX_REGISTERED + HX_SCHED_MAX_STARPU + 1];
static int names_valid;

/* helix's or the registered entry of that name, or NULL */
static const struct entry *lookup(const char *name)
{
    if (name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < NHELIX; i++) {
        if (strcmp(helix_policies[i].policy->policy_name, name) == 0) {
            return &helix_policies[i];
        }
    }
    for (int i = 0; i < nregistered; i++) {
        if (strcmp(registered[i].policy->policy_name, name) == 0) {
            return &registered[i];
        }
    }
    return NULL;
}

struct starpu_sched_policy *hx_sched_find(const char *name)
{
    const struct entry *e = lookup(name);
    return e != NULL ? e->policy : NULL;
}

unsigned hx_sched_needs(const char *name)
{
    const struct entry *e = lookup(name);
    return e != NULL ? e->needs : 0;
}

/* StarPU's own string for one of its policies, or NULL */
static const char *starpu_builtin_name(const char *name)
{
    if (name == NULL) {
        return NULL;
    }
    for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); *p; p++) {
        if ((*p)->policy_name != NULL && strcmp((*p)->policy_name, name) == 0) {
            return (*p)->policy_name;
        }
    }
    return NULL;
}

const char *hx_sched_resolve(const char *requested, const char **source)
{
    static const char *const vars[] = { "HX_SCHED", "STARPU_SCHED" };
    const char *name = requested, *from = NULL;
    for (size_t k = 0; k < 2 && (name == NULL || *name == '\0'); k++) {
        name = getenv(vars[k]);
        from = vars[k];
    }
    if (name == NULL || *name == '\0') {
        name = hx_sched_prio.policy_name;
        from = "the default";
    }
    if (source != NULL) {
        *source = from;
    }
    /* the registry's copy: the environment may change (hx_runtime_init unsets STARPU_SCHED) */
    const struct entry *e = lookup(name);
    const char *builtin = e == NULL ? starpu_builtin_name(name) : NULL;
    return e != NULL ? e->policy->policy_name : builtin != NULL ? builtin : name;
}

int hx_sched_is_starpu_builtin(const char *name)
{
    return starpu_builtin_name(name) != NULL;
}

int hx_sched_is_known(const char *name)
{
    return hx_sched_find(name) != NULL || hx_sched_is_starpu_builtin(name);
}

int hx_sched_register(struct starpu_sched_policy *policy, unsigned needs)
{
    char in[4200];
    const char *where = from_where(in, sizeof in);
    if (policy == NULL || policy->policy_name == NULL || policy->policy_name[0] == '\0') {
        return HX_ERR(HX_EINVAL, "hx_sched_register%s: the policy needs a policy_name", where);
    }
    if (policy->push_task == NULL || policy->pop_task == NULL) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\")%s: push_task and pop_task are "
                      "required", policy->policy_name, where);
    }
    if (hx_sched_is_known(policy->policy_name)) {
        const struct entry *e = lookup(policy->policy_name);
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\")%s: that name is taken (%s%s); "
                      "give the policy another policy_name", policy->policy_name, where,
                      e == NULL ? "by a StarPU built-in policy"
                      : e->origin != NULL ? "by plug-in " : "by helix or an earlier register",
                      e != NULL && e->origin != NULL ? e->origin : "");
    }
    if ((needs & ~(unsigned)HX_SCHED_NEEDS_ALL) != 0) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\")%s: needs 0x%x has bits that are no "
                      "enum hx_sched_need (known: 0x%x)", policy->policy_name, where, needs,
                      (unsigned)HX_SCHED_NEEDS_ALL);
    }
    if (nregistered == HX_SCHED_MAX_REGISTERED) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\")%s: table full (%d policies "
                      "registered)", policy->policy_name, where, HX_SCHED_MAX_REGISTERED);
    }
    registered[nregistered++] = (struct entry){ policy, needs, loading };
    names_valid = 0;
    return HX_OK;
}

const char *const *hx_sched_names(void)
{
    if (!names_valid) {
        size_t n = 0;
        for (size_t i = 0; i < NHELIX; i++) {
            names[n++] = helix_policies[i].policy->policy_name;
        }
        for (int i = 0; i < nregistered; i++) {
            names[n++] = registered[i].policy->policy_name;
        }
        struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
        for (int i = 0; p[i] != NULL && i < HX_SCHED_MAX_STARPU; i++) {
            names[n++] = p[i]->policy_name;
        }
        names[n] = NULL;
        names_valid = 1;
    }
    return names;
}

const char *hx_sched_plugin_of(const char *name)
{
    const struct entry *e = lookup(name);
    return e != NULL ? e->origin : NULL;
}

int hx_sched_task_is_comm(const void *starpu_task)
{
    const struct starpu_task *task = starpu_task;
    const struct hx_node *node = task->sched_data;
    return node != NULL && node->kind == HX_KIND_COMM;
}
