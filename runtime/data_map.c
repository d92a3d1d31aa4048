/* SPDX-License-Identifier: MIT */
/* runtime/data_map.c: a data file's bytes without copying them (see data_map.h).  A regular
 * file is mapped read-only: its pages are read on first touch and stay reclaimable page cache.
 * Anything else (a FIFO, a pipe, /dev/zero) is read from the one open descriptor, so nothing
 * is lost to a second open, into a buffer grown by doubling up to the limit + 1 byte; reaching
 * that byte means the stream is longer than the limit, and it is refused.
 * Test: tests/graphs/data_formats.c, tests/cli/data_input.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helix/error.h"
#include "runtime/data_map.h"

/* "1G", "64M", "12K" or "1000 bytes": a limit as the user would write it */
static void format_size(char *buf, size_t len, size_t n)
{
    static const char units[] = "GMK";
    for (int u = 0; u < 3; u++) {
        size_t unit = (size_t)1 << (10 * (3 - u));
        if (n % unit == 0) {
            snprintf(buf, len, "%zu%c", n / unit, units[u]);
            return;
        }
    }
    snprintf(buf, len, "%zu bytes", n);
}

/* HX_DATA_PIPE_MAX: bytes, optionally with K, M or G (powers of 1024); positive */
static int pipe_max(size_t *limit)
{
    const char *e = getenv("HX_DATA_PIPE_MAX");
    *limit = HX_DATA_PIPE_MAX_DEFAULT;
    if (e == NULL) {
        return HX_OK;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    end += shift != 0;
    if (end == e || *e == '-' || *end != '\0' || errno != 0 || v == 0 ||
        v >= (SIZE_MAX >> shift)) {
        return HX_ERR(HX_EINVAL, "HX_DATA_PIPE_MAX '%s' is not a positive size; give bytes, "
                      "optionally with K, M or G (e.g. 2G)", e);
    }
    *limit = (size_t)v << shift;
    return HX_OK;
}

/* Read all of @p fd (not mappable) into a buffer of at most the limit. */
static int read_stream(struct hx_data_map *m, int fd, const char *path)
{
    size_t limit;
    int ret = pipe_max(&limit);
    if (ret != HX_OK) {
        return ret;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap > limit) { /* the byte past the limit arrived */
                char lim[32];
                format_size(lim, sizeof lim, limit);
                free(buf);
                return HX_ERR(HX_EINVAL, "data file '%s' is not a regular file (a pipe, FIFO or "
                              "device), so it is read into memory, and it holds more than the "
                              "HX_DATA_PIPE_MAX limit of %s; save it to a regular file (which is "
                              "mapped, not read) or raise HX_DATA_PIPE_MAX", path, lim);
            }
            size_t want = cap ? cap * 2 : (size_t)1 << 20;
            cap = want > limit ? limit + 1 : want;
            uint8_t *nb = realloc(buf, cap);
            if (nb == NULL) {
                free(buf);
                return HX_ERR(HX_ENOMEM, "reading data file '%s': out of memory at %zu bytes; "
                              "save it to a regular file, which is mapped, not read", path, n);
            }
            buf = nb;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            int err = errno;
            free(buf);
            return HX_ERR(HX_EIO, "reading data file '%s' failed after %zu bytes: %s; check "
                          "--data-path", path, n, strerror(err));
        }
        if (got == 0) {
            break;
        }
        n += (size_t)got;
    }
    if (n == 0) {
        free(buf);
        buf = NULL;
    } else if (n < cap) { /* give back the unused tail of the last doubling */
        uint8_t *nb = realloc(buf, n);
        buf = nb != NULL ? nb : buf;
    }
    m->bytes = buf;
    m->size = n;
    m->mapped = 0;
    return HX_OK;
}

static int map_regular(struct hx_data_map *m, int fd, const char *path, size_t size)
{
    m->mapped = 0;
    m->size = size;
    m->bytes = NULL;
    if (size == 0) {
        return HX_OK; /* mmap refuses length 0; the format reader reports the empty file */
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        if (err == ENOMEM) {
            return HX_ERR(HX_ENOMEM, "cannot map data file '%s' (%zu bytes): out of address "
                          "space; raise the limit (ulimit -v) or use a smaller file", path, size);
        }
        return HX_ERR(HX_EIO, "cannot map data file '%s' (%zu bytes): %s; check --data-path",
                      path, size, strerror(err));
    }
    m->bytes = p;
    m->mapped = 1;
    return HX_OK;
}

int hx_data_map_open(struct hx_data_map **out, const char *path)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return HX_ERR(HX_EIO, "cannot open data file '%s': %s; check --data-path", path,
                      strerror(errno));
    }
    struct stat st;
    struct hx_data_map *m = calloc(1, sizeof *m);
    int ret = HX_OK;
    if (m == NULL) {
        ret = HX_ERR(HX_ENOMEM, "data file '%s'", path);
    } else if (fstat(fd, &st) != 0) {
        ret = HX_ERR(HX_EIO, "cannot stat data file '%s': %s; check --data-path", path,
                     strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        ret = HX_ERR(HX_EIO, "data file '%s' is a directory; give a text file or an llm.c token "
                     "shard to --data-path", path);
    } else if (S_ISREG(st.st_mode)) {
        ret = map_regular(m, fd, path, (size_t)st.st_size);
    } else {
        ret = read_stream(m, fd, path);
    }
    close(fd); /* a mapping outlives its descriptor */
    if (ret != HX_OK) {
        free(m);
        return ret;
    }
    *out = m;
    return HX_OK;
}

struct hx_data_map *hx_data_map_adopt(uint8_t *buf, size_t size)
{
    struct hx_data_map *m = calloc(1, sizeof *m);
    if (m == NULL) {
        HX_ERR(HX_ENOMEM, "data map of %zu bytes", size);
        return NULL;
    }
    m->bytes = buf;
    m->size = size;
    return m;
}

void hx_data_map_close(struct hx_data_map *m)
{
    if (m == NULL) {
        return;
    }
    if (m->mapped) {
        munmap((void *)m->bytes, m->size);
    } else {
        free((void *)m->bytes);
    }
    free(m);
}
