/* SPDX-License-Identifier: MIT */
/* tools/sim_machine.c: a machine file (machines/README.md) read into struct hx_sim_machine,
 * checked key by key and then as a whole.  Every key is described once in `keys` (type,
 * range, unit, which nodes need it, an example line), and every message is built from that
 * row: FILE:LINE, the key, what it means and a line to write instead.  Routes and platform
 * files: tools/sim_platform.c.
 * Test: tests/tools/sim_machine.c. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "runtime/kv_lines.h"
#include "tools/sim_machine.h"
#include "tools/tools.h"

enum key_type { KEY_INT, KEY_REAL, KEY_NAME, KEY_TOPOLOGY };

/* When a key must be given: always; on GPU nodes only (refused on CPU-only nodes); on GPU
 * nodes if they wish (gpu_model); only when NVLink is there (nvlink_gbytes_per_s > 0). */
enum key_need { NEED_ALWAYS, NEED_GPU, MAY_GPU, NEED_NVLINK, MAY_ANY };

struct key {
    const char *name;
    enum key_type type;
    size_t offset;         /* in struct hx_sim_machine */
    size_t len;            /* KEY_NAME: room, NUL included */
    double min, max;       /* accepted range (KEY_INT, KEY_REAL) */
    int min_open;          /* 1: min itself is refused (must be positive) */
    enum key_need need;
    const char *what;      /* meaning and unit, for messages */
    const char *example;   /* a valid line */
};

#define AT(f) offsetof(struct hx_sim_machine, f)
static const struct key keys[] = {
    { "name", KEY_NAME, AT(name), sizeof(((struct hx_sim_machine *)0)->name), 0, 0, 0,
      NEED_ALWAYS, "the machine's name: letters, digits, '.', '_', '-'", "name = a40-ib100" },
    { "nodes", KEY_INT, AT(nodes), 0, 1, HX_SIM_MAX_RANKS, 0, NEED_ALWAYS,
      "the number of nodes", "nodes = 8" },
    { "gpus_per_node", KEY_INT, AT(gpus_per_node), 0, 0, 64, 0, NEED_ALWAYS,
      "GPUs in each node, one rank each; 0 for CPU-only nodes of one rank",
      "gpus_per_node = 8" },
    { "cores_per_rank", KEY_INT, AT(cores_per_rank), 0, 1, 64, 0, NEED_ALWAYS,
      "CPU workers of each rank, at most 64: the simulating StarPU's --enable-maxcpus",
      "cores_per_rank = 12" },
    { "nics_per_node", KEY_INT, AT(nics_per_node), 0, 1, 64, 0, NEED_ALWAYS,
      "NICs in each node, shared evenly by its GPUs; 1 on CPU-only nodes", "nics_per_node = 8" },
    { "gpu_model", KEY_NAME, AT(gpu_model), sizeof(((struct hx_sim_machine *)0)->gpu_model),
      0, 0, 0, MAY_GPU, "the GPU's name for performance models", "gpu_model = H100-SXM" },
    { "gpu_memory_gib", KEY_REAL, AT(gpu_memory_gib), 0, 0, 1e6, 1, NEED_GPU,
      "memory of each GPU in GiB, 2^30 bytes", "gpu_memory_gib = 80" },
    { "pcie_gbytes_per_s", KEY_REAL, AT(pcie_gbytes_per_s), 0, 0, 1e6, 1, NEED_GPU,
      "PCIe bandwidth of each GPU, each direction, in GB/s of 1e9 bytes",
      "pcie_gbytes_per_s = 32" },
    { "pcie_latency_us", KEY_REAL, AT(pcie_latency_us), 0, 0, 1e6, 1, NEED_GPU,
      "latency of one PCIe transfer, host <-> GPU or GPU <-> GPU through the host, in us",
      "pcie_latency_us = 5.7" },
    { "nvlink_gbytes_per_s", KEY_REAL, AT(nvlink_gbytes_per_s), 0, 0, 1e6, 0, NEED_GPU,
      "NVLink bandwidth of each GPU, each direction, in GB/s; 0 for none",
      "nvlink_gbytes_per_s = 450" },
    { "nvlink_latency_us", KEY_REAL, AT(nvlink_latency_us), 0, 0, 1e6, 1, NEED_NVLINK,
      "latency of a GPU -> GPU transfer over NVLink, in us", "nvlink_latency_us = 3.4" },
    { "nic_gbits_per_s", KEY_REAL, AT(nic_gbits_per_s), 0, 0, 1e6, 1, NEED_ALWAYS,
      "bandwidth of each NIC, each direction, in Gbit/s of 1e9 bits", "nic_gbits_per_s = 400" },
    { "nic_latency_us", KEY_REAL, AT(nic_latency_us), 0, 0, 1e6, 1, NEED_ALWAYS,
      "latency from NIC to NIC through the switches, in us; GPU nodes add PCIe's",
      "nic_latency_us = 8.3" },
    { "topology", KEY_TOPOLOGY, AT(topology), 0, 0, 0, 0, NEED_ALWAYS,
      "how the NICs meet: fat-tree, one non-blocking switch, or rail, NIC i of every "
      "node on switch i", "topology = rail" },
    { "mpi_eager_kib", KEY_INT, AT(mpi_eager_kib), 0, 1, 1 << 20, 0, MAY_ANY,
      "the largest message MPI sends without waiting for its receiver, in KiB; 64 (Open MPI's "
      "TCP default) when not given", "mpi_eager_kib = 1024" },
};
#undef AT
enum { NKEYS = (int)(sizeof keys / sizeof keys[0]) };

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[64];
    if (la >= 64 || lb >= 64) {
        return 64;
    }
    for (size_t j = 0; j <= lb; j++) {
        row[j] = (int)j;
    }
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int key_index(const char *name)
{
    for (int k = 0; k < NKEYS; k++) {
        if (strcmp(keys[k].name, name) == 0) {
            return k;
        }
    }
    return -1;
}

