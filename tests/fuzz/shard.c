/* SPDX-License-Identifier: MIT */
/* tests/fuzz/shard.c: fuzz harness of the data loader (runtime/data.c over runtime/data_map.c):
 * the input is a data file, mapped as --data-path maps it, and read three ways: by content
 * (hx_data_load), as bytes, and as an llm.c token shard.  For every load that succeeds it
 * checks: the ids are the file's (all its bytes, or the 1024-byte header's count of 2- or
 * 4-byte ids after it, as magic and version say), max_id is the largest of them, the
 * vocabulary check passes at max_id + 1 and names a position at max_id, and split views and
 * batches hand out the same ids, widened.  A failed load leaves the set empty.  The stream
 * path (pipes) reads the same bytes into memory: tests/graphs/data_formats.c covers it.
 * Seeds: tests/fuzz/corpus/shard.  Run: scripts/fuzz shard [SECONDS]. */
/* fuzz-sources: */
#include "fuzz/fuzz.h"

#include <string.h>

#include "helix/helix.h"

#define CHECK(cond)       \
    do {                  \
        if (!(cond)) {    \
            abort();      \
        }                 \
    } while (0)

static uint32_t le(const uint8_t *p, int width)
{
    uint32_t v = 0;
    for (int k = width - 1; k >= 0; k--) {
        v = v << 8 | p[k];
    }
    return v;
}

/* A loaded set is exactly the file's ids, and every operation on it agrees. */
static void check_set(struct hx_dataset *d, const uint8_t *data, size_t size, int as_bytes)
{
    CHECK(d->map != NULL && d->ntokens > 0 && d->cursor == 0);
    size_t offset = as_bytes ? 0 : 1024;
    CHECK(as_bytes ? d->id_bytes == 1 : (d->id_bytes == 2 || d->id_bytes == 4));
    CHECK(offset + d->ntokens * (size_t)d->id_bytes == size);
    if (!as_bytes) {
        CHECK(le(data + 8, 4) == d->ntokens);
    }
    uint32_t m = 0;
    for (size_t i = 0; i < d->ntokens; i++) {
        uint32_t id = le(data + offset + i * (size_t)d->id_bytes, d->id_bytes);
        CHECK(hx_data_id(d, i) == id);
        m = id > m ? id : m;
    }
    CHECK(d->max_id == m);
    if (m < (1u << 30)) { /* a --vocab-size a model could have */
        CHECK(hx_data_check_vocab(d, (int)m + 1) == HX_OK);
        CHECK(hx_data_check_vocab(d, (int)m) == HX_EINVAL);
    }

    /* views: train and validation halves, batches of T = 3 widened in order */
    struct hx_dataset tr, va;
    if (hx_data_split(d, "1,1", 3, &tr, &va) == HX_OK) {
        CHECK(tr.map == NULL && va.map == NULL && tr.ntokens + va.ntokens <= d->ntokens);
        CHECK(tr.ids == d->ids && hx_data_check(&va, 3) == HX_OK);
        int32_t tok[2 * 3], tgt[2 * 3];
        hx_data_next_batch(&va, 2, 3, tok, tgt);
        for (size_t k = 0; k < 6; k++) {
            size_t at = k % 3 + (k >= 3 && va.ntokens >= 7 ? 3 : 0); /* wraps when short */
            CHECK(tok[k] == (int32_t)hx_data_id(&va, at));
            CHECK(tgt[k] == (int32_t)hx_data_id(&va, at + 1));
        }
        hx_data_free(&tr);
        hx_data_free(&va);
        CHECK(tr.ids == NULL && va.ids == NULL);
    } else {
        CHECK(tr.ids == NULL && va.ids == NULL && tr.ntokens == 0 && va.ntokens == 0);
    }
}

static void check_empty(const struct hx_dataset *d)
{
    CHECK(d->ids == NULL && d->map == NULL && d->ntokens == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    struct hx_dataset d;
    int is_shard = size >= 4 && (le(data, 4) == 20240520 || le(data, 4) == 20240801);

    /* by content, as --data-path does */
    if (hx_data_load(&d, path) == HX_OK) {
        check_set(&d, data, size, !is_shard);
        hx_data_free(&d);
    } else {
        check_empty(&d);
        CHECK(is_shard || size == 0); /* any non-empty file is text */
    }
    /* as bytes: any non-empty file */
    int r = hx_data_load_bytes(&d, path);
    CHECK((r == HX_OK) == (size > 0));
    if (r == HX_OK) {
        check_set(&d, data, size, 1);
        hx_data_free(&d);
    }
    check_empty(&d);
    /* as a shard: only the layouts llm.c writes */
    if (hx_data_load_llmc_shard(&d, path) == HX_OK) {
        CHECK(is_shard);
        check_set(&d, data, size, 0);
        hx_data_free(&d);
    }
    check_empty(&d);
    fuzz_done();
    return 0;
}
