/* SPDX-License-Identifier: MIT */
/* tests/graphs/model_api.c: the public model interface (helix/model.h) without running
 * anything.  A model's description that the layout cannot place is refused by
 * hx_model_create with one message naming the problem (checked here on stderr): a missing
 * emitter, a tp that does not divide a split block, blocks that do not sum to the dimension,
 * a layer out of range, too many parameters in one layer, layers the pipeline cannot cut,
 * micro-batches dp does not divide, recomputation without a recompute_layer emitter,
 * --tp-comm-overlap.  A valid one gets its tp-local shapes, and the schedule pass calls its
 * emitters in the documented order: per micro-batch forward begin, layers upward, end, loss,
 * backward begin, layers downward, end (serial); GPipe on a pipeline stage; with two
 * strands some backward layer of one micro-batch emitted between forward layers of another.
 * The emitters here record their calls and emit nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/mesh.h"
#include "helix/model.h"
#include "tap.h"

#define L 2
#define C 8

static char calls[4096];

static void rec(const char *what, int mb, int c, int l)
{
    char one[32];
    snprintf(one, sizeof one, l < 0 ? "%s%d " : "%s%d.%d ", what, mb, l);
    (void)c;
    strncat(calls, one, sizeof calls - strlen(calls) - 1);
}

static void fb(hx_model_t m, int mb, int c) { rec("Fb", mb, c, -1); }
static void fl(hx_model_t m, int mb, int c, int l) { rec("F", mb, c, l); }
static void fe(hx_model_t m, int mb, int c) { rec("Fe", mb, c, -1); }
static void lo(hx_model_t m, int mb) { rec("loss", mb, 0, -1); }
static void bb(hx_model_t m, int mb, int c) { rec("Bb", mb, c, -1); }
static void bl(hx_model_t m, int mb, int c, int l) { rec("B", mb, c, l); }
static void be(hx_model_t m, int mb, int c) { rec("Be", mb, c, -1); }

static const struct hx_model_ops ops = { fb, fl, fe, bb, bl, be, lo, NULL };

/* two layers of a norm (1,C), a column-parallel packed weight (3C,C) of three blocks and a
 * row-parallel one (C,2C); an embedding (16,C) */
static int specs(struct hx_param_spec *s)
{
    int n = 0;
    memset(s, 0, sizeof *s * 64);
    snprintf(s[n].name, HX_NAME_MAX, "emb");
    s[n].rows = 16, s[n].cols = C, s[n].role = HX_PARAM_EMBEDDING, s[n].site = HX_SITE_EMBED;
    s[n++].layer = -1;
    for (int l = 0; l < L; l++) {
        snprintf(s[n].name, HX_NAME_MAX, "h%d.norm", l);
        s[n].rows = 1, s[n].cols = C, s[n].role = HX_PARAM_NORM, s[n++].layer = l;
        snprintf(s[n].name, HX_NAME_MAX, "h%d.qkv", l);
        s[n].rows = 3 * C, s[n].cols = C, s[n].split = HX_TP_COLUMN, s[n].nblocks = 3;
        s[n].block[0] = s[n].block[1] = s[n].block[2] = C;
        s[n++].layer = l;
        snprintf(s[n].name, HX_NAME_MAX, "h%d.proj", l);
        s[n].rows = C, s[n].cols = 2 * C, s[n].split = HX_TP_ROW, s[n++].layer = l;
    }
    return n;
}

static struct hx_mesh mesh_of(int world, int tp, int pp, int rank)
{
    struct hx_mesh m;
    struct hx_mesh_request r = { .world_size = world, .world_rank = rank, .tp = tp, .pp = pp };
    if (hx_mesh_init(&m, &r, 0) != HX_OK) {
        hx_mesh_serial(&m);
    }
    return m;
}

/* hx_model_create's status and whether its stderr holds @p want */
static int create_says(const struct hx_model_desc *d, const struct hx_parallel_config *par,
                       int status, const char *want, const char *what)
{
    char path[] = "/tmp/hx-model-api.XXXXXX", buf[2048] = "";
    int fd = mkstemp(path), saved = dup(2);
    fflush(stderr);
    dup2(fd, 2);
    hx_model_t m = NULL;
    int ret = hx_model_create(&m, d, par);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    hx_model_destroy(m);
    int good = ret == status && m == NULL && strstr(buf, want) != NULL;
    if (!good) {
        tap_diag("%s: status %d (want %d), stderr: %s", what, ret, status, buf);
    }
    return tap_ok(good, "%s: refused, the message names \"%s\"", what, want);
}

