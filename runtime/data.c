/* SPDX-License-Identifier: MIT */
/* runtime/data.c: the data formats, the train/validation split and in-order batching.
 * Layout: a file's bytes come from runtime/data_map.c (a regular file is mapped read-only, a
 * pipe or device read into memory up to HX_DATA_PIPE_MAX), and a dataset is a view (ids,
 * ntokens, id_bytes) into them: text is its own bytes (ids in [0, 256)); an llm.c token shard
 * is a 1024-byte header (magic, version, count) followed by count ids of 2 bytes (20240520
 * version 1) or 4 (20240520 version 2, 20240801 version 7), and its size is exactly
 * 1024 + width x count.  Loading validates the header and records the largest id; nothing is
 * copied or widened.  The split's two parts are views (offset, count) into the same ids; a
 * batch takes T+1 ids per sequence from the cursor, widened to int32, and advances by T,
 * wrapping before the end.  Test: tests/graphs/data_formats.c, tests/cli/data_input.sh. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/data.h"
#include "helix/error.h"
#include "runtime/data_map.h"

#define SHARD_HEADER_BYTES 1024 /* 256 int32 */

/* The shards llm.c writes: magic and version give the width of an id. */
static const struct shard_format {
    int32_t magic, version;
    int id_bytes;
} shard_formats[] = {
    { 20240520, 1, 2 }, /* GPT-2 ids (the dev/data scripts; llmc/dataloader.h reads these) */
    { 20240520, 2, 4 }, /* uint32 ids under the GPT-2 magic */
    { 20240801, 7, 4 }, /* Llama-3 ids (dev/data/data_common.py, model_desc "llama-3") */
};
#define NFORMATS (sizeof shard_formats / sizeof shard_formats[0])

static int32_t le32_at(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

static int is_shard_magic(int32_t magic)
{
    for (size_t i = 0; i < NFORMATS; i++) {
        if (shard_formats[i].magic == magic) {
            return 1;
        }
    }
    return 0;
}

/* The largest of n ids of the given width: one pass, which also reads a mapping's pages once. */
static uint32_t largest_id(const void *ids, size_t n, int id_bytes)
{
    uint32_t m = 0;
    if (id_bytes == 1) {
        const uint8_t *p = ids;
        for (size_t i = 0; i < n; i++) {
            m = p[i] > m ? p[i] : m;
        }
    } else if (id_bytes == 2) {
        const uint16_t *p = ids;
        for (size_t i = 0; i < n; i++) {
            m = p[i] > m ? p[i] : m;
        }
    } else {
        const uint32_t *p = ids;
        for (size_t i = 0; i < n; i++) {
            m = p[i] > m ? p[i] : m;
        }
    }
    return m;
}

/* d takes the map and views n ids of the given width starting at byte @p offset of it. */
static void own(struct hx_dataset *d, struct hx_data_map *m, size_t offset, size_t n,
                int id_bytes, const char *source)
{
    d->map = m;
    d->ids = m->bytes + offset;
    d->ntokens = n;
    d->id_bytes = id_bytes;
    d->max_id = largest_id(d->ids, n, id_bytes);
    d->cursor = 0;
    snprintf(d->source, sizeof d->source, "%s", source);
}

static int bytes_of(struct hx_dataset *d, struct hx_data_map *m, const char *path)
{
    if (m->size == 0) {
        return HX_ERR(HX_EINVAL, "data file '%s' is empty; give a text file with at least a "
                      "few sequences of text", path);
    }
    own(d, m, 0, m->size, 1, path);
    return HX_OK;
}

static int shard_of(struct hx_dataset *d, struct hx_data_map *m, const char *path)
{
    long long size = (long long)m->size;
    if (m->size < SHARD_HEADER_BYTES) {
        return HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, shorter than the %d-byte header of an "
                      "llm.c token shard; re-create it with llm.c's dev/data scripts", path, size,
                      SHARD_HEADER_BYTES);
    }
    int32_t magic = le32_at(m->bytes), version = le32_at(m->bytes + 4);
    int32_t count = le32_at(m->bytes + 8);
    const struct shard_format *f = NULL;
    for (size_t i = 0; i < NFORMATS; i++) {
        if (shard_formats[i].magic == magic && shard_formats[i].version == version) {
            f = &shard_formats[i];
        }
    }
    if (!is_shard_magic(magic)) {
        return HX_ERR(HX_EFORMAT, "'%s' has magic %d, expected 20240520 or 20240801 (an llm.c "
                      "token shard); give a shard or a text file to --data-path", path, magic);
    }
    if (f == NULL) {
        return HX_ERR(HX_EFORMAT, "'%s' is an llm.c token shard of magic %d and version %d; "
                      "the versions read are 1 (uint16 ids) and 2 (uint32 ids) of magic "
                      "20240520 and 7 (uint32 ids) of magic 20240801: re-create it with llm.c's "
                      "dev/data scripts", path, magic, version);
    }
    if (count < 1) {
        return HX_ERR(HX_EFORMAT, "'%s': the shard header gives %d tokens; a shard holds at "
                      "least one: re-create it", path, count);
    }
    long long want = SHARD_HEADER_BYTES + (long long)f->id_bytes * count;
    if (want != size) {
        return HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, but its header gives %d tokens, i.e. "
                      "%lld bytes (%d-byte header + %d per token); the shard is %s: re-create "
                      "or re-download it", path, size, count, want, SHARD_HEADER_BYTES,
                      f->id_bytes, size < want ? "truncated" : "followed by extra bytes");
    }
    own(d, m, SHARD_HEADER_BYTES, (size_t)count, f->id_bytes, path);
    return HX_OK;
}

