/* SPDX-License-Identifier: MIT */
/* tools/sim_platform.c: the paths between a machine's ranks and the files that simulate it
 * (tools/sim_machine.h), in the formats that StarPU 1.3's SimGrid mode and starpu_smpirun
 * read.
 *
 * A rank's node platform (bus/HOST.platform.v4.xml) is what StarPU's own bus calibration
 * writes (src/core/perfmodel/perfmodel_bus.c, write_bus_platform_file_content): hosts MAIN,
 * CPU0.., CUDA0 with its memsize, RAM, a link each way between RAM and CUDA0 and a route
 * for each ordered pair; an <AS> of version 4, because starpu_smpirun renames the hosts of
 * `platform/AS` into StarPU-MPI<rank>-NAME with its XSLT (starpu_smpi.xslt) and cuts the
 * first three lines and the last of its output.  SimGrid mode reads the bus files .latency,
 * .bandwidth and .platform.v4.xml only (.config and .affinity are for real runs).
 *
 * The cluster platform is one <zone> with Full routing: one host per rank and a route for
 * each ordered pair, made of one-way links (so a direction's traffic never slows the other):
 *   same node:        GPU a's NVLink up, GPU b's NVLink down (no NVLink: their PCIe links);
 *   other node:       a's PCIe up, a NIC up, b's NIC down, b's PCIe down (GPUDirect RDMA);
 *   rail, other rail: NVLink a -> b's peer on this node, then the peer's PCIe and NIC (a
 *                     PCIe-only node reaches the other rail's NIC through the host);
 *   CPU-only nodes:   the node's NIC up, the other's NIC down.
 * Switches are not links: a fat-tree is one non-blocking switch, a rail one per NIC index,
 * so the bisection is full (every NIC at line rate at once) and only NICs, PCIe and NVLink
 * links are shared.  Each link carries half the latency of its kind, so a path between
 * GPUs costs nvlink_latency_us, pcie_latency_us or pcie_latency_us + nic_latency_us (plus
 * nvlink_latency_us across rails).  Test: tests/tools/sim_machine.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/error.h"
#include "tools/sim_machine.h"

const char *const hx_sim_smpi_flags[] = {
    "--cfg=smpi/bw-factor:0:1",     /* "0:1": factor 1 from size 0 on (a bare "1" misparses) */
    "--cfg=smpi/lat-factor:0:1",
    "--cfg=network/TCP-gamma:-1",   /* no window bound (0 would bound every flow to 0) */
    "--cfg=network/crosstraffic:0", /* no ACK flow on the reverse links */
    "--cfg=network/weight-S:0",     /* flows share a link equally, whatever their RTT */
    /* SMPI's shared (folded) memory, STARPU_MALLOC_SIMULATION_FOLDED under SMPI, maps one
     * file block per block of an allocation: with the default 1 MiB blocks, 64 ranks of a
     * 10B model's layers ran past Linux's vm.max_map_count (65530) and SMPI aborted, when
     * helix folded its tensors; 64 MiB blocks take 64x fewer maps.  helix no longer folds
     * (runtime/tensor.c); a program that does (tests/sim/pingpong.c) still gains */
    "--cfg=smpi/shared-malloc-blocksize:67108864",
    NULL,
};

void hx_sim_machine_eager_flag(const struct hx_sim_machine *m, char *buf, int len)
{
    snprintf(buf, (size_t)len, "--cfg=smpi/send-is-detached-thresh:%ld",
             (long)m->mpi_eager_kib * 1024);
}

enum hop_kind { HOP_PCIE, HOP_NVLINK, HOP_NIC };

/* One one-way link: of GPU `index` (PCIe, NVLink) or NIC `index` of `node`; up = away from
 * the GPU (or from the node, for a NIC). */
struct hop {
    enum hop_kind kind;
    int node, index, up;
};

#define MAX_HOPS 6

static struct hop hop(enum hop_kind kind, int node, int index, int up)
{
    struct hop h = { kind, node, index, up };
    return h;
}

static int nic_of(const struct hx_sim_machine *m, int gpu)
{
    return gpu / (m->gpus_per_node / m->nics_per_node);
}

