/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint_save.c: writing the training state (helix/checkpoint.h), format in
 * runtime/ckpt_format.h.
 *
 * A save has two halves.  Start: rank 0 makes the file's bytes ready in memory, then forks a
 * writer process that calls setsid, so that neither the end of rank 0 nor a kill of its
 * process group (mpirun's, one second after its SIGTERM) stops it.  When rank 0 holds every
 * state whole (no tp, pp or sharding), fork's copy-on-write is the snapshot: the writer
 * reads the tensors themselves and the start costs a fork.  Otherwise every rank takes part
 * in the gathers and rank 0 copies the states into one buffer (12 bytes a parameter).  The
 * writer writes ckpt-<step>.bin.tmp with its checksum, fsyncs, renames, fsyncs the directory,
 * replaces `latest` the same way, prunes, reports on a pipe and exits: a crash or a full disk
 * at any point leaves the last good checkpoint.  Wait: rank 0 waits for its writers while
 * every rank joins an all-reduce each HEARTBEAT period, so the other ranks' --comm-timeout
 * watchdog sees progress and still catches a rank 0 that died; a caller's flag (a stop
 * signal) ends the wait early, the writer going on by itself.  Writers run one after the
 * other: each waits for the previous one to exit (the read end of its "alive" pipe) before
 * it touches the directory.  A directory is claimed once per run (flock on DIR/.lock, held
 * by the run and inherited by its writers), so two runs never write to one directory.
 *
 *   rank 0:  [gather ->] image -> fork --------------------------------> wait (poll report)
 *   writer:                       setsid, [wait prev] tmp, fsync, rename, latest, prune, report
 *   rank k:  [gather] ---------------> agree -------> heartbeat all-reduces until done
 *
 * The writer (runtime/ckpt_writer.c) runs in a child of a multithreaded process, where another
 * thread may have held any lock at fork: it only makes system calls and formats into its own
 * buffers (no FILE streams, no malloc, no opendir).  This file builds the image, runs the
 * collective halves and claims directories.  Test: tests/graphs/checkpoint.c,
 * tests/cli/save_dir.sh, tests/mpi/sigterm.sh, tests/mpi/watchdog.sh (a slow write). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helix/checkpoint.h"
#include "helix/comm.h"
#include "helix/error.h"
#include "helix/tensor.h"
#include "runtime/ckpt_format.h"
#include "runtime/ckpt_writer.h"

#define HEARTBEAT_MAX_S 0.25 /* rank 0 joins an all-reduce at least this often while waiting */

/* ---- the collective halves ---- */

/* mkdir -p, then make sure the result is a directory we can write. */
static int make_dir(const char *dir)
{
    char p[PATH_MAX - 32]; /* room for "/ckpt-<step>.bin.tmp" */
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' is empty or too long; give --save a "
                      "shorter directory path", dir);
    }
    memcpy(p, dir, n + 1);
    for (char *s = p + 1; s <= p + n; s++) {
        if (*s == '/' || *s == '\0') {
            char was = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                return HX_ERR(HX_EIO, "cannot create checkpoint directory '%s' (at '%s'): %s; "
                              "give --save a directory path you can write", dir, p,
                              strerror(errno));
            }
            *s = was;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' exists but is not a directory; give "
                      "--save a directory path", dir);
    }
    if (access(dir, W_OK | X_OK) != 0) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' is not writable: %s; fix its "
                      "permissions or choose another --save directory", dir, strerror(errno));
    }
    return HX_OK;
}

/* Rank 0's status, known to every rank (a distributed save must end the same everywhere). */
static int agree(hx_model_t m, int ret)
{
    if (hx_model_mesh(m)->world_size > 1 &&
        hx_comm_host_bcast(HX_GROUP_WORLD, &ret, sizeof ret, 0) != HX_OK) {
        return HX_ERUNTIME;
    }
    return ret;
}

/* Rank 0 holds every state whole, in the serial layout, in its own memory (no tensor
 * parallelism, no pipeline, no sharding): the writer then reads them from its copy of rank
 * 0's memory (fork's copy-on-write is the snapshot), and nothing is copied before the fork. */
static int held_whole(hx_model_t m)
{
    const struct hx_mesh *ms = hx_model_mesh(m);
    return ms->tp == 1 && ms->pp == 1 && ms->sp.s == 1 && ms->sos.s == 1;
}

