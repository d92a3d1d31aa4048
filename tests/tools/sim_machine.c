/* SPDX-License-Identifier: MIT */
/* tests/tools/sim_machine.c: tools/sim_machine.c and tools/sim_platform.c without SimGrid.
 * Each machine shipped in machines/ loads with the numbers its file gives, implies
 * the right world size, and its paths cost what the links add up to (hand-computed here).
 * The files written for it hold the hosts, links and routes of the design (counts, exact
 * link bandwidths and latencies, one route spelled out per kind of path), a hostfile in rank
 * order, and the lines starpu_smpirun cuts (the <platform> line third).  Bad machine files
 * are refused with HX_EINVAL and a message naming file:line, the key and what to write; a
 * bad host name and an unwritable directory are refused too.  Timings are checked under
 * starpu_smpirun by tests/sim/pingpong.c (machines/README.md), not here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/comm.h"
#include "helix/error.h"
#include "tap.h"
#include "tools/sim_machine.h"

static char tmp[256];

/* @p name under the test's temporary directory */
static const char *sub(const char *name)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(99);
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

/* line @p k (1-based) of @p text into @p buf */
static const char *line_at(const char *text, int k, char *buf, size_t len)
{
    for (int i = 1; i < k && text != NULL; i++) {
        text = strchr(text, '\n');
        text = text != NULL ? text + 1 : NULL;
    }
    size_t n = text != NULL ? strcspn(text, "\n") : 0;
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), text != NULL ? text : "");
    return buf;
}

static char *file_in(const char *dir, const char *name)
{
    static char path[8][512];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, sizeof path[0], "%s/%s/%s", tmp, dir, name);
    return p;
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

static void check_path(const struct hx_sim_machine *m, int a, int b, const char *via, double lat,
                       double gbps)
{
    struct hx_sim_path p;
    int ret = hx_sim_machine_path(m, a, b, &p);
    tap_ok(ret == HX_OK && strcmp(p.via, via) == 0 && near(p.latency_us, lat) &&
               near(p.gbytes_per_s, gbps),
           "%s: rank %d -> %d over %s, %.2f us, %.4g GB/s (got %s, %.4f us, %.6g GB/s)", m->name,
           a, b, via, lat, gbps, ret == HX_OK ? p.via : "error", p.latency_us, p.gbytes_per_s);
}

static void load_shipped(const char *name, struct hx_sim_machine *m)
{
    char path[512];
    const char *src = getenv("HX_SRCDIR"); /* tests/Makefile.am sets it */
    if (src == NULL) {
        fprintf(stderr, "HX_SRCDIR is not set: run through make check\n");
        exit(99);
    }
    snprintf(path, sizeof path, "%s/machines/%s.machine", src, name);
    int ret = hx_sim_machine_load(path, m);
    tap_ok(ret == HX_OK, "%s loads", path);
    if (ret != HX_OK) {
        exit(tap_exit());
    }
}

