/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint.c: the training state in one self-checking file (helix/checkpoint.h).
 * Format 1, little-endian: header "HXCKPT\0\0", u32 version, u32 header_bytes, u64 payload_bytes,
 * u32 ntensors, hx_gpt_config (10 i32, f32 ln_eps), hx_optim_config (f32 lr min_lr, i32 decay
 * warmup decay_iters, f32 beta1 beta2 eps weight_decay clip), hx_train_state (i64 step, u64
 * cursors, rng[4], seed), u32 args_len + args; payload per parameter (hx_gpt_param order):
 * name[48] NUL-padded, i32 rows, cols, f32 param, adam_m, adam_v; trailer u64 FNV-1a 64 of
 * every byte before it, "HXCKEND\0".  A file counts only when all of it is there and the
 * checksum agrees, so peek and load read it through before trusting any of it; load verifies
 * in a first pass and writes the model only in a second.  Test: tests/graphs/checkpoint.c */
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

#define MAGIC "HXCKPT\0\0"
#define END_MARK "HXCKEND\0"
#define CKPT_VERSION 1u
#define LLMC_MAGIC 20240326u
#define FIXED_HEADER 180 /* bytes before the args text */
#define RECORD_HEAD (HX_NAME_MAX + 8)
#define TRAILER 16
#define FNV_OFFSET 0xcbf29ce484222325ULL

/* Tensors go to and from the file as the host stores them: that is the file's little-endian
 * order on every machine helix runs on (x86-64, aarch64). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoints need a little-endian host");
_Static_assert(sizeof(int) == 4 && sizeof(float) == 4, "header fields are 32-bit");

struct hdr {
    uint32_t version, header_bytes, ntensors, args_len;
    uint64_t payload_bytes;
};

struct rec {
    char name[HX_NAME_MAX];
    int rows, cols;
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* Every header field in file order: 4 bytes (int32, uint32, float32) or 8 (int64, uint64).
 * One table both encodes and decodes, so the writer and the reader cannot disagree. */
static void code_header(unsigned char *p, int decode, struct hdr *h, struct hx_gpt_config *g,
                        struct hx_optim_config *o, struct hx_train_state *s)
{
    struct { void *v; int n; } f[] = {
        { &h->version, 4 }, { &h->header_bytes, 4 }, { &h->payload_bytes, 8 },
        { &h->ntensors, 4 }, { &g->vocab_size, 4 }, { &g->max_seq_len, 4 },
        { &g->num_layers, 4 }, { &g->num_heads, 4 }, { &g->hidden_size, 4 },
        { &g->seq_len, 4 }, { &g->micro_batch_size, 4 }, { &g->num_micro_batches, 4 },
        { &g->tile_seqs, 4 }, { &g->attn_block, 4 }, { &g->ln_eps, 4 }, { &o->lr, 4 },
        { &o->min_lr, 4 }, { &o->decay_style, 4 }, { &o->warmup_iters, 4 },
        { &o->decay_iters, 4 }, { &o->beta1, 4 }, { &o->beta2, 4 }, { &o->eps, 4 },
        { &o->weight_decay, 4 }, { &o->clip_grad, 4 }, { &s->step, 8 },
        { &s->train_cursor, 8 }, { &s->val_cursor, 8 }, { &s->rng[0], 8 }, { &s->rng[1], 8 },
        { &s->rng[2], 8 }, { &s->rng[3], 8 }, { &s->seed, 8 }, { &h->args_len, 4 },
    };
    size_t at = 8; /* after the magic */
    for (size_t i = 0; i < sizeof f / sizeof f[0]; at += (size_t)f[i++].n) {
        memcpy(decode ? f[i].v : p + at, decode ? p + at : f[i].v, (size_t)f[i].n);
    }
    HX_ASSERT(at == FIXED_HEADER, "header is %zu bytes, expected %d", at, FIXED_HEADER);
}

/* ---- writing ----------------------------------------------------------------------------- */

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
        o->hash = fnv1a(o->hash, p, n);
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
    code_header(head, 0, &h, &copy.model, &copy.optim, &copy.state);

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

/* ckpt-<digits>.bin; *tmp is set for ".bin.tmp", a save killed before its rename. */
static int is_ckpt_name(const char *s, int *tmp)
{
    size_t d = strncmp(s, "ckpt-", 5) == 0 ? strspn(s + 5, "0123456789") : 0;
    *tmp = d > 0 && strcmp(s + 5 + d, ".bin.tmp") == 0;
    return d > 0 && (strcmp(s + 5 + d, ".bin") == 0 || *tmp);
}

