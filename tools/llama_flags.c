/* SPDX-License-Identifier: MIT */
/* tools/llama_flags.c: the Llama flags (tools/llama_flags.h). */
#include <stdio.h>
#include <string.h>

#include "tools/llama_flags.h"

#define F(nm, t, d, lo, hi, h) table[(*n)++] = (struct flag){ nm, t, d, lo, hi, h }

void llama_flags_add(struct llama_flags *f, struct flag *table, int *n)
{
    F("model", FLAG_STRING, &f->model, 0, 0,
      "gpt (GPT-2, default) or llama: RMSNorm, SwiGLU, RoPE, untied output layer, no biases");
    F("normalization", FLAG_STRING, &f->normalization, 0, 0, "LayerNorm (default) or RMSNorm");
    F("norm-epsilon", FLAG_FLOAT, &f->norm_eps, 0, 1, "the norms' epsilon (0: 1e-5)");
    F("swiglu", FLAG_BOOL, &f->swiglu, 0, 1, "MLP fcproj(silu(gate) * up) instead of GELU");
    F("ffn-hidden-size", FLAG_INT, &f->ffn_hidden, 0, 1 << 20, "MLP width F (0: 4 x hidden)");
    F("position-embedding-type", FLAG_STRING, &f->position_embedding, 0, 0,
      "learned_absolute (default) or rope");
    F("rotary-base", FLAG_FLOAT, &f->rotary_base, 0, 1e9, "RoPE base (0: 10000; Llama-3: 500000)");
    F("num-query-groups", FLAG_INT, &f->query_groups, 0, 1024,
      "key/value heads of grouped-query attention (0: one per attention head)");
    F("group-query-attention", FLAG_BOOL, &f->group_query_attention, 0, 1,
      "Megatron's switch for --num-query-groups (which alone suffices here)");
    F("untie-embeddings-and-output-weights", FLAG_BOOL, &f->untie, 0, 1,
      "an output layer of its own instead of the embedding's transpose");
    F("disable-bias-linear", FLAG_BOOL, &f->disable_bias, 0, 1, "no biases in linear layers");
}

static int is(const char *v, const char *word)
{
    return v != NULL && strcmp(v, word) == 0;
}

int llama_flags_check(const struct llama_flags *f)
{
    struct { const char *flag, *value, *a, *b; } words[] = {
        { "model", f->model, "gpt", "llama" },
        { "normalization", f->normalization, "LayerNorm", "RMSNorm" },
        { "position-embedding-type", f->position_embedding, "learned_absolute", "rope" },
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (words[i].value != NULL && !is(words[i].value, words[i].a) &&
            !is(words[i].value, words[i].b)) {
            fprintf(stderr, "helix: error: --%s '%s' is not %s or %s\n", words[i].flag,
                    flags_esc(words[i].value), words[i].a, words[i].b);
            return 2;
        }
    }
    if (f->group_query_attention && f->query_groups == 0) { /* Megatron needs both too */
        fprintf(stderr, "helix: error: --group-query-attention without --num-query-groups; "
                "give the number of key/value heads (it must divide --num-attention-heads)\n");
        return 2;
    }
    return 0;
}

int llama_flags_any(const struct llama_flags *f, int heads, int hidden)
{
    return is(f->model, "llama") || f->swiglu || f->untie || f->disable_bias ||
           (f->query_groups && f->query_groups != heads) ||
           (f->ffn_hidden && f->ffn_hidden != 4 * hidden) || is(f->normalization, "RMSNorm") ||
           is(f->position_embedding, "rope");
}

void llama_flags_apply(const struct llama_flags *f, struct hx_gpt_config *c)
{
    int llama = is(f->model, "llama");
    c->ln_eps = f->norm_eps;
    c->normalization = llama || is(f->normalization, "RMSNorm") ? HX_NORM_RMSNORM
                                                                 : HX_NORM_LAYERNORM;
    c->position_embedding = llama || is(f->position_embedding, "rope") ? HX_POS_ROPE
                                                                        : HX_POS_LEARNED;
    c->swiglu = llama || f->swiglu;
    c->untie_embeddings = llama || f->untie;
    c->disable_bias = llama || f->disable_bias;
    c->ffn_hidden_size = f->ffn_hidden;
    c->rotary_base = f->rotary_base;
    c->num_query_groups = f->query_groups;
}