static void test_h100(void)
{
    struct hx_sim_machine m;
    load_shipped("h100-sxm", &m);
    tap_ok(hx_sim_machine_ranks(&m) == 64 && m.nodes == 8 && m.gpus_per_node == 8 &&
               m.nics_per_node == 8 && m.topology == HX_SIM_RAIL && m.cores_per_rank == 12 &&
               strcmp(m.gpu_model, "H100-SXM") == 0 && m.nvlink_gbytes_per_s == 450,
           "h100-sxm: 8 x 8 H100-SXM = 64 ranks, 8 NICs a node on rails, NVLink 450 GB/s");
    check_path(&m, 0, 1, "nvlink", 3.4, 450);
    check_path(&m, 0, 8, "pcie+nic", 5.7 + 8.3, 50);
    check_path(&m, 0, 9, "nvlink+pcie+nic", 3.4 + 5.7 + 8.3, 50);
    check_path(&m, 63, 7, "pcie+nic", 14.0, 50);

    tap_ok(hx_sim_machine_write(&m, sub("h100"), NULL) ==
               HX_OK, "h100-sxm: files written");
    char *node = slurp(file_in("h100", "bus/h100-sxm.platform.v4.xml"));
    char *cluster = slurp(file_in("h100", "cluster.xml"));
    char *hosts = slurp(file_in("h100", "hostfile"));
    char *bw = slurp(file_in("h100", "bus/h100-sxm.bandwidth"));
    char *lat = slurp(file_in("h100", "bus/h100-sxm.latency"));
    char line[256];
    tap_ok(node != NULL && count(node, "<host id=\"CPU") == 12 &&
               strstr(node, "<host id=\"CPU11\"") != NULL && count(node, "<host id=\"CUDA") == 1 &&
               strstr(node, "<prop id=\"memsize\" value=\"85899345920\"/>") != NULL &&
               strstr(node, "<host id=\"RAM\"") && strstr(node, "<host id=\"MAIN\""),
           "node platform: MAIN, RAM, CPU0..CPU11, CUDA0 with memsize 80 GiB");
    tap_ok(node != NULL &&
               strstr(node, "<link id=\"RAM-CUDA0\" bandwidth=\"63000000000Bps\" "
                            "latency=\"5.7us\"/>") != NULL &&
               strstr(node, "<link id=\"CUDA0-RAM\" bandwidth=\"63000000000Bps\" "
                            "latency=\"5.7us\"/>") != NULL &&
               count(node, "<route ") == 2,
           "node platform: PCIe each way at 63 GB/s, 5.7 us; a route per ordered pair");
    tap_ok(node != NULL && strcmp(line_at(node, 3, line, sizeof line),
                                  "<platform version=\"4\">") == 0 &&
               strstr(node, "<AS id=\"AS0\"") != NULL,
           "node platform: <platform version=\"4\"> on line 3 and an <AS> (starpu_smpirun's "
           "XSLT and tail)");
    tap_ok(bw != NULL && strcmp(bw, "# to 0\t\tto 1\n0.000000\t63000.000000\n"
                                    "63000.000000\t0.000000\n") == 0,
           "bus bandwidth: RAM <-> CUDA0 63000 MB/s");
    tap_ok(lat != NULL && strcmp(lat, "# to 0\t\tto 1\n0.000000\t5.700000\n5.700000\t0.000000\n") ==
               0, "bus latency: 5.7 us");
    tap_ok(cluster != NULL && count(cluster, "<host ") == 64 && count(cluster, "<route ") == 64 * 63,
           "cluster: 64 hosts, 4032 routes (every ordered pair)");
    /* per node: 8 GPUs x (PCIe, NVLink) x 2 directions + 8 NICs x 2 */
    tap_ok(cluster != NULL && count(cluster, "<link ") == 8 * (8 * 2 * 2 + 8 * 2) &&
               strstr(cluster, "<link id=\"node7-gpu7-nvlink-down\" bandwidth=\"450000000000Bps\""
                               " latency=\"1.7us\"/>") != NULL &&
               strstr(cluster, "<link id=\"node3-nic5-up\" bandwidth=\"50000000000Bps\" "
                               "latency=\"4.15us\"/>") != NULL &&
               strstr(cluster, "<link id=\"node0-gpu2-pcie-up\" bandwidth=\"63000000000Bps\" "
                               "latency=\"2.85us\"/>") != NULL,
           "cluster: 384 one-way links; NVLink 450 GB/s, NIC 50 GB/s, PCIe 63 GB/s, half "
           "latencies");
    tap_ok(cluster != NULL &&
               strstr(cluster, "<route src=\"node0-gpu0\" dst=\"node1-gpu1\" symmetrical=\"NO\">"
                               "<link_ctn id=\"node0-gpu0-nvlink-up\"/><link_ctn id=\"node0-gpu1-"
                               "nvlink-down\"/><link_ctn id=\"node0-gpu1-pcie-up\"/><link_ctn id="
                               "\"node0-nic1-up\"/><link_ctn id=\"node1-nic1-down\"/><link_ctn "
                               "id=\"node1-gpu1-pcie-down\"/></route>") != NULL,
           "cluster: across rails, NVLink to the peer on the destination's rail, then its NIC");
    tap_ok(cluster != NULL && strstr(cluster, "<config") == NULL &&
               strcmp(line_at(cluster, 3, line, sizeof line), "<platform version=\"4.1\">") == 0 &&
               count(cluster, "<platform") == 1 && strstr(cluster, "<zone id=\"helix-cluster\" "
                                                                   "routing=\"Full\">") != NULL,
           "cluster: one zone, <platform> alone on line 3, no <config> (starpu_smpirun)");
    int order = hosts != NULL && count(hosts, "\n") == 64;
    for (int r = 0; order && r < 64; r++) {
        char want[32];
        snprintf(want, sizeof want, "node%d-gpu%d", r / 8, r % 8);
        order = strcmp(line_at(hosts, r + 1, line, sizeof line), want) == 0;
    }
    tap_ok(order, "hostfile: 64 rank hosts, rank r = node r/8, GPU r%%8");
    char *flags = slurp(file_in("h100", "smpirun.flags"));
    tap_ok(flags != NULL && strstr(flags, "--cfg=smpi/bw-factor:0:1\n") != NULL &&
               strstr(flags, "--cfg=smpi/lat-factor:0:1\n") != NULL &&
               strstr(flags, "--cfg=network/TCP-gamma:-1\n") != NULL &&
               strstr(flags, "--cfg=smpi/send-is-detached-thresh:65536\n") != NULL,
           "smpirun.flags: SMPI's factors at 1, no TCP window bound, eager up to 64 KiB "
           "(no mpi_eager_kib: Open MPI's TCP default)");
    free(node), free(cluster), free(hosts), free(bw), free(lat), free(flags);
}