/* The file named by dir/latest: 1 found, 0 no `latest`, -1 unreadable or not a ckpt name. */
static int read_latest(const char *dir, char *name, size_t size, int *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    *err = f == NULL ? errno : 0;
    if (f == NULL) {
        return *err == ENOENT ? 0 : -1;
    }
    int tmp, ok = fgets(name, (int)size, f) != NULL;
    fclose(f);
    name[ok ? strcspn(name, "\n") : 0] = '\0';
    return ok && is_ckpt_name(name, &tmp) && !tmp ? 1 : -1;
}

/* Delete checkpoints (and .tmp leftovers) but the new one and the one `latest` named before. */
static void prune(const char *dir, const char *keep_new, const char *keep_prev)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        int tmp;
        if (is_ckpt_name(e->d_name, &tmp) && strcmp(e->d_name, keep_new) != 0 &&
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
        have = read_latest(dir, prev, sizeof prev, &err);
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

/* ---- reading ----------------------------------------------------------------------------- */

struct in {
    FILE *f;
    const char *path;
    uint64_t hash;
};

static int open_in(struct in *r, const char *path)
{
    *r = (struct in){ fopen(path, "rb"), path, FNV_OFFSET };
    if (r->f == NULL) {
        return HX_ERR(HX_EIO, "cannot open checkpoint '%s': %s; give a directory written by "
                      "--save or a ckpt-*.bin file in it", path, strerror(errno));
    }
    return HX_OK;
}

/* Read @p n bytes into @p p, or through a scratch buffer when p is NULL, hashing them.  The
 * size was checked against the header first, so a short read means the file changed. */
static int in_bytes(struct in *r, void *p, uint64_t n)
{
    unsigned char buf[65536];
    for (uint64_t k; n > 0; n -= k) {
        k = p != NULL || n < sizeof buf ? n : sizeof buf;
        unsigned char *dst = p != NULL ? p : buf;
        if (fread(dst, 1, (size_t)k, r->f) != k) {
            int err = ferror(r->f) ? errno : 0;
            return HX_ERR(HX_EIO, "reading checkpoint '%s' failed: %s; was it replaced while "
                          "being read?", r->path, err ? strerror(err) : "unexpected end of file");
        }
        r->hash = fnv1a(r->hash, dst, (size_t)k);
    }
    return HX_OK;
}

/* 1 when the trailer holds the hash of everything before it. */
static int in_trailer(struct in *r, int *ret)
{
    unsigned char tr[TRAILER];
    uint64_t want = r->hash;
    *ret = in_bytes(r, tr, sizeof tr);
    return *ret == HX_OK && memcmp(tr, &want, 8) == 0 && memcmp(tr + 8, END_MARK, 8) == 0;
}

/* Read @p path through: its header into @p info and @p h, each record's name and shape into
 * *recs (when given, malloc'd), and the checksum.  Nothing is trusted before that last check. */
static int verify(const char *path, struct hx_checkpoint_info *info, struct hdr *h,
                  struct rec **recs)
{
    struct in r;
    struct stat st;
    unsigned char head[FIXED_HEADER] = { 0 };
    struct rec *rs = NULL;
    uint32_t first;
    memset(info, 0, sizeof *info);
    int ret = open_in(&r, path);
    if (ret != HX_OK) {
        return ret;
    }
    size_t got = fread(head, 1, sizeof head, r.f);
    memcpy(&first, head, 4);
    if (fstat(fileno(r.f), &st) != 0) {
        ret = HX_ERR(HX_EIO, "cannot stat checkpoint '%s': %s", path, strerror(errno));
    } else if (got >= 4 && first == LLMC_MAGIC) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is an llm.c checkpoint (magic 20240326), not a helix one; "
                     "import its weights with --load-llmc (hx_llmc_import)", path);
    } else if (memcmp(head, MAGIC, got < 8 ? got : 8) != 0) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is not a helix checkpoint (bad magic); give a directory "
                     "written by --save or a ckpt-*.bin file in it", path);
    } else if (got < sizeof head) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is truncated: %zu bytes, shorter than the %d-byte header; "
                     "the save was interrupted, use the previous checkpoint", path, got,
                     FIXED_HEADER);
    }
    if (ret != HX_OK) {
        goto out;
    }
    r.hash = fnv1a(r.hash, head, sizeof head);
    code_header(head, 1, h, &info->model, &info->optim, &info->state);
    uint64_t size = (uint64_t)h->header_bytes + h->payload_bytes + TRAILER;
    if (h->version != CKPT_VERSION) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has checkpoint format version %u but this helix reads "
                     "version %u; load it with the helix that wrote it", path, h->version,
                     CKPT_VERSION);
    } else if (h->args_len >= sizeof info->args || h->header_bytes != FIXED_HEADER + h->args_len ||
               h->payload_bytes > (uint64_t)1 << 56 ||
               (uint64_t)h->ntensors * RECORD_HEAD > h->payload_bytes) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is corrupted: impossible header sizes (args %u, payload "
                     "%llu, %u tensors); use the previous checkpoint", path, h->args_len,
                     (unsigned long long)h->payload_bytes, h->ntensors);
    } else if ((uint64_t)st.st_size != size) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is %s: %lld bytes but its header says %llu; the save was "
                     "interrupted or the copy is incomplete, use the previous checkpoint", path,
                     (uint64_t)st.st_size < size ? "truncated" : "corrupted",
                     (long long)st.st_size, (unsigned long long)size);
    } else if ((rs = calloc(h->ntensors + 1, sizeof *rs)) == NULL) {
        ret = HX_ERR(HX_ENOMEM, "checkpoint '%s': table of %u tensors", path, h->ntensors);
    }
    ret = ret == HX_OK ? in_bytes(&r, info->args, h->args_len) : ret;
    uint64_t used = 0;
    for (uint32_t i = 0; i < h->ntensors && ret == HX_OK && used <= h->payload_bytes; i++) {
        unsigned char rh[RECORD_HEAD];
        if ((ret = in_bytes(&r, rh, sizeof rh)) == HX_OK) {
            memcpy(rs[i].name, rh, HX_NAME_MAX - 1);
            memcpy(&rs[i].rows, rh + HX_NAME_MAX, 4);
            memcpy(&rs[i].cols, rh + HX_NAME_MAX + 4, 4);
            uint64_t e = (uint64_t)(rs[i].rows > 0 ? rs[i].rows : 0) *
                         (uint64_t)(rs[i].cols > 0 ? rs[i].cols : 0);
            uint64_t data = e <= h->payload_bytes / 12 ? 12 * e : h->payload_bytes + 1;
            used += RECORD_HEAD + data; /* param, adam_m, adam_v; no overflow past 2^57 */
            ret = used <= h->payload_bytes ? in_bytes(&r, NULL, data) : HX_OK;
        }
    }
    if (ret == HX_OK && (used != h->payload_bytes || !in_trailer(&r, &ret)) && ret == HX_OK) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is corrupted (checksum or record sizes do not match); "
                     "use the previous checkpoint in its directory", path);
    }
