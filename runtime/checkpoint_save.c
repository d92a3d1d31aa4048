/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint_save.c: writing the training state (helix/checkpoint.h), format in
 * runtime/ckpt_format.h.  Rank 0 writes ckpt-<step>.bin.tmp while every rank takes part in
 * the gathers of the shards; fsync, rename, fsync the directory, then `latest` the same way,
 * and only then prune: a crash or a full disk at any point leaves the last good checkpoint.
 * Test: tests/graphs/checkpoint.c */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helix/checkpoint.h"
#include "helix/comm.h"
#include "helix/error.h"
#include "helix/tensor.h"
#include "runtime/ckpt_format.h"

/* The fix for a failed write, by errno: a full disk and the file size limit are the common ones. */
static const char *io_hint(int err)
{
    switch (err) {
    case ENOSPC: return "disk full; free space or choose another --save directory";
    case EFBIG: return "file too large for the file size limit (ulimit -f) or the file system; "
                       "raise the limit or choose another --save directory";
    case EACCES: case EPERM: case EROFS: return "no permission; choose a writable --save directory";
    default: return "check the --save directory";
    }
}

#define SAVE_ERR(what, path, err)                                                               \
    HX_ERR(HX_EIO, "%s '%s' failed: %s (%s); the previous checkpoint and 'latest' are kept",    \
           (what), (path), strerror(err), io_hint(err))

struct out {
    FILE *f;
    uint64_t hash;
    int err; /* first errno; later writes are skipped */
};

static void out_bytes(struct out *o, const void *p, size_t n)
{
    if (o->f != NULL && o->err == 0 && n > 0) {
        o->hash = hx_ckpt_fnv1a(o->hash, p, n);
        errno = 0;
        if (fwrite(p, 1, n, o->f) != n) {
            o->err = errno != 0 ? errno : EIO;
        }
    }
}

/* One state of parameter i, whole (serial layout) whatever the mesh: every rank takes part
 * in the gather, only the writer (f != NULL) writes. */
static int out_state(struct out *o, hx_gpt_t m, int i, enum hx_state_kind k)
{
    int rows, cols;
    hx_gpt_param_shape(m, i, &rows, &cols);
    size_t n = (size_t)rows * (size_t)cols;
    float *buf = malloc(n * sizeof(float));
    if (buf == NULL) {
        return HX_ERR(HX_ENOMEM, "%zu bytes to save %s", n * sizeof(float),
                      hx_gpt_param_name(m, i));
    }
    int ret = hx_gpt_gather_state(m, i, k, buf);
    if (ret == HX_OK) {
        out_bytes(o, buf, n * sizeof(float));
    }
    free(buf);
    return ret;
}

/* Write the checkpoint to @p path (rank 0), or only take part in the gathers (path NULL). */
static int write_ckpt(const char *path, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    struct hdr h = { .version = CKPT_VERSION, .ntensors = (uint32_t)hx_gpt_num_param_tensors(m),
                     .args_len = (uint32_t)strlen(info->args) };
    h.header_bytes = FIXED_HEADER + h.args_len;
    for (int i = 0; i < (int)h.ntensors; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        h.payload_bytes += RECORD_HEAD + 3 * sizeof(float) * (uint64_t)rows * (uint64_t)cols;
    }
    struct hx_checkpoint_info copy = *info; /* code_header takes the fields by pointer */
    unsigned char head[FIXED_HEADER];
    memcpy(head, MAGIC, 8);
    hx_ckpt_code_header(head, 0, &h, &copy.model, &copy.optim, &copy.state);

    FILE *f = path != NULL ? fopen(path, "wb") : NULL;
    if (path != NULL && f == NULL) {
        return SAVE_ERR("creating checkpoint", path, errno);
    }
    struct out o = { f, FNV_OFFSET, 0 };
    out_bytes(&o, head, sizeof head);
    out_bytes(&o, info->args, h.args_len);
    int ret = HX_OK;
    /* a failed write does not stop the loop: the other ranks are in the same gathers */
    for (int i = 0; i < (int)h.ntensors && ret == HX_OK; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        const char *name = hx_gpt_param_name(m, i);
        unsigned char rh[RECORD_HEAD] = { 0 };
        memcpy(rh, name, strnlen(name, HX_NAME_MAX - 1));
        memcpy(rh + HX_NAME_MAX, &rows, 4);
        memcpy(rh + HX_NAME_MAX + 4, &cols, 4);
        out_bytes(&o, rh, sizeof rh);
        ret = out_state(&o, m, i, HX_STATE_PARAM);
        ret = ret == HX_OK ? out_state(&o, m, i, HX_STATE_ADAM_M) : ret;
        ret = ret == HX_OK ? out_state(&o, m, i, HX_STATE_ADAM_V) : ret;
    }
    if (f == NULL) {
        return ret;
    }
    unsigned char tr[TRAILER];
    memcpy(tr, &o.hash, 8);
    memcpy(tr + 8, END_MARK, 8);
    out_bytes(&o, tr, sizeof tr);
    /* stdio may hold the failing bytes until the flush; only fsync proves they are on disk */
    if (o.err == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0)) {
        o.err = errno;
    }
    if (fclose(f) != 0 && o.err == 0) {
        o.err = errno;
    }
    if (ret == HX_OK && o.err != 0) {
        ret = SAVE_ERR("writing checkpoint", path, o.err);
    }
    return ret;
}

