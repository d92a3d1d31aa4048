/* SPDX-License-Identifier: MIT */
/* tools/train_input.c: everything `helix train` is given, checked before any work
 * (tools/train.h: train_input_read).  The flags from every source (defaults, --preset, the
 * checkpoint of --load, --config, the command line); the checkpoint to resume and what it
 * fixes (the model's shape and positions, the learning-rate schedule: flags that change it
 * are noted); an llm.c model's shape (--load-llmc); the data (format, ids against
 * --vocab-size, split); the --save directory and --trace file; the mesh and --strand-plan.
 * Under mpirun each rank checks its own command line and the ranks then agree: all go on
 * with the same settings, or all stop with the same status (rank 0 says why).  The --save
 * directory is claimed last (created, locked, and refused if it holds another run's
 * checkpoints).  Usage errors are 2, with one "helix: error:" line; a data file that does not
 * fit in memory is 1.  Tests: tests/cli/bad_input.sh, tests/cli/hostile.sh,
 * tests/cli/save_dir.sh, tests/mpi/rank_flags.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helix/plan.h"
#include "tools/train.h"

/* --save DIR must be a writable directory, or creatable: checked before training, so a
 * long run never ends in "cannot save". */
static int check_save_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "helix: error: --save %s exists and is not a directory; give a "
                    "directory\n", dir);
            return 2;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            fprintf(stderr, "helix: error: --save directory %s is not writable (%s); choose "
                    "another or fix its permissions\n", dir, strerror(errno));
            return 2;
        }
        return 0;
    }
    /* it will be created (mkdir -p): the nearest existing ancestor must be a writable dir */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    for (;;) {
        char *slash = strrchr(parent, '/');
        if (slash == NULL) {
            snprintf(parent, sizeof parent, ".");
        } else if (slash == parent) {
            parent[1] = '\0';
        } else {
            *slash = '\0';
        }
        if (stat(parent, &st) == 0 || strcmp(parent, ".") == 0 || strcmp(parent, "/") == 0) {
            break;
        }
    }
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode) || access(parent, W_OK | X_OK) != 0) {
        fprintf(stderr, "helix: error: --save %s cannot be created: %s is not a writable "
                "directory; create it or choose another\n", dir, parent);
        return 2;
    }
    return 0;
}

/* Value of `name` in "key = value" lines, or NULL. */
static const char *args_lookup(const char *args, const char *name, char *out, size_t n)
{
    size_t len = strlen(name);
    for (const char *p = args; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && strncmp(p + len, " = ", 3) == 0) {
            const char *v = p + len + 3, *e = strchr(v, '\n');
            size_t vl = e ? (size_t)(e - v) : strlen(v);
            snprintf(out, n, "%.*s", (int)vl, v);
            return out;
        }
    }
    return NULL;
}

/* What the user changed of the checkpoint's learning-rate schedule (flags they gave that
 * differ from what it ran with), as "--lr 0.001 (was 0.003), ..." into note[n]; "" if none. */
