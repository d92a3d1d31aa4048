/* SPDX-License-Identifier: MIT */
/* runtime/kv_lines.c: one `key = value` line at a time (runtime/kv_lines.h).
 * Tests: tests/tools/sim_machine.c, tests/sim/analytic.sh (through their files' readers). */
#include <ctype.h>
#include <string.h>

#include "helix/error.h"
#include "runtime/kv_lines.h"

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) {
        s[--n] = '\0';
    }
    return s;
}

int hx_kv_next(FILE *f, const char *path, char *buf, size_t cap, int *line, const char *example,
               char **key, char **value)
{
    while (fgets(buf, (int)cap, f) != NULL) {
        ++*line;
        if (strchr(buf, '\n') == NULL && !feof(f)) {
            return HX_ERR(HX_EINVAL, "%s:%d: line longer than %zu characters; the file holds "
                          "short 'key = value' lines", path, *line, cap - 2);
        }
        char *hash = strchr(buf, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char *text = trim(buf);
        if (*text == '\0') {
            continue;
        }
        char *eq = strchr(text, '=');
        if (eq == NULL) {
            for (char *c = text; *c != '\0'; c++) { /* (the message stays one printable line) */
                *c = isprint((unsigned char)*c) ? *c : '?';
            }
            return HX_ERR(HX_EINVAL, "%s:%d: '%s' is not a 'key = value' line; e.g. '%s'", path,
                          *line, text, example);
        }
        *eq = '\0';
        *key = trim(text);
        *value = trim(eq + 1);
        return 1;
    }
    return 0;
}
