/* SPDX-License-Identifier: MIT */
/* tests/graphs/data_formats.c: hx_data_load tells an llm.c token shard from a text file by
 * content and keeps the ids where they are: a regular file is mapped, ids keep their stored
 * width (1, 2 or 4 bytes), the largest id is recorded, and the split's parts point into the
 * same bytes.  Shards of version 1 (uint16), 2 (uint32) and llm.c's Llama-3 layout (magic
 * 20240801, version 7) round-trip through hx_data_next_batch; hx_data_check_vocab refuses the
 * first id >= the vocabulary, naming its position.  A FIFO is read once, all of it, and over
 * HX_DATA_PIPE_MAX it is refused.  Damaged shards are HX_EFORMAT, an empty file HX_EINVAL, a
 * missing one HX_EIO; malformed splits and parts shorter than T+1 are HX_EINVAL.  Status codes
 * are checked exactly, messages by the words they must hold. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helix/helix.h"
#include "runtime/data_map.h"
#include "testutil.h"

#define NTOK 1000

static char dir[] = "/tmp/helix-data-XXXXXX";
static char errbuf[4096];
static char path[6][512];

/* A shard: header {magic, version, count} + zeros, then @p n ids of @p width bytes (the
 * count may lie).  Ids are given as uint32 and stored narrowed to the width. */
static void write_shard(const char *p, int32_t magic, int32_t version, int32_t count,
                        const uint32_t *ids, size_t n, int width)
{
    int32_t h[256] = { magic, version, count };
    FILE *f = fopen(p, "wb");
    if (f == NULL) {
        return;
    }
    fwrite(h, sizeof h, 1, f);
    for (size_t i = 0; i < n; i++) {
        uint16_t s = (uint16_t)ids[i];
        fwrite(width == 2 ? (const void *)&s : (const void *)&ids[i], (size_t)width, 1, f);
    }
    fclose(f);
}

static void write_bytes(const char *p, const void *buf, size_t n)
{
    FILE *f = fopen(p, "wb");
    if (f != NULL) {
        fwrite(buf, 1, n, f);
        fclose(f);
    }
}

/* Does @p d hold exactly ids[0..n) (widened), read both directly and through batches? */
static int holds(struct hx_dataset *d, const uint32_t *ids, size_t n)
{
    if (d->ntokens != n) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (hx_data_id(d, i) != ids[i]) {
            return 0;
        }
    }
    enum { T = 7 }; /* 3 sequences of 7 and the wrap: ids are widened in order */
    int32_t tok[3 * T], tgt[3 * T];
    d->cursor = 0;
    hx_data_next_batch(d, 3, T, tok, tgt);
    for (size_t k = 0; k < 3 * T; k++) {
        if (tok[k] != (int32_t)ids[k] || tgt[k] != (int32_t)ids[k + 1]) {
            return 0;
        }
    }
    d->cursor = 0;
    return 1;
}

static uint32_t largest(const uint32_t *ids, size_t n)
{
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        m = ids[i] > m ? ids[i] : m;
    }
    return m;
}

/* One check: the file at @p p loads (by content) as @p width-byte ids equal to @p ids. */
static void load_ok(const char *what, const char *p, const uint32_t *ids, size_t n, int width)
{
    struct hx_dataset d;
    int r = hx_data_load(&d, p);
    int same = r == HX_OK && holds(&d, ids, n);
    tap_ok(same && d.id_bytes == width && d.max_id == largest(ids, n) && d.map != NULL &&
           d.map->mapped && strcmp(d.source, p) == 0,
           "%s: status %d, %zu ids of %d bytes (want %zu of %d) %s, largest %lu (want %lu), "
           "mapped %d", what, r, d.ntokens, d.id_bytes, n, width, same ? "equal" : "differ",
           (unsigned long)d.max_id, (unsigned long)largest(ids, n), d.map ? d.map->mapped : -1);
    hx_data_free(&d);
}

/* One check: hx_data_load on @p p gives @p want, a message naming the file and @p word, an
 * empty set. */