int main(void)
{
    tap_plan(14);
    struct hx_param_spec s[64];
    int n = specs(s);
    struct hx_model_desc d = { .ops = &ops, .num_layers = L, .nparams = n, .params = s,
                               .num_micro_batches = 4, .loss_count = 4.0 };
    struct hx_mesh tp2 = mesh_of(2, 2, 1, 0), pp2 = mesh_of(2, 1, 2, 0), dp2 = mesh_of(2, 1, 1, 0);
    struct hx_parallel_config ptp2 = { .mesh = &tp2 }, ppp2 = { .mesh = &pp2 };
    struct hx_parallel_config pdp2 = { .mesh = &dp2 };

    struct hx_model_ops no_loss = ops;
    no_loss.loss = NULL;
    struct hx_model_desc bad = d;
    bad.ops = &no_loss;
    create_says(&bad, NULL, HX_EINVAL, "seven emitters", "an emitter missing");
    s[2].block[0] = 6, s[2].block[1] = 9; /* 6 + 9 + 8 = 23: odd blocks, wrong sum */
    create_says(&d, &ptp2, HX_EINVAL, "h0.qkv", "tp 2 over a block of 9");
    s[2].block[0] = 6, s[2].block[1] = 10; /* 6 + 10 + 8 = 24 but the split is fine */
    s[2].block[2] = 10;
    create_says(&d, NULL, HX_EINVAL, "blocks sum to 26", "blocks that do not sum to 24");
    s[2].block[0] = s[2].block[1] = s[2].block[2] = C;
    s[1].layer = L;
    create_says(&d, NULL, HX_EINVAL, "layer 2 and unit", "a layer out of range");
    s[1].layer = 0;
    struct hx_param_spec many[40];
    for (int i = 0; i < 40; i++) {
        many[i] = s[1];
        snprintf(many[i].name, HX_NAME_MAX, "n%d", i);
    }
    struct hx_model_desc crowd = d;
    crowd.params = many, crowd.nparams = 40;
    create_says(&crowd, NULL, HX_EINVAL, "40 parameters in layer 0", "40 parameters in a layer");
    struct hx_model_desc three = d;
    three.num_layers = 3;
    for (int i = 0; i < n; i++) {
        s[i].layer = s[i].layer == 1 ? 2 : s[i].layer;
    }
    create_says(&three, &ppp2, HX_EINVAL, "3 layers do not cut", "3 layers on 2 stages");
    for (int i = 0; i < n; i++) {
        s[i].layer = s[i].layer == 2 ? 1 : s[i].layer;
    }
    struct hx_model_desc odd = d;
    odd.num_micro_batches = 3;
    create_says(&odd, &pdp2, HX_EINVAL, "3 micro-batches", "3 micro-batches over dp 2");
    struct hx_parallel_config rc = { .recompute = HX_RECOMPUTE_FULL };
    create_says(&d, &rc, HX_EINVAL, "recompute_layer", "recomputation without its emitter");
    struct hx_parallel_config tpo = { .mesh = &tp2, .tp_comm_overlap = 1 };
    create_says(&d, &tpo, HX_EUNSUPPORTED, "--tp-comm-overlap", "--tp-comm-overlap");

    /* a valid model: tp-local shapes, then the emitters' order */
    hx_model_t m = NULL;
    int ret = hx_model_create(&m, &d, &ptp2);
    int r0 = 0, c0 = 0, r1 = 0, c1 = 0;
    if (ret == HX_OK) {
        hx_model_param_local_shape(m, 2, &r0, &c0);
        hx_model_param_local_shape(m, 3, &r1, &c1);
    }
    tap_ok(ret == HX_OK && r0 == 3 * C / 2 && c0 == C && r1 == C && c1 == C,
           "tp 2: qkv (24,8) keeps (12,8), proj (8,16) keeps (8,8): got (%d,%d), (%d,%d)", r0,
           c0, r1, c1);
    hx_model_destroy(m);

    struct hx_optim_config o;
    hx_optim_config_default(&o, 1);
    struct hx_model_desc two = d;
    two.num_micro_batches = 2;
    calls[0] = 0;
    ret = hx_model_create(&m, &two, NULL);
    ret = ret == HX_OK ? hx_model_emit_step(m, &o) : ret;
    const char *serial = "Fb0 F0.0 F0.1 Fe0 loss0 Bb0 B0.1 B0.0 Be0 "
                         "Fb1 F1.0 F1.1 Fe1 loss1 Bb1 B1.1 B1.0 Be1 ";
    tap_ok(ret == HX_OK && strcmp(calls, serial) == 0, "serial: every micro-batch's forward, "
           "loss, backward in order (%s)", calls);
    tap_ok(ret == HX_OK && hx_model_emit_step(m, &o) == HX_EINVAL,
           "a second hx_model_emit_step is refused");
    hx_model_destroy(m);

    calls[0] = 0;
    struct hx_parallel_config gp = { .mesh = &pp2, .pipeline_schedule = HX_PIPE_GPIPE };
    ret = hx_model_create(&m, &two, &gp);
    ret = ret == HX_OK ? hx_model_emit_step(m, &o) : ret;
    tap_ok(ret == HX_OK && strcmp(calls, "Fb0 F0.0 Fe0 Fb1 F1.0 Fe1 Bb0 B0.0 Be0 "
                                         "Bb1 B1.0 Be1 ") == 0,
           "GPipe, stage 0 of 2: layer 0 of both forwards, then both backwards (%s)", calls);
    hx_model_destroy(m);

    calls[0] = 0;
    struct hx_parallel_config st = { .strands = 1 };
    ret = hx_model_create(&m, &d, &st);
    ret = ret == HX_OK ? hx_model_emit_step(m, &o) : ret;
    /* micro-batch 1's backward interleaved with micro-batch 2's forward: an SI block */
    const char *b1 = strstr(calls, "Bb1"), *f2 = strstr(calls, "F2.1"), *e1 = strstr(calls, "Be1");
    tap_ok(ret == HX_OK && b1 && f2 && e1 && b1 < f2 && f2 < e1,
           "two strands: micro-batch 2's forward layers inside micro-batch 1's backward (%s)",
           calls);
    hx_model_destroy(m);
    return tap_exit();
}
