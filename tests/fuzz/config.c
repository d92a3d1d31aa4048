/* SPDX-License-Identifier: MIT */
/* tests/fuzz/config.c: fuzz harness of `helix train`'s settings (tools/flags.c,
 * tools/train_args.c): the input is a --config file, read as helix train reads it
 * (train_args_parse over argv "--config FILE": the file's bytes, a byte-order mark, quoted
 * values, then its --preset), and when it parses, train_args_check, the mesh of one rank and
 * the model's configuration check.  Properties, abort otherwise: an accepted configuration
 * round-trips through the checkpoint's settings (flags_write, parsed back as a checkpoint's,
 * written again: the same text, so a resume sees exactly the settings saved); and every
 * message that echoes the input (the library's, on stderr) is checked by the replay's log,
 * not here.  Seeds: tests/fuzz/corpus/config.  Run: scripts/fuzz config [SECONDS]. */
/* fuzz-sources: tools/flags.c tools/train_args.c tools/launch.c tools/output.c */
#include "fuzz/fuzz.h"

#include <string.h>

#include "helix/helix.h"
#include "tools/train.h"

enum { TEXT = 1 << 16 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct train_args a, b;
    static char first[TEXT], second[TEXT];
    struct flag_set s, t;
    static char helix[] = "helix", train[] = "train", config[] = "--config";
    char *argv[] = { helix, train, config, (char *)fuzz_file(data, size), NULL };
    train_args_init(&a, &s);
    a.world_size = 1;
    int ret = train_args_parse(&a, &s, 4, argv);
    ret = ret == 0 ? train_args_check(&a) : ret;
    if (ret == 0) {
        struct hx_mesh mesh;
        struct hx_gpt_config c;
        train_args_mesh(&a, 1, 0, 0, &mesh);
        train_args_model(&a, &c);
        hx_gpt_config_check(&c);
        /* the checkpoint's settings: written, read back as a resume reads them, written */
        if (flags_write(&s, first, sizeof first, train_run_flags) == 0) {
            train_args_init(&b, &t); /* the table now points into b */
            if (flags_parse_text(&t, first, FROM_CHECKPOINT, "settings") != 0 ||
                flags_write(&t, second, sizeof second, train_run_flags) != 0 ||
                strcmp(first, second) != 0) {
                fprintf(stderr, "settings do not round-trip:\n%s---\n%s", first, second);
                abort();
            }
            flags_free(&t);
        }
    }
    flags_free(&s);
    fuzz_done();
    return 0;
}
