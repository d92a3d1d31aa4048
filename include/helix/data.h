/* SPDX-License-Identifier: MIT */
/**
 * @file helix/data.h
 * @brief Training data as a stream of token ids, cut into (B, T) batches in order.
 *
 * A data file is either text, read as bytes (ids 0..255), or an llm.c token shard (uint16 or
 * uint32 ids).  Its ids stay where they are, in their stored width: a regular file is mapped
 * read-only, not copied, and a pipe or device (which cannot be mapped) is read once into
 * memory, up to HX_DATA_PIPE_MAX bytes (default 1G; K, M and G suffixes).  Train and
 * validation parts are views into the same ids.  Batches are converted to int32 as they are
 * handed out.  The embedded default corpus is generated into memory.
 */
#ifndef HELIX_DATA_H
#define HELIX_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hx_data_map; /* the mapping or buffer that holds a loaded file's bytes */

struct hx_dataset {
    const void *ids;     /**< ntokens ids, each id_bytes wide, little-endian; read-only */
    size_t ntokens;
    int id_bytes;        /**< 1 (text bytes), 2 (llm.c shard v1) or 4 (llm.c shard v2) */
    uint32_t max_id;     /**< the largest id present (in a view: in the set it was cut from) */
    size_t cursor;       /**< next position handed out by hx_data_next_batch */
    char source[256];    /**< file name or "embedded corpus" */
    struct hx_data_map *map; /**< owns the bytes; NULL in a view made by hx_data_split */
};

/** Id @p i (< d->ntokens) of @p d. */
static inline uint32_t hx_data_id(const struct hx_dataset *d, size_t i)
{
    switch (d->id_bytes) {
    case 1: return ((const uint8_t *)d->ids)[i];
    case 2: return ((const uint16_t *)d->ids)[i];
    default: return ((const uint32_t *)d->ids)[i];
    }
}

/** A file as bytes (ids 0..255).  @return HX_OK, HX_EIO (missing, unreadable, a directory),
 *  HX_EINVAL (empty; a pipe longer than HX_DATA_PIPE_MAX) or HX_ENOMEM (no memory or address
 *  space for it); the message names the file and the fix. */
int hx_data_load_bytes(struct hx_dataset *d, const char *path);
/**
 * An llm.c token shard: a header of 256 int32 (magic, version, token count, zeros), then the
 * count ids.  Magic 20240520 version 1 holds uint16 ids (GPT-2, llm.c's dev/data scripts);
 * version 2 holds uint32 ids; magic 20240801 version 7 is llm.c's name for uint32 ids
 * (Llama-3, dev/data/data_common.py).  A wrong magic or version, a count < 1 or a count that
 * disagrees with the file size (1024 + count x width bytes) is HX_EFORMAT with a message naming
 * the file and the fix.  Any id value is accepted here: check it against the model with
 * hx_data_check_vocab.
 */
int hx_data_load_llmc_shard(struct hx_dataset *d, const char *path);
/** Load a data file by its content: an llm.c token shard when it starts with a shard's magic,
 *  otherwise its bytes.  The file is opened and read once (a FIFO loses nothing). */
int hx_data_load(struct hx_dataset *d, const char *path);
/** The embedded corpus (generated deterministically, no download), bytes. */
int hx_data_load_default(struct hx_dataset *d);
/**
 * Split @p all into training and validation views with Megatron's --split weights
 * "train,valid,test" (e.g. "949,50,1"; the test part is not used here): the first share of
 * the tokens trains, the next validates.  Nothing is copied, so @p all must outlive both.
 * @return HX_EINVAL naming the problem for a malformed string or a part too short for one
 * sequence of T+1 tokens.
 */
int hx_data_split(const struct hx_dataset *all, const char *split, int T,
                  struct hx_dataset *train, struct hx_dataset *val);
/** Release a loaded set (a view only forgets its ids); @p d is left empty. */
void hx_data_free(struct hx_dataset *d);

/** Check that sequences of T+1 tokens fit; @return HX_OK or HX_EINVAL naming both sizes. */
int hx_data_check(const struct hx_dataset *d, int T);
/** Check that every id is below @p vocab_size (the model's --vocab-size): @return HX_OK, or
 *  HX_EINVAL naming the first id outside, its position, and the --vocab-size that fits. */
int hx_data_check_vocab(const struct hx_dataset *d, int vocab_size);
/**
 * Next @p nseq sequences of T inputs and T targets (inputs shifted by one), taken in order
 * and wrapping at the end, so a run is reproducible from its cursor.  The stored ids are
 * widened to int32 here; they must be checked first (hx_data_check_vocab).
 */
void hx_data_next_batch(struct hx_dataset *d, int nseq, int T, int32_t *tokens,
                        int32_t *targets);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_DATA_H */
