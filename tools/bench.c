/* SPDX-License-Identifier: MIT */
/* tools/bench.c: `helix bench` (and `make bench`).  Each configuration runs in a child
 * process (this binary with --child) so its peak resident memory is its own: warm-up steps,
 * then timed steps, then one traced step whose task durations give the runtime's overhead
 * (1 - kernel time / (wall x workers)).  FLOPs per step: (6 N' + 12 L C T) B T, N' = the
 * parameters without the position embedding, the tied embedding counted once.  The sgemm
 * peak (OpenBLAS, one thread per worker, n = 2048) is measured in the same invocation.
 * --compare torch runs bench/torch_ref.py (Debian's python3-torch, with the two settings
 * PyTorch needs to be at its best) alternately with helix, round after round.  Configuration
 * L is the Llama architecture (--model llama), against torch_ref.py --llama, with its own
 * parity check (tests/reference/llama_ref.py). */
#define _GNU_SOURCE
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/parity.h"
#include "tools/train.h"

struct bench_cfg {
    const char *name;
    int V, C, L, NH, B, T;
    int G, F;            /* Llama (--model llama): key/value heads, MLP width; 0: GPT-2 */
};

static const struct bench_cfg configs[] = {
    { "A", 50257, 768, 12, 12, 4, 64, 0, 0 },  /* GPT-2 124M */
    { "B", 256, 256, 4, 4, 8, 128, 0, 0 },
    { "C", 256, 512, 6, 8, 8, 256, 0, 0 },
    /* llama-tiny's architecture scaled to C's size (a step of about a second here): 8 heads
     * in 2 key/value groups, SwiGLU of 3C */
    { "L", 256, 512, 6, 8, 8, 256, 2, 1536 },
};

/* The model of a configuration (one micro-batch of B sequences) */
static struct hx_gpt_config model_of(const struct bench_cfg *bc)
{
    struct hx_gpt_config c = { .vocab_size = bc->V, .num_layers = bc->L, .num_heads = bc->NH,
                               .hidden_size = bc->C, .seq_len = bc->T,
                               .micro_batch_size = bc->B, .num_micro_batches = 1 };
    if (bc->G > 0) {
        c.normalization = HX_NORM_RMSNORM, c.swiglu = 1, c.position_embedding = HX_POS_ROPE;
        c.untie_embeddings = 1, c.disable_bias = 1;
        c.num_query_groups = bc->G, c.ffn_hidden_size = bc->F;
    }
    return c;
}

static const struct bench_cfg *find_cfg(const char *name)
{
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        if (strcmp(configs[i].name, name) == 0) {
            return &configs[i];
        }
    }
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* N' is every parameter of the model's table but wpe (GPT-2: V C + L (12 C^2 + 13 C) + 2 C) */
static double flops_per_step(const struct bench_cfg *c)
{
    struct hx_gpt_config m = model_of(c);
    int n = hx_gpt_param_table(&m, NULL);
    struct hx_param_spec *s = malloc(sizeof *s * (size_t)n);
    double nprime = 0;
    if (s != NULL) {
        hx_gpt_param_table(&m, s);
        for (int i = 0; i < n; i++) {
            nprime += strcmp(s[i].name, "wpe") != 0 ? (double)s[i].rows * s[i].cols : 0.0;
        }
    }
    free(s);
    return (6.0 * nprime + 12.0 * c->L * c->C * c->T) * c->B * c->T;
}