static void test_a40(void)
{
    struct hx_sim_machine m;
    load_shipped("a40-ib100", &m);
    tap_ok(hx_sim_machine_ranks(&m) == 64 && m.nvlink_gbytes_per_s == 0 &&
               m.nics_per_node == 1 && m.topology == HX_SIM_FAT_TREE && m.gpu_memory_gib == 48,
           "a40-ib100: 64 ranks, no NVLink, one 100 Gb/s NIC a node, fat-tree, 48 GiB");
    check_path(&m, 0, 1, "pcie", 5.7, 32);
    check_path(&m, 0, 15, "pcie+nic", 14.0, 12.5);
    tap_ok(hx_sim_machine_write(&m, sub("a40"), "a40host") ==
               HX_OK, "a40-ib100: files written for STARPU_HOSTNAME a40host");
    char *cluster = slurp(file_in("a40", "cluster.xml"));
    char *node = slurp(file_in("a40", "bus/a40host.platform.v4.xml"));
    tap_ok(cluster != NULL && count(cluster, "<route ") == 64 * 63 &&
               count(cluster, "<link ") == 8 * (8 * 2 + 2) && strstr(cluster, "nvlink") == NULL &&
               strstr(cluster, "<route src=\"node0-gpu3\" dst=\"node2-gpu6\" symmetrical=\"NO\">"
                               "<link_ctn id=\"node0-gpu3-pcie-up\"/><link_ctn id=\"node0-nic0-up"
                               "\"/><link_ctn id=\"node2-nic0-down\"/><link_ctn id=\"node2-gpu6-"
                               "pcie-down\"/></route>") != NULL &&
               strstr(cluster, "<route src=\"node1-gpu0\" dst=\"node1-gpu5\" symmetrical=\"NO\">"
                               "<link_ctn id=\"node1-gpu0-pcie-up\"/><link_ctn id=\"node1-gpu5-"
                               "pcie-down\"/></route>") != NULL,
           "a40-ib100 cluster: 144 links, no NVLink; GPUs meet over PCIe, all share NIC 0");
    tap_ok(node != NULL && count(node, "<host id=\"CPU") == 6 &&
               strstr(node, "value=\"51539607552\"") != NULL,
           "a40-ib100 node: 6 CPUs, CUDA0 with 48 GiB");
    free(cluster), free(node);
}