out:
    fclose(r.f);
    if (ret == HX_OK && recs != NULL) {
        *recs = rs;
    } else {
        free(rs);
    }
    return ret;
}

/* A directory means the file its `latest` names. */
static int resolve(const char *path, char *file, size_t size)
{
    struct stat st;
    char name[256];
    int err, r;
    if (stat(path, &st) != 0) {
        return HX_ERR(HX_EIO, "no checkpoint at '%s': %s; give a directory written by --save or "
                      "a ckpt-*.bin file", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(file, size, "%s", path);
        return HX_OK;
    }
    if ((r = read_latest(path, name, sizeof name, &err)) == 0) {
        return HX_ERR(HX_EIO, "no checkpoint in %s (no 'latest' file); train with --save %s "
                      "first", path, path);
    }
    if (r < 0) {
        return HX_ERR(HX_EIO, "'%s/latest' is unreadable or does not name a ckpt-*.bin file "
                      "(%s); give one of the ckpt-*.bin files in it instead", path,
                      err ? strerror(err) : "bad contents");
    }
    snprintf(file, size, "%s/%s", path, name);
    return HX_OK;
}

int hx_checkpoint_peek(const char *path, struct hx_checkpoint_info *info)
{
    char file[PATH_MAX];
    struct hdr h;
    int ret = resolve(path, file, sizeof file);
    return ret == HX_OK ? verify(file, info, &h, NULL) : ret;
}

/* The fields that fix the tensors and the math; batch and tiling may change on a resume. */
static int check_model(const char *file, const struct hx_gpt_config *ck, hx_gpt_t m,
                       const struct rec *rs, int n)
{
    const struct hx_gpt_config *mo = hx_gpt_config_of(m);
    const struct { const char *flag; int ck, mo; } f[] = {
        { "--num-layers", ck->num_layers, mo->num_layers },
        { "--hidden-size", ck->hidden_size, mo->hidden_size },
        { "--num-attention-heads", ck->num_heads, mo->num_heads },
        { "--max-position-embeddings", ck->max_seq_len ? ck->max_seq_len : ck->seq_len,
          mo->max_seq_len ? mo->max_seq_len : mo->seq_len },
        { "--vocab-size", ck->vocab_size, mo->vocab_size },
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].ck != f[i].mo) {
            return HX_ERR(HX_EINVAL, "checkpoint '%s' has %s %d but the model has %d; build the "
                          "model from the checkpoint's settings", file, f[i].flag, f[i].ck,
                          f[i].mo);
        }
    }
    float e1 = ck->ln_eps ? ck->ln_eps : 1e-5f, e2 = mo->ln_eps ? mo->ln_eps : 1e-5f;
    if (e1 != e2) {
        return HX_ERR(HX_EINVAL, "checkpoint '%s' has LayerNorm epsilon %g but the model has %g; "
                      "build the model from the checkpoint's settings", file, (double)e1,
                      (double)e2);
    }
    for (int i = 0; i < n || i < hx_gpt_num_param_tensors(m); i++) {
        int have = i < hx_gpt_num_param_tensors(m), rows = 0, cols = 0;
        const char *name = have ? hx_gpt_param_name(m, i) : "missing";
        if (have) {
            hx_gpt_param_shape(m, i, &rows, &cols);
        }
        if (i >= n || !have || strcmp(rs[i].name, name) != 0 || rs[i].rows != rows ||
            rs[i].cols != cols) {
            return HX_ERR(HX_EINVAL, "checkpoint '%s': tensor %d is %s (%d x %d) but the model's "
                          "is %s (%d x %d); it was written by an incompatible helix", file, i,
                          i < n ? rs[i].name : "missing", i < n ? rs[i].rows : 0,
                          i < n ? rs[i].cols : 0, name, rows, cols);
        }
    }
    return HX_OK;
}