/* The file but its trailer, as segments of @p img (rank 0; the other ranks only take part in
 * the gathers, img NULL).  Held whole: the segments point at the tensors, each acquired for
 * reading (end_reads releases them after the fork); otherwise every state is gathered into
 * img->own.  A failed allocation does not stop the gathers: the other ranks are in them. */
static int build_image(hx_model_t m, const struct hx_checkpoint_info *info, struct hx_ckpt_image *img)
{
    int whole = held_whole(m), nt = hx_model_num_param_tensors(m);
    if (img == NULL && whole) {
        return HX_OK; /* nothing to gather */
    }
    struct hdr h = { .version = hx_ckpt_version_for(&info->model), .ntensors = (uint32_t)nt,
                     .args_len = (uint32_t)strlen(info->args) };
    int fixed = hx_ckpt_fixed_header(h.version);
    h.header_bytes = (uint32_t)fixed + h.args_len;
    size_t largest = 0;
    for (int i = 0; i < nt; i++) {
        int rows, cols;
        hx_model_param_shape(m, i, &rows, &cols);
        h.payload_bytes += RECORD_HEAD + 3 * sizeof(float) * (uint64_t)rows * (uint64_t)cols;
        largest = (size_t)rows * (size_t)cols > largest ? (size_t)rows * (size_t)cols : largest;
    }
    size_t own = h.header_bytes + (whole ? (size_t)nt * RECORD_HEAD : h.payload_bytes);
    float *buf = whole ? NULL : malloc(largest * sizeof(float)); /* aligned, unlike the file */
    int ret = whole || buf != NULL ? HX_OK : HX_ERR(HX_ENOMEM, "%zu bytes to gather a tensor",
                                                    largest * sizeof(float));
    unsigned char *p = NULL;
    if (img != NULL) {
        img->nsegs = 0;
        img->segs = malloc(sizeof *img->segs * (size_t)(1 + 4 * nt));
        p = img->own = malloc(own);
        if ((img->segs == NULL || p == NULL) && ret == HX_OK) {
            ret = HX_ERR(HX_ENOMEM, "%zu bytes for the checkpoint in memory%s", own,
                         whole ? "" : " (the whole model state, 12 bytes a parameter, on "
                                      "rank 0)");
        }
        if (ret != HX_OK) {
            p = NULL;
        }
    }
    if (p != NULL) {
        struct hx_checkpoint_info copy = *info; /* code_header takes the fields by pointer */
        memcpy(p, MAGIC, 8);
        hx_ckpt_code_header(p, 0, &h, &copy.model, &copy.optim, &copy.state);
        if (h.version >= 2) {
            hx_ckpt_code_llama(p, 0, &copy.model);
        }
        memcpy(p + fixed, info->args, h.args_len);
        img->segs[img->nsegs++] = (struct hx_ckpt_seg){ p, h.header_bytes };
        p += h.header_bytes;
    }
    for (int i = 0; i < nt; i++) {
        int rows, cols;
        hx_model_param_shape(m, i, &rows, &cols);
        size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
        if (p != NULL) {
            const char *name = hx_model_param_name(m, i);
            memset(p, 0, RECORD_HEAD);
            memcpy(p, name, strnlen(name, HX_NAME_MAX - 1));
            memcpy(p + HX_NAME_MAX, &rows, 4);
            memcpy(p + HX_NAME_MAX + 4, &cols, 4);
            img->segs[img->nsegs++] = (struct hx_ckpt_seg){ p, RECORD_HEAD };
            p += RECORD_HEAD;
        }
        for (int k = HX_STATE_PARAM; k <= HX_STATE_ADAM_V; k++) {
            hx_tensor_t t = whole ? hx_model_state_tensor(m, i, (enum hx_state_kind)k) : NULL;
            if (whole && p != NULL) {
                HX_ASSERT(t != NULL && hx_tensor_bytes(t) == bytes && t->dtype == HX_F32,
                          "state %d of %s is not held whole on rank 0", k, t ? t->name : "?");
                int r = hx_tensor_begin_access(t, 'r');
                ret = ret == HX_OK ? r : ret;
                img->segs[img->nsegs++] = (struct hx_ckpt_seg){ r == HX_OK ? t->data : NULL,
                                                        r == HX_OK ? bytes : 0 };
                continue;
            }
            int r = buf != NULL ? hx_model_gather_state(m, i, (enum hx_state_kind)k, buf)
                                : HX_ENOMEM;
            ret = ret == HX_OK ? r : ret;
            if (p != NULL && r == HX_OK) {
                memcpy(p, buf, bytes);
                img->segs[img->nsegs++] = (struct hx_ckpt_seg){ p, bytes };
            }
            p = p != NULL ? p + bytes : NULL;
        }
    }
    free(buf);
    return ret;
}