static void test_bed(void)
{
    struct hx_sim_machine m;
    load_shipped("this-bed", &m);
    tap_ok(hx_sim_machine_ranks(&m) == 2 && m.gpus_per_node == 0 && m.cores_per_rank == 1,
           "this-bed: 2 ranks of one core, no GPU");
    check_path(&m, 1, 0, "nic", 10.3, 0.1195);
    tap_ok(hx_sim_machine_write(&m, sub("bed/deeper"), NULL) ==
               HX_OK, "this-bed: files written, the directory and its parent created");
    char *node = slurp(file_in("bed/deeper", "bus/this-bed.platform.v4.xml"));
    char *cluster = slurp(file_in("bed/deeper", "cluster.xml"));
    char *bw = slurp(file_in("bed/deeper", "bus/this-bed.bandwidth"));
    char *hosts = slurp(file_in("bed/deeper", "hostfile"));
    char *flags = slurp(file_in("bed/deeper", "smpirun.flags")), want[80];
    snprintf(want, sizeof want, "--cfg=smpi/send-is-detached-thresh:%d\n", HX_MPI_EAGER_LIMIT);
    tap_ok(m.mpi_eager_kib * 1024 == HX_MPI_EAGER_LIMIT && flags != NULL &&
               strstr(flags, want) != NULL,
           "this-bed: eager up to the limit helix gives Open MPI (HX_MPI_EAGER_LIMIT)");
    tap_ok(node != NULL && count(node, "<host ") == 3 && strstr(node, "CUDA") == NULL &&
               count(node, "<route") == 0 && bw != NULL && strcmp(bw, "# to 0\n0.000000\n") == 0,
           "this-bed node: MAIN, RAM, CPU0, no GPU, one memory node");
    tap_ok(cluster != NULL && count(cluster, "<link ") == 4 && count(cluster, "<route ") == 2 &&
               strstr(cluster, "<link id=\"node1-nic0-down\" bandwidth=\"119500000Bps\" "
                               "latency=\"5.15us\"/>") != NULL &&
               hosts != NULL && strcmp(hosts, "node0\nnode1\n") == 0,
           "this-bed cluster: a NIC each way per node at 119.5 MB/s; hostfile node0, node1");
    free(node), free(cluster), free(bw), free(hosts), free(flags);
}

/* A machine file of @p text must be refused, with every one of @p want in the message. */
static void refused(const char *what, const char *text, const char *const *want)
{
    char path[300], errpath[300];
    snprintf(path, sizeof path, "%s/bad.machine", tmp);
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmp);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        exit(99);
    }
    fflush(stderr);
    int saved = dup(2);
    if (saved < 0 || freopen(errpath, "w", stderr) == NULL) {
        exit(99);
    }
    struct hx_sim_machine m;
    int ret = hx_sim_machine_load(path, &m);
    fflush(stderr);
    if (dup2(saved, 2) < 0) {
        exit(99);
    }
    close(saved);
    hx_run_status_reset();
    char *msg = slurp(errpath);
    int all = msg != NULL && count(msg, "helix: error:") == 1;
    for (const char *const *w = want; all && *w != NULL; w++) {
        all = strstr(msg, *w) != NULL;
    }
    tap_ok(ret == HX_EINVAL && all, "refused: %s", what);
    if (!all) {
        tap_diag("message: %s", msg != NULL ? msg : "(none)");
    }
    free(msg);
}

#define GOOD_TOP "name = t\nnodes = 2\ngpus_per_node = 8\ncores_per_rank = 4\n"
#define GOOD_GPU "gpu_memory_gib = 80\npcie_gbytes_per_s = 63\npcie_latency_us = 5.7\n"
#define GOOD_NET "nics_per_node = 8\nnic_gbits_per_s = 400\nnic_latency_us = 8.3\n"
#define NVL "nvlink_gbytes_per_s = 450\nnvlink_latency_us = 3.4\n"

