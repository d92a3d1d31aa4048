/* SPDX-License-Identifier: MIT */
/* runtime/corpus.c: the embedded default corpus, so `helix train` needs no download.
 * A small English grammar (subjects, verbs, objects, places, times, connectives) expanded by
 * the seeded generator of runtime/rng.c into about 256 KB of sentences and paragraphs: the
 * same bytes on every machine, varied enough that a small model's loss visibly falls from
 * ln(256) = 5.55 as it learns spelling, then words, then grammar.  It lives in memory, its
 * bytes the ids, in a data map that owns the buffer (runtime/data_map.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/data.h"
#include "helix/error.h"
#include "runtime/data_map.h"
#include "runtime/rng.h"

#define CORPUS_BYTES (256 * 1024)

static const char *subjects[] = {
    "the old sailor", "a young engineer", "the river", "my neighbour", "the quiet student",
    "a tired farmer", "the small dog", "our teacher", "the city", "a strange machine",
    "the red bird", "every child", "the baker", "a lonely traveller", "the north wind",
    "the scheduler", "the compiler", "a careful reader", "the night train", "the garden",
};
static const char *verbs[] = {
    "watched", "carried", "followed", "remembered", "painted", "repaired", "found", "counted",
    "opened", "measured", "wrote about", "listened to", "waited for", "cleaned", "built",
    "forgot", "answered", "visited", "described", "crossed",
};
static const char *objects[] = {
    "the long bridge", "a wooden box", "the morning light", "an empty road", "the last letter",
    "a bright lamp", "the broken clock", "seven stones", "the open window", "a quiet song",
    "the heavy door", "an old map", "the warm bread", "the blue sea", "a hidden path",
    "the first snow", "a paper boat", "the market square", "the tall tower", "a silver key",
};
static const char *places[] = {
    "near the harbour", "in the valley", "behind the school", "under the stars",
    "across the field", "by the fire", "at the station", "on the hill", "inside the library",
    "along the coast",
};
static const char *times[] = {
    "in the morning", "after the storm", "before dinner", "every winter", "at noon",
    "late at night", "on sunday", "during the rain", "when the bells rang", "for a while",
};
static const char *links[] = { "and then", "but later", "so", "while", "because" };

#define PICK(r, a) (a)[hx_rng_below((r), sizeof(a) / sizeof((a)[0]))]

/* Append s to buf (capacity cap); returns the new length, never past cap. */
static size_t put(char *buf, size_t n, size_t cap, const char *s)
{
    size_t k = strlen(s);
    if (n + k > cap) {
        k = cap - n;
    }
    memcpy(buf + n, s, k);
    return n + k;
}

static size_t clause(struct hx_rng *r, char *buf, size_t n, size_t cap, int capital)
{
    const char *s = PICK(r, subjects);
    if (n < cap) {
        buf[n++] = (char)(capital ? s[0] - 'a' + 'A' : s[0]);
    }
    n = put(buf, n, cap, s + 1);
    n = put(buf, n, cap, " ");
    n = put(buf, n, cap, PICK(r, verbs));
    n = put(buf, n, cap, " ");
    n = put(buf, n, cap, PICK(r, objects));
    if (hx_rng_below(r, 2)) {
        n = put(buf, n, cap, " ");
        n = put(buf, n, cap, PICK(r, places));
    }
    if (hx_rng_below(r, 3) == 0) {
        n = put(buf, n, cap, " ");
        n = put(buf, n, cap, PICK(r, times));
    }
    return n;
}

int hx_data_load_default(struct hx_dataset *d)
{
    memset(d, 0, sizeof *d);
    uint8_t *buf = malloc(CORPUS_BYTES);
    struct hx_data_map *m = buf != NULL ? hx_data_map_adopt(buf, CORPUS_BYTES) : NULL;
    if (m == NULL) {
        free(buf);
        return HX_ERR(HX_ENOMEM, "embedded corpus (%d bytes)", CORPUS_BYTES);
    }
    struct hx_rng r;
    hx_rng_seed(&r, 20261122);
    char *text = (char *)buf;
    size_t n = 0;
    while (n < CORPUS_BYTES) {
        /* a paragraph of 3..6 sentences, some joined by a connective */
        int sentences = 3 + (int)hx_rng_below(&r, 4);
        for (int s = 0; s < sentences && n < CORPUS_BYTES; s++) {
            n = clause(&r, text, n, CORPUS_BYTES, 1);
            if (hx_rng_below(&r, 3) == 0) {
                n = put(text, n, CORPUS_BYTES, ", ");
                n = put(text, n, CORPUS_BYTES, PICK(&r, links));
                n = put(text, n, CORPUS_BYTES, " ");
                n = clause(&r, text, n, CORPUS_BYTES, 0);
            }
            n = put(text, n, CORPUS_BYTES, s + 1 < sentences ? ". " : ".\n\n");
        }
    }
    /* the bytes are the ids, as for a text file */
    d->map = m;
    d->ids = buf;
    d->ntokens = n;
    d->id_bytes = 1;
    for (size_t i = 0; i < n; i++) {
        d->max_id = buf[i] > d->max_id ? buf[i] : d->max_id;
    }
    snprintf(d->source, sizeof d->source, "embedded corpus");
    return HX_OK;
}
