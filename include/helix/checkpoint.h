/* SPDX-License-Identifier: MIT */
/**
 * @file helix/checkpoint.h
 * @brief Checkpoints: the whole training state in one self-checking file, written atomically,
 *        and import of llm.c GPT-2 weights.
 *
 * A save directory holds ckpt-<step>.bin files and a `latest` file naming the newest complete
 * one.  A save writes ckpt-<step>.bin.tmp, fsyncs it, renames it into place, fsyncs the
 * directory, then replaces `latest` the same way, and only then deletes checkpoints older than
 * the previous one: a crash or a full disk at any point leaves the last good checkpoint and
 * `latest` untouched.  A file counts only if its header, sizes and trailing checksum agree.
 */
#ifndef HELIX_CHECKPOINT_H
#define HELIX_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "helix/gpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Everything besides the tensors that a bitwise-identical resume needs. */
struct hx_train_state {
    int64_t step;             /**< steps completed (the next step to run) */
    uint64_t train_cursor;    /**< next position in the training token stream */
    uint64_t val_cursor;      /**< next position in the validation stream */
    uint64_t rng[4];          /**< generator state of anything random in training */
    uint64_t seed;            /**< --seed of the run that created the model */
};

/** Checkpoint contents besides the tensors: the model shape, the optimizer settings, the
 *  state, and the run's full settings as "key = value" lines (the config-file syntax). */
struct hx_checkpoint_info {
    struct hx_gpt_config model;
    struct hx_optim_config optim;
    struct hx_train_state state;
    char args[8192];          /**< NUL-terminated "key = value\n" lines */
};

/**
 * Save parameters, Adam moments and @p info to @p dir (created if missing) as described
 * above.  @return HX_OK, or HX_EIO naming the file and the errno (ENOSPC, EFBIG, EACCES...);
 * on any failure the previous checkpoint and `latest` are unchanged and no .tmp is left.
 */
int hx_checkpoint_save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info);

/**
 * Read only the header and info of the checkpoint at @p path: a save directory (its `latest`)
 * or a ckpt-*.bin file, and verify the whole file's checksum.  Use it to validate flags
 * against the checkpoint before building anything.
 * @return HX_OK, HX_EIO (missing, unreadable) or HX_EFORMAT (wrong magic or version,
 *         truncated, checksum mismatch), each naming the file and what to do.
 */
int hx_checkpoint_peek(const char *path, struct hx_checkpoint_info *info);

/**
 * Load parameters and Adam moments into @p m, whose configuration must equal the checkpoint's
 * model configuration (HX_EINVAL naming the first differing field otherwise).
 */
int hx_checkpoint_load(const char *path, hx_gpt_t m, struct hx_checkpoint_info *info);

/**
 * llm.c GPT-2 checkpoints (gpt2_124M.bin): a header of 256 int32 (magic 20240326, version 3
 * (or 1 without padding), maxT, V, L, NH, C, padded V), then the parameters in llm.c's
 * grouped order.  Peek fills the model shape; import copies the weights (the first V rows of
 * the padded wte) into @p m, whose shape must match, and zeroes the Adam moments.
 */
int hx_llmc_peek(const char *path, struct hx_gpt_config *model);
int hx_llmc_import(const char *path, hx_gpt_t m);

#ifdef __cplusplus
}
#endif

#endif /* HELIX_CHECKPOINT_H */