/* Release what build_image acquired and allocated. */
static void end_image(hx_model_t m, struct hx_ckpt_image *img)
{
    for (int i = 0; img->segs != NULL && held_whole(m) && i < hx_model_num_param_tensors(m); i++) {
        for (int k = HX_STATE_PARAM; k <= HX_STATE_ADAM_V; k++) {
            const struct hx_ckpt_seg *g = &img->segs[1 + 4 * i + 1 + k];
            if (1 + 4 * i + 1 + k < img->nsegs && g->p != NULL) {
                hx_tensor_end_access(hx_model_state_tensor(m, i, (enum hx_state_kind)k));
            }
        }
    }
    free(img->segs);
    free(img->own);
}

int hx_checkpoint_save_start(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    if (strnlen(info->args, sizeof info->args) == sizeof info->args || info->state.step < 0) {
        return HX_ERR(HX_EINVAL, "checkpoint info for '%s': args not NUL-terminated or step "
                      "%lld < 0 (a helix bug)", dir, (long long)info->state.step);
    }
    int writer = hx_gpt_mesh(m)->world_rank == 0;
    int ret = writer ? make_dir(dir) : HX_OK;
    struct hx_ckpt_image img = { .dir = dir, .segs = NULL, .own = NULL };
    snprintf(img.name, sizeof img.name, "ckpt-%08lld.bin", (long long)info->state.step);
    if (ret == HX_OK && writer && hx_ckpt_writers_full()) {
        ret = hx_ckpt_writer_reap_oldest(); /* only a caller that never waits gets here */
    }
    if ((ret = agree(hx_gpt_model(m), ret)) != HX_OK) {
        return ret;
    }
    ret = build_image(hx_gpt_model(m), info, writer ? &img : NULL);
    if (writer) {
        int r = hx_ckpt_writers_reap(0); /* a failure of an earlier save, reported now */
        ret = ret == HX_OK ? hx_ckpt_writer_spawn(&img, (long long)info->state.step) : ret;
        ret = ret == HX_OK ? r : ret;
        end_image(hx_gpt_model(m), &img); /* the writer has its own copy of the pages */
    }
    return agree(hx_gpt_model(m), ret);
}

int hx_checkpoint_save_wait(hx_gpt_t m, const volatile sig_atomic_t *interrupt, long *pending)
{
    const struct hx_mesh *ms = hx_gpt_mesh(m);
    int writer = ms->world_rank == 0, ret = HX_OK;
    double timeout = hx_comm_timeout();
    double beat = timeout > 0 && timeout / 4 < HEARTBEAT_MAX_S ? timeout / 4 : HEARTBEAT_MAX_S;
    for (;;) {
        if (writer) {
            int r = hx_ckpt_writers_reap(0);
            ret = ret == HX_OK ? r : ret;
        }
        /* busy (rank 0), interrupted (any rank), rank 0's status: one heartbeat */
        int v[3] = { writer ? hx_ckpt_writers_running() : 0, interrupt != NULL && *interrupt != 0,
                     writer ? -ret : 0 };
        if (ms->world_size > 1 &&
            hx_comm_host_allreduce(HX_GROUP_WORLD, v, 3, HX_I32, HX_MAX) != HX_OK) {
            return HX_ERUNTIME;
        }
        if (v[0] == 0 || v[1] != 0) {
            ret = -v[2];
            break;
        }
        if (writer) { /* until the oldest writer exits, or the next heartbeat is due */
            hx_ckpt_writer_wait_oldest((int)(beat * 1000));
        }
    }
    if (pending != NULL) {
        *pending = writer ? hx_ckpt_writer_newest_pid() : 0;
    }
    return ret;
}

