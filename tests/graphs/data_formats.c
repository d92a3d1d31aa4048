/* SPDX-License-Identifier: MIT */
/* tests/graphs/data_formats.c: hx_data_load tells an llm.c token shard (magic 20240520) from
 * a text file by content; shard ids round-trip with vocabulary 50257, bytes with 256.  Damaged
 * shards (version 2, a count larger or smaller than the file, id 50257, a short header) are
 * HX_EFORMAT, an empty file HX_EINVAL, a missing one HX_EIO.  hx_data_split cuts by Megatron
 * weights ("949,50,1", "9,1", "100,0,0" with an empty validation part) and refuses malformed
 * weights and parts shorter than T+1 with HX_EINVAL.  Status codes are checked exactly, the
 * messages loosely (they must name the file or the split). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/helix.h"
#include "testutil.h"

#define NTOK 1000

static char dir[] = "/tmp/helix-data-XXXXXX";
static char errbuf[4096];

/* A shard: header {magic, version, count} + zeros, then @p n ids (count may lie). */
static void write_shard(const char *path, int32_t version, int32_t count, const uint16_t *ids,
                        size_t n)
{
    int32_t h[256] = { 20240520, version, count };
    FILE *f = fopen(path, "wb");
    if (f != NULL) {
        fwrite(h, sizeof h, 1, f);
        fwrite(ids, sizeof(uint16_t), n, f);
        fclose(f);
    }
}

/* One check: hx_data_load on @p path gives @p want, a message naming the file, an empty set. */
static void load_fails(const char *what, const char *path, int want)
{
    struct hx_dataset d;
    int saved = capture_begin(dir);
    int r = hx_data_load(&d, path);
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r == want && strstr(msg, path) != NULL && d.tokens == NULL && d.ntokens == 0,
           "%s: status %d (want %d)", what, r, want);
    tap_diag_lines(msg);
}

/* One check: the split succeeds with the given sizes and contents taken in order. */
static void split_ok(const struct hx_dataset *all, const char *split, int T, size_t ntrain,
                     size_t nval)
{
    struct hx_dataset tr, va;
    int r = hx_data_split(all, split, T, &tr, &va);
    int same = r == HX_OK && memcmp(tr.tokens, all->tokens, ntrain * sizeof(int32_t)) == 0 &&
               (nval == 0 || memcmp(va.tokens, all->tokens + ntrain,
                                    nval * sizeof(int32_t)) == 0);
    tap_ok(r == HX_OK && tr.ntokens == ntrain && va.ntokens == nval && same &&
           tr.vocab_size == all->vocab_size && strstr(tr.source, "(train)") != NULL &&
           strstr(va.source, "(valid)") != NULL,
           "split '%s' of %zu: train %zu (want %zu), valid %zu (want %zu), status %d, "
           "sources '%s' / '%s'", split, all->ntokens, tr.ntokens, ntrain, va.ntokens, nval, r,
           tr.source, va.source);
    hx_data_free(&tr);
    hx_data_free(&va);
}