/* OpenBLAS sgemm with `threads` threads, n = 2048, best of 5: the machine's GEMM peak. */
static double sgemm_peak(int threads)
{
    const int n = 2048;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    double best = 0;
    if (a && b && c) {
        for (long i = 0; i < (long)n * n; i++) {
            a[i] = (float)((i * 7) % 13) / 13.0f;
            b[i] = (float)((i * 5) % 11) / 11.0f;
        }
        openblas_set_num_threads(threads);
        for (int rep = 0; rep < 6; rep++) {
            double t0 = now_ms();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n,
                        0.0f, c, n);
            double g = 2.0 * n * n * (double)n / ((now_ms() - t0) * 1e6);
            best = rep > 0 && g > best ? g : best; /* the first call warms up */
        }
        openblas_set_num_threads(1);
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* ---- the child: one configuration, one JSON line on stdout ---- */

static int run_child(const struct bench_cfg *bc, int steps, int warmup, int workers)
{
    struct hx_gpt_config c = model_of(bc);
    struct hx_optim_config o;
    hx_optim_config_default(&o, steps + warmup + 1);
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = workers;
    hx_gpt_t m = NULL;
    int ret = hx_gpt_build(&m, &c, &o);
    ret = ret == HX_OK ? hx_runtime_init(&ro) : ret;
    ret = ret == HX_OK ? hx_gpt_realize(m) : ret;
    if (ret != HX_OK) {
        hx_gpt_destroy(m);
        return 1;
    }
    hx_gpt_init_params(m, 1234);
    size_t n = (size_t)bc->B * bc->T;
    int32_t *tok = malloc(n * sizeof(int32_t)), *tgt = malloc(n * sizeof(int32_t));
    double *ms = calloc((size_t)steps + 1, sizeof(double)), loss_first = NAN, loss_last = NAN;
    uint64_t s = 42;
    double overhead = NAN;
    for (int step = 0; ret == HX_OK && step < warmup + steps + 1; step++) {
        for (size_t i = 0; i < n; i++) { /* a fresh random batch each step, as torch_ref.py */
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            tok[i] = (int32_t)((s >> 33) % (uint64_t)bc->V);
            tgt[i] = (int32_t)((s >> 13) % (uint64_t)bc->V);
        }
        int traced = step == warmup + steps;
        if (traced) {
            hx_trace_start();
        }
        struct hx_step_result r;
        double t0 = now_ms();
        ret = hx_gpt_set_batch(m, tok, tgt);
        ret = ret == HX_OK ? hx_gpt_step(m, step, &r) : ret;
        double dt = now_ms() - t0;
        if (ret != HX_OK) {
            break;
        }
        if (step == 0) {
            loss_first = r.loss;
        }
        loss_last = r.loss;
        if (step >= warmup && !traced) {
            ms[step - warmup] = dt;
        }
        if (traced) {
            /* kernel time of the traced step from its task records, against wall x workers */
            char path[] = "/tmp/helix-bench-trace-XXXXXX";
            int fd = mkstemp(path);
            double busy = 0;
            if (fd >= 0 && hx_trace_write(path) == HX_OK) {
                FILE *f = fdopen(fd, "r");
                char line[1024];
                while (f && fgets(line, sizeof line, f)) {
                    const char *d = strstr(line, "\"dur\": ");
                    busy += d ? atof(d + 7) : 0.0;
                }
                if (f) {
                    fclose(f);
                }
            }
            unlink(path);
            hx_trace_stop();
            overhead = 1.0 - busy / 1e3 / (dt * hx_runtime_workers());
        }
    }
    if (ret == HX_OK) {
        double *sorted = malloc(sizeof(double) * (size_t)steps);
        memcpy(sorted, ms, sizeof(double) * (size_t)steps);
        double med = median(sorted, steps);
        printf("{\"config\": \"%s\", \"ms_median\": %.3f, \"tokens_per_s\": %.1f, "
               "\"gflops\": %.2f, \"overhead\": %.4f, \"loss_first\": %.6f, "
               "\"loss_last\": %.6f, \"params\": %zu, \"ms_all\": [", bc->name, med,
               n / (med / 1e3), flops_per_step(bc) / (med * 1e6), overhead, loss_first,
               loss_last, hx_gpt_num_params(m));
        for (int i = 0; i < steps; i++) {
            printf("%s%.3f", i ? ", " : "", ms[i]);
        }
        printf("]}\n");
        free(sorted);
    }
    free(tok);
    free(tgt);
    free(ms);
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    return ret == HX_OK ? 0 : 1;
}

/* The loss-parity check of the same invocation: helix against tests/reference/gpt_ref.py
 * (@p llama: llama_ref.py, 2 key/value heads, SwiGLU of 160) on a small model
 * (2 micro-batches, 10 AdamW steps with warmup, cosine and clipping). */
static int run_parity_child(int workers, int llama)
{
    struct bench_cfg small = { "parity", 256, 64, 2, 4, 2, 32, llama ? 2 : 0, llama ? 160 : 0 };
    struct hx_gpt_config c = model_of(&small);
    c.num_micro_batches = 2;
    struct hx_optim_config o;
    hx_optim_config_default(&o, 10);
    o.lr = 1e-3f;
    o.warmup_iters = 3;
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = workers;
    hx_gpt_t m = NULL;
    char dir[] = "/tmp/helix-bench-parity-XXXXXX", script[4096];
    int ret = mkdtemp(dir) ? hx_gpt_build(&m, &c, &o) : HX_ERR(HX_EIO, "mkdtemp failed");
    ret = ret == HX_OK ? hx_runtime_init(&ro) : ret;
    ret = ret == HX_OK ? hx_gpt_realize(m) : ret;
    size_t n = 10 * 2 * 2 * 32;
    int32_t *tok = malloc(n * sizeof(int32_t)), *tgt = malloc(n * sizeof(int32_t));
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        tok[i] = (int32_t)((s >> 33) % 256);
        tgt[i] = (int32_t)((s >> 17) % 256);
    }
    struct parity_result r;
    if (ret == HX_OK) {
        hx_gpt_init_params(m, 7);
        snprintf(script, sizeof script, "%s/tests/reference", HX_ABS_SRCDIR);
        ret = parity_run(m, &o, 10, tok, tgt, "/usr/bin/python3", script, dir, &r);
    }
    if (ret == HX_OK) {
        printf("{\"loss_err\": %.3e, \"grad_err\": %.3e, \"step0_loss_err\": %.3e, "
               "\"rule_ratio\": %.3e}\n", r.loss_err, r.grad_err, r.step0_loss_err,
               r.worst_ratio);
    }
    rmdir(dir);
    free(tok);
    free(tgt);
    hx_gpt_destroy(m);
    hx_runtime_shutdown();
    return ret == HX_OK ? 0 : 1;
}