static void load_fails(const char *what, const char *p, int want, const char *word)
{
    struct hx_dataset d;
    int saved = capture_begin(dir);
    int r = hx_data_load(&d, p);
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r == want && strstr(msg, p) != NULL && strstr(msg, word) != NULL && d.ids == NULL &&
           d.ntokens == 0 && d.map == NULL,
           "%s: status %d (want %d), message names the file and '%s'", what, r, want, word);
    tap_diag_lines(msg);
}

/* The words of @p msg: NULL-terminated list, all present? */
static int has_all(const char *msg, const char *const *words)
{
    for (; *words != NULL; words++) {
        if (strstr(msg, *words) == NULL) {
            return 0;
        }
    }
    return 1;
}

/* A child writes @p n bytes of @p buf into the FIFO @p p (blocking until we open it). */
static pid_t feed_fifo(const char *p, const void *buf, size_t n)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = fopen(p, "wb");
        size_t put = f != NULL ? fwrite(buf, 1, n, f) : 0;
        _exit(f != NULL && fclose(f) == 0 && put == n ? 0 : 1);
    }
    return pid;
}

static void fifo_cases(const uint32_t *text_ids, const uint8_t *text, size_t n,
                       const uint32_t *ids, const char *shard32)
{
    /* 10000 bytes through a FIFO: the sniff used to read 4 KB, close, and reopen */
    const char *fifo = path[5];
    mkfifo(fifo, 0600);
    pid_t pid = feed_fifo(fifo, text, n);
    struct hx_dataset d;
    int r = hx_data_load(&d, fifo);
    int st = -1;
    waitpid(pid, &st, 0);
    int same = r == HX_OK && holds(&d, text_ids, n);
    tap_ok(same && d.id_bytes == 1 && d.map != NULL && !d.map->mapped,
           "FIFO of %zu bytes: status %d, %zu tokens read (want all %zu), %s, in memory (not "
           "mapped)", n, r, d.ntokens, n, same ? "equal" : "differ");
    hx_data_free(&d);

    /* a uint32 shard through the FIFO: sniffed from the same bytes */
    FILE *f = fopen(shard32, "rb");
    static uint8_t buf[1024 + 4 * NTOK];
    size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) {
        fclose(f);
    }
    pid = feed_fifo(fifo, buf, got);
    r = hx_data_load(&d, fifo);
    waitpid(pid, &st, 0);
    same = r == HX_OK && holds(&d, ids, NTOK);
    tap_ok(same && d.id_bytes == 4, "FIFO of a version-2 shard: status %d, %zu ids of %d bytes, "
           "%s", r, d.ntokens, d.id_bytes, same ? "equal" : "differ");
    hx_data_free(&d);

    /* over HX_DATA_PIPE_MAX: refused, naming the file, the limit and the fix */
    setenv("HX_DATA_PIPE_MAX", "4K", 1);
    pid = feed_fifo(fifo, text, n);
    int saved = capture_begin(dir);
    r = hx_data_load(&d, fifo);
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    kill(pid, SIGKILL); /* the writer may wait on the pipe we stopped reading */
    waitpid(pid, &st, 0);
    const char *cap_words[] = { fifo, "HX_DATA_PIPE_MAX", "4K", "regular file", NULL };
    tap_ok(r == HX_EINVAL && has_all(msg, cap_words) && d.map == NULL,
           "FIFO of %zu bytes over HX_DATA_PIPE_MAX=4K: status %d (want HX_EINVAL %d)", n, r,
           HX_EINVAL);
    tap_diag_lines(msg);
    setenv("HX_DATA_PIPE_MAX", "12Q", 1);
    pid = feed_fifo(fifo, text, n);
    saved = capture_begin(dir);
    r = hx_data_load(&d, fifo);
    msg = capture_end(saved, errbuf, sizeof errbuf);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    tap_ok(r == HX_EINVAL && strstr(msg, "HX_DATA_PIPE_MAX '12Q'") != NULL,
           "HX_DATA_PIPE_MAX=12Q: status %d (want HX_EINVAL %d)", r, HX_EINVAL);
    tap_diag_lines(msg);
    unsetenv("HX_DATA_PIPE_MAX");
    unlink(fifo);
}

