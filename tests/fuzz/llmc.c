/* SPDX-License-Identifier: MIT */
/* tests/fuzz/llmc.c: fuzz harness of the llm.c model reader (runtime/llmc.c): hx_llmc_peek
 * validates the 256-int header and the file size before any allocation, then reads every
 * value through and checks that it is finite, without StarPU or a model.  For a file it
 * accepts, the harness builds the model graph of that shape (as helix train does with
 * --load-llmc) and checks that each of its parameters has the shape the reader streams from
 * the file (hx_ckpt_layout), which hx_llmc_import asserts: abort otherwise.  Seeds:
 * tests/fuzz/corpus/llmc (tests/fuzz/ckpt_craft.py llmc).  Run: scripts/fuzz llmc [SECONDS]. */
/* fuzz-sources: */
#include "fuzz/fuzz.h"

#include <string.h>

#include "helix/helix.h"
#include "runtime/ckpt_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    struct hx_gpt_config c = { 0 };
    if (hx_llmc_peek(path, &c) == HX_OK) {
        struct hx_optim_config o;
        hx_gpt_t m = NULL;
        hx_optim_config_default(&o, 1);
        c.seq_len = c.max_seq_len < 16 ? c.max_seq_len : 16;
        c.micro_batch_size = 1;
        c.num_micro_batches = 1;
        if (hx_gpt_build(&m, &c, &o) != HX_OK ||
            hx_gpt_num_param_tensors(m) != hx_ckpt_layout(&c, 0, NULL)) {
            abort();
        }
        for (int i = 0; i < hx_gpt_num_param_tensors(m); i++) {
            struct rec e;
            int rows, cols;
            hx_ckpt_layout(&c, i, &e);
            hx_gpt_param_shape(m, i, &rows, &cols);
            if (rows != e.rows || cols != e.cols || strcmp(e.name, hx_gpt_param_name(m, i))) {
                abort();
            }
        }
        hx_gpt_destroy(m);
    }
    fuzz_done();
    return 0;
}