/* ---- the parent: children, alternation, table ---- */

struct result {
    double ms, tps, gflops, overhead, rss_mb;
    int ok;
};

/* Run argv with extra environment, capture its stdout (one JSON line) and its peak RSS; its
 * stderr (progress chatter) is kept in a file and shown only when the run fails. */
static int spawn(char *const argv[], char *const env_add[], char *out, size_t outn,
                 double *rss_mb)
{
    int pfd[2];
    char errpath[] = "/tmp/helix-bench-err-XXXXXX";
    int errfd = mkstemp(errpath);
    if (errfd < 0 || pipe(pfd) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(errfd, 2);
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        for (char *const *e = env_add; e && *e; e++) {
            putenv(*e);
        }
        execv(argv[0], argv);
        fprintf(stderr, "helix: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    size_t len = 0;
    ssize_t k;
    while (pid > 0 && (k = read(pfd[0], out + len, outn - 1 - len)) > 0) {
        len += (size_t)k;
    }
    out[len] = '\0';
    close(pfd[0]);
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
        close(errfd);
        unlink(errpath);
        return -1;
    }
    *rss_mb = ru.ru_maxrss / 1024.0;
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
        char buf[4096];
        ssize_t k2 = pread(errfd, buf, sizeof buf - 1, 0);
        buf[k2 > 0 ? k2 : 0] = '\0';
        fprintf(stderr, "helix: error: %s failed (status %d):\n%s", argv[0], status, buf);
    }
    close(errfd);
    unlink(errpath);
    return ok ? 0 : -1;
}

static double json_num(const char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(s, k);
    return p ? atof(p + strlen(k)) : NAN;
}

static struct result run_helix(const char *self, const struct bench_cfg *c, int steps,
                               int warmup, int workers)
{
    char s_steps[16], s_warm[16], s_work[16], out[65536];
    snprintf(s_steps, sizeof s_steps, "%d", steps);
    snprintf(s_warm, sizeof s_warm, "%d", warmup);
    snprintf(s_work, sizeof s_work, "%d", workers);
    char *argv[] = { (char *)self, "bench", "--child", (char *)c->name, "--steps", s_steps,
                     "--warmup", s_warm, "--workers", s_work, NULL };
    struct result r = { 0 };
    r.ok = spawn(argv, NULL, out, sizeof out, &r.rss_mb) == 0;
    r.ms = json_num(out, "ms_median");
    r.tps = json_num(out, "tokens_per_s");
    r.gflops = json_num(out, "gflops");
    r.overhead = json_num(out, "overhead");
    r.ok = r.ok && isfinite(r.ms);
    return r;
}