enum format { SNIFF, BYTES, SHARD };

/* Open @p path once and read it as @p fmt; on failure d is empty and nothing is held. */
static int load(struct hx_dataset *d, const char *path, enum format fmt)
{
    memset(d, 0, sizeof *d);
    struct hx_data_map *m;
    int ret = hx_data_map_open(&m, path);
    if (ret != HX_OK) {
        return ret;
    }
    if (fmt == SNIFF) { /* from the bytes already read: a FIFO cannot be read twice */
        fmt = m->size >= 4 && is_shard_magic(le32_at(m->bytes)) ? SHARD : BYTES;
    }
    ret = fmt == SHARD ? shard_of(d, m, path) : bytes_of(d, m, path);
    if (ret != HX_OK) {
        hx_data_map_close(m);
        memset(d, 0, sizeof *d);
    }
    return ret;
}

int hx_data_load(struct hx_dataset *d, const char *path)
{
    return load(d, path, SNIFF);
}

int hx_data_load_bytes(struct hx_dataset *d, const char *path)
{
    return load(d, path, BYTES);
}

int hx_data_load_llmc_shard(struct hx_dataset *d, const char *path)
{
    return load(d, path, SHARD);
}

/* Megatron's --split: 1 to 3 comma-separated non-negative weights with a positive sum. */
static int parse_split(const char *split, double w[3])
{
    const char *p = split;
    int n = 0;
    w[0] = w[1] = w[2] = 0;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (n == 3) {
            return HX_ERR(HX_EINVAL, "--split '%s' has more than three weights; give "
                          "train,valid,test such as '949,50,1'", split);
        }
        if (end == p || errno != 0 || !isfinite(v) || v < 0) {
            size_t len = strcspn(p, ",");
            return HX_ERR(HX_EINVAL, "--split '%s': weight %d '%.*s' is not a non-negative "
                          "number; give up to three comma-separated weights train,valid,test "
                          "such as '949,50,1'", split, n + 1, (int)len, p);
        }
        w[n++] = v;
        if (*end == '\0') {
            break;
        }
        if (*end != ',') {
            return HX_ERR(HX_EINVAL, "--split '%s': unexpected '%c'; expected up to three "
                          "non-negative comma-separated weights such as '949,50,1'", split, *end);
        }
        p = end + 1;
    }
    if (!(w[0] + w[1] + w[2] > 0)) {
        return HX_ERR(HX_EINVAL, "--split '%s': the weights sum to 0; give a positive training "
                      "weight, e.g. '949,50,1'", split);
    }
    return HX_OK;
}

/* dst views n ids of src from position first; it owns nothing. */
static void view(struct hx_dataset *dst, const struct hx_dataset *src, size_t first, size_t n,
                 const char *what)
{
    memset(dst, 0, sizeof *dst);
    dst->ids = (const uint8_t *)src->ids + first * (size_t)src->id_bytes;
    dst->ntokens = n;
    dst->id_bytes = src->id_bytes;
    dst->max_id = src->max_id;
    snprintf(dst->source, sizeof dst->source, "%.*s (%s)", (int)(sizeof dst->source - 16),
             src->source, what);
}

