/* SPDX-License-Identifier: MIT */
/* tests/graphs/ckpt_writers.c: the writing half of helix/checkpoint.h.  Saves started one
 * after the other without waiting are each the state at their start (the fork is the
 * snapshot), land in order, and keep the newest two; a fifth start waits for the oldest of
 * four in flight.  A wait ends early on the caller's flag, the writer going on; a writer's
 * failure is reported by the next wait, the directory left as it was.  Claiming a directory:
 * its lock refuses a second claim naming the pid, another run's checkpoints are refused unless
 * the claim resumes from the directory or a file in it.  Model: L=1, C=32, T=16, V=256. */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helix/helix.h"
#include "tap.h"
#include "testutil.h"

static char root[64], msg[4096];
static struct hx_dataset data;

static int saved_stderr;
static int quiet_end(int status)
{
    capture_end(saved_stderr, msg, sizeof msg);
    tap_diag_lines(msg);
    return status;
}
#define QUIET(call) (saved_stderr = capture_begin(root), quiet_end(call))

static hx_gpt_t model(void)
{
    struct hx_gpt_config c = { .vocab_size = 256, .num_layers = 1, .num_heads = 4,
                               .hidden_size = 32, .seq_len = 16, .micro_batch_size = 2,
                               .num_micro_batches = 1, .attn_block = 8 };
    struct hx_optim_config o;
    hx_gpt_t m;
    hx_optim_config_default(&o, 10);
    if (hx_gpt_build(&m, &c, &o) != HX_OK || hx_gpt_realize(m) != HX_OK) {
        exit(1);
    }
    hx_gpt_init_params(m, 5);
    return m;
}

static int step(hx_gpt_t m, int s)
{
    int32_t tok[2 * 16], tgt[2 * 16];
    struct hx_step_result r;
    hx_data_next_batch(&data, 2, 16, tok, tgt);
    int ret = hx_gpt_set_batch(m, tok, tgt);
    return ret == HX_OK ? hx_gpt_step(m, s, &r) : ret;
}

static void info_of(struct hx_checkpoint_info *info, hx_gpt_t m, int64_t s)
{
    memset(info, 0, sizeof *info);
    info->model = *hx_gpt_config_of(m);
    hx_optim_config_default(&info->optim, 10);
    info->state = (struct hx_train_state){ .step = s, .train_cursor = data.cursor, .seed = 5 };
    snprintf(info->args, sizeof info->args, "num-layers = 1\nhidden-size = 32\n");
}

