/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint_load.c: reading the training state (helix/checkpoint.h), format in
 * runtime/ckpt_format.h.  Nothing a file says is trusted before it is checked, and nothing is
 * allocated from what it says: verify() reads the file through with one fixed buffer and
 * checks, in order, its size against the header's, every header field against the ranges
 * helix's flags allow, the records' count and total size against the model the header
 * describes, the settings text, each record's name and shape, and the checksum; a value that
 * is not finite (or a negative Adam second moment) is reported once the checksum holds, naming
 * the tensor and the element.  Load verifies in a first pass and writes the model only in a
 * second.  A checksum is no defence against a crafted file (anyone can recompute it): the
 * field checks are.  Tests: tests/graphs/checkpoint.c, tests/cli/bad_checkpoint.sh,
 * tests/fuzz/checkpoint.c */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/checkpoint.h"
#include "helix/error.h"
#include "helix/tensor.h"
#include "runtime/ckpt_format.h"

/* The fix for a file that fails a check: it was damaged, altered, or written by something
 * else, and the directory holds the previous checkpoint. */
#define USE_PREVIOUS "the file is damaged or was not written by helix: use the previous " \
                     "checkpoint in its directory"
/* Token positions are below 2^48 in any data helix can read (a cursor is an offset in it). */
#define MAX_CURSOR (1ULL << 48)

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

/* ---- the header ------------------------------------------------------------------------ */

/* Rows of the position embedding (0 in a config means seq_len). */
static int pos_rows(const struct hx_gpt_config *g)
{
    return g->max_seq_len ? g->max_seq_len : g->seq_len;
}

/* Every field of the header against what helix writes: the range of the flag that sets it
 * (tools/train_args.c), the rules hx_gpt_config_check applies between fields, and the records
 * the model it describes has (their number and total size, which the file's size bounds).
 * Returns HX_OK or HX_EFORMAT naming the first field that fails, with its value. */
