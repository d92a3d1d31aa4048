/* SPDX-License-Identifier: MIT */
/* tests/graphs/checkpoint.c: a checkpoint counts only when complete, and resuming from it is
 * exact.  Train 3 steps, save, train 3 more; a second model loaded from the save repeats those
 * 3 steps with bitwise-equal losses and parameters.  Saves keep the newest two files; every
 * damaged or missing checkpoint gets its documented status and is left untouched; a mismatched
 * model is refused; a save that fails part-way (file size limit) or cannot start (path under a
 * regular file) leaves the previous checkpoint and `latest` byte-for-byte as they were; the
 * model check before the runtime starts refuses a mismatched model; the fuzz seed is accepted.
 * Model: L=2, C=32, T=16, V=256, B=2 on 2 workers. */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helix/helix.h"
#include "testutil.h"

#define STEPS 3

static char root[64], dir[128], msg[4096];
static struct hx_dataset data;

/* ---- files --------------------------------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    *n = 0;
    if (f != NULL) {
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        b = malloc((size_t)sz + 1);
        *n = fread(b, 1, (size_t)sz, f);
        b[*n] = '\0';
        fclose(f);
    }
    return b;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* 1 when @p path holds exactly the @p n bytes at @p p. */
static int same_bytes(const char *path, const void *p, size_t n)
{
    size_t m;
    unsigned char *b = slurp(path, &m);
    int same = b != NULL && m == n && memcmp(b, p, n) == 0;
    free(b);
    return same;
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)s, (void)flag, (void)f;
    return remove(p);
}

/* stderr goes to a file while a call runs; its first line lands in msg and in a diagnostic. */
static int saved_stderr;

static int quiet_end(int status)
{
    capture_end(saved_stderr, msg, sizeof msg);
    msg[strcspn(msg, "\n")] = '\0';
    tap_diag("%s", msg);
    return status;
}

#define QUIET(call) (saved_stderr = capture_begin(root), quiet_end(call))

/* ---- model ----------------------------------------------------------------------------------- */

static const struct hx_gpt_config base_cfg = { .vocab_size = 256, .num_layers = 2,
                                                .num_heads = 4, .hidden_size = 32,
                                                .seq_len = 16, .micro_batch_size = 2,
                                                .num_micro_batches = 1, .attn_block = 8 };

static hx_gpt_t model(int layers, uint64_t seed)
{
    struct hx_gpt_config c = base_cfg;
    struct hx_optim_config o;
    hx_gpt_t m;
    c.num_layers = layers;
    hx_optim_config_default(&o, 10);
    o.lr = 1e-2f;
    if (hx_gpt_build(&m, &c, &o) != HX_OK || hx_gpt_realize(m) != HX_OK) {
        exit(1);
    }
    hx_gpt_init_params(m, seed);
    return m;
}

/* Steps [first, first+n) on the batches at the data cursor. */
static int train(hx_gpt_t m, int first, int n, double *loss)
{
    int32_t tok[2 * 16], tgt[2 * 16];
    int ret = HX_OK;
    for (int s = first; s < first + n && ret == HX_OK; s++) {
        struct hx_step_result r;
        hx_data_next_batch(&data, base_cfg.micro_batch_size, base_cfg.seq_len, tok, tgt);
        ret = hx_gpt_set_batch(m, tok, tgt);
        ret = ret == HX_OK ? hx_gpt_step(m, s, &r) : ret;
        loss[s - first] = r.loss;
    }
    return ret;
}

static void fill_info(struct hx_checkpoint_info *info, hx_gpt_t m, int64_t step)
{
    memset(info, 0, sizeof *info);
    info->model = *hx_gpt_config_of(m);
    hx_optim_config_default(&info->optim, 10);
    info->optim.lr = 1e-2f;
    info->state = (struct hx_train_state){ .step = step, .train_cursor = data.cursor,
                                           .val_cursor = 77, .rng = { 1, 2, 3, 0xffffffffffULL },
                                           .seed = 7 };
    snprintf(info->args, sizeof info->args, "num-layers = 2\nhidden-size = 32\nlr = 0.01\n");
}