static struct result run_torch(const char *script, const struct bench_cfg *c, int steps,
                               int warmup, int workers)
{
    char a[9][16], out[65536];
    int v[9] = { c->V, c->C, c->L, c->NH, c->B, c->T, workers, c->G, c->F };
    for (int i = 0; i < 9; i++) {
        snprintf(a[i], sizeof a[i], "%d", v[i]);
    }
    char s_steps[16], s_warm[16];
    snprintf(s_steps, sizeof s_steps, "%d", steps);
    snprintf(s_warm, sizeof s_warm, "%d", warmup);
    char *argv[] = { "/usr/bin/python3", (char *)script, "--vocab", a[0], "--hidden", a[1],
                     "--layers", a[2], "--heads", a[3], "--batch", a[4], "--seq", a[5],
                     "--threads", a[6], "--steps", s_steps, "--warmup", s_warm,
                     c->G > 0 ? "--llama" : NULL, "--groups", a[7], "--ffn", a[8], NULL };
    /* PyTorch at its best on this machine (issue 4): OpenMP threads sleep instead of spinning
     * against BLAS, and glibc keeps large tensors mapped between steps */
    char *env[] = { "OMP_WAIT_POLICY=PASSIVE",
                    "GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold="
                    "68719476736",
                    NULL };
    struct result r = { 0 };
    r.ok = spawn(argv, env, out, sizeof out, &r.rss_mb) == 0;
    r.ms = json_num(out, "ms_median");
    r.tps = json_num(out, "tokens_per_s");
    r.gflops = flops_per_step(c) / (r.ms * 1e6);
    r.ok = r.ok && isfinite(r.ms);
    return r;
}