static int check_header(const char *file, const struct hdr *h,
                        const struct hx_checkpoint_info *info)
{
    const struct hx_gpt_config *g = &info->model;
    const struct hx_optim_config *o = &info->optim;
    const struct hx_train_state *s = &info->state;
    const struct { const char *name; long long v, lo, hi; } ints[] = {
        { "vocab_size", g->vocab_size, 2, 1 << 20 },
        { "max_seq_len", g->max_seq_len, 0, 65536 },
        { "num_layers", g->num_layers, 1, 1024 },
        { "num_heads", g->num_heads, 1, 1024 },
        { "hidden_size", g->hidden_size, 1, 65536 },
        { "seq_len", g->seq_len, 1, 65536 },
        { "micro_batch_size", g->micro_batch_size, 1, 65536 },
        { "num_micro_batches", g->num_micro_batches, 1, 1 << 20 },
        { "tile_seqs", g->tile_seqs, 0, 65536 },
        { "attn_block", g->attn_block, 0, 65536 },
        { "normalization", g->normalization, HX_NORM_LAYERNORM, HX_NORM_RMSNORM },
        { "swiglu", g->swiglu, 0, 1 },
        { "ffn_hidden_size", g->ffn_hidden_size, 0, 1 << 20 },
        { "position_embedding", g->position_embedding, HX_POS_LEARNED, HX_POS_ROPE },
        { "num_query_groups", g->num_query_groups, 0, 1024 },
        { "untie_embeddings", g->untie_embeddings, 0, 1 },
        { "disable_bias", g->disable_bias, 0, 1 },
        { "decay_style", o->decay_style, HX_LR_COSINE, HX_LR_CONSTANT },
        { "warmup_iters", o->warmup_iters, 0, 1 << 30 },
        { "decay_iters", o->decay_iters, 0, 1 << 30 },
        { "step", s->step, 0, 1 << 30 },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (ints[i].v < ints[i].lo || ints[i].v > ints[i].hi) {
            return HX_ERR(HX_EFORMAT, "checkpoint '%s': header field %s is %lld, outside "
                          "%lld..%lld; " USE_PREVIOUS, file, ints[i].name, ints[i].v,
                          ints[i].lo, ints[i].hi);
        }
    }
    const struct { const char *name; uint64_t v, hi; } uints[] = {
        { "train_cursor", s->train_cursor, MAX_CURSOR },
        { "val_cursor", s->val_cursor, MAX_CURSOR },
        { "seed", s->seed, 2147483647 },
    };
    for (size_t i = 0; i < sizeof uints / sizeof uints[0]; i++) {
        if (uints[i].v > uints[i].hi) {
            return HX_ERR(HX_EFORMAT, "checkpoint '%s': header field %s is %llu, above %llu; "
                          USE_PREVIOUS, file, uints[i].name, (unsigned long long)uints[i].v,
                          (unsigned long long)uints[i].hi);
        }
    }
    /* compared as floats: the flags store (float) of a value checked in double */
    const struct { const char *name; float v, lo, hi; } floats[] = {
        { "ln_eps", g->ln_eps, 0, 1 }, { "rotary_base", g->rotary_base, 0, 1e9f },
        { "lr", o->lr, 0, 10 }, { "min_lr", o->min_lr, 0, 10 },
        { "beta1", o->beta1, 0, 0.999999f }, { "beta2", o->beta2, 0, 0.999999f },
        { "eps", o->eps, 1e-30f, 1 }, { "weight_decay", o->weight_decay, 0, 10 },
        { "clip_grad", o->clip_grad, 0, 1e6f },
    };
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        if (!(floats[i].v >= floats[i].lo && floats[i].v <= floats[i].hi)) { /* NaN too */
            return HX_ERR(HX_EFORMAT, "checkpoint '%s': header field %s is %g, outside %g..%g; "
                          USE_PREVIOUS, file, floats[i].name, (double)floats[i].v,
                          (double)floats[i].lo, (double)floats[i].hi);
        }
    }
    long long rows = (long long)g->seq_len * g->micro_batch_size;
    int groups = g->num_query_groups ? g->num_query_groups : g->num_heads;
    const char *rule = g->hidden_size % g->num_heads != 0 ? "hidden_size is not a multiple of "
                                                            "num_heads"
                       : g->num_heads % groups != 0 ? "num_query_groups does not divide num_heads"
                       : g->seq_len > pos_rows(g) ? "seq_len exceeds max_seq_len"
                       : (long long)g->micro_batch_size * g->num_micro_batches > 1 << 20
                           ? "micro_batch_size x num_micro_batches exceeds 2^20 sequences"
                       : rows * g->vocab_size > 1LL << 31 || rows * 4 * g->hidden_size > 1LL << 31
                           ? "a micro-batch's logits exceed 2^31 elements"
                       : o->min_lr > o->lr ? "min_lr is above lr"
                                           : NULL;
    if (rule != NULL) {
        return HX_ERR(HX_EFORMAT, "checkpoint '%s': header fields disagree: %s (vocab_size %d, "
                      "max_seq_len %d, num_heads %d, hidden_size %d, seq_len %d, "
                      "micro_batch_size %d, num_micro_batches %d, lr %g, min_lr %g); "
                      USE_PREVIOUS, file, rule, g->vocab_size, g->max_seq_len, g->num_heads,
                      g->hidden_size, g->seq_len, g->micro_batch_size, g->num_micro_batches,
                      (double)o->lr, (double)o->min_lr);
    }
    /* the records this model has: their number and total size (< 2^50: the ranges above) */
    int n = hx_ckpt_layout(g, 0, NULL);
    uint64_t payload = 0;
    for (int i = 0; i < n; i++) {
        struct rec e;
        hx_ckpt_layout(g, i, &e);
        payload += RECORD_HEAD + 3 * sizeof(float) * (uint64_t)e.rows * (uint64_t)e.cols;
    }
    if (h->ntensors != (uint32_t)n || h->payload_bytes != payload) {
        return HX_ERR(HX_EFORMAT, "checkpoint '%s': its header's model (vocab_size %d, "
                      "max_seq_len %d, num_layers %d, hidden_size %d) has %d tensors in %llu "
                      "bytes, but header fields ntensors and payload_bytes say %u in %llu; "
                      USE_PREVIOUS, file, g->vocab_size, pos_rows(g), g->num_layers,
                      g->hidden_size, n, (unsigned long long)payload, h->ntensors,
                      (unsigned long long)h->payload_bytes);
    }
    /* a file in a save directory is named after its step */
    const char *base = strrchr(file, '/') != NULL ? strrchr(file, '/') + 1 : file;
    int tmp;
    if (hx_ckpt_is_name(base, &tmp) && !tmp && strtoll(base + 5, NULL, 10) != s->step) {
        return HX_ERR(HX_EFORMAT, "checkpoint '%s': header field step is %lld but the file is "
                      "named after step %lld; " USE_PREVIOUS, file, (long long)s->step,
                      strtoll(base + 5, NULL, 10));
    }
    return HX_OK;
}

