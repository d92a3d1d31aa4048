/* SPDX-License-Identifier: MIT */
/* tools/tools.h: the `helix` command's subcommands and its flag table.  Flags are described
 * once (name, type, destination, help) and the same table parses argv, prints --help with
 * every default, and rejects unknown or malformed values before any work starts (exit 2). */
#ifndef HX_TOOLS_H
#define HX_TOOLS_H

enum flag_type { FLAG_INT, FLAG_FLOAT, FLAG_STRING, FLAG_BOOL };

struct flag {
    const char *name;    /* without the leading "--" */
    enum flag_type type;
    void *dest;          /* int *, float *, const char **, int * */
    double min, max;     /* accepted range for numbers */
    const char *help;
};

/* Parse argv[first..argc) against flags; on error prints one line naming the flag and the
 * fix and returns 2; "--help" prints usage and returns 1; else 0. */
int flags_parse(const struct flag *flags, int nflags, int argc, char **argv, int first,
                const char *usage);
void flags_usage(const struct flag *flags, int nflags, const char *usage);

int cmd_train(int argc, char **argv);

#endif /* HX_TOOLS_H */