/* ---- the checks ------------------------------------------------------------------------------ */

static void resume_is_exact(void)
{
    struct hx_checkpoint_info saved, got;
    double want[STEPS], loss[STEPS];
    size_t n1, n2;
    hx_gpt_t m1 = model(2, 7);
    data.cursor = 0;
    int ok = train(m1, 0, STEPS, loss) == HX_OK;
    fill_info(&saved, m1, STEPS);
    ok = ok && hx_checkpoint_save(dir, m1, &saved) == HX_OK;
    ok = ok && train(m1, STEPS, STEPS, want) == HX_OK;
    char files[512];
    dir_listing(dir, files, sizeof files);
    tap_ok(ok && strcmp(files, "ckpt-00000003.bin latest ") == 0,
           "train %d steps and save: directory holds '%s'", STEPS, files);

    ok = hx_checkpoint_peek(dir, &got) == HX_OK;
    tap_ok(ok && memcmp(&got.model, &saved.model, sizeof got.model) == 0 &&
           memcmp(&got.optim, &saved.optim, sizeof got.optim) == 0 &&
           memcmp(&got.state, &saved.state, sizeof got.state) == 0 &&
           strcmp(got.args, saved.args) == 0,
           "peek returns the model, optimizer, state (step %lld, cursor %llu) and args saved",
           (long long)got.state.step, (unsigned long long)got.state.train_cursor);

    hx_gpt_t m2 = model(2, 999); /* another initialisation, so only the load can make it equal */
    ok = hx_checkpoint_load(dir, m2, &got) == HX_OK;
    data.cursor = got.state.train_cursor;
    ok = ok && train(m2, (int)got.state.step, STEPS, loss) == HX_OK;
    tap_ok(ok && memcmp(loss, want, sizeof loss) == 0,
           "resumed steps 4-6 have bitwise-equal losses (%.9f %.9f %.9f vs %.9f %.9f %.9f)",
           loss[0], loss[1], loss[2], want[0], want[1], want[2]);
    float *a = model_state(m1, &n1), *b = model_state(m2, &n2);
    tap_ok(n1 == n2 && memcmp(a, b, n1 * sizeof *a) == 0,
           "final parameters and Adam moments bitwise equal (%zu floats)", n1);
    free(a);
    free(b);

    /* (b) the newest two survive, `latest` names the newest */
    fill_info(&saved, m1, 4);
    ok = hx_checkpoint_save(dir, m1, &saved) == HX_OK;
    fill_info(&saved, m1, 5);
    ok = ok && hx_checkpoint_save(dir, m1, &saved) == HX_OK;
    dir_listing(dir, files, sizeof files);
    char latest[256];
    snprintf(latest, sizeof latest, "%s/latest", dir);
    tap_ok(ok && strcmp(files, "ckpt-00000004.bin ckpt-00000005.bin latest ") == 0 &&
           same_bytes(latest, "ckpt-00000005.bin\n", 18),
           "two more saves keep exactly the newest two: '%s'", files);

    /* (d) a model of another shape is refused before anything is written */
    hx_gpt_t m3 = model(1, 7);
    int st = QUIET(hx_checkpoint_load(dir, m3, &got));
    tap_ok(st == HX_EINVAL && strstr(msg, "--num-layers 2 but the model has 1") != NULL,
           "load into a 1-layer model: HX_EINVAL naming --num-layers (status %d)", st);

    /* a corrupted file changes nothing in the model either */
    char bad[160];
    size_t n;
    snprintf(bad, sizeof bad, "%s/ckpt-00000005.bin", dir);
    unsigned char *f = slurp(bad, &n);
    snprintf(bad, sizeof bad, "%s/flipped.bin", root);
    f[n / 2] ^= 0x10;
    spit(bad, f, n);
    a = model_state(m2, &n1);
    st = QUIET(hx_checkpoint_load(bad, m2, &got));
    b = model_state(m2, &n2);
    tap_ok(st == HX_EFORMAT && memcmp(a, b, n1 * sizeof *a) == 0,
           "load of a corrupted file: HX_EFORMAT, model unchanged (status %d)", st);
    free(a);
    free(b);
    free(f);
    hx_gpt_destroy(m3);
    hx_gpt_destroy(m2);
    hx_gpt_destroy(m1);
}