/* ---- the settings text ------------------------------------------------------------------ */

/* A flag name is [a-z][a-z0-9-]*: may @p c be its character @p at? */
static int key_char(unsigned char c, size_t at)
{
    return (c >= 'a' && c <= 'z') || (at > 0 && ((c >= '0' && c <= '9') || c == '-'));
}

/* The settings are flags_write's "key = value\n" lines: a key of lower-case letters, digits
 * and dashes, a value without control characters (the writer quotes and escapes those, so a
 * terminal never receives one from a file); and where a line states the model's shape, it is
 * the header's (the model is built from these settings, so a file whose settings name a
 * bigger model than its tensors hold is refused here, before anything is built). */
static int check_args(const char *file, const char *args, size_t len,
                      const struct hx_gpt_config *g)
{
    const struct { const char *key; long long have; } shape[] = {
        { "vocab-size", g->vocab_size }, { "num-layers", g->num_layers },
        { "num-attention-heads", g->num_heads }, { "hidden-size", g->hidden_size },
        { "seq-length", g->seq_len }, { "micro-batch-size", g->micro_batch_size },
        { "max-position-embeddings", pos_rows(g) },
        { "global-batch-size", (long long)g->micro_batch_size * g->num_micro_batches },
    };
    const unsigned char *p = (const unsigned char *)args, *end = p + len;
    for (int line = 1; p < end; line++) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t key = 0;
        while (p + key < end && key_char(p[key], key)) {
            key++;
        }
        const unsigned char *v = p + key + 3, *bad = NULL;
        if (nl == NULL || key == 0 || key > 63 || v > nl || memcmp(p + key, " = ", 3) != 0) {
            bad = p;
        }
        for (; bad == NULL && v < nl; v++) {
            bad = *v < 0x20 || *v == 0x7f ? v : NULL;
        }
        if (bad != NULL) {
            return HX_ERR(HX_EFORMAT, "checkpoint '%s': settings line %d is not a 'key = value' "
                          "line without control characters (byte %ld of the settings is 0x%02x); "
                          USE_PREVIOUS,
                          file, line, (long)(bad - (const unsigned char *)args),
                          bad < end ? *bad : 0);
        }
        for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
            if (strlen(shape[i].key) != key || memcmp(p, shape[i].key, key) != 0) {
                continue;
            }
            char value[32] = "", *stop;
            size_t vl = (size_t)(nl - (p + key + 3));
            memcpy(value, p + key + 3, vl < sizeof value - 1 ? vl : sizeof value - 1);
            errno = 0;
            long long x = strtoll(value, &stop, 10);
            /* 0 positions means seq-length; a global batch of 0, one micro-batch per replica */
            int zero_ok = strcmp(shape[i].key, "global-batch-size") == 0 ||
                          strcmp(shape[i].key, "max-position-embeddings") == 0;
            if (vl == 0 || vl >= sizeof value || *stop != '\0' || errno != 0 ||
                (x != shape[i].have && !(x == 0 && zero_ok))) {
                return HX_ERR(HX_EFORMAT, "checkpoint '%s': its settings say %s = %s but its "
                              "header and tensors have %lld; " USE_PREVIOUS, file,
                              shape[i].key, vl < sizeof value ? value : "(too long)",
                              shape[i].have);
            }
        }
        p = nl + 1;
    }
    return HX_OK;
}

/* ---- the records ------------------------------------------------------------------------ */

/* The first value that may not be loaded: a parameter or Adam first moment that is not
 * finite, an Adam second moment that is NaN or negative.  A second moment of +inf is what
 * AdamW keeps once a gradient's square overflows (a diverging run saves it with finite
 * parameters): its updates are m / inf = 0, so such a checkpoint still resumes and samples. */
struct bad_value {
    int found, tensor, state;
    uint64_t element;
    float value;
};

/* Read @p n floats of state @p k of record @p i, hashing them, and note the first bad one. */
static int in_floats(struct in *r, uint64_t n, int i, int k, struct bad_value *bad)
{
    float buf[16384];
    for (uint64_t at = 0, c; at < n; at += c) {
        c = n - at < sizeof buf / sizeof buf[0] ? n - at : sizeof buf / sizeof buf[0];
        int ret = in_bytes(r, buf, c * sizeof(float));
        if (ret != HX_OK) {
            return ret;
        }
        for (uint64_t j = 0; j < c && !bad->found; j++) {
            int ok = k == HX_STATE_ADAM_V ? buf[j] >= 0 : isfinite(buf[j]); /* NaN fails */
            if (!ok) {
                *bad = (struct bad_value){ 1, i, k, at + j, buf[j] };
            }
        }
    }
    return HX_OK;
}

