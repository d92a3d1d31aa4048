/* SPDX-License-Identifier: MIT */
/**
 * @file helix/data.h
 * @brief Training data as a stream of token ids: byte-level text (vocabulary 256), from a
 *        file or from the embedded default corpus, cut into (B, T) batches in order.
 */
#ifndef HELIX_DATA_H
#define HELIX_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hx_dataset {
    int32_t *tokens;   /**< ntokens ids */
    size_t ntokens;
    int vocab_size;    /**< 256 for bytes */
    size_t cursor;     /**< next position handed out by hx_data_next_batch */
    char source[256];  /**< file name or "embedded corpus" */
};

/** Read a file as bytes (ids 0..255).  @return HX_OK, HX_EIO (missing, unreadable) or
 *  HX_EINVAL (empty); the message names the file and the fix. */
int hx_data_load_bytes(struct hx_dataset *d, const char *path);
/**
 * Load a data file by its content: an llm.c token shard (256 int32 header: magic 20240520,
 * version 1, token count; then uint16 GPT-2 token ids, vocabulary 50257) or, otherwise, the
 * file's bytes.  A shard with a wrong version, a count that disagrees with the file size, or
 * an id >= 50257 is HX_EFORMAT with a message naming the file and the fix.
 */
int hx_data_load(struct hx_dataset *d, const char *path);
int hx_data_load_llmc_shard(struct hx_dataset *d, const char *path);
/**
 * Split @p all into training and validation streams with Megatron's --split weights
 * "train,valid,test" (e.g. "949,50,1"; the test part is not used here): the first
 * share of the tokens trains, the next validates.  @return HX_EINVAL naming the problem for a
 * malformed string or a validation part too short for one sequence of T+1 tokens.
 */
int hx_data_split(const struct hx_dataset *all, const char *split, int T,
                  struct hx_dataset *train, struct hx_dataset *val);
/** The embedded corpus (generated deterministically, no download). */
int hx_data_load_default(struct hx_dataset *d);
void hx_data_free(struct hx_dataset *d);

/** Check that sequences of T+1 tokens fit; @return HX_OK or HX_EINVAL naming both sizes. */
int hx_data_check(const struct hx_dataset *d, int T);
/**
 * Next @p nseq sequences of T inputs and T targets (inputs shifted by one), taken in order
 * and wrapping at the end, so a run is reproducible from its cursor.
 */
void hx_data_next_batch(struct hx_dataset *d, int nseq, int T, int32_t *tokens,
                        int32_t *targets);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_DATA_H */
