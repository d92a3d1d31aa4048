/* SPDX-License-Identifier: MIT */
/* schedulers/registry.c: every scheduling policy selectable by name (include/helix/sched.h).
 * helix's own policies come first (hx-prio leads), then those a program registers (at most
 * HX_SCHED_MAX_REGISTERED), then StarPU's built-ins as starpu_sched_get_predefined_policies()
 * lists them; that call works before starpu_init.  A name is never in two of these groups:
 * registering a taken name fails.  Main thread only, before hx_runtime_init.
 * Test: tests/schedulers/registry.c; every name is run by tests/schedulers/every_task_once.c. */
#include <starpu.h>
#include <string.h>

#include "helix/error.h"
#include "helix/graph.h"
#include "helix/sched.h"

#define HX_SCHED_MAX_REGISTERED 16
/* StarPU 1.3 has 34 built-in policies; names past this bound are left out of hx_sched_names */
#define HX_SCHED_MAX_STARPU 64

static struct starpu_sched_policy *const helix_policies[] = { &hx_sched_prio, &hx_sched_strand,
                                                               &hx_sched_wavelet,
                                                               &hx_sched_prefetch,
                                                               &hx_sched_serial_comm };
#define NHELIX (sizeof helix_policies / sizeof helix_policies[0])

static struct starpu_sched_policy *registered[HX_SCHED_MAX_REGISTERED];
static int nregistered;

/* helix + registered + StarPU + NULL; rebuilt on the next hx_sched_names after a register */
static const char *names[NHELIX + HX_SCHED_MAX_REGISTERED + HX_SCHED_MAX_STARPU + 1];
static int names_valid;

int hx_sched_is_starpu_builtin(const char *name)
{
    if (name == NULL) {
        return 0;
    }
    for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); *p; p++) {
        if ((*p)->policy_name != NULL && strcmp((*p)->policy_name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

struct starpu_sched_policy *hx_sched_find(const char *name)
{
    if (name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < NHELIX; i++) {
        if (strcmp(helix_policies[i]->policy_name, name) == 0) {
            return helix_policies[i];
        }
    }
    for (int i = 0; i < nregistered; i++) {
        if (strcmp(registered[i]->policy_name, name) == 0) {
            return registered[i];
        }
    }
    return NULL;
}

int hx_sched_is_known(const char *name)
{
    return hx_sched_find(name) != NULL || hx_sched_is_starpu_builtin(name);
}

int hx_sched_register(struct starpu_sched_policy *policy)
{
    if (policy == NULL || policy->policy_name == NULL || policy->policy_name[0] == '\0') {
        return HX_ERR(HX_EINVAL, "hx_sched_register: the policy needs a policy_name");
    }
    if (policy->push_task == NULL || policy->pop_task == NULL) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\"): push_task and pop_task are required",
                      policy->policy_name);
    }
    if (hx_sched_is_known(policy->policy_name)) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\"): that name is taken (%s)",
                      policy->policy_name,
                      hx_sched_find(policy->policy_name) ? "by helix or an earlier register"
                                                         : "by a StarPU built-in policy");
    }
    if (nregistered == HX_SCHED_MAX_REGISTERED) {
        return HX_ERR(HX_EINVAL, "hx_sched_register(\"%s\"): table full (%d policies registered)",
                      policy->policy_name, HX_SCHED_MAX_REGISTERED);
    }
    registered[nregistered++] = policy;
    names_valid = 0;
    return HX_OK;
}

const char *const *hx_sched_names(void)
{
    if (!names_valid) {
        size_t n = 0;
        for (size_t i = 0; i < NHELIX; i++) {
            names[n++] = helix_policies[i]->policy_name;
        }
        for (int i = 0; i < nregistered; i++) {
            names[n++] = registered[i]->policy_name;
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

int hx_sched_task_is_comm(const void *starpu_task)
{
    const struct starpu_task *task = starpu_task;
    const struct hx_node *node = task->sched_data;
    return node != NULL && node->kind == HX_KIND_COMM;
}
