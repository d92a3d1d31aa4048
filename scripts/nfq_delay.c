/* SPDX-License-Identifier: MIT */
/* scripts/nfq_delay.c: the user-space delayer of scripts/netbed (design/netbed.md §4, §9).
 * This kernel has no sch_netem, so one-way delay is added by holding NFQUEUE packets.
 * scripts/netbed builds it on demand into its state directory; it is not part of the library. */
/* nfq_delay.c - add a fixed one-way delay to packets, for kernels without sch_netem.
 * An iptables rule sends packets to NFQUEUE <qnum>; this program holds each
 * packet for <delay_us> microseconds and then accepts it, in arrival order.
 * Only metadata is copied to user space (NFQNL_COPY_META); verdicts are batched.
 *   usage: nfq_delay QNUM DELAY_US [SECONDS_TO_RUN (0 = until SIGTERM)]
 * build: gcc -O2 -o nfq_delay nfq_delay.c -lnetfilter_queue
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#ifndef NF_ACCEPT
#define NF_ACCEPT 1
#endif

#define RING (1u << 20)
static uint32_t ids[RING];
static uint64_t due[RING];
static uint32_t head, tail; /* head: oldest pending, tail: next free */
static uint64_t delay_ns;
static volatile sig_atomic_t stop;
static uint64_t n_pkts, n_verdicts, max_late_ns, sum_late_ns;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cb(struct nfq_q_handle *qh, struct nfgenmsg *m, struct nfq_data *d, void *arg) {
    (void)m; (void)arg;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(d);
    if (!ph) return 0;
    uint32_t id = ntohl(ph->packet_id);
    if (tail - head >= RING) { /* ring full: let it through now */
        nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
        return 0;
    }
    ids[tail % RING] = id;
    due[tail % RING] = now_ns() + delay_ns;
    tail++;
    n_pkts++;
    return 0;
}

static void on_sig(int s) { (void)s; stop = 1; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s QNUM DELAY_US [SECONDS]\n", argv[0]); return 2; }
    int qnum = atoi(argv[1]);
    delay_ns = (uint64_t)(atof(argv[2]) * 1000.0);
    double secs = argc > 3 ? atof(argv[3]) : 0;
    uint64_t t_end = secs > 0 ? now_ns() + (uint64_t)(secs * 1e9) : UINT64_MAX;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* precise ppoll timeouts */
    signal(SIGTERM, on_sig); signal(SIGINT, on_sig);

    struct nfq_handle *h = nfq_open();
    if (!h) { perror("nfq_open"); return 1; }
    struct nfq_q_handle *qh = nfq_create_queue(h, qnum, &cb, NULL);
    if (!qh) { perror("nfq_create_queue"); return 1; }
    if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("nfq_set_mode"); return 1; }
    nfq_set_queue_maxlen(qh, 65536);
    /* take GSO super-packets whole: without this flag the kernel segments every
     * GSO packet before queueing, ~40x more packets to handle at 1 Gbit/s */
    if (nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0)
        fprintf(stderr, "nfq_delay: NFQA_CFG_F_GSO not supported, continuing\n");
    int fd = nfq_fd(h);
    int rcv = 64 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);
    static char buf[1 << 16] __attribute__((aligned));
    fprintf(stderr, "nfq_delay: queue %d delay %.1f us\n", qnum, delay_ns / 1e3);

    while (!stop && now_ns() < t_end) {
        /* release everything that is due, with one batch verdict */
        uint64_t t = now_ns();
        uint32_t last = 0; int have = 0;
        while (head != tail && due[head % RING] <= t) {
            uint64_t late = t - due[head % RING];
            sum_late_ns += late;
            if (late > max_late_ns) max_late_ns = late;
            last = ids[head % RING]; have = 1; head++;
        }
        if (have) { nfq_set_verdict_batch(qh, last, NF_ACCEPT); n_verdicts++; }
        struct timespec to, *top = NULL;
        if (head != tail) {
            uint64_t w = due[head % RING] > t ? due[head % RING] - t : 0;
            to.tv_sec = w / 1000000000ull; to.tv_nsec = w % 1000000000ull; top = &to;
        } else {
            to.tv_sec = 0; to.tv_nsec = 200000000; top = &to; /* re-check stop/t_end */
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = ppoll(&p, 1, top, NULL);
        if (r > 0) {
            for (;;) { /* drain the socket without blocking */
                int n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                    if (errno == ENOBUFS) { fprintf(stderr, "nfq_delay: ENOBUFS (lost msgs)\n"); continue; }
                    break;
                }
                nfq_handle_packet(h, buf, n);
            }
        }
    }
    if (head != tail) nfq_set_verdict_batch(qh, ids[(tail - 1) % RING], NF_ACCEPT);
    fprintf(stderr, "nfq_delay: queue %d packets %llu verdict-batches %llu mean-late %.1f us max-late %.1f us\n",
            qnum, (unsigned long long)n_pkts, (unsigned long long)n_verdicts,
            n_pkts ? sum_late_ns / 1e3 / n_pkts : 0.0, max_late_ns / 1e3);
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
}
