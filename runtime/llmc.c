/* SPDX-License-Identifier: MIT */
/* runtime/llmc.c: import of llm.c's float32 GPT-2 model files (gpt2_124M.bin).
 * Layout: 256 int32 header [magic 20240326, version, maxT, V, L, NH, C, Vp], then float32
 * tensors grouped by kind across layers: wte (Vp,C), wpe (maxT,C), ln1w (L,C), ln1b (L,C),
 * qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C), attprojb (L,C), ln2w, ln2b (L,C), fcw (L,4C,C),
 * fcb (L,4C), fcprojw (L,C,4C), fcprojb (L,C), lnfw (C), lnfb (C).  Version 3 pads wte to Vp
 * rows (the padding is skipped), version 1 has Vp = V.  Within a layer the kinds come in
 * helix's order, so group k of layer l is parameter 2 + 12 l + k.  The file is streamed one
 * tensor at a time.  Test: tests/graphs/llmc_import.c (loss equals PyTorch's on the file). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/checkpoint.h"
#include "helix/error.h"

#define LLMC_MAGIC 20240326
#define LLMC_HEADER_INTS 256
#define LLMC_KINDS 12 /* per-layer tensor kinds, in file and helix order */

struct llmc_header {
    int version, maxT, V, L, NH, C, Vp;
    size_t nfloats; /* parameter floats the header implies, padding included */
};

/* Opens @p path and validates its header and size; *fp is left just past the header. */
static int open_model(const char *path, FILE **fp, struct llmc_header *h)
{
    *fp = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return HX_ERR(HX_EIO, "cannot open llm.c model file '%s': %s; check the path (llm.c's "
                      "train_gpt2.py writes gpt2_124M.bin)", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        int e = errno;
        fclose(f);
        return HX_ERR(HX_EIO, "cannot stat llm.c model file '%s': %s", path, strerror(e));
    }
    int32_t hd[LLMC_HEADER_INTS];
    if (fread(hd, sizeof hd, 1, f) != 1) {
        int e = ferror(f) ? errno : 0;
        fclose(f);
        if (e != 0) {
            return HX_ERR(HX_EIO, "reading llm.c model file '%s' failed: %s", path, strerror(e));
        }
        return HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, shorter than the %zu-byte header of an "
                      "llm.c model file; re-download or re-export it with llm.c's train_gpt2.py",
                      path, (long long)st.st_size, sizeof hd);
    }
    int ret = HX_OK;
    if (hd[0] != LLMC_MAGIC) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has magic %d, expected %d (an llm.c float32 GPT-2 model "
                     "file such as gpt2_124M.bin); token shards (magic 20240520) go to "
                     "--data-path, helix checkpoints to --load", path, hd[0], LLMC_MAGIC);
    } else if (hd[1] != 3 && hd[1] != 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has llm.c model version %d, expected 3 (float32, padded "
                     "vocabulary) or 1 (float32); bfloat16 exports (versions 2 and 5) are not "
                     "supported: re-export in float32 with llm.c's train_gpt2.py", path, hd[1]);
    }
    if (ret != HX_OK) {
        fclose(f);
        return ret;
    }
    h->version = hd[1];
    h->maxT = hd[2];
    h->V = hd[3];
    h->L = hd[4];
    h->NH = hd[5];
    h->C = hd[6];
    h->Vp = h->version == 3 ? hd[7] : hd[3];
    if (h->maxT < 1 || h->V < 1 || h->L < 1 || h->NH < 1 || h->C < 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s': header sizes maxT=%d V=%d L=%d NH=%d C=%d must all be "
                     "positive; the file is damaged, re-download it", path, h->maxT, h->V, h->L,
                     h->NH, h->C);
    } else if (h->C % h->NH != 0) {
        ret = HX_ERR(HX_EFORMAT, "'%s': hidden size C=%d is not divisible by NH=%d heads; the "
                     "file is damaged, re-download it", path, h->C, h->NH);
    } else if (h->Vp < h->V) {
        ret = HX_ERR(HX_EFORMAT, "'%s': padded vocabulary %d is smaller than the vocabulary %d; "
                     "the file is damaged, re-download it", path, h->Vp, h->V);
    }
    if (ret != HX_OK) {
        fclose(f);
        return ret;
    }
    /* (Vp + maxT + 2) C + L (12 C^2 + 13 C): bounded first in double so size_t cannot wrap */
    double C = h->C, nd = ((double)h->Vp + h->maxT + 2) * C + h->L * (12 * C * C + 13 * C);
    size_t expect = 0;
    if (nd < 1e17) {
        size_t Cz = (size_t)h->C;
        h->nfloats = ((size_t)h->Vp + (size_t)h->maxT + 2) * Cz
                     + (size_t)h->L * (12 * Cz * Cz + 13 * Cz);
        expect = sizeof hd + sizeof(float) * h->nfloats;
    }
    if (nd >= 1e17 || (long long)expect != (long long)st.st_size) {
        fclose(f);
        return HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, but its header (V=%d padded to %d, "
                      "maxT=%d, L=%d, NH=%d, C=%d) implies %.0f bytes (%zu-byte header + %.0f "
                      "float32 parameters); the file is truncated or has extra bytes: "
                      "re-download or re-export it", path, (long long)st.st_size, h->V, h->Vp,
                      h->maxT, h->L, h->NH, h->C, sizeof hd + 4 * nd, sizeof hd, nd);
    }
    *fp = f;
    return HX_OK;
}