/* (c) each damaged variant of a good file: status, message, and the file left as it was. */
static void damaged_files(void)
{
    char good[160], path[160];
    size_t n;
    snprintf(good, sizeof good, "%s/ckpt-00000005.bin", dir);
    unsigned char *f = slurp(good, &n), *v = malloc(n);
    unsigned char llmc[1024] = { 0xc6, 0xd7, 0x34, 0x01, 3 }; /* int32 20240326, version 3 */
    static const struct { const char *what, *expect; int status; } cases[] = {
        { "truncated by 100 bytes", "truncated", HX_EFORMAT },
        { "truncated inside the header", "truncated", HX_EFORMAT },
        { "one flipped byte in the middle", "corrupted", HX_EFORMAT },
        { "bad magic", "not a helix checkpoint", HX_EFORMAT },
        { "format version 3", "version 3", HX_EFORMAT },
        { "an llm.c checkpoint", "llm.c", HX_EFORMAT },
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        size_t len = n;
        memcpy(v, f, n);
        switch (i) {
        case 0: len = n - 100; break;
        case 1: len = 100; break;
        case 2: v[n / 2] ^= 0x01; break;
        case 3: memcpy(v, "GARBAGE!", 8); break;
        case 4: v[8] = 3; break;
        case 5: memcpy(v, llmc, sizeof llmc); len = sizeof llmc; break;
        }
        snprintf(path, sizeof path, "%s/case%d.bin", root, i);
        spit(path, v, len);
        struct hx_checkpoint_info info;
        int st = QUIET(hx_checkpoint_peek(path, &info));
        tap_ok(st == cases[i].status && strstr(msg, cases[i].expect) != NULL &&
               same_bytes(path, v, len), "%s: status %d, says '%s', file untouched",
               cases[i].what, st, cases[i].expect);
    }
    free(v);
    free(f);

    struct hx_checkpoint_info info;
    struct stat st;
    snprintf(path, sizeof path, "%s/missing", root);
    int s = QUIET(hx_checkpoint_peek(path, &info));
    tap_ok(s == HX_EIO && stat(path, &st) != 0, "missing directory: HX_EIO, nothing created");
    snprintf(path, sizeof path, "%s/empty", root);
    mkdir(path, 0755);
    char before[512], after[512];
    dir_listing(path, before, sizeof before);
    s = QUIET(hx_checkpoint_peek(path, &info));
    dir_listing(path, after, sizeof after);
    tap_ok(s == HX_EIO && strstr(msg, "no 'latest' file") != NULL && strcmp(before, after) == 0,
           "directory without 'latest': HX_EIO naming it, directory untouched");
}