/* A directory's entries are durable only once the directory itself is synced.  Some file
 * systems cannot sync a directory (EINVAL); there the rename is as durable as it gets. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        return errno;
    }
    int err = fsync(fd) != 0 && errno != EINVAL ? errno : 0;
    close(fd);
    return err;
}

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

/* Delete checkpoints (and .tmp leftovers) but the new one and the one `latest` named before. */
static void prune(const char *dir, const char *keep_new, const char *keep_prev)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        int tmp;
        if (hx_ckpt_is_name(e->d_name, &tmp) && strcmp(e->d_name, keep_new) != 0 &&
            strcmp(e->d_name, keep_prev) != 0 &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path &&
            unlink(path) != 0) {
            hx_warn("could not delete old checkpoint '%s': %s", path, strerror(errno));
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

static int write_latest(const char *dir, const char *name)
{
    char tmp[PATH_MAX], path[PATH_MAX], line[64];
    snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
    snprintf(path, sizeof path, "%s/latest", dir);
    int n = snprintf(line, sizeof line, "%s\n", name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        return SAVE_ERR("creating", tmp, errno);
    }
    int err = write(fd, line, (size_t)n) != n ? (errno ? errno : EIO) : 0;
    err = err == 0 && fsync(fd) != 0 ? errno : err;
    err = close(fd) != 0 && err == 0 ? errno : err;
    err = err == 0 && rename(tmp, path) != 0 ? errno : err;
    if (err != 0) {
        unlink(tmp);
        return SAVE_ERR("writing", path, err);
    }
    return HX_OK;
}

/* Rank 0's status, known to every rank (a distributed save must end the same everywhere). */
static int agree(hx_gpt_t m, int ret)
{
    if (hx_gpt_mesh(m)->world_size > 1 &&
        hx_comm_host_bcast(HX_GROUP_WORLD, &ret, sizeof ret, 0) != HX_OK) {
        return HX_ERUNTIME;
    }
    return ret;
}

static int save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    /* rank 0 writes; the others only take part in the gathers of the shards */
    int writer = hx_gpt_mesh(m)->world_rank == 0;
    int ret = writer ? make_dir(dir) : HX_OK;
    char prev[256] = "", name[64], tmp[PATH_MAX], path[PATH_MAX];
    int err = 0, have = 0;
    if (ret == HX_OK && writer) {
        have = hx_ckpt_read_latest(dir, prev, sizeof prev, &err);
        if (have <= 0) {
            prev[0] = '\0';
        }
        snprintf(name, sizeof name, "ckpt-%08lld.bin", (long long)info->state.step);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
            ret = HX_ERR(HX_EIO, "checkpoint directory '%s' is too long a path", dir);
        }
    }
    if ((ret = agree(m, ret)) != HX_OK) {
        return ret;
    }
    ret = write_ckpt(writer ? tmp : NULL, m, info);
    if (!writer || ret != HX_OK) {
        if (writer) {
            unlink(tmp);
        }
        return agree(m, ret);
    }
    /* rename is atomic: a same-step file that `latest` names is replaced, never half-written */
    if (rename(tmp, path) != 0) {
        ret = SAVE_ERR("renaming the checkpoint to", path, errno);
        unlink(tmp);
        return agree(m, ret);
    }
    if ((err = sync_dir(dir)) != 0 || (ret = write_latest(dir, name)) != HX_OK ||
        (err = sync_dir(dir)) != 0) {
        ret = ret != HX_OK ? ret : SAVE_ERR("syncing checkpoint directory", dir, err);
        if (strcmp(name, prev) != 0) {
            unlink(path); /* `latest` still names prev: put the directory back as it was */
        }
        return agree(m, ret);
    }
    if (have >= 0) {
        prune(dir, name, prev);
    } else {
        hx_warn("'%s/latest' was unreadable before this save; old checkpoints are kept", dir);
    }
    return agree(m, HX_OK);
}

int hx_checkpoint_save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    if (strnlen(info->args, sizeof info->args) == sizeof info->args || info->state.step < 0) {
        return HX_ERR(HX_EINVAL, "checkpoint info for '%s': args not NUL-terminated or step "
                      "%lld < 0 (a helix bug)", dir, (long long)info->state.step);
    }
    /* past a file size limit, write() fails with EFBIG instead of the process being killed */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, &old);
    int ret = save(dir, m, info);
    sigaction(SIGXFSZ, &old, NULL);
    return ret;
}