static void schedule_changes(const struct flag_set *s, const struct train_args *a,
                             const struct hx_optim_config *ck, char *note, size_t n)
{
    static const char *const style[] = { [HX_LR_COSINE] = "cosine", [HX_LR_LINEAR] = "linear",
                                         [HX_LR_CONSTANT] = "constant" };
    int decay = a->decay_iters > 0 ? a->decay_iters : a->iters; /* as train_args_check */
    const char *was_style = ck->decay_style >= 0 && ck->decay_style <= HX_LR_CONSTANT
                                ? style[ck->decay_style] : "?";
    struct { const char *flag; int differs; char now[32], was[32]; } f[] = {
        { "lr", a->lr != ck->lr, "", "" },
        { "min-lr", a->min_lr != ck->min_lr, "", "" },
        { "lr-warmup-iters", a->warmup != ck->warmup_iters, "", "" },
        { "lr-decay-iters", decay != ck->decay_iters, "", "" },
        { "lr-decay-style", strcmp(a->decay_style, was_style) != 0, "", "" },
    };
    snprintf(f[0].now, 32, "%g", (double)a->lr), snprintf(f[0].was, 32, "%g", (double)ck->lr);
    snprintf(f[1].now, 32, "%g", (double)a->min_lr);
    snprintf(f[1].was, 32, "%g", (double)ck->min_lr);
    snprintf(f[2].now, 32, "%d", a->warmup), snprintf(f[2].was, 32, "%d", ck->warmup_iters);
    snprintf(f[3].now, 32, "%d", decay), snprintf(f[3].was, 32, "%d", ck->decay_iters);
    snprintf(f[4].now, 32, "%s", flags_esc(a->decay_style));
    snprintf(f[4].was, 32, "%s", was_style);
    size_t o = 0;
    note[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const struct flag *fl = flags_find(s, f[i].flag);
        if (f[i].differs && fl != NULL && s->origin[fl - s->flags] >= FROM_CONFIG && o < n) {
            o += (size_t)snprintf(note + o, n - o, "%s--%s %s (was %s)", o ? ", " : "",
                                  f[i].flag, f[i].now, f[i].was);
        }
    }
}

/* The settings stored in a checkpoint fill every flag the user did not give; a model-shape
 * flag the user did give must agree with the checkpoint.  The model keeps the checkpoint's
 * position rows (its resolved --max-position-embeddings), so a shorter --seq-length resumes
 * and a longer one is refused in the user's terms.  The learning-rate schedule is the
 * checkpoint's (its decay length included: a longer --train-iters does not stretch it)
 * unless the user gives its flags; what they change is described in @p note. */
static int apply_checkpoint_args(struct flag_set *s, struct train_args *a,
                                 const struct hx_checkpoint_info *info, const char *path,
                                 char *note, size_t note_len)
{
    const struct hx_gpt_config *ck = &info->model;
    int positions = ck->max_seq_len > 0 ? ck->max_seq_len : ck->seq_len;
    for (const char *const *name = train_model_flags; *name != NULL; name++) {
        const struct flag *f = flags_find(s, *name);
        char given[64], stored[64];
        flags_format(f, given, sizeof given);
        const char *have = args_lookup(info->args, *name, stored, sizeof stored);
        if (strcmp(*name, "max-position-embeddings") == 0) { /* stored 0: --seq-length's */
            snprintf(stored, sizeof stored, "%d", positions);
            have = stored;
        }
        if (s->origin[f - s->flags] >= FROM_CONFIG && have != NULL &&
            strcmp(stored, given) != 0) {
            fprintf(stderr, "helix: error: --%s %s contradicts the checkpoint %s, which has "
                    "--%s %s; drop the flag or load another checkpoint\n", *name, given,
                    flags_esc(path), *name, stored);
            return 2;
        }
    }
    schedule_changes(s, a, &info->optim, note, note_len);
    int ret = flags_parse_text(s, info->args, FROM_CHECKPOINT, path);
    if (ret != 0) {
        return ret;
    }
    const struct flag *mp = flags_find(s, "max-position-embeddings");
    const struct flag *di = flags_find(s, "lr-decay-iters");
    if (s->origin[mp - s->flags] < FROM_CONFIG && a->max_pos == 0 && a->seq_len != positions) {
        a->max_pos = positions; /* (0, "--seq-length's", stays 0 when that is the same) */
    }
    if (s->origin[di - s->flags] < FROM_CONFIG && a->decay_iters == 0) {
        a->decay_iters = info->optim.decay_iters; /* saved before it was stored resolved */
    }
    if (a->seq_len > positions) {
        fprintf(stderr, "helix: error: --seq-length %d is longer than the %d positions of the "
                "model in the checkpoint %s; use --seq-length %d or less\n", a->seq_len,
                positions, flags_esc(path), positions);
        return 2;
    }
    return 0;
}