static void vocab_cases(const char *p, uint32_t *ids)
{
    /* a version-1 shard of byte-sized ids trains a 256-id model; id 300 at 500 does not */
    for (int i = 0; i < NTOK; i++) {
        ids[i] = (uint32_t)(i * 7u % 256u);
    }
    write_shard(p, 20240520, 1, NTOK, ids, NTOK, 2);
    struct hx_dataset d;
    int r = hx_data_load(&d, p);
    int v = r == HX_OK ? hx_data_check_vocab(&d, 256) : r;
    tap_ok(r == HX_OK && v == HX_OK && d.max_id == 255,
           "version-1 shard of ids < 256: load %d, largest %lu, vocabulary 256 check %d", r,
           (unsigned long)d.max_id, v);
    hx_data_free(&d);

    ids[500] = 300;
    ids[700] = 4000;
    write_shard(p, 20240520, 1, NTOK, ids, NTOK, 2);
    r = hx_data_load(&d, p);
    int saved = capture_begin(dir);
    v = r == HX_OK ? hx_data_check_vocab(&d, 256) : r;
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    const char *words[] = { p, "token 500", "id 300", "--vocab-size is 256", "--vocab-size 4001",
                            NULL };
    tap_ok(r == HX_OK && v == HX_EINVAL && has_all(msg, words),
           "id 300 at token 500 against vocabulary 256: load %d, check %d (want HX_EINVAL), "
           "naming the position, the id and the fix", r, v);
    tap_diag_lines(msg);
    v = hx_data_check_vocab(&d, 4001);
    tap_ok(v == HX_OK, "the same shard against vocabulary 4001: check %d", v);

    /* a view (split part) checks its own ids: the set's largest id may lie outside it */
    struct hx_dataset tr, va;
    r = hx_data_split(&d, "1,1", 16, &tr, &va);
    v = r == HX_OK ? hx_data_check_vocab(&tr, 256) : r;
    saved = capture_begin(dir);
    int w = r == HX_OK ? hx_data_check_vocab(&va, 256) : r;
    msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r == HX_OK && v == HX_OK && w == HX_EINVAL && strstr(msg, "token 0 is id 300") &&
           tr.max_id == 4000,
           "split views of 500: the first (largest id of the set 4000, none above 255 in it) "
           "against 256: %d; the second (id 300 first) against 256: %d", v, w);
    tap_diag_lines(msg);
    hx_data_free(&tr);
    hx_data_free(&va);
    hx_data_free(&d);
}