/* Sets only the five shape fields; seq_len, batch sizes and tiling stay the caller's. */
int hx_llmc_peek(const char *path, struct hx_gpt_config *model)
{
    FILE *f;
    struct llmc_header h;
    int ret = open_model(path, &f, &h);
    if (ret != HX_OK) {
        return ret;
    }
    fclose(f);
    model->vocab_size = h.V;
    model->max_seq_len = h.maxT;
    model->num_layers = h.L;
    model->num_heads = h.NH;
    model->hidden_size = h.C;
    return HX_OK;
}

static size_t param_numel(hx_gpt_t m, int i)
{
    int rows, cols;
    hx_gpt_param_shape(m, i, &rows, &cols);
    return (size_t)rows * (size_t)cols;
}

/* Reads parameter @p i (whole) into buf, checks it is finite, and keeps this rank's shard. */
static int load_tensor(FILE *f, const char *path, float *buf, hx_gpt_t m, int i)
{
    size_t n = param_numel(m, i);
    const char *name = hx_gpt_param_name(m, i);
    if (fread(buf, sizeof(float), n, f) != n) {
        return HX_ERR(HX_EIO, "reading %s (%zu floats) from '%s' failed: %s", name, n, path,
                      ferror(f) ? strerror(errno) : "unexpected end of file");
    }
    for (size_t j = 0; j < n; j++) {
        if (!isfinite(buf[j])) {
            return HX_ERR(HX_EFORMAT, "'%s': %s[%zu] is %f; the file is damaged, re-download "
                          "it", path, name, j, (double)buf[j]);
        }
    }
    return hx_gpt_scatter_state(m, i, HX_STATE_PARAM, buf);
}

/* Adam states start at zero (NULL: another rank of the OS group keeps them). */
static int zero_tensor(hx_tensor_t t)
{
    if (t == NULL) {
        return HX_OK;
    }
    int ret = hx_tensor_begin_access(t, 'w');
    if (ret == HX_OK) {
        memset(t->data, 0, hx_tensor_bytes(t));
        hx_tensor_end_access(t);
    }
    return ret;
}

/* The file is fully validated before any tensor is written; only an I/O error or a
 * non-finite value found while streaming can leave the parameters partly imported. */
int hx_llmc_import(const char *path, hx_gpt_t m)
{
    FILE *f;
    struct llmc_header h;
    int ret = open_model(path, &f, &h);
    if (ret != HX_OK) {
        return ret;
    }
    const struct hx_gpt_config *c = hx_gpt_config_of(m);
    struct { const char *flag; int model, file; } fields[] = {
        { "vocab-size", c->vocab_size, h.V }, { "max-position-embeddings", c->max_seq_len, h.maxT },
        { "num-layers", c->num_layers, h.L }, { "num-attention-heads", c->num_heads, h.NH },
        { "hidden-size", c->hidden_size, h.C },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i].model != fields[i].file) {
            fclose(f);
            return HX_ERR(HX_EINVAL, "the model has --%s %d but '%s' has %d; build the model "
                          "from the file's shape (hx_llmc_peek) before importing", fields[i].flag,
                          fields[i].model, path, fields[i].file);
        }
    }
    /* same shape, so helix's tensors have llm.c's sizes; only the padding rows are extra */
    int np = hx_gpt_num_param_tensors(m);
    size_t C = (size_t)h.C, biggest = 0;
    HX_ASSERT(np == 2 + LLMC_KINDS * h.L + 2, "%d parameter tensors for L=%d", np, h.L);
    HX_ASSERT(hx_gpt_num_params(m) + (size_t)(h.Vp - h.V) * C == h.nfloats,
              "%zu parameters + %d padding rows of %zu, the file has %zu",
              hx_gpt_num_params(m), h.Vp - h.V, C, h.nfloats);
    for (int i = 0; i < np; i++) {
        size_t n = param_numel(m, i);
        biggest = n > biggest ? n : biggest;
    }
    float *buf = malloc(biggest * sizeof(float));
    if (buf == NULL) {
        fclose(f);
        return HX_ERR(HX_ENOMEM, "importing '%s': a buffer of %zu floats", path, biggest);
    }
    /* wte: the first V rows, then skip the padding rows V..Vp-1 */
    ret = load_tensor(f, path, buf, m, 0);
    if (ret == HX_OK && h.Vp > h.V &&
        fseek(f, (long)((size_t)(h.Vp - h.V) * C * sizeof(float)), SEEK_CUR) != 0) {
        ret = HX_ERR(HX_EIO, "seeking past the padded vocabulary in '%s': %s", path,
                     strerror(errno));
    }
    ret = ret == HX_OK ? load_tensor(f, path, buf, m, 1) : ret;
    for (int k = 0; k < LLMC_KINDS && ret == HX_OK; k++) {
        for (int l = 0; l < h.L && ret == HX_OK; l++) {
            ret = load_tensor(f, path, buf, m, 2 + LLMC_KINDS * l + k);
        }
    }
    ret = ret == HX_OK ? load_tensor(f, path, buf, m, np - 2) : ret;
    ret = ret == HX_OK ? load_tensor(f, path, buf, m, np - 1) : ret;
    free(buf);
    fclose(f);
    for (int i = 0; i < np && ret == HX_OK; i++) {
        ret = zero_tensor(hx_gpt_adam_m(m, i));
        ret = ret == HX_OK ? zero_tensor(hx_gpt_adam_v(m, i)) : ret;
    }
    return ret;
}