static void test_refusals(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/bad.machine", tmp);
    char at[8][340];
    for (int i = 0; i < 8; i++) {
        snprintf(at[i], sizeof at[i], "%s:%d:", path, i + 1);
    }
    refused("an unknown key, with the nearest one",
            GOOD_TOP GOOD_GPU "nvlink_gbps = 450\n",
            (const char *const[]){ at[7], "unknown key 'nvlink_gbps'",
                                   "did you mean nvlink_gbytes_per_s", NULL });
    refused("a missing key", GOOD_TOP GOOD_GPU NVL "nics_per_node = 8\nnic_gbits_per_s = 400\n"
            "topology = rail\n",
            (const char *const[]){ "missing key nic_latency_us",
                                   "add a line like 'nic_latency_us = ", NULL });
    refused("a number with its unit glued on",
            "name = t\nnodes = 2\ngpus_per_node = 8\npcie_gbytes_per_s = 32GB/s\n",
            (const char *const[]){ at[3], "pcie_gbytes_per_s = '32GB/s' is not a number; give the number alone",
                                   "e.g. 'pcie_gbytes_per_s = 32'", NULL });
    refused("zero nodes", "name = t\nnodes = 0\n",
            (const char *const[]){ at[1], "nodes = 0 is out of range", "'nodes = 8'", NULL });
    refused("a negative latency", "name = t\nnic_latency_us = -1\n",
            (const char *const[]){ at[1], "nic_latency_us = -1 is out of range: it must be above 0",
                                   NULL });
    refused("a zero bandwidth", "nic_gbits_per_s = 0\n",
            (const char *const[]){ at[0], "nic_gbits_per_s = 0 is out of range", NULL });
    refused("a fraction of a node", "name = t\nnodes = 2.5\n",
            (const char *const[]){ at[1], "is not a whole number", NULL });
    refused("a GPU key on CPU-only nodes",
            "name = t\nnodes = 2\ngpus_per_node = 0\ncores_per_rank = 1\nnics_per_node = 1\n"
            "nic_gbits_per_s = 1\nnic_latency_us = 10\ngpu_memory_gib = 48\ntopology = rail\n",
            (const char *const[]){ at[7], "gpu_memory_gib does not apply",
                                   "gpus_per_node is 0", NULL });
    refused("an NVLink latency without NVLink",
            GOOD_TOP GOOD_GPU GOOD_NET "nvlink_gbytes_per_s = 0\nnvlink_latency_us = 3\n"
            "topology = fat-tree\n",
            (const char *const[]){ "nvlink_latency_us does not apply", "talk over PCIe",
                                   NULL });
    refused("NICs that do not divide the GPUs",
            GOOD_TOP GOOD_GPU NVL "nics_per_node = 3\nnic_gbits_per_s = 400\n"
            "nic_latency_us = 8\ntopology = rail\n",
            (const char *const[]){ "nics_per_node = 3 does not divide gpus_per_node = 8",
                                   NULL });
    refused("a key given twice", "name = t\nnodes = 2\nnodes = 3\n",
            (const char *const[]){ at[2], "nodes is given again (first at line 2)", NULL });
    refused("an unknown topology", "topology = torus\n",
            (const char *const[]){ at[0], "'topology = fat-tree'", "'topology = rail'", NULL });
    refused("a line without '='", "# comment\n\nnodes 8\n",
            (const char *const[]){ at[2], "is not a 'key = value' line", NULL });
    refused("more ranks than the platform can list",
            "name = t\nnodes = 200\ngpus_per_node = 8\ncores_per_rank = 1\n" GOOD_GPU
            GOOD_NET NVL "topology = rail\n",
            (const char *const[]){ "1600 ranks, more than 1024", NULL });
    refused("an eager limit of no bytes", "mpi_eager_kib = 0\n",
            (const char *const[]){ at[0], "mpi_eager_kib = 0 is out of range", NULL });
    refused("a name that cannot name files", "name = a/b\n",
            (const char *const[]){ at[0], "name = 'a/b'", NULL });

    struct hx_sim_machine m;
    int ret = hx_sim_machine_load("/nonexistent/x.machine", &m);
    hx_run_status_reset();
    tap_ok(ret == HX_EINVAL, "refused: a machine file that does not exist");
    /* a well-formed file, written to a bad host name and into a file */
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(GOOD_TOP GOOD_GPU GOOD_NET NVL "topology = rail\n", f) < 0 ||
        fclose(f) != 0 || hx_sim_machine_load(path, &m) != HX_OK) {
        tap_ok(0, "a complete machine file written here loads");
        return;
    }
    ret = hx_sim_machine_write(&m, tmp, "bad/host");
    int ret2 = hx_sim_machine_write(&m, path, NULL); /* a file, not a directory */
    struct hx_sim_path p;
    int ret3 = hx_sim_machine_path(&m, 0, 0, &p);
    hx_run_status_reset();
    tap_ok(ret == HX_EINVAL && ret2 == HX_EIO && ret3 == HX_EINVAL,
           "refused: host 'bad/host', a file as the directory, a path from a rank to itself");
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "%s/hx-sim-machine.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                            : "/tmp");
    if (mkdtemp(tmp) == NULL) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 99;
    }
    test_h100();
    test_a40();
    test_bed();
    test_refusals();
    printf("1..%d\n", tap_count_);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", tmp);
    }
    return tap_exit();
}
