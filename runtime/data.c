/* SPDX-License-Identifier: MIT */
/* runtime/data.c: datasets and in-order batching.  A file is read whole: either its bytes
 * (ids in [0, 256)) or an llm.c token shard (1024-byte header, magic 20240520, version 1,
 * count; then count uint16 GPT-2 ids < 50257; size exactly 1024 + 2 count).  Split cuts one
 * stream into train and validation copies by Megatron weights.  Batches take T+1 tokens per
 * sequence from the cursor and advance by T, wrapping before the end.
 * Test: tests/graphs/data_formats.c. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/data.h"
#include "helix/error.h"

/* fopen for reading, reporting a failure with the path and the flag to check */
static FILE *open_data(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        HX_ERR(HX_EIO, "cannot open data file '%s': %s; check --data-path", path,
               strerror(errno));
    }
    return f;
}

int hx_data_load_bytes(struct hx_dataset *d, const char *path)
{
    memset(d, 0, sizeof *d);
    FILE *f = open_data(path);
    if (f == NULL) {
        return HX_EIO;
    }
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            unsigned char *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return HX_ERR(HX_ENOMEM, "reading '%s': out of memory at %zu bytes", path, n);
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(buf);
        return HX_ERR(HX_EIO, "reading data file '%s' failed: %s; give a readable text file",
                      path, strerror(err));
    }
    if (n == 0) {
        free(buf);
        return HX_ERR(HX_EINVAL, "data file '%s' is empty; give a text file with at least a "
                      "few sequences of text", path);
    }
    d->tokens = malloc(n * sizeof(int32_t));
    if (d->tokens == NULL) {
        free(buf);
        return HX_ERR(HX_ENOMEM, "data file '%s': %zu tokens", path, n);
    }
    for (size_t i = 0; i < n; i++) {
        d->tokens[i] = buf[i];
    }
    free(buf);
    d->ntokens = n;
    d->vocab_size = 256;
    snprintf(d->source, sizeof d->source, "%s", path);
    return HX_OK;
}

#define SHARD_MAGIC 20240520
#define SHARD_HEADER_INTS 256
#define GPT2_VOCAB 50257

int hx_data_load(struct hx_dataset *d, const char *path)
{
    memset(d, 0, sizeof *d);
    FILE *f = open_data(path);
    if (f == NULL) {
        return HX_EIO;
    }
    int32_t magic = 0;
    size_t got = fread(&magic, sizeof magic, 1, f);
    fclose(f);
    if (got == 1 && magic == SHARD_MAGIC) {
        return hx_data_load_llmc_shard(d, path);
    }
    return hx_data_load_bytes(d, path);
}

int hx_data_load_llmc_shard(struct hx_dataset *d, const char *path)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot open token shard '%s': %s; check --data-path", path,
                      strerror(errno));
    }
    struct stat st;
    int32_t h[SHARD_HEADER_INTS];
    int ret = HX_OK;
    if (fstat(fileno(f), &st) != 0) {
        ret = HX_ERR(HX_EIO, "cannot stat token shard '%s': %s", path, strerror(errno));
    } else if (fread(h, sizeof h, 1, f) != 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, shorter than the %zu-byte header of an "
                     "llm.c token shard; re-create it with llm.c's dev/data scripts", path,
                     (long long)st.st_size, sizeof h);
    } else if (h[0] != SHARD_MAGIC) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has magic %d, expected %d (an llm.c token shard); give "
                     "a shard or a text file to --data-path", path, h[0], SHARD_MAGIC);
    } else if (h[1] != 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s' is an llm.c token shard of version %d; only version 1 "
                     "(uint16 GPT-2 ids) is supported: re-create it with llm.c's dev/data "
                     "scripts", path, h[1]);
    } else if (h[2] < 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s': the shard header gives %d tokens; a shard holds at "
                     "least one: re-create it", path, h[2]);
    } else if ((long long)sizeof h + 2LL * h[2] != (long long)st.st_size) {
        long long want = (long long)sizeof h + 2LL * h[2];
        ret = HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, but its header gives %d tokens, i.e. %lld "
                     "bytes (%zu-byte header + 2 per token); the shard is %s: re-create or "
                     "re-download it", path, (long long)st.st_size, h[2], want, sizeof h,
                     st.st_size < want ? "truncated" : "followed by extra bytes");
    }
    size_t n = ret == HX_OK ? (size_t)h[2] : 0;
    uint16_t *ids = ret == HX_OK ? malloc(n * sizeof(uint16_t)) : NULL;
    if (ret == HX_OK) {
        d->tokens = malloc(n * sizeof(int32_t));
        if (ids == NULL || d->tokens == NULL) {
            ret = HX_ERR(HX_ENOMEM, "token shard '%s': %zu tokens", path, n);
        } else if (fread(ids, sizeof(uint16_t), n, f) != n) {
            ret = HX_ERR(HX_EIO, "reading the %zu tokens of '%s' failed: %s", n, path,
                         ferror(f) ? strerror(errno) : "unexpected end of file");
        }
    }
    for (size_t i = 0; i < n && ret == HX_OK; i++) {
        if (ids[i] >= GPT2_VOCAB) {
            ret = HX_ERR(HX_EFORMAT, "'%s': token %zu is id %u, outside the GPT-2 vocabulary "
                         "[0, %d); the shard is damaged or not GPT-2 tokens: re-create it", path,
                         i, (unsigned)ids[i], GPT2_VOCAB);
        } else {
            d->tokens[i] = ids[i];
        }
    }
    free(ids);
    fclose(f);
    if (ret != HX_OK) {
        hx_data_free(d);
        return ret;
    }
    d->ntokens = n;
    d->vocab_size = GPT2_VOCAB;
    snprintf(d->source, sizeof d->source, "%s", path);
    return HX_OK;
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

static int copy_part(struct hx_dataset *dst, const struct hx_dataset *src, size_t first,
                     size_t n, const char *what)
{
    memset(dst, 0, sizeof *dst);
    dst->vocab_size = src->vocab_size;
    snprintf(dst->source, sizeof dst->source, "%.*s (%s)", (int)(sizeof dst->source - 16),
             src->source, what);
    if (n == 0) {
        return HX_OK;
    }
    dst->tokens = malloc(n * sizeof(int32_t));
    if (dst->tokens == NULL) {
        return HX_ERR(HX_ENOMEM, "%s: %zu tokens", dst->source, n);
    }
    memcpy(dst->tokens, src->tokens + first, n * sizeof(int32_t));
    dst->ntokens = n;
    return HX_OK;
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
    ret = copy_part(train, all, 0, ntrain, "train");
    ret = ret == HX_OK ? copy_part(val, all, ntrain, w[1] > 0 ? nval : 0, "valid") : ret;
    if (ret != HX_OK) {
        hx_data_free(train);
        hx_data_free(val);
    }
    return ret;
}

void hx_data_free(struct hx_dataset *d)
{
    free(d->tokens);
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

void hx_data_next_batch(struct hx_dataset *d, int nseq, int T, int32_t *tokens,
                        int32_t *targets)
{
    for (int s = 0; s < nseq; s++) {
        if (d->cursor + (size_t)T + 1 > d->ntokens) {
            d->cursor = 0;
        }
        memcpy(tokens + (size_t)s * T, d->tokens + d->cursor, sizeof(int32_t) * (size_t)T);
        memcpy(targets + (size_t)s * T, d->tokens + d->cursor + 1, sizeof(int32_t) * (size_t)T);
        d->cursor += (size_t)T;
    }
}
