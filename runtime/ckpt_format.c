/* SPDX-License-Identifier: MIT */
/* runtime/ckpt_format.c: the pieces of the checkpoint format (runtime/ckpt_format.h) that the
 * writer and the reader share, so they cannot disagree. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/model.h"
#include "runtime/ckpt_format.h"

uint64_t hx_ckpt_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* Every header field in file order: 4 bytes (int32, uint32, float32) or 8 (int64, uint64).
 * One table both encodes and decodes, so the writer and the reader cannot disagree. */
void hx_ckpt_code_header(unsigned char *p, int decode, struct hdr *h, struct hx_gpt_config *g,
                         struct hx_optim_config *o, struct hx_train_state *s)
{
    struct { void *v; int n; } f[] = {
        { &h->version, 4 }, { &h->header_bytes, 4 }, { &h->payload_bytes, 8 },
        { &h->ntensors, 4 }, { &g->vocab_size, 4 }, { &g->max_seq_len, 4 },
        { &g->num_layers, 4 }, { &g->num_heads, 4 }, { &g->hidden_size, 4 },
        { &g->seq_len, 4 }, { &g->micro_batch_size, 4 }, { &g->num_micro_batches, 4 },
        { &g->tile_seqs, 4 }, { &g->attn_block, 4 }, { &g->ln_eps, 4 }, { &o->lr, 4 },
        { &o->min_lr, 4 }, { &o->decay_style, 4 }, { &o->warmup_iters, 4 },
        { &o->decay_iters, 4 }, { &o->beta1, 4 }, { &o->beta2, 4 }, { &o->eps, 4 },
        { &o->weight_decay, 4 }, { &o->clip_grad, 4 }, { &s->step, 8 },
        { &s->train_cursor, 8 }, { &s->val_cursor, 8 }, { &s->rng[0], 8 }, { &s->rng[1], 8 },
        { &s->rng[2], 8 }, { &s->rng[3], 8 }, { &s->seed, 8 }, { &h->args_len, 4 },
    };
    size_t at = 8; /* after the magic */
    for (size_t i = 0; i < sizeof f / sizeof f[0]; at += (size_t)f[i++].n) {
        memcpy(decode ? f[i].v : p + at, decode ? p + at : f[i].v, (size_t)f[i].n);
    }
    HX_ASSERT(at == FIXED_HEADER, "header is %zu bytes, expected %d", at, FIXED_HEADER);
}

void hx_ckpt_code_llama(unsigned char *p, int decode, struct hx_gpt_config *g)
{
    void *f[] = { &g->normalization, &g->swiglu, &g->ffn_hidden_size, &g->position_embedding,
                  &g->rotary_base, &g->num_query_groups, &g->untie_embeddings,
                  &g->disable_bias };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        unsigned char *at = p + FIXED_HEADER + 4 * i;
        memcpy(decode ? f[i] : at, decode ? at : f[i], 4);
    }
}

uint32_t hx_ckpt_version_for(const struct hx_gpt_config *g)
{
    return hx_gpt_is_gpt2(g) ? 1u : 2u;
}

int hx_ckpt_fixed_header(uint32_t version)
{
    return version >= 2 ? FIXED_HEADER_V2 : FIXED_HEADER;
}

int hx_ckpt_layout(const struct hx_gpt_config *c, int i, struct rec *r)
{
    int n = hx_gpt_param_table(c, NULL);
    if (r == NULL) {
        return n;
    }
    memset(r, 0, sizeof *r);
    struct hx_param_spec *s = malloc(sizeof *s * (size_t)n);
    HX_ASSERT(s != NULL, "out of memory (%d parameter specs)", n);
    hx_gpt_param_table(c, s);
    HX_ASSERT(i >= 0 && i < n, "record %d of %d", i, n);
    snprintf(r->name, sizeof r->name, "%s", s[i].name);
    r->rows = s[i].rows;
    r->cols = s[i].cols;
    free(s);
    return n;
}

/* ckpt-<digits>.bin; *tmp is set for ".bin.tmp", a save killed before its rename. */
int hx_ckpt_is_name(const char *s, int *tmp)
{
    size_t d = strncmp(s, "ckpt-", 5) == 0 ? strspn(s + 5, "0123456789") : 0;
    *tmp = d > 0 && strcmp(s + 5 + d, ".bin.tmp") == 0;
    return d > 0 && (strcmp(s + 5 + d, ".bin") == 0 || *tmp);
}

/* The file named by dir/latest: 1 found, 0 no `latest`, -1 unreadable or not a ckpt name. */
int hx_ckpt_read_latest(const char *dir, char *name, size_t size, int *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    *err = f == NULL ? errno : 0;
    if (f == NULL) {
        return *err == ENOENT ? 0 : -1;
    }
    int tmp, ok = fgets(name, (int)size, f) != NULL;
    fclose(f);
    name[ok ? strcspn(name, "\n") : 0] = '\0';
    return ok && hx_ckpt_is_name(name, &tmp) && !tmp ? 1 : -1;
}
