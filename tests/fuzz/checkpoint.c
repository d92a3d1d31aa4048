/* SPDX-License-Identifier: MIT */
/* tests/fuzz/checkpoint.c: fuzz harness of the checkpoint reader (runtime/checkpoint_load.c):
 * hx_checkpoint_peek (every header field, the settings text, the records and the payload
 * checked before anything is allocated), then, for a file it accepts, the model graph built
 * from the header (as helix sample does) and the pre-start check of that model against it,
 * both of which must then succeed (abort: a file peek accepts that sample would refuse).
 * Each input runs twice: as given, and with its FNV-1a trailer recomputed, so mutations get
 * past the checksum to the checks behind it.  Seeds: tests/fuzz/corpus/checkpoint (written by
 * tests/fuzz/ckpt_craft.py).  Run: scripts/fuzz checkpoint [SECONDS]. */
/* fuzz-sources: */
#include "fuzz/fuzz.h"

#include <string.h>

#include "helix/helix.h"
#include "runtime/ckpt_format.h"

static struct hx_checkpoint_info info;

static void one(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    if (hx_checkpoint_peek(path, &info) != HX_OK) {
        return;
    }
    struct hx_gpt_config c = info.model;
    c.micro_batch_size = 1; /* helix sample's model: one sequence */
    c.num_micro_batches = 1;
    c.tile_seqs = 0;
    hx_gpt_t m = NULL;
    /* what peek accepts, helix sample can build and load: anything else is a finding */
    if (hx_gpt_build(&m, &c, &info.optim) != HX_OK ||
        hx_checkpoint_check_model(path, &info, m) != HX_OK) {
        abort();
    }
    hx_gpt_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    if (size >= TRAILER) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        uint64_t h = hx_ckpt_fnv1a(FNV_OFFSET, fixed, size - TRAILER);
        memcpy(fixed + size - TRAILER, &h, 8);
        memcpy(fixed + size - 8, END_MARK, 8);
        one(fixed, size);
        free(fixed);
    }
    fuzz_done();
    return 0;
}