/* One state, whole, into this rank's shard of it. */
static int in_state(struct in *r, hx_gpt_t m, int i, enum hx_state_kind k)
{
    int rows, cols;
    hx_gpt_param_shape(m, i, &rows, &cols);
    size_t n = (size_t)rows * (size_t)cols;
    float *buf = malloc(n * sizeof(float));
    int ret = buf != NULL ? in_bytes(r, buf, n * sizeof(float))
                          : HX_ERR(HX_ENOMEM, "%zu bytes to load %s", n * sizeof(float),
                                   hx_gpt_param_name(m, i));
    ret = ret == HX_OK ? hx_gpt_scatter_state(m, i, k, buf) : ret;
    free(buf);
    return ret;
}

/* Second pass, after verify(): straight into the tensors, checksummed again in case the file
 * was replaced in between. */
static int copy_tensors(const char *file, hx_gpt_t m, const struct hdr *h)
{
    struct in r;
    int ret = open_in(&r, file);
    if (ret != HX_OK) {
        return ret;
    }
    ret = in_bytes(&r, NULL, h->header_bytes);
    for (int i = 0; i < (int)h->ntensors && ret == HX_OK; i++) {
        ret = in_bytes(&r, NULL, RECORD_HEAD);
        ret = ret == HX_OK ? in_state(&r, m, i, HX_STATE_PARAM) : ret;
        ret = ret == HX_OK ? in_state(&r, m, i, HX_STATE_ADAM_M) : ret;
        ret = ret == HX_OK ? in_state(&r, m, i, HX_STATE_ADAM_V) : ret;
    }
    if (ret == HX_OK && !in_trailer(&r, &ret) && ret == HX_OK) {
        ret = HX_ERR(HX_EFORMAT, "'%s' changed while it was being loaded; the model is "
                     "incomplete, load again", file);
    }
    fclose(r.f);
    return ret;
}

int hx_checkpoint_load(const char *path, hx_gpt_t m, struct hx_checkpoint_info *info)
{
    struct hx_checkpoint_info scratch; /* when the caller passes none */
    char file[PATH_MAX];
    struct hdr h;
    struct rec *rs = NULL;
    info = info != NULL ? info : &scratch;
    int ret = resolve(path, file, sizeof file);
    ret = ret == HX_OK ? verify(file, info, &h, &rs) : ret;
    ret = ret == HX_OK ? check_model(file, &info->model, m, rs, (int)h.ntensors) : ret;
    ret = ret == HX_OK ? copy_tensors(file, m, &h) : ret;
    free(rs);
    return ret;
}