/* @p s with anything but printable ASCII shown as '?', for messages about bytes of a file. */
static const char *shown(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < size; i++) {
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    }
    out[i] = '\0';
    return out;
}

/* Each record is the one the header's model has at its place (same name, same shape), and
 * its three states are read through. */
static int in_records(struct in *r, const struct hx_gpt_config *g, struct bad_value *bad)
{
    int n = hx_ckpt_layout(g, 0, NULL), ret = HX_OK;
    for (int i = 0; i < n && ret == HX_OK; i++) {
        unsigned char rh[RECORD_HEAD], want[RECORD_HEAD] = { 0 };
        struct rec e, got = { { 0 }, 0, 0 };
        hx_ckpt_layout(g, i, &e);
        memcpy(want, e.name, strlen(e.name));
        memcpy(want + HX_NAME_MAX, &e.rows, 4);
        memcpy(want + HX_NAME_MAX + 4, &e.cols, 4);
        if ((ret = in_bytes(r, rh, sizeof rh)) != HX_OK) {
            break;
        }
        if (memcmp(rh, want, sizeof rh) != 0) {
            char name[HX_NAME_MAX];
            memcpy(got.name, rh, HX_NAME_MAX - 1);
            memcpy(&got.rows, rh + HX_NAME_MAX, 4);
            memcpy(&got.cols, rh + HX_NAME_MAX + 4, 4);
            return HX_ERR(HX_EFORMAT, "checkpoint '%s': tensor %d is '%s' (%d x %d) but its "
                          "header's model has %s (%d x %d) there; " USE_PREVIOUS, r->path, i,
                          shown(got.name, name, sizeof name), got.rows, got.cols, e.name, e.rows,
                          e.cols);
        }
        uint64_t numel = (uint64_t)e.rows * (uint64_t)e.cols;
        for (int k = HX_STATE_PARAM; k <= HX_STATE_ADAM_V && ret == HX_OK; k++) {
            ret = in_floats(r, numel, i, k, bad);
        }
    }
    return ret;
}

/* ---- the whole file --------------------------------------------------------------------- */

/* Read @p path through, checking everything described at the top; @p info and @p h get the
 * header.  Only a fixed buffer is used, whatever the file says. */