/* (e) and (f): a save that fails changes nothing that was there. */
static void failed_saves(void)
{
    char p4[160], p5[160], pl[160], before[512], after[512];
    size_t n4, n5, nl;
    snprintf(p4, sizeof p4, "%s/ckpt-00000004.bin", dir);
    snprintf(p5, sizeof p5, "%s/ckpt-00000005.bin", dir);
    snprintf(pl, sizeof pl, "%s/latest", dir);
    unsigned char *b4 = slurp(p4, &n4), *b5 = slurp(p5, &n5), *bl = slurp(pl, &nl);
    dir_listing(dir, before, sizeof before);
    hx_gpt_t m = model(2, 11);
    struct hx_checkpoint_info info;
    fill_info(&info, m, 6);

    /* past RLIMIT_FSIZE the kernel sends SIGXFSZ: the save must ignore it and fail cleanly */
    struct rlimit old, lim;
    struct sigaction before_sa, sa;
    sigaction(SIGXFSZ, NULL, &before_sa); /* (a library may have installed its own) */
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64 * 1024; /* the checkpoint is ~400 KiB */
    setrlimit(RLIMIT_FSIZE, &lim);
    int st = QUIET(hx_checkpoint_save(dir, m, &info));
    setrlimit(RLIMIT_FSIZE, &old);
    sigaction(SIGXFSZ, NULL, &sa);
    dir_listing(dir, after, sizeof after);
    tap_ok(st == HX_EIO && strstr(msg, "file too large") != NULL && strcmp(before, after) == 0 &&
           same_bytes(p4, b4, n4) && same_bytes(p5, b5, n5) && same_bytes(pl, bl, nl) &&
           sa.sa_handler == before_sa.sa_handler,
           "save past the file size limit: HX_EIO 'file too large', no .tmp, previous files and "
           "'latest' byte-for-byte unchanged ('%s'), SIGXFSZ restored", after);

    char plain[160], under[200];
    snprintf(plain, sizeof plain, "%s/plain", root);
    snprintf(under, sizeof under, "%s/sub", plain);
    spit(plain, "x", 1);
    st = QUIET(hx_checkpoint_save(under, m, &info));
    tap_ok(st == HX_EIO && same_bytes(plain, "x", 1),
           "save under a regular file: HX_EIO before anything is written");
    st = QUIET(hx_checkpoint_save(plain, m, &info));
    tap_ok(st == HX_EIO && strstr(msg, "not a directory") != NULL && same_bytes(plain, "x", 1),
           "save to a regular file: HX_EIO 'not a directory', file unchanged");
    free(b4);
    free(b5);
    free(bl);
    hx_gpt_destroy(m);
}

/* (g) the model check that runs before the runtime starts, on a built, unrealized model;
 * and the fuzz seed written by tests/fuzz/ckpt_craft.py is a checkpoint helix accepts (so the
 * crafting tool the CLI tests use stays the format's). */
static void prestart_and_seed(void)
{
    struct hx_checkpoint_info info;
    struct hx_optim_config o;
    struct hx_gpt_config c = base_cfg;
    hx_gpt_t m1 = NULL, m2 = NULL;
    hx_optim_config_default(&o, 10);
    int ok = hx_checkpoint_peek(dir, &info) == HX_OK && hx_gpt_build(&m2, &c, &o) == HX_OK;
    c.num_layers = 1;
    ok = ok && hx_gpt_build(&m1, &c, &o) == HX_OK;
    int st2 = ok ? QUIET(hx_checkpoint_check_model(dir, &info, m2)) : -100;
    int st1 = ok ? QUIET(hx_checkpoint_check_model(dir, &info, m1)) : -100;
    tap_ok(st2 == HX_OK && st1 == HX_EINVAL &&
           strstr(msg, "--num-layers 2 but the model has 1") != NULL,
           "check before the runtime: the 2-layer model takes it (%d), a 1-layer one is refused "
           "naming --num-layers (%d)", st2, st1);
    hx_gpt_destroy(m1);
    hx_gpt_destroy(m2);

    char seed[4096];
    const char *src = getenv("HX_SRCDIR");
    snprintf(seed, sizeof seed, "%s/tests/fuzz/corpus/checkpoint/valid-seed.bin",
             src != NULL ? src : HX_ABS_SRCDIR);
    int st = QUIET(hx_checkpoint_peek(seed, &info));
    tap_ok(st == HX_OK && info.model.num_layers == 1 && info.model.hidden_size == 4 &&
           info.state.step == 3 && strstr(info.args, "hidden-size = 4\n") != NULL,
           "the fuzz seed checkpoint (L=1, C=4, step 3) is accepted (status %d)", st);
}

int main(void)
{
    tap_plan(20);
    snprintf(root, sizeof root, "/tmp/hx-ckpt-XXXXXX");
    if (mkdtemp(root) == NULL) {
        tap_skip_all("mkdtemp failed");
    }
    snprintf(dir, sizeof dir, "%s/run/save", root); /* two levels: mkdir -p */
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    if (hx_runtime_init(&ro) != HX_OK || hx_data_load_default(&data) != HX_OK) {
        return 1;
    }
    resume_is_exact();
    damaged_files();
    failed_saves();
    prestart_and_seed();
    hx_data_free(&data);
    hx_runtime_shutdown();
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tap_exit();
}