/* --strand-plan FILE: read before any work (exit 2 on a bad file); it needs --strands */
static int load_strand_plan(struct train_input *in)
{
    const struct train_args *a = &in->a;
    if (a->strand_plan == NULL) {
        return 0;
    }
    if (!a->strands) {
        fprintf(stderr, "helix: error: --strand-plan %s pairs the ops of two strands; add "
                "--strands\n", a->strand_plan);
        return 2;
    }
    if (hx_plan_read_json(a->strand_plan, &in->plan) != HX_OK) {
        return 2; /* the reader named the file and the problem */
    }
    in->have_plan = 1;
    return 0;
}

/* --load-llmc FILE: the model's shape is the file's, as llm.c reads it from the header; a
 * shape flag the user gave (or a preset or config file set) must agree with it. */
static int apply_llmc_shape(struct flag_set *s, const struct hx_gpt_config *lc, const char *path)
{
    const struct { const char *name; int file; } shape[] = {
        { "num-layers", lc->num_layers }, { "hidden-size", lc->hidden_size },
        { "num-attention-heads", lc->num_heads },
        { "max-position-embeddings", lc->max_seq_len }, { "vocab-size", lc->vocab_size },
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        const struct flag *f = flags_find(s, shape[i].name);
        int origin = s->origin[f - s->flags];
        char given[64], file[16];
        flags_format(f, given, sizeof given);
        snprintf(file, sizeof file, "%d", shape[i].file);
        if (origin != FROM_DEFAULT && strcmp(given, file) != 0) {
            fprintf(stderr, "helix: error: --%s %s%s contradicts %s, which has %d; drop the %s\n",
                    shape[i].name, given, origin == FROM_PRESET ? " (from --preset)"
                                          : origin == FROM_CONFIG ? " (from --config)" : "",
                    path, shape[i].file, origin == FROM_PRESET ? "preset"
                                         : origin == FROM_CONFIG ? "line of the config file"
                                                                 : "flag");
            return 2;
        }
        if (flags_set(s, shape[i].name, file, FROM_CHECKPOINT, path) != 0) {
            return 2;
        }
    }
    return 0;
}

/* Everything that can be wrong with the input, before any work.  0, or 2 (reported). */
static int prepare(struct train_input *in, int world_size, int argc, char **argv)
{
    struct train_args *a = &in->a;
    train_args_init(a, &in->flags);
    a->world_size = world_size;
    int ret = train_args_parse(a, &in->flags, argc, argv);
    if (ret != 0) {
        return ret;
    }
    if (a->load != NULL) {
        if (hx_checkpoint_peek(a->load, &in->info) != HX_OK) {
            return 2;
        }
        if ((ret = apply_checkpoint_args(&in->flags, a, &in->info, a->load, in->schedule_note,
                                         sizeof in->schedule_note)) != 0) {
            return ret;
        }
    }
    if ((ret = train_args_check(a)) != 0) {
        return ret;
    }
    if (a->load_llmc != NULL) { /* the whole file is checked, then its shape is the model's */
        struct hx_gpt_config lc;
        if (hx_llmc_peek(a->load_llmc, &lc) != HX_OK) {
            return 2;
        }
        if ((ret = apply_llmc_shape(&in->flags, &lc, a->load_llmc)) != 0) {
            return ret;
        }
    }
    struct hx_gpt_config c;
    train_args_model(a, &c);
    if (hx_gpt_config_check(&c) != HX_OK) {
        return 2;
    }
    ret = a->data_path ? hx_data_load(&in->all, a->data_path) : hx_data_load_default(&in->all);
    if (ret != HX_OK) {
        return ret == HX_ENOMEM ? 1 : 2;
    }
    if (hx_data_check_vocab(&in->all, a->vocab) != HX_OK) { /* the ids present, not the format */
        return 2;
    }
    if (hx_data_split(&in->all, a->split, a->seq_len, &in->train, &in->val) != HX_OK) {
        return 2;
    }
    if (a->save != NULL && check_save_dir(a->save) != 0) {
        return 2;
    }
    if (a->trace != NULL) { /* created now, so a bad path fails before the run, not after */
        FILE *f = fopen(a->trace, "w");
        if (f == NULL) {
            fprintf(stderr, "helix: error: cannot create --trace %s: %s; create its directory "
                    "or choose another file\n", a->trace, strerror(errno));
            return 2;
        }
        fclose(f);
    }
    return 0;
}

