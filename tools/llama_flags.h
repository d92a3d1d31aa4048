/* SPDX-License-Identifier: MIT */
/* tools/llama_flags.h: the Llama settings of Megatron's GPT model (helix/gpt.h) as the flags
 * `helix train` and `helix profile-overlap` share, Megatron's names: --model llama,
 * --normalization, --norm-epsilon, --swiglu, --ffn-hidden-size, --position-embedding-type,
 * --rotary-base, --num-query-groups, --group-query-attention,
 * --untie-embeddings-and-output-weights, --disable-bias-linear. */
#ifndef HX_TOOLS_LLAMA_FLAGS_H
#define HX_TOOLS_LLAMA_FLAGS_H

#include "helix/gpt.h"
#include "tools/tools.h"

struct llama_flags {
    const char *model, *normalization, *position_embedding;
    int swiglu, ffn_hidden, query_groups, group_query_attention, untie, disable_bias;
    float rotary_base, norm_eps;
};

/* Append the flags to @p table (at *n, which grows by LLAMA_FLAGS) */
#define LLAMA_FLAGS 11
void llama_flags_add(struct llama_flags *f, struct flag *table, int *n);
/* The checks a flag alone allows (a word that is no choice, --group-query-attention without
 * --num-query-groups): 0, or 2 with one line printed */
int llama_flags_check(const struct llama_flags *f);
/* 1 when a setting departs from GPT-2 (a model of @p heads heads and hidden size @p hidden) */
int llama_flags_any(const struct llama_flags *f, int heads, int hidden);
/* Set the configuration's Llama fields from the flags (--model llama sets its five
 * switches) */
void llama_flags_apply(const struct llama_flags *f, struct hx_gpt_config *c);

#endif /* HX_TOOLS_LLAMA_FLAGS_H */
