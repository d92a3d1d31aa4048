/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint_load.c: reading the training state (helix/checkpoint.h), format in
 * runtime/ckpt_format.h.  A file counts only when all of it is there and the checksum agrees,
 * so peek and load read it through before trusting any of it; load verifies in a first pass
 * and writes the model only in a second.  Test: tests/graphs/checkpoint.c */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/checkpoint.h"
#include "helix/error.h"
#include "helix/tensor.h"
#include "runtime/ckpt_format.h"

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
        r->hash = hx_ckpt_fnv1a(r->hash, dst, (size_t)k);
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
    r.hash = hx_ckpt_fnv1a(r.hash, head, sizeof head);
    hx_ckpt_code_header(head, 1, h, &info->model, &info->optim, &info->state);
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
    if ((r = hx_ckpt_read_latest(path, name, sizeof name, &err)) == 0) {
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