static int verify(const char *path, struct hx_checkpoint_info *info, struct hdr *h)
{
    struct in r;
    struct stat st;
    unsigned char head[FIXED_HEADER_V2] = { 0 };
    uint32_t first;
    struct bad_value bad = { 0 };
    memset(info, 0, sizeof *info);
    memset(h, 0, sizeof *h);
    int ret = open_in(&r, path);
    if (ret != HX_OK) {
        return ret;
    }
    size_t got = fread(head, 1, FIXED_HEADER, r.f);
    memcpy(&first, head, 4);
    if (fstat(fileno(r.f), &st) != 0) {
        ret = HX_ERR(HX_EIO, "cannot stat checkpoint '%s': %s", path, strerror(errno));
    } else if (got >= 4 && first == LLMC_MAGIC) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is an llm.c checkpoint (magic 20240326), not a helix one; "
                     "import its weights with --load-llmc (hx_llmc_import)", path);
    } else if (memcmp(head, MAGIC, got < 8 ? got : 8) != 0) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is not a helix checkpoint (bad magic); give a directory "
                     "written by --save or a ckpt-*.bin file in it", path);
    } else if (got < FIXED_HEADER) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is truncated: %zu bytes, shorter than the %d-byte header; "
                     "the save was interrupted, use the previous checkpoint", path, got,
                     FIXED_HEADER);
    }
    if (ret != HX_OK) {
        goto out;
    }
    r.hash = hx_ckpt_fnv1a(r.hash, head, FIXED_HEADER);
    hx_ckpt_code_header(head, 1, h, &info->model, &info->optim, &info->state);
    uint64_t size = (uint64_t)h->header_bytes + h->payload_bytes + TRAILER;
    uint32_t fixed = (uint32_t)hx_ckpt_fixed_header(h->version);
    if (h->version < 1 || h->version > CKPT_VERSION) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has checkpoint format version %u but this helix reads "
                     "versions 1 to %u; load it with the helix that wrote it", path, h->version,
                     CKPT_VERSION);
    } else if (fixed > FIXED_HEADER &&
               fread(head + FIXED_HEADER, 1, fixed - FIXED_HEADER, r.f) != fixed - FIXED_HEADER) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is truncated inside its %u-byte header; the save was "
                     "interrupted, use the previous checkpoint", path, fixed);
    } else if (h->args_len >= sizeof info->args || h->header_bytes != fixed + h->args_len ||
               h->payload_bytes > (uint64_t)1 << 56) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is corrupted: impossible header sizes (args %u, header "
                     "%u, payload %llu bytes); use the previous checkpoint", path, h->args_len,
                     h->header_bytes, (unsigned long long)h->payload_bytes);
    } else if ((uint64_t)st.st_size != size) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is %s: %lld bytes but its header says %llu; the save was "
                     "interrupted or the copy is incomplete, use the previous checkpoint", path,
                     (uint64_t)st.st_size < size ? "truncated" : "corrupted",
                     (long long)st.st_size, (unsigned long long)size);
    }
    if (ret == HX_OK && fixed > FIXED_HEADER) { /* format 2: the Llama settings */
        r.hash = hx_ckpt_fnv1a(r.hash, head + FIXED_HEADER, fixed - FIXED_HEADER);
        hx_ckpt_code_llama(head, 1, &info->model);
    }
    ret = ret == HX_OK ? check_header(path, h, info) : ret;
    ret = ret == HX_OK ? in_bytes(&r, info->args, h->args_len) : ret;
    ret = ret == HX_OK ? check_args(path, info->args, h->args_len, &info->model) : ret;
    ret = ret == HX_OK ? in_records(&r, &info->model, &bad) : ret;
    if (ret == HX_OK && !in_trailer(&r, &ret) && ret == HX_OK) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is corrupted (checksum or record sizes do not match); "
                     "use the previous checkpoint in its directory", path);
    }
    if (ret == HX_OK && bad.found) { /* a value the checksum vouches for: it was saved so */
        static const char *const state[] = { "parameter", "Adam first moment",
                                             "Adam second moment" };
        struct rec e;
        hx_ckpt_layout(&info->model, bad.tensor, &e);
        ret = HX_ERR(HX_EFORMAT, "checkpoint '%s': tensor %s (%d x %d), %s element %llu (row "
                     "%llu, column %llu) is %g%s; the model in it cannot be trained or sampled: "
                     "use an earlier checkpoint", path, e.name, e.rows, e.cols, state[bad.state],
                     (unsigned long long)bad.element,
                     (unsigned long long)(bad.element / (uint64_t)e.cols),
                     (unsigned long long)(bad.element % (uint64_t)e.cols), (double)bad.value,
                     bad.value < 0 && bad.state == HX_STATE_ADAM_V ? " (a second moment is never "
                                                                     "negative)" : "");
    }
out:
    fclose(r.f);
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
    return ret == HX_OK ? verify(file, info, &h) : ret;
}

/* The fields that fix the tensors and the math (batch and tiling may change on a resume),
 * then every parameter's name and shape against the checkpoint's records, which verify()
 * found to be exactly those of its header's model. */
