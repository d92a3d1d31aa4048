/* SPDX-License-Identifier: MIT */
/* runtime/ckpt_format.h: the checkpoint file format shared by the writer
 * (runtime/checkpoint_save.c) and the reader (runtime/checkpoint_load.c).
 * Format 1, little-endian: header "HXCKPT\0\0", u32 version, u32 header_bytes, u64 payload_bytes,
 * u32 ntensors, hx_gpt_config (10 i32, f32 ln_eps), hx_optim_config (f32 lr min_lr, i32 decay
 * warmup decay_iters, f32 beta1 beta2 eps weight_decay clip), hx_train_state (i64 step, u64
 * cursors, rng[4], seed), u32 args_len [, format 2: the Llama settings of hx_gpt_config, i32
 * normalization swiglu ffn_hidden_size position_embedding, f32 rotary_base, i32
 * num_query_groups untie_embeddings disable_bias] + args; payload per parameter
 * (hx_gpt_param order):
 * name[48] NUL-padded, i32 rows, cols, f32 param, adam_m, adam_v; trailer u64 FNV-1a 64 of
 * every byte before it, "HXCKEND\0".  A save directory holds ckpt-<step>.bin files and
 * `latest`, naming the newest complete one.  GPT-2 models are written in format 1, so files
 * stay readable by the helix before format 2; a model with a Llama setting needs format 2. */
#ifndef HX_CKPT_FORMAT_H
#define HX_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "helix/checkpoint.h"
#include "helix/tensor.h"

#define MAGIC "HXCKPT\0\0"
#define END_MARK "HXCKEND\0"
#define CKPT_VERSION 2u       /* the newest format read and written (1 is read too) */
#define LLMC_MAGIC 20240326u
#define FIXED_HEADER 180    /* format 1's bytes before the args text */
#define FIXED_HEADER_V2 212 /* format 2's: the Llama settings follow args_len */
#define RECORD_HEAD (HX_NAME_MAX + 8)
#define TRAILER 16
#define FNV_OFFSET 0xcbf29ce484222325ULL

/* Tensors go to and from the file as the host stores them: that is the file's little-endian
 * order on every machine helix runs on (x86-64, aarch64). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoints need a little-endian host");
_Static_assert(sizeof(int) == 4 && sizeof(float) == 4, "header fields are 32-bit");

struct hdr {
    uint32_t version, header_bytes, ntensors, args_len;
    uint64_t payload_bytes;
};

struct rec {
    char name[HX_NAME_MAX];
    int rows, cols;
};

/* FNV-1a 64 of @p n bytes, continuing from @p h (FNV_OFFSET to start). */
uint64_t hx_ckpt_fnv1a(uint64_t h, const void *p, size_t n);
/* Encode (decode 0) or decode the FIXED_HEADER bytes at @p p (after the 8-byte magic) from or
 * into the four structs. */
void hx_ckpt_code_header(unsigned char *p, int decode, struct hdr *h, struct hx_gpt_config *g,
                         struct hx_optim_config *o, struct hx_train_state *s);
/* Format 2's fields (the Llama settings) at @p p + FIXED_HEADER, encoded or decoded. */
void hx_ckpt_code_llama(unsigned char *p, int decode, struct hx_gpt_config *g);
/* The format a model of configuration @p g is written in: 1 for GPT-2, 2 with any Llama
 * setting; and the bytes of that format's fixed header. */
uint32_t hx_ckpt_version_for(const struct hx_gpt_config *g);
int hx_ckpt_fixed_header(uint32_t version);
/* The records a model of configuration @p c has, in file order (helix/gpt.h's parameter
 * order, hx_gpt_param_table): returns their number (GPT-2: 2 + 12 L + 2), and with @p r set,
 * fills the name and shape of record @p i (0 <= i < that number).  A pure function of the
 * configuration, so a header can be checked against its records before any model exists
 * (hx_checkpoint_check_model compares them with the model's). */
int hx_ckpt_layout(const struct hx_gpt_config *c, int i, struct rec *r);
/* ckpt-<digits>.bin, or ckpt-<digits>.bin.tmp (*tmp set): a save killed before its rename. */
int hx_ckpt_is_name(const char *s, int *tmp);
/* The file named by dir/latest: 1 found, 0 no `latest`, -1 unreadable or not a ckpt name. */
int hx_ckpt_read_latest(const char *dir, char *name, size_t size, int *err);

#endif /* HX_CKPT_FORMAT_H */