/* The links from rank a to rank b (a != b), in order; their number. */
static int route(const struct hx_sim_machine *m, int a, int b, struct hop *h)
{
    int n = 0;
    if (m->gpus_per_node == 0) {
        h[n++] = hop(HOP_NIC, a, 0, 1);
        h[n++] = hop(HOP_NIC, b, 0, 0);
        return n;
    }
    int g = m->gpus_per_node, na = a / g, ga = a % g, nb = b / g, gb = b % g;
    enum hop_kind intra = m->nvlink_gbytes_per_s > 0 ? HOP_NVLINK : HOP_PCIE;
    if (na == nb) {
        h[n++] = hop(intra, na, ga, 1);
        h[n++] = hop(intra, na, gb, 0);
        return n;
    }
    int rail = m->topology == HX_SIM_RAIL;
    int out_nic = rail ? nic_of(m, gb) : nic_of(m, ga), relay = ga;
    if (rail && out_nic != nic_of(m, ga) && intra == HOP_NVLINK) {
        h[n++] = hop(HOP_NVLINK, na, ga, 1); /* to GPU gb of this node, on b's rail */
        h[n++] = hop(HOP_NVLINK, na, gb, 0);
        relay = gb;
    }
    h[n++] = hop(HOP_PCIE, na, relay, 1);
    h[n++] = hop(HOP_NIC, na, out_nic, 1);
    h[n++] = hop(HOP_NIC, nb, nic_of(m, gb), 0);
    h[n++] = hop(HOP_PCIE, nb, gb, 0);
    return n;
}

static void link_name(const struct hop *h, char *buf, size_t len)
{
    static const char *const kind[] = { "pcie", "nvlink", "nic" };
    if (h->kind == HOP_NIC) {
        snprintf(buf, len, "node%d-nic%d-%s", h->node, h->index, h->up ? "up" : "down");
    } else {
        snprintf(buf, len, "node%d-gpu%d-%s-%s", h->node, h->index, kind[h->kind],
                 h->up ? "up" : "down");
    }
}

/* A link's bandwidth (bytes/s) and latency (us): half its kind's, as every path crosses two. */
static void link_props(const struct hx_sim_machine *m, enum hop_kind kind, double *bytes_per_s,
                       double *latency_us)
{
    if (kind == HOP_PCIE) {
        *bytes_per_s = m->pcie_gbytes_per_s * 1e9, *latency_us = m->pcie_latency_us / 2;
    } else if (kind == HOP_NVLINK) {
        *bytes_per_s = m->nvlink_gbytes_per_s * 1e9, *latency_us = m->nvlink_latency_us / 2;
    } else {
        *bytes_per_s = m->nic_gbits_per_s * 1e9 / 8, *latency_us = m->nic_latency_us / 2;
    }
}

int hx_sim_machine_path(const struct hx_sim_machine *m, int a, int b, struct hx_sim_path *p)
{
    int ranks = hx_sim_machine_ranks(m);
    if (a < 0 || b < 0 || a >= ranks || b >= ranks || a == b) {
        return HX_ERR(HX_EINVAL, "no path from rank %d to rank %d on %s (%d ranks): give two "
                      "different ranks in 0..%d", a, b, m->name, ranks, ranks - 1);
    }
    struct hop h[MAX_HOPS];
    int n = route(m, a, b, h), kinds = 0;
    p->latency_us = 0;
    p->gbytes_per_s = INFINITY;
    p->hops = n;
    for (int i = 0; i < n; i++) {
        double bw, lat;
        link_props(m, h[i].kind, &bw, &lat);
        p->latency_us += lat;
        p->gbytes_per_s = fmin(p->gbytes_per_s, bw / 1e9);
        kinds |= 1 << h[i].kind;
    }
    /* bit 0 PCIe, bit 1 NVLink, bit 2 NIC */
    static const char *const via[8] = { "", "pcie", "nvlink", "nvlink+pcie", "nic", "pcie+nic",
                                        "nvlink+nic", "nvlink+pcie+nic" };
    p->via = via[kinds];
    return HX_OK;
}

/* ---- files ---------------------------------------------------------------------------- */

static FILE *open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        HX_ERR(HX_EIO, "cannot write %s: %s; give --out a directory you can write to", path,
               strerror(errno));
    }
    return f;
}

static int close_out(FILE *f, const char *path)
{
    errno = 0;
    int err = fflush(f) != 0 ? (errno != 0 ? errno : EIO) : ferror(f) ? EIO : 0;
    errno = 0;
    if (fclose(f) != 0 && err == 0) {
        err = errno != 0 ? errno : EIO;
    }
    if (err != 0) {
        return HX_ERR(HX_EIO, "writing %s failed: %s (a full disk?)", path, strerror(err));
    }
    return HX_OK;
}

/* mkdir -p */
static int make_dir(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *c = buf + 1;; c++) {
        if (*c != '/' && *c != '\0') {
            continue;
        }
        char keep = *c;
        *c = '\0';
        struct stat st;
        if (mkdir(buf, 0777) != 0 && (errno != EEXIST || stat(buf, &st) != 0 ||
                                      !S_ISDIR(st.st_mode))) {
            return HX_ERR(HX_EIO, "cannot create directory %s: %s; give --out a directory you "
                          "can write to", buf, errno == EEXIST ? "a file has that name"
                                                               : strerror(errno));
        }
        if (keep == '\0') {
            return HX_OK;
        }
        *c = keep;
    }
}