/* 1 when checkpoint @p path holds exactly the state @p want of @p n floats. */
static int holds(const char *path, const float *want, size_t n)
{
    hx_gpt_t m = model();
    struct hx_checkpoint_info info;
    size_t got_n;
    int ok = hx_checkpoint_load(path, m, &info) == HX_OK;
    float *got = ok ? model_state(m, &got_n) : NULL;
    ok = ok && got_n == n && memcmp(got, want, n * sizeof *want) == 0;
    free(got);
    hx_gpt_destroy(m);
    return ok;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Five saves started between steps, never waited for until the end. */
static void in_flight(const char *dir)
{
    hx_gpt_t m = model();
    struct hx_checkpoint_info info;
    float *state[6] = { NULL };
    size_t n = 0;
    int ok = 1;
    for (int s = 1; s <= 5 && ok; s++) {
        ok = step(m, s - 1) == HX_OK;
        state[s] = model_state(m, &n);
        info_of(&info, m, s);
        ok = ok && hx_checkpoint_save_start(dir, m, &info) == HX_OK;
    }
    int waited = hx_checkpoint_save_wait(m, NULL, NULL);
    char names[512], p4[256], p5[256];
    dir_listing(dir, names, sizeof names);
    tap_ok(ok && waited == HX_OK && strcmp(names, "ckpt-00000004.bin ckpt-00000005.bin latest ") == 0,
           "5 saves started between steps, then one wait: all succeed, in order, the newest two "
           "kept ('%s')", names);
    snprintf(p4, sizeof p4, "%s/ckpt-00000004.bin", dir);
    snprintf(p5, sizeof p5, "%s/ckpt-00000005.bin", dir);
    tap_ok(holds(p4, state[4], n) && holds(p5, state[5], n) && holds(dir, state[5], n) &&
               memcmp(state[4], state[5], n * sizeof(float)) != 0,
           "each holds the state at its start, though the model trained on meanwhile");
    for (int s = 1; s <= 5; s++) {
        free(state[s]);
    }
    hx_gpt_destroy(m);
}

/* A writer blocked (its .tmp is a FIFO nobody reads yet): the flag ends the wait at once. */
static void interrupted(const char *dir)
{
    hx_gpt_t m = model();
    struct hx_checkpoint_info info;
    char fifo[256], before[512], after[512];
    snprintf(fifo, sizeof fifo, "%s/ckpt-00000009.bin.tmp", dir);
    dir_listing(dir, before, sizeof before);
    mkfifo(fifo, 0644);
    info_of(&info, m, 9);
    volatile sig_atomic_t stop = 1;
    long pending = 0;
    int started = hx_checkpoint_save_start(dir, m, &info);
    double t0 = now_s();
    int waited = hx_checkpoint_save_wait(m, &stop, &pending);
    double dt = now_s() - t0;
    tap_ok(started == HX_OK && waited == HX_OK && pending > 0 && dt < 5,
           "a wait with the stop flag set returns at once (%.3f s), naming the writer still "
           "running (pid %ld)", dt, pending);
    FILE *f = fopen(fifo, "rb"); /* let it write: the fsync of a FIFO fails, EINVAL */
    while (f != NULL && fgetc(f) != EOF) {
    }
    if (f != NULL) {
        fclose(f);
    }
    int st = QUIET(hx_checkpoint_save_wait(m, NULL, &pending));
    dir_listing(dir, after, sizeof after);
    tap_ok(st == HX_EIO && strstr(msg, "checkpoint of step 9") != NULL &&
               strstr(msg, fifo) != NULL && pending == 0 && strcmp(before, after) == 0,
           "its failure is reported by the next wait (HX_EIO naming step and file), the "
           "directory as it was ('%s')", after);
    hx_gpt_destroy(m);
}

static void claims(const char *dir)
{
    char fresh[128], other[128], file[256], lock[256], pid[32];
    snprintf(fresh, sizeof fresh, "%s/fresh/sub", root);
    snprintf(other, sizeof other, "%s/other", root);
    snprintf(file, sizeof file, "%s/ckpt-00000005.bin", dir);
    snprintf(lock, sizeof lock, "%s/fresh/sub/.lock", root);
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    int st = hx_checkpoint_claim(fresh, NULL);
    FILE *f = fopen(lock, "r");
    long held = 0;
    int got = f != NULL && fscanf(f, "%ld", &held) == 1;
    if (f != NULL) {
        fclose(f);
    }
    tap_ok(st == HX_OK && got && held == (long)getpid(),
           "a new directory is claimed: created, its .lock holds this pid");
    st = QUIET(hx_checkpoint_claim(fresh, NULL));
    tap_ok(st == HX_EINVAL && strstr(msg, "in use") != NULL && strstr(msg, pid) != NULL,
           "a second claim while the lock is held: HX_EINVAL, 'in use', naming the %s", pid);
    st = QUIET(hx_checkpoint_claim(dir, NULL));
    tap_ok(st == HX_EINVAL && strstr(msg, "another run") != NULL &&
               strstr(msg, "ckpt-00000005.bin") != NULL && strstr(msg, "--load") != NULL,
           "a directory holding checkpoints, no resume: HX_EINVAL naming 'latest' and --load");
    mkdir(other, 0755);
    st = QUIET(hx_checkpoint_claim(dir, other));
    int from_dir = hx_checkpoint_claim(dir, dir);
    int again = QUIET(hx_checkpoint_claim(dir, file)); /* held: by this process */
    hx_checkpoint_release();
    int from_file = hx_checkpoint_claim(dir, file);
    hx_checkpoint_release();
    tap_ok(st == HX_EINVAL && from_dir == HX_OK && again == HX_EINVAL && from_file == HX_OK,
           "resuming from elsewhere is refused; from the directory or a file in it, claimed "
           "(once released, again)");
    char name[64];
    tap_ok(hx_checkpoint_latest(dir, name, sizeof name) == 1 &&
               strcmp(name, "ckpt-00000005.bin") == 0 &&
               hx_checkpoint_latest(other, name, sizeof name) == 0,
           "hx_checkpoint_latest: the name, or 0 without 'latest'");
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)s, (void)flag, (void)f;
    return remove(p);
}

int main(void)
{
    tap_plan(9);
    snprintf(root, sizeof root, "/tmp/hx-writers-XXXXXX");
    if (mkdtemp(root) == NULL) {
        tap_skip_all("mkdtemp failed");
    }
    struct hx_runtime_opts ro;
    hx_runtime_opts_init(&ro);
    ro.workers = 2;
    if (hx_runtime_init(&ro) != HX_OK || hx_data_load_default(&data) != HX_OK) {
        return 1;
    }
    char dir[128];
    snprintf(dir, sizeof dir, "%s/run", root);
    in_flight(dir);
    interrupted(dir);
    claims(dir);
    hx_data_free(&data);
    hx_runtime_shutdown();
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tap_exit();
}