int cmd_bench(int argc, char **argv)
{
    const char *list = "A,B,C", *compare = NULL, *child = NULL, *script = NULL;
    int steps = 5, warmup = 2, rounds = 1, workers = 0;
    const struct flag flags[] = {
        { "configs", FLAG_STRING, &list, 0, 0,
          "comma-separated configurations (A, B, C; L: Llama)" },
        { "steps", FLAG_INT, &steps, 1, 10000, "timed steps per run (after the warm-up)" },
        { "warmup", FLAG_INT, &warmup, 0, 10000, "untimed steps first" },
        { "rounds", FLAG_INT, &rounds, 1, 100, "rounds, alternating helix and the baseline" },
        { "workers", FLAG_INT, &workers, 0, 64, "CPU workers and torch threads (0: cores)" },
        { "compare", FLAG_STRING, &compare, 0, 0, "baseline to run alternately: torch" },
        { "torch-ref", FLAG_STRING, &script, 0, 0, "path of bench/torch_ref.py" },
        { "child", FLAG_STRING, &child, 0, 0, "(internal) run one configuration" },
    };
    struct flag_set fs;
    flags_init(&fs, flags, (int)(sizeof flags / sizeof flags[0]));
    int ret = flags_parse_argv(&fs, argc, argv, 2,
                               "usage: helix bench [flags]\n\n"
                               "Training speed on configurations A (GPT-2 124M, B=4, T=64), "
                               "B (C=256, L=4, B=8, T=128)\nand C (C=512, L=6, B=8, T=256), "
                               "and L (C's shape as a Llama: RMSNorm, SwiGLU of 1536, RoPE,\n"
                               "2 key/value heads, untied, no biases); medians of the timed "
                               "steps, tokens/s, GFLOP/s,\nfraction of the sgemm peak, peak "
                               "resident memory, runtime overhead.");
    if (ret != 0) {
        return ret == 1 ? 0 : 2;
    }
    workers = workers > 0 ? workers : hx_ncores();
    if (child != NULL && strncmp(child, "parity", 6) == 0) {
        return run_parity_child(workers, strcmp(child, "parity-llama") == 0);
    }
    if (child != NULL) {
        const struct bench_cfg *c = find_cfg(child);
        return c ? run_child(c, steps, warmup, workers) : 2;
    }
    if (compare != NULL && strcmp(compare, "torch") != 0) {
        fprintf(stderr, "helix: error: --compare '%s': the only baseline is torch\n", compare);
        return 2;
    }
    const struct bench_cfg *sel[8];
    int nsel = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if ((sel[nsel] = find_cfg(tok)) == NULL || nsel == 7) {
            fprintf(stderr, "helix: error: --configs: unknown configuration '%s'; use A, B, C "
                    "or L\n", tok);
            return 2;
        }
        nsel++;
    }
    char script_buf[4096];
    if (compare != NULL && script == NULL) {
        snprintf(script_buf, sizeof script_buf, "%s/bench/torch_ref.py", HX_ABS_SRCDIR);
        script = script_buf;
    }
    if (compare != NULL && access(script, R_OK) != 0) {
        fprintf(stderr, "helix: error: cannot read %s; give --torch-ref PATH\n", script);
        return 2;
    }
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "helix: error: cannot find this program's path (/proc/self/exe)\n");
        return 1;
    }
    self[sl] = '\0';
    double peak = sgemm_peak(workers);
    printf("helix bench: %d workers, sgemm peak %.1f GFLOP/s (OpenBLAS, %d threads, n=2048), "
           "%d warm-up + %d timed steps, %d round(s)\n", workers, peak, workers, warmup, steps,
           rounds);
    printf("FLOPs per step: (6 N' + 12 L C T) B T, N' = parameters without wpe\n");
    fflush(stdout);
    struct result h[8][16], t[8][16];
    memset(h, 0, sizeof h);
    memset(t, 0, sizeof t);
    int failed = 0;
    for (int r = 0; r < rounds && r < 16; r++) {
        for (int i = 0; i < nsel; i++) {
            h[i][r] = run_helix(self, sel[i], steps, warmup, workers);
            failed |= !h[i][r].ok;
            if (compare != NULL) {
                t[i][r] = run_torch(script, sel[i], steps, warmup, workers);
                failed |= !t[i][r].ok;
            }
        }
    }
    printf("\n%-3s %10s %9s %8s %6s %8s %8s", "cfg", "ms/step", "tok/s", "GFLOP/s", "%peak",
           "RSS MB", "overhd");
    if (compare != NULL) {
        printf(" | %10s %9s %8s | %7s", "torch ms", "tok/s", "RSS MB", "speedup");
    }
    printf("\n");
    for (int i = 0; i < nsel; i++) {
        double v[6][16];
        int nr = rounds < 16 ? rounds : 16;
        for (int r = 0; r < nr; r++) {
            v[0][r] = h[i][r].ms, v[1][r] = h[i][r].rss_mb, v[2][r] = h[i][r].overhead;
            v[3][r] = t[i][r].ms, v[4][r] = t[i][r].rss_mb;
        }
        double hm = median(v[0], nr), hr = median(v[1], nr), ho = median(v[2], nr);
        double tokens = (double)sel[i]->B * sel[i]->T, gf = flops_per_step(sel[i]) / (hm * 1e6);
        printf("%-3s %10.1f %9.0f %8.1f %5.1f%% %8.0f %7.1f%%", sel[i]->name, hm,
               tokens / (hm / 1e3), gf, 100 * gf / peak, hr, 100 * ho);
        if (compare != NULL) {
            double tm = median(v[3], nr), tr = median(v[4], nr);
            printf(" | %10.1f %9.0f %8.0f | %6.2fx", tm, tokens / (tm / 1e3), tr, tm / hm);
        }
        printf("\n");
    }
    /* speedups count only with parity in the same run: GPT-2's, and Llama's when L ran */
    int llama = 0;
    for (int i = 0; i < nsel; i++) {
        llama |= sel[i]->G > 0;
    }
    printf("\n");
    for (int k = 0; k <= llama; k++) {
        char s_work[16], out[4096];
        double rss;
        snprintf(s_work, sizeof s_work, "%d", workers);
        char *pargv[] = { self, "bench", "--child", k ? "parity-llama" : "parity", "--workers",
                          s_work, NULL };
        int pok = spawn(pargv, NULL, out, sizeof out, &rss) == 0;
        double le = json_num(out, "loss_err"), ge = json_num(out, "grad_err");
        double ratio = json_num(out, "rule_ratio"); /* the parity tests' rule, tools/parity.h */
        pok = pok && ratio <= 1;
        printf("loss parity with PyTorch (tests/reference/%s, 2 layers, 2 micro-batches, 10 "
               "AdamW steps): loss rel err %.2e, gradients %.2e, worst measured/tolerance "
               "%.2g: %s\n", k ? "llama_ref.py" : "gpt_ref.py", le, ge, ratio,
               pok ? "PASS" : "FAIL (the figures above do not count)");
        failed |= !pok;
    }
    flags_free(&fs);
    if (failed) {
        fprintf(stderr, "helix: error: some benchmark runs failed (see the messages above)\n");
        return 1;
    }
    return 0;
}