static void put_link(FILE *f, const struct hx_sim_machine *m, const struct hop *h)
{
    char name[64];
    double bw, lat;
    link_name(h, name, sizeof name);
    link_props(m, h->kind, &bw, &lat);
    fprintf(f, "  <link id=\"%s\" bandwidth=\"%.12gBps\" latency=\"%.12gus\"/>\n", name, bw,
            lat);
}

/* starpu_smpirun keeps this file from its third line on, less the lines naming <platform,
 * and inserts it into its root zone, whose routing is None: one zone holds every rank. */
static void write_cluster(FILE *f, const struct hx_sim_machine *m)
{
    int ranks = hx_sim_machine_ranks(m), g = m->gpus_per_node;
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "<!-- %s: %d nodes x %d GPUs%s%s, %d ranks, %s; written by helix sim-machine\n"
               "     (tools/sim_platform.c).  Links are one-way; switches are non-blocking. -->\n"
               " <zone id=\"helix-cluster\" routing=\"Full\">\n",
               m->name, m->nodes, g, m->gpu_model[0] ? " " : "", m->gpu_model, ranks,
               m->topology == HX_SIM_RAIL ? "rail" : "fat-tree");
    for (int r = 0; r < ranks; r++) {
        char host[32];
        hx_sim_machine_rank_host(m, r, host, sizeof host);
        fprintf(f, "  <host id=\"%s\" speed=\"1Gf\"/>\n", host);
    }
    for (int node = 0; node < m->nodes; node++) {
        for (int up = 1; up >= 0; up--) {
            for (int gpu = 0; gpu < g; gpu++) {
                put_link(f, m, &(struct hop){ HOP_PCIE, node, gpu, up });
                if (m->nvlink_gbytes_per_s > 0) {
                    put_link(f, m, &(struct hop){ HOP_NVLINK, node, gpu, up });
                }
            }
            for (int nic = 0; nic < (g > 0 ? m->nics_per_node : 1); nic++) {
                put_link(f, m, &(struct hop){ HOP_NIC, node, nic, up });
            }
        }
    }
    for (int a = 0; a < ranks; a++) {
        char src[32], dst[32], name[64];
        hx_sim_machine_rank_host(m, a, src, sizeof src);
        for (int b = 0; b < ranks; b++) {
            if (b == a) {
                continue;
            }
            struct hop h[MAX_HOPS];
            int n = route(m, a, b, h);
            hx_sim_machine_rank_host(m, b, dst, sizeof dst);
            fprintf(f, "  <route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">", src, dst);
            for (int i = 0; i < n; i++) {
                link_name(&h[i], name, sizeof name);
                fprintf(f, "<link_ctn id=\"%s\"/>", name);
            }
            fprintf(f, "</route>\n");
        }
    }
    fprintf(f, " </zone>\n</platform>\n");
}

/* The <config> is StarPU's own: a run without MPI loads this file alone, and SimGrid's
 * default model would scale these links (starpu_smpirun drops its props). */
static void write_node(FILE *f, const struct hx_sim_machine *m)
{
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4\">\n"
               " <config id=\"General\">\n"
               "   <prop id=\"network/TCP-gamma\" value=\"-1\"></prop>\n"
               "   <prop id=\"network/latency-factor\" value=\"1\"></prop>\n"
               "   <prop id=\"network/bandwidth-factor\" value=\"1\"></prop>\n"
               "   <prop id=\"network/crosstraffic\" value=\"0\"></prop>\n"
               "   <prop id=\"network/weight-S\" value=\"0.0\"></prop>\n"
               " </config>\n"
               " <AS id=\"AS0\" routing=\"Full\">\n"
               "  <!-- one rank of %s (helix sim-machine, tools/sim_platform.c) -->\n"
               "  <host id=\"MAIN\" speed=\"1f\"/>\n", m->name);
    for (int c = 0; c < m->cores_per_rank; c++) {
        fprintf(f, "  <host id=\"CPU%d\" speed=\"2000000000f\"/>\n", c);
    }
    if (m->gpus_per_node > 0) {
        double bw = m->pcie_gbytes_per_s * 1e9;
        fprintf(f, "  <host id=\"CUDA0\" speed=\"2000000000f\">\n"
                   "   <prop id=\"memsize\" value=\"%.0f\"/>\n"
                   "  </host>\n", floor(m->gpu_memory_gib * 1073741824.0));
        fprintf(f, "  <host id=\"RAM\" speed=\"1f\"/>\n");
        fprintf(f, "  <link id=\"RAM-CUDA0\" bandwidth=\"%.12gBps\" latency=\"%.12gus\"/>\n"
                   "  <link id=\"CUDA0-RAM\" bandwidth=\"%.12gBps\" latency=\"%.12gus\"/>\n",
                bw, m->pcie_latency_us, bw, m->pcie_latency_us);
        fprintf(f, "  <route src=\"RAM\" dst=\"CUDA0\" symmetrical=\"NO\">"
                   "<link_ctn id=\"RAM-CUDA0\"/></route>\n"
                   "  <route src=\"CUDA0\" dst=\"RAM\" symmetrical=\"NO\">"
                   "<link_ctn id=\"CUDA0-RAM\"/></route>\n");
    } else {
        fprintf(f, "  <host id=\"RAM\" speed=\"1f\"/>\n");
    }
    fprintf(f, " </AS>\n</platform>\n");
}

