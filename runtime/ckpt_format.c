/* SPDX-License-Identifier: MIT */
/* runtime/ckpt_format.c: the pieces of the checkpoint format (runtime/ckpt_format.h) that the
 * writer and the reader share, so they cannot disagree. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "helix/error.h"
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

int hx_ckpt_layout(const struct hx_gpt_config *c, int i, struct rec *r)
{
    /* per-layer kinds, shapes in units of C (0 rows: a (1, cols) vector) */
    static const char *const kind[12] = { "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w",
                                          "proj_b", "ln2_w", "ln2_b", "fc_w", "fc_b",
                                          "fcproj_w", "fcproj_b" };
    static const int rows[12] = { 0, 0, 3, 0, 1, 0, 0, 0, 4, 0, 1, 0 };
    static const int cols[12] = { 1, 1, 1, 3, 1, 1, 1, 1, 1, 4, 4, 1 };
    int L = c->num_layers, C = c->hidden_size, n = 2 + 12 * L + 2;
    if (r == NULL) {
        return n;
    }
    memset(r, 0, sizeof *r);
    if (i < 2) {
        snprintf(r->name, sizeof r->name, "%s", i == 0 ? "wte" : "wpe");
        r->rows = i == 0 ? c->vocab_size : c->max_seq_len ? c->max_seq_len : c->seq_len;
        r->cols = C;
    } else if (i >= n - 2) {
        snprintf(r->name, sizeof r->name, "%s", i == n - 2 ? "lnf_w" : "lnf_b");
        r->rows = 1;
        r->cols = C;
    } else {
        int k = (i - 2) % 12;
        snprintf(r->name, sizeof r->name, "h%d.%s", (i - 2) / 12, kind[k]);
        r->rows = rows[k] ? rows[k] * C : 1;
        r->cols = cols[k] * C;
    }
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
