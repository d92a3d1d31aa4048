/* SPDX-License-Identifier: MIT */
/* tools/sim_machine.h: a simulated cluster described by a few numbers (machines/README.md has
 * the file format), and the files StarPU's SimGrid mode and starpu_smpirun read to simulate
 * it.  One MPI rank per GPU (Megatron's convention), one per node on CPU-only nodes; rank r
 * is GPU r % gpus_per_node of node r / gpus_per_node.  Every rank is its own StarPU with the
 * same node platform: cores_per_rank CPUs and, on GPU nodes, one CUDA device behind PCIe.
 * The cluster platform joins the ranks: NVLink (or PCIe through the host) inside a node,
 * NICs between nodes, on one switch (fat-tree) or one switch per NIC index (rail).
 * Units: GB = 1e9 bytes, Gbit = 1e9 bits, GiB = 2^30 bytes, latencies in microseconds.
 * Test: tests/tools/sim_machine.c. */
#ifndef HX_SIM_MACHINE_H
#define HX_SIM_MACHINE_H

/* Full routing lists every ordered pair of ranks: 1024 ranks are 1,047,552 routes (about
 * 200 MB of XML), the most a simulation here is expected to parse. */
#define HX_SIM_MAX_RANKS 1024

enum hx_sim_topology {
    HX_SIM_FAT_TREE, /* every NIC on one non-blocking switch */
    HX_SIM_RAIL,     /* NIC i of every node on rail switch i; other rails through the node */
};

struct hx_sim_machine {
    char name[64];             /* [A-Za-z0-9._-] */
    char gpu_model[32];        /* for perf models ("A40", "H100-SXM"); "" when not given */
    int nodes;
    int gpus_per_node;         /* 0: CPU-only nodes */
    int cores_per_rank;        /* CPU workers of each rank (the CPUs its platform declares) */
    int nics_per_node;         /* GPU g uses NIC g / (gpus_per_node / nics_per_node) */
    double gpu_memory_gib;     /* per GPU */
    double pcie_gbytes_per_s;  /* per GPU, each direction */
    double pcie_latency_us;    /* one transfer over PCIe: host <-> GPU, or GPU <-> GPU via host */
    double nvlink_gbytes_per_s; /* per GPU, each direction; 0: no NVLink */
    double nvlink_latency_us;  /* GPU -> GPU of one node over NVLink (0 when no NVLink) */
    double nic_gbits_per_s;    /* per NIC, each direction */
    double nic_latency_us;     /* NIC -> switch(es) -> NIC, on top of PCIe on GPU nodes */
    enum hx_sim_topology topology;
    int mpi_eager_kib;         /* largest message MPI sends without waiting for its receiver,
                                * KiB (SMPI's smpi/send-is-detached-thresh); 64 when not given */
};

/* @p m's eager limit as SimGrid's option, "--cfg=smpi/send-is-detached-thresh:BYTES", into
 * @p buf: the machine's part of the options that hx_sim_smpi_flags holds for every machine. */
void hx_sim_machine_eager_flag(const struct hx_sim_machine *m, char *buf, int len);

/* What one message from a rank to another crosses, as the cluster platform models it. */
struct hx_sim_path {
    double latency_us;    /* sum of the links' latencies */
    double gbytes_per_s;  /* the slowest link's bandwidth */
    int hops;             /* links crossed */
    const char *via;      /* "nvlink", "pcie", "nic", "pcie+nic", "nvlink+pcie+nic" */
};

/* Parse and check a machine file.  HX_OK; HX_EIO when it cannot be read; HX_EINVAL for an
 * unknown, repeated, missing or misplaced key, a value that is no number, out of range, or
 * numbers that do not fit together: each reported (HX_ERR) with FILE:LINE, the key and
 * what to write instead. */
int hx_sim_machine_load(const char *path, struct hx_sim_machine *m);

/* The MPI world size the machine implies: nodes x gpus_per_node, or nodes without GPUs. */
int hx_sim_machine_ranks(const struct hx_sim_machine *m);

/* Rank @p r's host name in the cluster platform and the hostfile ("node3-gpu5", "node3"). */
void hx_sim_machine_rank_host(const struct hx_sim_machine *m, int r, char *buf, int len);

/* The path of a message from rank @p a to rank @p b (a != b, both < ranks).  HX_OK or
 * HX_EINVAL (reported). */
int hx_sim_machine_path(const struct hx_sim_machine *m, int a, int b, struct hx_sim_path *p);

/* Write the simulation's files under @p dir (created with its parents if missing):
 *   dir/bus/HOST.platform.v4.xml  a rank's StarPU machine: CPU0.., RAM, MAIN, CUDA0 + PCIe
 *   dir/bus/HOST.bandwidth        its memory nodes' bandwidth matrix (MB/s)
 *   dir/bus/HOST.latency          and latency matrix (us), as StarPU's SimGrid mode reads
 *   dir/cluster.xml               starpu_smpirun's -platform: one host per rank, the links
 *   dir/hostfile                  starpu_smpirun's -hostfile: rank hosts in rank order
 *   dir/smpirun.flags             the SimGrid options that make SMPI time messages exactly
 *                                 as the links say (hx_sim_smpi_flags), one per line
 * Run with STARPU_PERF_MODEL_DIR=dir STARPU_HOSTNAME=HOST.  @p host: [A-Za-z0-9._-], at most
 * 64 characters (NULL: the machine's name).  HX_OK, HX_EINVAL or HX_EIO (reported). */
int hx_sim_machine_write(const struct hx_sim_machine *m, const char *dir, const char *host);

/* SimGrid options for every simulated run, NULL-terminated: SMPI's piecewise factors
 * (by default latency x11.6 and bandwidth x0.94 above 64 KiB, SimGrid's fit of a TCP
 * cluster) set to 1, the TCP window bound off, no reverse ACK traffic, plain max-min
 * sharing.  starpu_smpirun passes them on when they follow the program's arguments. */
extern const char *const hx_sim_smpi_flags[];

#endif /* HX_SIM_MACHINE_H */
