/* SPDX-License-Identifier: MIT */
/* tools/tools.h: the `helix` command's subcommands and its flag machinery.  Flags are
 * described once (name, type, destination, range, help); the same table parses argv and
 * `key = value` config files, prints --help with every default, writes the settings back as
 * config lines (stored in checkpoints), and rejects unknown or malformed values before any
 * work starts.  Usage errors exit 2, runtime failures 1. */
#ifndef HX_TOOLS_H
#define HX_TOOLS_H

#include <stddef.h>

enum flag_type { FLAG_INT, FLAG_FLOAT, FLAG_STRING, FLAG_BOOL };

/* Where a flag's value came from; later sources win over earlier ones. */
enum flag_origin { FROM_DEFAULT = 0, FROM_PRESET, FROM_CHECKPOINT, FROM_CONFIG, FROM_ARGV };

struct flag {
    const char *name;    /* without the leading "--" */
    enum flag_type type;
    void *dest;          /* int *, float *, const char **, int * */
    double min, max;     /* accepted range for numbers */
    const char *help;
};

#define FLAGS_MAX 96
#define FLAGS_STRPOOL 32

struct flag_set {
    const struct flag *flags;
    int n;
    unsigned char origin[FLAGS_MAX];   /* enum flag_origin per flag */
    char *pool[FLAGS_STRPOOL];         /* strings owned for config-file values */
    int npool;
};

void flags_init(struct flag_set *s, const struct flag *flags, int n);
void flags_free(struct flag_set *s);
const struct flag *flags_find(const struct flag_set *s, const char *name);
/* Set one flag from text; `where` prefixes messages ("config file x.cfg:3"). 0 or 2. */
int flags_set(struct flag_set *s, const char *name, const char *value, enum flag_origin origin,
              const char *where);
/* Parse argv[first..argc): 0 ok, 1 --help printed, 2 usage error (message printed). */
int flags_parse_argv(struct flag_set *s, int argc, char **argv, int first, const char *usage);
/* Find "--name V" / "--name=V" in argv without parsing the rest (for --config, --preset). */
const char *flags_peek_argv(int argc, char **argv, int first, const char *name);
/* Apply `key = value` lines ('#' comments, blank lines) from a file or a string; a value
 * never overrides one from a later source (origin >= this origin is kept).  0 or 2. */
int flags_parse_file(struct flag_set *s, const char *path, enum flag_origin origin);
int flags_parse_text(struct flag_set *s, const char *text, enum flag_origin origin,
                     const char *where);
/* Write every flag except those in `skip` (NULL-terminated) as "key = value\n". */
int flags_write(const struct flag_set *s, char *buf, size_t len, const char *const *skip);
void flags_usage(const struct flag_set *s, const char *usage);
/* "value" of a flag as text (for messages) */
void flags_format(const struct flag *f, char *buf, size_t n);

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile_overlap(int argc, char **argv);
int cmd_plan_strands(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* tools/launch.c: launched by mpirun (every rank runs the same program on its shard)?
 * Ranks other than 0 check the same input and fail the same way, but only rank 0 speaks:
 * mute returns the saved stderr (or -1 on rank 0), unmute restores it.  A --sched name that
 * is no policy: its message and 2, else 0. */
int tools_launched_by_mpirun(void);
int tools_mute_stderr(int rank);
void tools_unmute_stderr(int saved);
int tools_check_sched(const char *name);

#endif /* HX_TOOLS_H */
