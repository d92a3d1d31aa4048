/* SPDX-License-Identifier: MIT */
/* runtime/data.c: byte-level datasets and in-order batching.  A file is read whole (the
 * corpora here are small); each byte is one token id in [0, 256).  Batches take T+1 tokens
 * per sequence from the cursor and advance by T, wrapping before the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/data.h"
#include "helix/error.h"

int hx_data_load_bytes(struct hx_dataset *d, const char *path)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot open data file '%s': %s; check --data-path", path,
                      strerror(errno));
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