int hx_checkpoint_save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    int ret = hx_checkpoint_save_start(dir, m, info);
    int wret = hx_checkpoint_save_wait(m, NULL, NULL); /* an earlier save's too */
    return ret != HX_OK ? ret : wret;
}

/* ---- claiming a directory for a run ---- */

/* @p resume (a --load path) is @p dir or a file in it: the run continues dir's checkpoints. */
static int resumes(const char *dir, const char *resume)
{
    struct stat d, r;
    if (resume == NULL || stat(dir, &d) != 0 || stat(resume, &r) != 0) {
        return 0;
    }
    if (!S_ISDIR(r.st_mode)) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", resume);
        char *slash = strrchr(parent, '/');
        if (slash == NULL) {
            snprintf(parent, sizeof parent, ".");
        } else {
            slash[slash == parent] = '\0'; /* "/ckpt.bin" -> "/" */
        }
        if (stat(parent, &r) != 0) {
            return 0;
        }
    }
    return d.st_dev == r.st_dev && d.st_ino == r.st_ino;
}

/* The first checkpoint name in @p dir (`latest`'s, else any ckpt-*.bin), or 0 if none. */
static int holds_checkpoints(const char *dir, char *name, size_t size)
{
    char path[PATH_MAX], latest[128];
    int have = hx_ckpt_latest_raw(dir, latest, sizeof latest), tmp;
    snprintf(path, sizeof path, "%s/latest", dir);
    if (have > 0) {
        snprintf(name, size, "'latest' names %s", latest);
        return 1;
    }
    if (have < 0 || access(path, F_OK) == 0) {
        snprintf(name, size, "a 'latest' file");
        return 1;
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (hx_ckpt_is_name(e->d_name, &tmp) && !tmp) {
            snprintf(name, size, "%s", e->d_name);
            closedir(d);
            return 1;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return 0;
}

int hx_checkpoint_claim(const char *dir, const char *resume)
{
    int ret = make_dir(dir);
    if (ret != HX_OK) {
        return ret;
    }
    char path[PATH_MAX], text[64] = "", name[256];
    snprintf(path, sizeof path, "%s/.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return HX_ERR(HX_EIO, "cannot create the lock file '%s': %s; give --save a directory "
                      "you can write", path, strerror(errno));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ssize_t n = err == EWOULDBLOCK ? pread(fd, text, sizeof text - 1, 0) : -1;
        close(fd);
        text[n > 0 ? n : 0] = '\0';
        long pid = atol(text);
        if (err != EWOULDBLOCK) {
            return HX_ERR(HX_EIO, "cannot lock '%s': %s; give --save a directory on a file "
                          "system with flock (a local disk)", path, strerror(err));
        }
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            return HX_ERR(HX_EINVAL, "--save directory '%s' is still being written by the "
                          "checkpoint writer of an earlier run (pid %ld, which has ended); "
                          "wait a few seconds for its last checkpoint to be complete, then "
                          "run again", dir, pid);
        }
        return HX_ERR(HX_EINVAL, "--save directory '%s' is in use by another helix run (pid "
                      "%ld holds '%s'); two runs cannot save to one directory: wait for it to "
                      "end, or choose another --save directory", dir, pid, path);
    }
    if (!resumes(dir, resume) && holds_checkpoints(dir, name, sizeof name)) {
        close(fd); /* unlocks */
        return HX_ERR(HX_EINVAL, "--save directory '%s' holds the checkpoints of another run "
                      "(%s) and this run would replace them; to continue that run add --load "
                      "%s, or choose a new --save directory", dir, name, dir);
    }
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        hx_warn("cannot write this run's pid into '%s': %s", path, strerror(errno));
    }
    hx_checkpoint_release(); /* a second claim in one process: the newer directory is its */
    hx_ckpt_writer_set_lock(fd);
    return HX_OK;
}

void hx_checkpoint_release(void)
{
    if (hx_ckpt_writer_lock() >= 0) {
        close(hx_ckpt_writer_lock()); /* writers in flight keep their copy, and the lock */
        hx_ckpt_writer_set_lock(-1);
    }
}

int hx_checkpoint_latest(const char *dir, char *name, size_t size)
{
    return hx_ckpt_latest_raw(dir, name, size);
}

