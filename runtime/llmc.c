/* SPDX-License-Identifier: MIT */
/* runtime/llmc.c: import of llm.c's float32 GPT-2 model files (gpt2_124M.bin).
 * Layout: 256 int32 header [magic 20240326, version, maxT, V, L, NH, C, Vp], then float32
 * tensors grouped by kind across layers: wte (Vp,C), wpe (maxT,C), ln1w (L,C), ln1b (L,C),
 * qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C), attprojb (L,C), ln2w, ln2b (L,C), fcw (L,4C,C),
 * fcb (L,4C), fcprojw (L,C,4C), fcprojb (L,C), lnfw (C), lnfb (C).  Version 3 pads wte to Vp
 * rows (the padding is skipped), version 1 has Vp = V.  Within a layer the kinds come in
 * helix's order, so group k of layer l is parameter 2 + 12 l + k.
 * The file is input: every header field is checked against the range of the helix flag it
 * becomes and the file's size against the header before anything is allocated, and peek
 * reads every value through (one fixed buffer) so a non-finite one is an input error found
 * before any work, naming the tensor and element.  Import then streams one tensor at a time.
 * Tests: tests/graphs/llmc_import.c (loss equals PyTorch's on the file), tests/fuzz/llmc.c,
 * tests/cli/bad_checkpoint.sh. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helix/checkpoint.h"
#include "helix/error.h"
#include "runtime/ckpt_format.h"

#define LLMC_HEADER_INTS 256
#define LLMC_KINDS 12 /* per-layer tensor kinds, in file and helix order */
#define DAMAGED "the file is damaged or not an llm.c float32 model: re-download it or " \
                "re-export it with llm.c's train_gpt2.py"

struct llmc_header {
    int version, maxT, V, L, NH, C, Vp;
    struct hx_gpt_config shape; /* the five shape fields; the rest zero */
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
    if (hd[0] != (int32_t)LLMC_MAGIC) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has magic %d, expected %u (an llm.c float32 GPT-2 model "
                     "file such as gpt2_124M.bin); token shards (magic 20240520) go to "
                     "--data-path, helix checkpoints to --load", path, hd[0], LLMC_MAGIC);
    } else if (hd[1] != 3 && hd[1] != 1) {
        ret = HX_ERR(HX_EFORMAT, "'%s' has llm.c model version %d, expected 3 (float32, padded "
                     "vocabulary) or 1 (float32); bfloat16 exports (versions 2 and 5) are not "
                     "supported: re-export in float32 with llm.c's train_gpt2.py", path, hd[1]);
    }
    *h = (struct llmc_header){ .version = hd[1], .maxT = hd[2], .V = hd[3], .L = hd[4],
                               .NH = hd[5], .C = hd[6], .Vp = hd[1] == 3 ? hd[7] : hd[3] };
    /* each field within the range of the flag it becomes (tools/train_args.c) */
    const struct { const char *name; int v, lo, hi; } fields[] = {
        { "maxT", h->maxT, 1, 65536 }, { "V", h->V, 2, 1 << 20 }, { "L", h->L, 1, 1024 },
        { "NH", h->NH, 1, 1024 }, { "C", h->C, 1, 65536 }, { "Vp", h->Vp, 2, 1 << 21 },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0] && ret == HX_OK; i++) {
        if (fields[i].v < fields[i].lo || fields[i].v > fields[i].hi) {
            ret = HX_ERR(HX_EFORMAT, "'%s': header field %s is %d, outside %d..%d (header sizes "
                         "maxT=%d V=%d L=%d NH=%d C=%d must all be positive and in range); "
                         DAMAGED, path, fields[i].name, fields[i].v, fields[i].lo, fields[i].hi,
                         h->maxT, h->V, h->L, h->NH, h->C);
        }
    }
    if (ret == HX_OK && h->C % h->NH != 0) {
        ret = HX_ERR(HX_EFORMAT, "'%s': hidden size C=%d is not divisible by NH=%d heads; "
                     DAMAGED, path, h->C, h->NH);
    } else if (ret == HX_OK && h->Vp < h->V) {
        ret = HX_ERR(HX_EFORMAT, "'%s': padded vocabulary Vp=%d is smaller than the vocabulary "
                     "V=%d; " DAMAGED, path, h->Vp, h->V);
    }
    if (ret != HX_OK) {
        fclose(f);
        return ret;
    }
    h->shape = (struct hx_gpt_config){ .vocab_size = h->V, .max_seq_len = h->maxT,
                                       .num_layers = h->L, .num_heads = h->NH,
                                       .hidden_size = h->C };
    /* (Vp + maxT + 2) C + L (12 C^2 + 13 C) floats: below 2^47 within the ranges above */
    uint64_t C = (uint64_t)h->C;
    uint64_t nfloats = ((uint64_t)h->Vp + (uint64_t)h->maxT + 2) * C +
                       (uint64_t)h->L * (12 * C * C + 13 * C);
    uint64_t expect = sizeof hd + sizeof(float) * nfloats;
    if ((uint64_t)st.st_size != expect) {
        fclose(f);
        return HX_ERR(HX_EFORMAT, "'%s' is %lld bytes, but its header (V=%d padded to %d, "
                      "maxT=%d, L=%d, NH=%d, C=%d) implies %llu bytes (%zu-byte header + %llu "
                      "float32 parameters); the file is truncated or has extra bytes: "
                      "re-download or re-export it", path, (long long)st.st_size, h->V, h->Vp,
                      h->maxT, h->L, h->NH, h->C, (unsigned long long)expect, sizeof hd,
                      (unsigned long long)nfloats);
    }
    *fp = f;
    return HX_OK;
}