int hx_checkpoint_check_model(const char *path, const struct hx_checkpoint_info *info,
                              hx_gpt_t m)
{
    const struct hx_gpt_config *ck = &info->model, *mo = hx_gpt_config_of(m);
    if (pos_rows(mo) != pos_rows(ck) && mo->max_seq_len == mo->seq_len &&
        mo->seq_len > pos_rows(ck)) { /* the model took its positions from --seq-length */
        return HX_ERR(HX_EINVAL, "checkpoint '%s' has %d positions (--max-position-embeddings) "
                      "but --seq-length is %d; use --seq-length %d or less", path, pos_rows(ck),
                      mo->seq_len, pos_rows(ck));
    }
    const struct { const char *flag; int ck, mo; } f[] = {
        { "--num-layers", ck->num_layers, mo->num_layers },
        { "--hidden-size", ck->hidden_size, mo->hidden_size },
        { "--num-attention-heads", ck->num_heads, mo->num_heads },
        { "--max-position-embeddings", pos_rows(ck), pos_rows(mo) },
        { "--vocab-size", ck->vocab_size, mo->vocab_size },
        /* the Llama settings (0 in a format-1 file: GPT-2's), defaults resolved */
        { "--normalization (0: LayerNorm, 1: RMSNorm)", ck->normalization, mo->normalization },
        { "--swiglu", ck->swiglu, mo->swiglu },
        { "--ffn-hidden-size", ck->ffn_hidden_size ? ck->ffn_hidden_size : 4 * ck->hidden_size,
          mo->ffn_hidden_size ? mo->ffn_hidden_size : 4 * mo->hidden_size },
        { "--position-embedding-type (0: learned_absolute, 1: rope)", ck->position_embedding,
          mo->position_embedding },
        { "--num-query-groups", ck->num_query_groups ? ck->num_query_groups : ck->num_heads,
          mo->num_query_groups ? mo->num_query_groups : mo->num_heads },
        { "--untie-embeddings-and-output-weights", ck->untie_embeddings, mo->untie_embeddings },
        { "--disable-bias-linear", ck->disable_bias, mo->disable_bias },
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].ck != f[i].mo) {
            return HX_ERR(HX_EINVAL, "checkpoint '%s' has %s %d but the model has %d; build the "
                          "model with %s %d, the checkpoint's", path, f[i].flag, f[i].ck,
                          f[i].mo, f[i].flag, f[i].ck);
        }
    }
    float e1 = ck->ln_eps ? ck->ln_eps : 1e-5f, e2 = mo->ln_eps ? mo->ln_eps : 1e-5f;
    if (e1 != e2) {
        return HX_ERR(HX_EINVAL, "checkpoint '%s' has LayerNorm epsilon %g but the model has %g "
                      "(helix train builds 1e-05); build the model with epsilon %g", path,
                      (double)e1, (double)e2, (double)e1);
    }
    float b1 = ck->rotary_base ? ck->rotary_base : 10000.0f;
    float b2 = mo->rotary_base ? mo->rotary_base : 10000.0f;
    if (ck->position_embedding == HX_POS_ROPE && b1 != b2) {
        return HX_ERR(HX_EINVAL, "checkpoint '%s' has --rotary-base %g but the model has %g; "
                      "build the model with --rotary-base %g", path, (double)b1, (double)b2,
                      (double)b1);
    }
    hx_model_t mm = hx_gpt_model(m);
    int n = hx_ckpt_layout(ck, 0, NULL), np = hx_model_num_param_tensors(mm);
    for (int i = 0; i < n || i < np; i++) {
        struct rec e = { "missing", 0, 0 };
        int rows = 0, cols = 0;
        const char *name = i < np ? hx_model_param_name(mm, i) : "missing";
        if (i < n) {
            hx_ckpt_layout(ck, i, &e);
        }
        if (i < np) {
            hx_model_param_shape(mm, i, &rows, &cols);
        }
        if (strcmp(e.name, name) != 0 || e.rows != rows || e.cols != cols) {
            return HX_ERR(HX_EINVAL, "checkpoint '%s': tensor %d is %s (%d x %d) but the model's "
                          "is %s (%d x %d); it was written by an incompatible helix", path, i,
                          e.name, e.rows, e.cols, name, rows, cols);
        }
    }
    return HX_OK;
}

/* One state, whole, into this rank's shard of it. */
static int in_state(struct in *r, hx_model_t m, int i, enum hx_state_kind k)
{
    int rows, cols;
    hx_model_param_shape(m, i, &rows, &cols);
    size_t n = (size_t)rows * (size_t)cols;
    float *buf = malloc(n * sizeof(float));
    int ret = buf != NULL ? in_bytes(r, buf, n * sizeof(float))
                          : HX_ERR(HX_ENOMEM, "%zu bytes to load %s", n * sizeof(float),
                                   hx_model_param_name(m, i));
    ret = ret == HX_OK ? hx_model_scatter_state(m, i, k, buf) : ret;
    free(buf);
    return ret;
}

/* Second pass, after verify() and the model check: straight into the tensors, checksummed
 * again in case the file was replaced in between. */
static int copy_tensors(const char *file, hx_model_t m, const struct hdr *h)
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
    info = info != NULL ? info : &scratch;
    int ret = resolve(path, file, sizeof file);
    ret = ret == HX_OK ? verify(file, info, &h) : ret;
    ret = ret == HX_OK ? hx_checkpoint_check_model(file, info, m) : ret;
    ret = ret == HX_OK ? copy_tensors(file, hx_gpt_model(m), &h) : ret;
    return ret;
}