int hx_data_split(const struct hx_dataset *all, const char *split, int T,
                  struct hx_dataset *train, struct hx_dataset *val)
{
    memset(train, 0, sizeof *train);
    memset(val, 0, sizeof *val);
    double w[3];
    int ret = parse_split(split, w);
    if (ret != HX_OK) {
        return ret;
    }
    /* boundaries floor(n * cumulative weight / sum); the test part is left unused */
    double sum = w[0] + w[1] + w[2], n = (double)all->ntokens;
    size_t ntrain = (size_t)floor(n * w[0] / sum);   /* exact for integer weights */
    size_t nval = (size_t)floor(n * (w[0] + w[1]) / sum);
    ntrain = ntrain > all->ntokens ? all->ntokens : ntrain;
    nval = (nval > all->ntokens ? all->ntokens : nval) - ntrain;
    size_t need = (size_t)T + 1;
    if (ntrain < need) {
        return HX_ERR(HX_EINVAL, "--split '%s' gives the training part %zu of the %zu tokens of "
                      "%s, fewer than one sequence of --seq-length %d plus its target; raise the "
                      "training weight or use more data", split, ntrain, all->ntokens,
                      all->source, T);
    }
    if (w[1] > 0 && nval < need) {
        return HX_ERR(HX_EINVAL, "--split '%s' gives the validation part %zu of the %zu tokens "
                      "of %s, fewer than one sequence of --seq-length %d plus its target (%zu); "
                      "raise the validation weight (it needs %.2g%% of the data), use more data, "
                      "or give it weight 0 to skip evaluation", split, nval, all->ntokens,
                      all->source, T, need, 100.0 * (double)need / n);
    }
    view(train, all, 0, ntrain, "train");
    view(val, all, ntrain, w[1] > 0 ? nval : 0, "valid");
    return HX_OK;
}

void hx_data_free(struct hx_dataset *d)
{
    hx_data_map_close(d->map);
    memset(d, 0, sizeof *d);
}

int hx_data_check(const struct hx_dataset *d, int T)
{
    if (d->ntokens < (size_t)T + 1) {
        return HX_ERR(HX_EINVAL, "%s has %zu tokens, fewer than one sequence of --seq-length %d "
                      "plus its target; use more data or a shorter --seq-length", d->source,
                      d->ntokens, T);
    }
    return HX_OK;
}

int hx_data_check_vocab(const struct hx_dataset *d, int vocab_size)
{
    if (d->ntokens == 0 || (int64_t)d->max_id < (int64_t)vocab_size) {
        return HX_OK;
    }
    size_t i = 0; /* the first id outside, which a user can find with a hex dump */
    while (i < d->ntokens && (int64_t)hx_data_id(d, i) < (int64_t)vocab_size) {
        i++;
    }
    if (i == d->ntokens) {
        return HX_OK; /* a view: the largest id of its set lies outside it */
    }
    const char *hint = d->id_bytes == 1   ? "; text is read as bytes, which 256 always fits"
                       : d->id_bytes == 2 ? "; GPT-2 tokens need --vocab-size 50257"
                                          : "";
    return HX_ERR(HX_EINVAL, "%s: token %zu is id %lu, but --vocab-size is %d; use "
                  "--vocab-size %lu or more (the largest id in the data is %lu%s)", d->source,
                  i, (unsigned long)hx_data_id(d, i), vocab_size,
                  (unsigned long)d->max_id + 1, (unsigned long)d->max_id, hint);
}

/* out[k] = id(first + k) for k < n, widened to int32 */
static void widen(const struct hx_dataset *d, size_t first, size_t n, int32_t *out)
{
    if (d->id_bytes == 1) {
        const uint8_t *p = (const uint8_t *)d->ids + first;
        for (size_t k = 0; k < n; k++) {
            out[k] = p[k];
        }
    } else if (d->id_bytes == 2) {
        const uint16_t *p = (const uint16_t *)d->ids + first;
        for (size_t k = 0; k < n; k++) {
            out[k] = p[k];
        }
    } else {
        const uint32_t *p = (const uint32_t *)d->ids + first;
        for (size_t k = 0; k < n; k++) {
            out[k] = (int32_t)p[k];
        }
    }
}

void hx_data_next_batch(struct hx_dataset *d, int nseq, int T, int32_t *tokens,
                        int32_t *targets)
{
    for (int s = 0; s < nseq; s++) {
        if (d->cursor + (size_t)T + 1 > d->ntokens) {
            d->cursor = 0;
        }
        widen(d, d->cursor, (size_t)T, tokens + (size_t)s * T);
        widen(d, d->cursor + 1, (size_t)T, targets + (size_t)s * T);
        d->cursor += (size_t)T;
    }
}