/* One check: the split succeeds with the given sizes, both parts views into @p all. */
static void split_ok(const struct hx_dataset *all, const char *split, int T, size_t ntrain,
                     size_t nval)
{
    struct hx_dataset tr, va;
    int r = hx_data_split(all, split, T, &tr, &va);
    const uint8_t *base = all->ids;
    int views = r == HX_OK && tr.ids == all->ids && tr.map == NULL && va.map == NULL &&
                (nval == 0 || va.ids == base + ntrain * (size_t)all->id_bytes);
    tap_ok(r == HX_OK && tr.ntokens == ntrain && va.ntokens == nval && views &&
           tr.id_bytes == all->id_bytes && strstr(tr.source, "(train)") != NULL &&
           strstr(va.source, "(valid)") != NULL,
           "split '%s' of %zu: train %zu (want %zu), valid %zu (want %zu), views into the set: "
           "%s, status %d, sources '%s' / '%s'", split, all->ntokens, tr.ntokens, ntrain,
           va.ntokens, nval, views ? "yes" : "no", r, tr.source, va.source);
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
    tap_plan(32);
    const char *names[] = { "text.txt", "shard.bin", "bad.bin", "empty.txt", "missing.bin",
                            "fifo" };
    for (int i = 0; i < 6; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    }
    const char *text = path[0], *shard = path[1], *bad = path[2], *empty = path[3];

    /* bytes: 10000 of them, more than the 4 KB the sniff used to take from a FIFO */
    enum { NTEXT = 10000 };
    static uint8_t tbytes[NTEXT];
    static uint32_t tids[NTEXT];
    for (size_t i = 0; i < NTEXT; i++) {
        tbytes[i] = (uint8_t)("hello, world\n"[i % 13] + (i / 13) % 3);
        tids[i] = tbytes[i];
    }
    write_bytes(text, tbytes, NTEXT);
    load_ok("text file", text, tids, NTEXT, 1);

    /* shards of each layout, with extreme ids */
    static uint32_t ids[NTOK + 1];
    for (int i = 0; i < NTOK; i++) {
        ids[i] = (uint32_t)((i * 7919u) % 50257u);
    }
    ids[1] = 50256;
    write_shard(shard, 20240520, 1, NTOK, ids, NTOK, 2);
    load_ok("version-1 shard (uint16)", shard, ids, NTOK, 2);
    ids[1] = 128255; /* Llama-3's largest id */
    ids[2] = 4000000000u;
    write_shard(shard, 20240520, 2, NTOK, ids, NTOK, 4);
    load_ok("version-2 shard (uint32)", shard, ids, NTOK, 4);
    write_shard(bad, 20240801, 7, NTOK, ids, NTOK, 4);
    load_ok("llm.c Llama-3 shard (magic 20240801, version 7)", bad, ids, NTOK, 4);
    fifo_cases(tids, tbytes, NTEXT, ids, shard);
    ids[2] = 2;

    write_shard(bad, 20240520, 3, NTOK, ids, NTOK, 2);
    load_fails("shard version 3", bad, HX_EFORMAT, "version 3");
    write_shard(bad, 20240801, 1, NTOK, ids, NTOK, 4);
    load_fails("magic 20240801 with version 1", bad, HX_EFORMAT, "version 1");
    write_shard(bad, 20240520, 2, NTOK, ids, NTOK, 2);
    load_fails("version 2 (uint32) holding uint16 ids", bad, HX_EFORMAT, "4 per token");
    write_shard(bad, 20240520, 1, NTOK + 1, ids, NTOK, 2);
    load_fails("shard count 1001 with 1000 tokens in the file", bad, HX_EFORMAT, "truncated");
    write_shard(bad, 20240520, 1, NTOK - 1, ids, NTOK, 2);
    load_fails("shard count 999 with 1000 tokens in the file", bad, HX_EFORMAT, "extra bytes");
    write_shard(bad, 20240520, 1, 0, ids, 0, 2);
    load_fails("shard count 0", bad, HX_EFORMAT, "0 tokens");
    int32_t magic = 20240520;
    write_bytes(bad, &magic, sizeof magic);
    load_fails("shard magic, then end of file", bad, HX_EFORMAT, "1024-byte header");
    write_bytes(empty, "", 0);
    load_fails("empty file", empty, HX_EINVAL, "empty");
    load_fails("missing file", path[4], HX_EIO, "--data-path");
    load_fails("a directory", dir, HX_EIO, "directory");
    struct hx_dataset d;
    int saved = capture_begin(dir);
    int r = hx_data_load_llmc_shard(&d, text);
    const char *msg = capture_end(saved, errbuf, sizeof errbuf);
    tap_ok(r == HX_EFORMAT && strstr(msg, "magic") != NULL && d.map == NULL,
           "a text file read as a shard: status %d (want HX_EFORMAT), names the magic", r);
    tap_diag_lines(msg);
    write_shard(bad, 20240520, 1, NTOK, ids, NTOK, 2);
    r = hx_data_load_bytes(&d, bad);
    tap_ok(r == HX_OK && d.id_bytes == 1 && d.ntokens == 1024 + 2 * NTOK,
           "a shard read as bytes: status %d, %zu byte tokens", r, d.ntokens);
    hx_data_free(&d);

    vocab_cases(bad, ids);

    /* splits of the 10000 text bytes with T = 16, so each part needs 17 tokens */
    struct hx_dataset all;
    r = hx_data_load(&all, text);
    split_ok(&all, "949,50,1", 16, 9490, 500);
    split_ok(&all, "9,1", 16, 9000, 1000);
    split_ok(&all, "100,0,0", 16, 10000, 0);
    split_fails(&all, "1,1,x", 16, "not a number");
    split_fails(&all, "0,0,0", 16, "weights sum to 0");
    split_fails(&all, "1,-1", 16, "negative weight");
    split_fails(&all, "1000,1", 16, "validation part of 10 tokens");
    split_fails(&all, "1,1,1,1", 16, "four weights");
    hx_data_free(&all);

    for (int i = 0; i < 4; i++) {
        unlink(path[i]);
    }
    rmdir(dir);
    return tap_exit();
}