/* Piece @p j of the file, in file order (3 + 12 L + 2 pieces): the helix parameter it holds
 * (-1 for wte's padding rows) and in *n its floats. */
static int piece(const struct llmc_header *h, int j, uint64_t *n)
{
    int L = h->L, param;
    if (j == 1) {
        *n = (uint64_t)(h->Vp - h->V) * (uint64_t)h->C;
        return -1;
    }
    if (j < 3) {
        param = j == 0 ? 0 : 1;               /* wte, wpe */
    } else if (j < 3 + LLMC_KINDS * L) {
        int k = (j - 3) / L, l = (j - 3) % L; /* kind k of layer l */
        param = 2 + LLMC_KINDS * l + k;
    } else {
        param = 2 + LLMC_KINDS * L + (j - 3 - LLMC_KINDS * L); /* lnf_w, lnf_b */
    }
    struct rec e;
    hx_ckpt_layout(&h->shape, param, &e);
    *n = (uint64_t)e.rows * (uint64_t)e.cols;
    return param;
}

static int num_pieces(const struct llmc_header *h)
{
    return 3 + LLMC_KINDS * h->L + 2;
}

/* @p n floats of parameter @p param from @p f into @p buf of @p cap floats (through it in
 * chunks when n is larger), each checked to be finite. */
static int read_values(FILE *f, const char *path, const struct llmc_header *h, int param,
                       uint64_t n, float *buf, uint64_t cap)
{
    struct rec e;
    hx_ckpt_layout(&h->shape, param, &e);
    for (uint64_t at = 0, c; at < n; at += c) {
        c = n - at < cap ? n - at : cap;
        float *dst = buf; /* all of it when it fits (import), else chunk by chunk (peek) */
        if (fread(dst, sizeof(float), (size_t)c, f) != c) {
            return HX_ERR(HX_EIO, "reading %s (%llu floats) from '%s' failed: %s", e.name,
                          (unsigned long long)n, path,
                          ferror(f) ? strerror(errno) : "unexpected end of file; was it "
                                                        "replaced while being read?");
        }
        for (uint64_t j = 0; j < c; j++) {
            if (!isfinite(dst[j])) {
                uint64_t el = at + j;
                return HX_ERR(HX_EFORMAT, "'%s': tensor %s (%d x %d), element %llu (row %llu, "
                              "column %llu) is %g; " DAMAGED, path, e.name, e.rows, e.cols,
                              (unsigned long long)el, (unsigned long long)(el / (uint64_t)e.cols),
                              (unsigned long long)(el % (uint64_t)e.cols), (double)dst[j]);
            }
        }
    }
    return HX_OK;
}

