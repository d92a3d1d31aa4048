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
 *
 * Writing: rank 0 hands a snapshot of the state (its own tensors, or the state gathered from
 * every rank) to a writer process in a session of its own, so the save completes even when
 * the process ends or its process group is killed (mpirun kills its ranks one second after
 * its own SIGTERM); writers write one after the other.  A run claims its directory first: a
 * lock (DIR/.lock, flock, holding the run's pid) kept by the run and its writers, and a
 * directory holding another run's checkpoints is refused unless the run resumes from it.
 *
 * A checkpoint is input, so nothing in it is trusted before it is checked (a checksum is no
 * defence: anyone can recompute one).  Peek checks every header field against the ranges
 * helix's flags allow and against the file's size, the records' count, names and shapes
 * against the model the header describes, the settings text, and every stored value, before
 * anything is allocated from what the file says; hx_checkpoint_check_model then checks a
 * model built from the settings before the runtime starts.  A file that fails is refused
 * (HX_EFORMAT, HX_EINVAL) with a message naming the file and the field, never half-loaded.
 */
#ifndef HELIX_CHECKPOINT_H
#define HELIX_CHECKPOINT_H

#include <signal.h>
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
 *  state, and the run's full settings as "key = value" lines (the config-file syntax; a
 *  line naming a shape flag, e.g. "hidden-size = 64", must agree with @c model). */
struct hx_checkpoint_info {
    struct hx_gpt_config model;
    struct hx_optim_config optim;
    struct hx_train_state state;
    char args[8192];          /**< NUL-terminated "key = value\n" lines */
};

/**
 * Save parameters, Adam moments and @p info to @p dir (created if missing) as described
 * above, and wait until it is on disk: hx_checkpoint_save_start, then
 * hx_checkpoint_save_wait.  Collective: every rank of the job calls it, between steps.
 * @return HX_OK, or HX_EIO naming the file and the errno (ENOSPC, EFBIG, EACCES...);
 * on any failure the previous checkpoint and `latest` are unchanged and no .tmp is left.
 */
int hx_checkpoint_save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info);

/**
 * Start a save (collective): fork the writer (setsid) and return once it has its copy of the
 * state.  When rank 0 holds every state whole (no tensor or pipeline parallelism, no
 * sharding) the fork itself is the copy (copy-on-write); otherwise every rank takes part in
 * gathering the state and rank 0 first copies it into one buffer (12 bytes a parameter).
 * A writer still running from an earlier start is waited for by the new one, not by the
 * caller (at most 4 in flight: a fifth start first waits for the oldest).  @return HX_OK, or the failure of the gathers, the directory (HX_EIO) or the
 * memory (HX_ENOMEM); an earlier writer's failure found here is reported and returned too.
 */
int hx_checkpoint_save_start(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info);

/**
 * Wait for every writer started here (collective; rank 0 waits, every rank returns its
 * result).  Meanwhile rank 0 joins an all-reduce of the world at least every
 * min(0.25 s, --comm-timeout / 4): the other ranks' watchdog counts each as progress, and
 * still ends them if rank 0 dies.  With @p interrupt, a nonzero *interrupt on any rank ends
 * the wait early (a stop signal: the writers go on by themselves).  @p pending (may be
 * NULL) gets, on rank 0, the pid of the newest writer still running, else 0.
 * @return HX_OK, or the first failure of a writer (HX_EIO naming the file and the errno, or
 *         the writer's death), reported.
 */
int hx_checkpoint_save_wait(hx_gpt_t m, const volatile sig_atomic_t *interrupt, long *pending);

/**
 * Claim @p dir for this process's saves, before any work: create it (mkdir -p), lock it
 * (flock on DIR/.lock, which then holds this pid; the lock lasts while this process or a
 * writer it started runs, so two runs never share a directory), and refuse it when it holds
 * a checkpoint (`latest` or ckpt-*.bin) of another run.  It is this run's own when
 * @p resume, the checkpoint it resumes (--load; NULL for none), is @p dir or a file in it:
 * such a run continues the directory's run and replaces its later checkpoints as it saves.
 * Call it on the writing rank only (world rank 0).
 * @return HX_OK; HX_EINVAL when another run holds the lock or owns the checkpoints (the
 *         message names the directory, the pid or the checkpoint, and how to go on); HX_EIO
 *         when the directory or its lock cannot be created.
 */
int hx_checkpoint_claim(const char *dir, const char *resume);
/** Give the claim up.  Writers still in flight keep the lock until they exit; a claim of
 *  the same directory, even from this process, is refused while anyone holds it. */
void hx_checkpoint_release(void);

/** The file name that @p dir/latest gives (into @p name[size]): 1, 0 when there is no
 *  `latest`, -1 when it cannot be read or names no checkpoint. */
int hx_checkpoint_latest(const char *dir, char *name, size_t size);

/**
 * Read the header and info of the checkpoint at @p path (a save directory: the file its
 * `latest` names; or a ckpt-*.bin file) and check the whole file, reading it through with one
 * fixed buffer: its size against the header's; every header field against the range of the
 * flag that sets it (model shape, batch, tiling, ln_eps; the optimizer's settings, finite,
 * decay style known; step 0..2^30 and the step its name says, cursors below 2^48, seed a
 * --seed); the records' count and total size against the model the header describes, so a
 * header claiming a huge model over small records is refused before any allocation; the
 * settings text ("key = value" lines without control characters, and where one states the
 * model's shape, the header's value); each record's name and shape; the checksum; and every
 * value (parameters and Adam first moments finite, second moments >= 0: +inf, an overflowed
 * square, is kept).  Use it to validate flags against the checkpoint before building
 * anything.
 * @return HX_OK, HX_EIO (missing, unreadable) or HX_EFORMAT (wrong magic or version,
 *         truncated, checksum mismatch, a field out of range or disagreeing with the records,
 *         a non-finite value), each naming the file, the field or tensor and element, and
 *         what to do.
 */
int hx_checkpoint_peek(const char *path, struct hx_checkpoint_info *info);

/**
 * Check that model @p m, built (hx_gpt_build*) but not yet realized, can take the checkpoint
 * that hx_checkpoint_peek read from @p path into @p info: same shape (layers, hidden size,
 * heads, positions, vocabulary, LayerNorm epsilon) and the same parameter names and shapes as
 * its records.  Call it before hx_runtime_init, so a mismatch is an input error found before
 * any work starts.  @return HX_OK or HX_EINVAL naming @p path, the flag and both values.
 */
int hx_checkpoint_check_model(const char *path, const struct hx_checkpoint_info *info,
                              hx_gpt_t m);

/**
 * Load parameters and Adam moments into @p m (realized), after checking the file as
 * hx_checkpoint_peek does and the model as hx_checkpoint_check_model does (HX_EFORMAT,
 * HX_EINVAL, and the model untouched, otherwise).
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