static const struct key *find_key(const char *name)
{
    int k = key_index(name);
    return k >= 0 ? &keys[k] : NULL;
}

/* The same first word ("nvlink" of nvlink_gbps): a key about the same thing. */
static int same_topic(const char *a, const char *b)
{
    size_t n = strcspn(a, "_");
    return n > 0 && strncmp(a, b, n) == 0 && (b[n] == '_' || b[n] == '\0');
}

static int unknown_key(const char *path, int line, const char *name)
{
    int best = 0, bestd = 1 << 20, prefixed = 0;
    for (int k = 0; k < NKEYS; k++) {
        int d = edit_distance(name, keys[k].name);
        /* the start of a key ("gpu_mem") means that key, however far the rest */
        if (*name != '\0' && strncmp(keys[k].name, name, strlen(name)) == 0) {
            d = prefixed++ == 0 ? -1 : d;
        }
        if (d < bestd) {
            bestd = d, best = k;
        }
    }
    if (bestd * 3 <= (int)strlen(keys[best].name) || same_topic(name, keys[best].name)) {
        return HX_ERR(HX_EINVAL, "%s:%d: unknown key '%s'; did you mean %s (%s)? e.g. '%s'",
                      path, line, flags_esc(name), keys[best].name, keys[best].what,
                      keys[best].example);
    }
    return HX_ERR(HX_EINVAL, "%s:%d: unknown key '%s'; the keys are name, nodes, "
                  "gpus_per_node, cores_per_rank, nics_per_node, gpu_model, gpu_memory_gib, "
                  "pcie_gbytes_per_s, pcie_latency_us, nvlink_gbytes_per_s, nvlink_latency_us, "
                  "nic_gbits_per_s, nic_latency_us, topology (machines/README.md)", path, line,
                  flags_esc(name));
}

static int valid_name(const char *v, size_t room)
{
    size_t n = strlen(v);
    if (n == 0 || n >= room || strstr(v, "--") != NULL || v[0] == '-' || v[0] == '.') {
        return 0;
    }
    for (const char *c = v; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-')) {
            return 0;
        }
    }
    return 1;
}