/* Every checkpoint stores the settings (save()): they must fit its header, found before any
 * work rather than at the first save.  0 or 2. */
static int check_settings_fit(const struct train_input *in)
{
    static char args[sizeof in->info.args];
    if (flags_write(&in->flags, args, sizeof args, train_run_flags) != 0) {
        fprintf(stderr, "helix: error: the settings do not fit in the %zu bytes a checkpoint "
                "keeps for them (a long --sample-prompt, --data-path or --split?); shorten "
                "them, or drop --save\n", sizeof args);
        return 2;
    }
    return 0;
}

/* Under mpirun: a rank's outcome of its input checks as a verdict (larger is worse, see
 * tools_agree_verdict) and back: a usage error (2) over a runtime failure (1) over --help. */
static int verdict_of(int status)
{
    return status == 2 ? 3 : status == 1 ? 2 : status == TRAIN_HELP ? 1 : 0;
}

static int status_of(int verdict)
{
    return verdict == 3 ? 2 : verdict == 2 ? 1 : verdict == 1 ? TRAIN_HELP : 0;
}

/* Every rank parsed its own command line (an MPMD launch, a --config or checkpoint that
 * differs by node): they stop together if any failed, and otherwise must have resolved the
 * same settings, all of them but the rank-local ones, and the same checkpoint step and
 * amount of data, or one replica would train another model, and collectives would mismatch
 * (different shapes corrupt memory, different step counts wait forever).  Plain MPI: nothing
 * is built yet.  0, or the status every rank exits with (rank 0 printed why). */
static int agree_on_input(struct train_input *in, int rank, int status)
{
    int verdict = tools_agree_verdict(rank, verdict_of(status));
    if (verdict != 0) {
        return status_of(verdict);
    }
    static char text[1 << 15];
    flags_write(&in->flags, text, sizeof text - 256, train_rank_flags); /* (a prefix if long) */
    size_t len = strlen(text);
    snprintf(text + len, sizeof text - len, "the checkpoint's step = %lld\n"
             "the data's token count = %zu\n", in->a.load ? (long long)in->info.state.step : 0LL,
             in->train.ntokens + in->val.ntokens);
    return tools_agree_settings(rank, text);
}

int train_input_read(struct train_input *in, int mpi, int rank, int size, int argc, char **argv,
                     struct hx_mesh *mesh)
{
    int muted = tools_mute_stderr(rank);
    int ret = prepare(in, size, argc, argv);
    ret = ret == 0 && in->a.save != NULL ? check_settings_fit(in) : ret;
    tools_unmute_stderr(muted);
    if (mpi) { /* each rank checked its own input: all go on, or all stop, before any work */
        ret = agree_on_input(in, rank, ret);
    }
    if (ret == 0) {
        muted = tools_mute_stderr(rank);
        ret = train_args_mesh(&in->a, size, rank, rank != 0, mesh);
        ret = ret == 0 ? load_strand_plan(in) : ret;
        tools_unmute_stderr(muted);
        if (mpi) { /* the same settings now: only a file can differ (--strand-plan's) */
            ret = status_of(tools_agree_verdict(rank, verdict_of(ret)));
        }
    }
    if (ret == 0 && in->a.save != NULL) { /* the last check: it creates and locks --save */
        ret = rank == 0 && hx_checkpoint_claim(in->a.save, in->a.load) != HX_OK ? 2 : 0;
        if (mpi) {
            ret = status_of(tools_agree_verdict(rank, verdict_of(ret)));
        }
    }
    return ret;
}

void train_input_free(struct train_input *in)
{
    hx_data_free(&in->all);
    hx_data_free(&in->train);
    hx_data_free(&in->val);
    if (in->have_plan) {
        hx_plan_free(&in->plan);
        in->have_plan = 0;
    }
    flags_free(&in->flags);
}