/* The file's pieces in order, after the header: each parameter's values read through @p buf
 * (@p cap floats) and checked finite, and, when @p m is given, stored as the model's
 * parameter (a piece that fits @p buf whole); the padding rows are skipped. */
static int read_pieces(FILE *f, const char *path, const struct llmc_header *h, float *buf,
                       uint64_t cap, hx_gpt_t m)
{
    int ret = HX_OK;
    for (int j = 0; j < num_pieces(h) && ret == HX_OK; j++) {
        uint64_t n;
        int param = piece(h, j, &n);
        if (param < 0 && n > 0 && fseeko(f, (off_t)(n * sizeof(float)), SEEK_CUR) != 0) {
            ret = HX_ERR(HX_EIO, "seeking past the padded vocabulary in '%s': %s", path,
                         strerror(errno));
        } else if (param >= 0) {
            ret = read_values(f, path, h, param, n, buf, cap);
            ret = ret == HX_OK && m != NULL ? hx_gpt_scatter_state(m, param, HX_STATE_PARAM, buf)
                                            : ret;
        }
    }
    return ret;
}

/* Sets only the five shape fields; seq_len, batch sizes and tiling stay the caller's.  The
 * whole file is read through: every value must be finite. */
int hx_llmc_peek(const char *path, struct hx_gpt_config *model)
{
    FILE *f;
    struct llmc_header h;
    int ret = open_model(path, &f, &h);
    if (ret != HX_OK) {
        return ret;
    }
    float buf[16384];
    ret = read_pieces(f, path, &h, buf, sizeof buf / sizeof buf[0], NULL);
    fclose(f);
    if (ret == HX_OK) {
        model->vocab_size = h.V;
        model->max_seq_len = h.maxT;
        model->num_layers = h.L;
        model->num_heads = h.NH;
        model->hidden_size = h.C;
    }
    return ret;
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

/* The file is fully validated before any tensor is written; only an I/O error or a value
 * that changed since peek can leave the parameters partly imported. */
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
    /* same shape, so helix's tensors have the file's sizes */
    int np = hx_gpt_num_param_tensors(m);
    uint64_t biggest = 0;
    HX_ASSERT(np == 2 + LLMC_KINDS * h.L + 2, "%d parameter tensors for L=%d", np, h.L);
    for (int j = 0; j < num_pieces(&h); j++) {
        uint64_t n;
        int param = piece(&h, j, &n), rows, cols;
        if (param >= 0) {
            hx_gpt_param_shape(m, param, &rows, &cols);
            HX_ASSERT((uint64_t)rows * (uint64_t)cols == n, "%s: %d x %d in the model, %llu "
                      "floats in the file", hx_gpt_param_name(m, param), rows, cols,
                      (unsigned long long)n);
            biggest = n > biggest ? n : biggest;
        }
    }
    float *buf = malloc(biggest * sizeof(float));
    if (buf == NULL) {
        fclose(f);
        return HX_ERR(HX_ENOMEM, "importing '%s': a buffer of %llu floats", path,
                      (unsigned long long)biggest);
    }
    ret = read_pieces(f, path, &h, buf, biggest, m);
    free(buf);
    fclose(f);
    for (int i = 0; i < np && ret == HX_OK; i++) {
        ret = zero_tensor(hx_gpt_adam_m(m, i));
        ret = ret == HX_OK ? zero_tensor(hx_gpt_adam_v(m, i)) : ret;
    }
    return ret;
}