/* One value into its field, or a message saying what the key takes. */
static int set_value(const char *path, int line, const struct key *k, const char *v,
                     struct hx_sim_machine *m)
{
    char *field = (char *)m + k->offset;
    if (k->type == KEY_NAME) {
        if (!valid_name(v, k->len)) {
            return HX_ERR(HX_EINVAL, "%s:%d: %s = '%s': %s, 1 to %zu characters, starting with "
                          "a letter or digit, no '--'; e.g. '%s'", path, line, k->name,
                          flags_esc(v), k->what, k->len - 1, k->example);
        }
        snprintf(field, k->len, "%s", v);
        return HX_OK;
    }
    if (k->type == KEY_TOPOLOGY) {
        if (strcmp(v, "fat-tree") != 0 && strcmp(v, "rail") != 0) {
            return HX_ERR(HX_EINVAL, "%s:%d: topology = '%s' is not a topology: write "
                          "'topology = fat-tree' (every NIC on one non-blocking switch) or "
                          "'topology = rail' (NIC i of every node on switch i)", path, line,
                          flags_esc(v));
        }
        *(enum hx_sim_topology *)(void *)field = strcmp(v, "rail") == 0 ? HX_SIM_RAIL
                                                                         : HX_SIM_FAT_TREE;
        return HX_OK;
    }
    char *end;
    errno = 0;
    double x = k->type == KEY_INT ? (double)strtol(v, &end, 10) : strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x)) {
        return HX_ERR(HX_EINVAL, "%s:%d: %s = '%s' is not %s; give the number alone (%s), "
                      "e.g. '%s'", path, line, k->name, flags_esc(v),
                      k->type == KEY_INT ? "a whole number" : "a number", k->what, k->example);
    }
    if (x < k->min || x > k->max || (k->min_open && x <= k->min)) {
        return HX_ERR(HX_EINVAL, "%s:%d: %s = %s is out of range: it must be %s %g %s %g (%s); "
                      "e.g. '%s'", path, line, k->name, flags_esc(v),
                      k->type == KEY_INT ? "a whole number from" : k->min_open ? "above" : "from",
                      k->min, k->min_open ? "and at most" : "to", k->max, k->what, k->example);
    }
    if (k->type == KEY_INT) {
        *(int *)(void *)field = (int)x;
    } else {
        *(double *)(void *)field = x;
    }
    return HX_OK;
}

/* `key = value` lines, '#' comments: each key once, each value into @p m; line_of[k] is
 * the line of key k (0: absent). */
static int parse_lines(const char *path, FILE *f, struct hx_sim_machine *m, int *line_of)
{
    char buf[512], *name, *value;
    int line = 0, got;
    while ((got = hx_kv_next(f, path, buf, sizeof buf, &line, "nodes = 8 (machines/README.md)",
                             &name, &value)) == 1) {
        const struct key *k = find_key(name);
        if (k == NULL) {
            return unknown_key(path, line, name);
        }
        int idx = (int)(k - keys);
        if (line_of[idx] != 0) {
            return HX_ERR(HX_EINVAL, "%s:%d: %s is given again (first at line %d); keep one "
                          "line", path, line, k->name, line_of[idx]);
        }
        line_of[idx] = line;
        int ret = set_value(path, line, k, value, m);
        if (ret != HX_OK) {
            return ret;
        }
    }
    if (got != 0) {
        return got;
    }
    if (ferror(f)) {
        return HX_ERR(HX_EIO, "reading machine file %s failed: %s", path, strerror(errno));
    }
    return HX_OK;
}