static void split_fails(const struct hx_dataset *all, const char *split, int T, const char *why)
{
    struct hx_dataset tr, va;
    int saved = capture_begin(dir);
    int r = hx_data_split(all, split, T, &tr, &va);
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r == HX_EINVAL && strstr(msg, split) != NULL && tr.ntokens == 0 && va.ntokens == 0,
           "split '%s' (%s): status %d (want HX_EINVAL %d)", split, why, r, HX_EINVAL);
    tap_diag_lines(msg);
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    tap_plan(17);
    char text[512], shard[512], bad[512], empty[512], missing[512];
    snprintf(text, sizeof text, "%s/text.txt", dir);
    snprintf(shard, sizeof shard, "%s/shard.bin", dir);
    snprintf(bad, sizeof bad, "%s/bad.bin", dir);
    snprintf(empty, sizeof empty, "%s/empty.txt", dir);
    snprintf(missing, sizeof missing, "%s/missing.bin", dir);

    /* bytes: "hello, world\n" is 13 tokens */
    const char *hello = "hello, world\n";
    FILE *f = fopen(text, "wb");
    fputs(hello, f);
    fclose(f);
    struct hx_dataset d;
    int r = hx_data_load(&d, text);
    int same = r == HX_OK && d.ntokens == strlen(hello);
    for (size_t i = 0; same && i < d.ntokens; i++) {
        same = d.tokens[i] == (unsigned char)hello[i];
    }
    tap_ok(r == HX_OK && same && d.vocab_size == 256 && strcmp(d.source, text) == 0,
           "text file: status %d, %zu byte tokens, vocabulary %d", r, d.ntokens, d.vocab_size);
    hx_data_free(&d);

    /* a shard with the extreme ids 0 and 50256 and a spread in between */
    uint16_t ids[NTOK + 1];
    for (int i = 0; i < NTOK; i++) {
        ids[i] = (uint16_t)((i * 7919u) % 50257u);
    }
    ids[1] = 50256;
    write_shard(shard, 1, NTOK, ids, NTOK);
    r = hx_data_load(&d, shard);
    same = r == HX_OK && d.ntokens == NTOK;
    for (size_t i = 0; same && i < d.ntokens; i++) {
        same = d.tokens[i] == ids[i];
    }
    tap_ok(r == HX_OK && same && d.vocab_size == 50257 && strcmp(d.source, shard) == 0,
           "llm.c shard: status %d, %zu tokens round-trip: %s, vocabulary %d", r, d.ntokens,
           same ? "yes" : "no", d.vocab_size);
    hx_data_free(&d);

    write_shard(bad, 2, NTOK, ids, NTOK);
    load_fails("shard version 2", bad, HX_EFORMAT);
    write_shard(bad, 1, NTOK + 1, ids, NTOK);
    load_fails("shard count 1001 with 1000 tokens in the file", bad, HX_EFORMAT);
    write_shard(bad, 1, NTOK - 1, ids, NTOK);
    load_fails("shard count 999 with 1000 tokens in the file (extra bytes)", bad, HX_EFORMAT);
    ids[500] = 50257;
    write_shard(bad, 1, NTOK, ids, NTOK);
    ids[500] = 0;
    load_fails("shard with id 50257", bad, HX_EFORMAT);
    f = fopen(bad, "wb");
    int32_t magic = 20240520;
    fwrite(&magic, sizeof magic, 1, f);
    fclose(f);
    load_fails("shard magic, then end of file", bad, HX_EFORMAT);
    f = fopen(empty, "wb");
    fclose(f);
    load_fails("empty file", empty, HX_EINVAL);
    load_fails("missing file", missing, HX_EIO);

    /* splits of 10000 byte tokens with T = 16, so each part needs 17 tokens */
    struct hx_dataset all = { .ntokens = 10000, .vocab_size = 256 };
    snprintf(all.source, sizeof all.source, "%s", "synthetic");
    all.tokens = malloc(all.ntokens * sizeof(int32_t));
    for (size_t i = 0; i < all.ntokens; i++) {
        all.tokens[i] = (int32_t)(i % 251);
    }
    split_ok(&all, "949,50,1", 16, 9490, 500);
    split_ok(&all, "9,1", 16, 9000, 1000);
    split_ok(&all, "100,0,0", 16, 10000, 0);
    split_fails(&all, "1,1,x", 16, "not a number");
    split_fails(&all, "0,0,0", 16, "weights sum to 0");
    split_fails(&all, "1,-1", 16, "negative weight");
    split_fails(&all, "1000,1", 16, "validation part of 10 tokens");
    split_fails(&all, "1,1,1,1", 16, "four weights");
    free(all.tokens);

    unlink(text);
    unlink(shard);
    unlink(bad);
    unlink(empty);
    rmdir(dir);
    return tap_exit();
}
