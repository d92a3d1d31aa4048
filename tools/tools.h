/* SPDX-License-Identifier: MIT */
/* tools/tools.h: the `helix` command's subcommands and its flag machinery.  Flags are
 * described once (name, type, destination, range, help); the same table parses argv and
 * `key = value` config files, prints --help with every default, writes the settings back as
 * config lines (stored in checkpoints), and rejects unknown or malformed values before any
 * work starts.  Usage errors exit 2, runtime failures 1. */
#ifndef HX_TOOLS_H
#define HX_TOOLS_H

#include <stddef.h>
#include <stdio.h>

/* FLAG_STRING: a path, a name or a mode; an empty value is refused (it would switch the
 * setting off without a word).  FLAG_TEXT: free text, empty included (a prompt). */
enum flag_type { FLAG_INT, FLAG_FLOAT, FLAG_STRING, FLAG_BOOL, FLAG_TEXT };

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

struct flag_set {
    const struct flag *flags;
    int n;
    unsigned char origin[FLAGS_MAX];   /* enum flag_origin per flag */
    unsigned char repeat[FLAGS_MAX];   /* flags_repeatable: each occurrence from one source
                                        * adds to a ':'-separated list */
    char **pool;                       /* strings owned for config-file and checkpoint */
    int npool, cap;                    /* values (argv's live as long as the process) */
};

void flags_init(struct flag_set *s, const struct flag *flags, int n);
void flags_free(struct flag_set *s);
/* Make the FLAG_STRING @p name a list of paths: --name A --name B (or two config lines) is
 * "A:B", as one "--name A:B"; a later source still replaces an earlier one. */
void flags_repeatable(struct flag_set *s, const char *name);
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
/* @p s made safe to echo in a message: control bytes, invalid UTF-8 and invisible code points
 * (byte-order mark, zero-width and bidi marks) as \xNN or \uNNNN; long text cut with "...".
 * The result lives in one of 8 rotating static buffers: use it in the message at hand.
 * Main thread only. */
const char *flags_esc(const char *s);

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile_overlap(int argc, char **argv);
int cmd_plan_strands(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_sim_machine(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);

/* tools/launch.c: launched by mpirun (every rank runs the same program on its shard)?
 * Ranks other than 0 check the same input and fail the same way, but only rank 0 speaks:
 * mute sends this rank's stderr to a scratch file and returns the saved stderr (or -1 on
 * rank 0), unmute restores it and keeps the first line the scratch file caught
 * (tools_muted_line: "" if none).  A --sched name that is no policy: its message and 2,
 * else 0. */
int tools_launched_by_mpirun(void);
int tools_mute_stderr(int rank);
void tools_unmute_stderr(int saved);
const char *tools_muted_line(void);
int tools_check_sched(const char *name);
/* Load the scheduling plug-ins of HX_SCHED_PLUGINS, then of @p flag (--sched-plugin; both
 * ':'-separated lists): 0, or 2 with the refusal printed.  Before tools_check_sched. */
int tools_load_sched_plugins(const char *flag);
/* Under mpirun, after every rank has checked its input (plain MPI on the world; the comm
 * engine is not open yet).  tools_agree_verdict: each rank's verdict on its input (0 go on,
 * larger is worse); every rank returns the worst, and when a rank other than 0 holds it and
 * rank 0's own verdict is better, rank 0 prints that rank's muted line as
 * "helix: error: rank R: ...", so one line says why all stop together.
 * tools_agree_settings: @p text ("key = value" lines) must be the same on every rank: 0, or
 * 2 on every rank after rank 0 printed the first setting that differs, with both values and
 * the rank. */
int tools_agree_verdict(int rank, int verdict);
int tools_agree_settings(int rank, const char *text);

/* tools/output.c: output that is lost is a failure, never exit 0.  tools_output_error
 * flushes @p f: 0, or the errno of its first failed write (EIO if unknown), from then on.
 * tools_close_stdout, on the way out of `helix`: flush and close stdout; if that failed (now
 * or before) and @p status is 0, one "helix: error: writing standard output failed" line
 * and 1; else @p status (a failure already reported keeps its one line). */
int tools_output_error(FILE *f);
int tools_close_stdout(int status);
/* After a lost stdout that is not a failure (helix train stopping on a signal while mpirun
 * takes down its output forwarding): what is printed from then on goes to stderr, and the
 * kept error is dropped. */
void tools_stdout_to_stderr(void);

#endif /* HX_TOOLS_H */