/* Memory nodes 0 (RAM) and 1 (CUDA0): one row per source, tab-separated, as StarPU's
 * load_bus_*_file_content reads them (columns not given are NaN: no such node). */
static void write_matrix(FILE *f, const struct hx_sim_machine *m, double value)
{
    if (m->gpus_per_node > 0) {
        fprintf(f, "# to 0\t\tto 1\n%f\t%f\n%f\t%f\n", 0.0, value, value, 0.0);
    } else {
        fprintf(f, "# to 0\n%f\n", 0.0);
    }
}

static int valid_host(const char *host)
{
    size_t n = strlen(host);
    if (n == 0 || n > 64 || host[0] == '.' || host[0] == '-') {
        return 0;
    }
    for (const char *c = host; *c != '\0'; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-')) {
            return 0;
        }
    }
    return 1;
}

enum out_file { OUT_NODE, OUT_BANDWIDTH, OUT_LATENCY, OUT_CLUSTER, OUT_HOSTS, OUT_FLAGS, NOUT };

int hx_sim_machine_write(const struct hx_sim_machine *m, const char *dir, const char *host)
{
    host = host != NULL ? host : m->name;
    if (!valid_host(host)) {
        return HX_ERR(HX_EINVAL, "host name '%s' cannot name StarPU's bus files: use 1 to 64 "
                      "letters, digits, '.', '_' or '-', not starting with '.' or '-'", host);
    }
    char bus[4096], path[NOUT][4200];
    if (snprintf(bus, sizeof bus, "%s/bus", dir) >= (int)sizeof bus) {
        return HX_ERR(HX_EINVAL, "output directory name is %zu characters long; give a shorter "
                      "one", strlen(dir));
    }
    static const char *const suffix[NOUT] = { ".platform.v4.xml", ".bandwidth", ".latency" };
    for (int i = OUT_NODE; i <= OUT_LATENCY; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s%s", bus, host, suffix[i]);
    }
    snprintf(path[OUT_CLUSTER], sizeof path[0], "%s/cluster.xml", dir);
    snprintf(path[OUT_HOSTS], sizeof path[0], "%s/hostfile", dir);
    snprintf(path[OUT_FLAGS], sizeof path[0], "%s/smpirun.flags", dir);
    int ret = make_dir(dir);
    ret = ret == HX_OK ? make_dir(bus) : ret;
    for (int i = 0; i < NOUT && ret == HX_OK; i++) {
        FILE *f = open_out(path[i]);
        if (f == NULL) {
            return HX_EIO;
        }
        switch ((enum out_file)i) {
        case OUT_NODE: write_node(f, m); break;
        case OUT_BANDWIDTH: write_matrix(f, m, m->pcie_gbytes_per_s * 1e3); break; /* MB/s */
        case OUT_LATENCY: write_matrix(f, m, m->pcie_latency_us); break;
        case OUT_CLUSTER: write_cluster(f, m); break;
        case OUT_HOSTS:
            for (int r = 0; r < hx_sim_machine_ranks(m); r++) {
                char name[32];
                hx_sim_machine_rank_host(m, r, name, sizeof name);
                fprintf(f, "%s\n", name);
            }
            break;
        case OUT_FLAGS: {
            char eager[64];
            for (const char *const *flag = hx_sim_smpi_flags; *flag != NULL; flag++) {
                fprintf(f, "%s\n", *flag);
            }
            hx_sim_machine_eager_flag(m, eager, sizeof eager);
            fprintf(f, "%s\n", eager);
            break;
        }
        case NOUT: break;
        }
        ret = close_out(f, path[i]);
    }
    return ret;
}