/* Which keys this machine needs, given the numbers read: each present exactly when needed. */
static int check_keys(const char *path, const struct hx_sim_machine *m, const int *line_of)
{
    int gpus = line_of[key_index("gpus_per_node")] != 0 && m->gpus_per_node > 0;
    int nvlink = gpus && line_of[key_index("nvlink_gbytes_per_s")] != 0 &&
                 m->nvlink_gbytes_per_s > 0;
    for (int k = 0; k < NKEYS; k++) {
        const struct key *key = &keys[k];
        int needed = key->need == NEED_ALWAYS || (key->need == NEED_GPU && gpus) ||
                     (key->need == NEED_NVLINK && nvlink);
        int allowed = needed || (key->need == MAY_GPU && gpus) || key->need == MAY_ANY;
        if (needed && line_of[k] == 0) {
            return HX_ERR(HX_EINVAL, "%s: missing key %s (%s); add a line like '%s'", path,
                          key->name, key->what, key->example);
        }
        if (!allowed && line_of[k] != 0) {
            return HX_ERR(HX_EINVAL, "%s:%d: %s does not apply: %s; remove the line%s", path,
                          line_of[k], key->name,
                          key->need == NEED_NVLINK
                              ? "nvlink_gbytes_per_s is 0, so the GPUs of a node talk over "
                                "PCIe (at pcie_latency_us)"
                              : "gpus_per_node is 0 (CPU-only nodes)",
                          key->need == NEED_NVLINK ? ", or give NVLink a bandwidth"
                                                   : ", or give the nodes GPUs");
        }
    }
    return HX_OK;
}

/* The numbers against each other. */
static int check_whole(const char *path, const struct hx_sim_machine *m, const int *line_of)
{
    int nics_line = line_of[key_index("nics_per_node")];
    if (m->gpus_per_node == 0 && m->nics_per_node != 1) {
        return HX_ERR(HX_EINVAL, "%s:%d: nics_per_node = %d on CPU-only nodes: their one rank "
                      "uses one NIC; write 'nics_per_node = 1' and its rate in "
                      "nic_gbits_per_s", path, nics_line, m->nics_per_node);
    }
    if (m->gpus_per_node > 0 && (m->nics_per_node > m->gpus_per_node ||
                                 m->gpus_per_node % m->nics_per_node != 0)) {
        return HX_ERR(HX_EINVAL, "%s:%d: nics_per_node = %d does not divide gpus_per_node = %d "
                      "evenly (every NIC serves the same number of GPUs); use a divisor of %d, "
                      "e.g. 'nics_per_node = 1' for one NIC per node or 'nics_per_node = %d' "
                      "for one per GPU", path, nics_line, m->nics_per_node, m->gpus_per_node,
                      m->gpus_per_node, m->gpus_per_node);
    }
    long ranks = (long)m->nodes * (m->gpus_per_node > 0 ? m->gpus_per_node : 1);
    if (ranks > HX_SIM_MAX_RANKS) {
        return HX_ERR(HX_EINVAL, "%s:%d: %d nodes x %d GPUs are %ld ranks, more than %d (the "
                      "cluster platform lists every ordered pair of ranks); use fewer nodes",
                      path, line_of[key_index("nodes")], m->nodes, m->gpus_per_node, ranks,
                      HX_SIM_MAX_RANKS);
    }
    return HX_OK;
}

int hx_sim_machine_load(const char *path, struct hx_sim_machine *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return HX_ERR(errno == ENOENT ? HX_EINVAL : HX_EIO, "cannot read machine file %s: %s; "
                      "give one of machines/*.machine or a file in its format "
                      "(machines/README.md)", path, strerror(errno));
    }
    int line_of[NKEYS] = { 0 };
    int ret = parse_lines(path, f, m, line_of);
    fclose(f);
    if (ret == HX_OK) {
        ret = check_keys(path, m, line_of);
    }
    if (line_of[key_index("mpi_eager_kib")] == 0) {
        m->mpi_eager_kib = 64;
    }
    if (ret == HX_OK) {
        ret = check_whole(path, m, line_of);
    }
    return ret;
}

int hx_sim_machine_ranks(const struct hx_sim_machine *m)
{
    return m->nodes * (m->gpus_per_node > 0 ? m->gpus_per_node : 1);
}

void hx_sim_machine_rank_host(const struct hx_sim_machine *m, int r, char *buf, int len)
{
    if (m->gpus_per_node > 0) {
        snprintf(buf, (size_t)len, "node%d-gpu%d", r / m->gpus_per_node, r % m->gpus_per_node);
    } else {
        snprintf(buf, (size_t)len, "node%d", r);
    }
}
