#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write and alter helix checkpoints and llm.c model files, for the fuzz seeds and the tests
of hostile files (tests/cli/bad_checkpoint.sh, tests/graphs/checkpoint.c).

Usage:
  ckpt_craft.py seed OUT             a small valid checkpoint (V=8, maxT=4, L=1, NH=2, C=4)
  ckpt_craft.py edit IN OUT EDIT...  a copy of checkpoint IN with each EDIT applied and the
                                     FNV-1a trailer recomputed (unless `trailer=keep`)
  ckpt_craft.py llmc OUT [1|3]       a small valid llm.c model file, version 3 (padded, the
                                     default) or 1 (V=8 padded to 16, maxT=4, L=1, NH=2, C=4)
EDIT is FIELD=VALUE for a header field (names below: version ... args_len, e.g. step=-5,
hidden_size=8192); args=TEXT for the settings text (\\n for newlines; args_len and
header_bytes follow); args+KEY=VALUE to set one settings line (added when absent, KEY
removed when VALUE is empty); TENSOR[.m|.v][I]=X for element I of a parameter (or of its
Adam moment m or v), e.g. h0.qkv_w[5]=nan; recI.name=S, recI.rows=N, recI.cols=N for the head
of record I (the records before it must be intact); or trailer=keep.
Format: runtime/ckpt_format.h.  Exit 0, or 2 on bad usage.
"""
import struct
import sys

MAGIC, END = b"HXCKPT\0\0", b"HXCKEND\0"
FNV_OFFSET, FNV_PRIME = 0xcbf29ce484222325, 0x100000001b3
NAME_MAX = 48
# runtime/ckpt_format.c's table, in file order after the magic
FIELDS = [("version", "I"), ("header_bytes", "I"), ("payload_bytes", "Q"), ("ntensors", "I"),
          ("vocab_size", "i"), ("max_seq_len", "i"), ("num_layers", "i"), ("num_heads", "i"),
          ("hidden_size", "i"), ("seq_len", "i"), ("micro_batch_size", "i"),
          ("num_micro_batches", "i"), ("tile_seqs", "i"), ("attn_block", "i"), ("ln_eps", "f"),
          ("lr", "f"), ("min_lr", "f"), ("decay_style", "i"), ("warmup_iters", "i"),
          ("decay_iters", "i"), ("beta1", "f"), ("beta2", "f"), ("eps", "f"),
          ("weight_decay", "f"), ("clip_grad", "f"), ("step", "q"), ("train_cursor", "Q"),
          ("val_cursor", "Q"), ("rng0", "Q"), ("rng1", "Q"), ("rng2", "Q"), ("rng3", "Q"),
          ("seed", "Q"), ("args_len", "I")]
HEAD = "<8s" + "".join(t for _, t in FIELDS)
FIXED = struct.calcsize(HEAD)  # 180
LAYER_KINDS = ["ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
               "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b"]


def fnv1a(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xffffffffffffffff
    return h


def param_shapes(V, maxT, L, C):
    """(name, rows, cols) in helix's order (include/helix/gpt.h)."""
    rows = {"qkv_w": 3 * C, "proj_w": C, "fc_w": 4 * C, "fcproj_w": C}
    cols = {"qkv_w": C, "qkv_b": 3 * C, "fc_w": C, "fc_b": 4 * C, "fcproj_w": 4 * C}
    out = [("wte", V, C), ("wpe", maxT, C)]
    for layer in range(L):
        for k in LAYER_KINDS:
            out.append(("h%d.%s" % (layer, k), rows.get(k, 1), cols.get(k, C)))
    return out + [("lnf_w", 1, C), ("lnf_b", 1, C)]


def lcg_floats(n, seed, lo, hi):
    """n deterministic floats in [lo, hi) (no numpy needed)."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xffffffffffffffff
        out.append(lo + (hi - lo) * ((x >> 40) / float(1 << 24)))
    return out


SEED_ARGS = ("num-layers = 1\nhidden-size = 4\nnum-attention-heads = 2\nseq-length = 4\n"
             "max-position-embeddings = 4\nvocab-size = 8\nmicro-batch-size = 2\n"
             "global-batch-size = 2\nlr = 0.00100000005\nmin-lr = 9.99999975e-05\n"
             "lr-warmup-iters = 1\nlr-decay-iters = 10\nlr-decay-style = cosine\n"
             "weight-decay = 0.100000001\nclip-grad = 1\nadam-beta1 = 0.899999976\n"
             "adam-beta2 = 0.949999988\nadam-eps = 9.99999994e-09\nseed = 1234\n"
             "split = 949,50,1\neval-interval = 100\neval-iters = 10\nsave-interval = 100\n"
             "log-interval = 10\ntile-seqs = 0\nattn-block = 0\n")


def seed_checkpoint():
    V, maxT, L, NH, C = 8, 4, 1, 2, 4
    shapes = param_shapes(V, maxT, L, C)
    args = SEED_ARGS.encode()
    payload = b""
    for i, (name, r, c) in enumerate(shapes):
        n = r * c
        payload += name.encode().ljust(NAME_MAX, b"\0") + struct.pack("<ii", r, c)
        payload += struct.pack("<%df" % n, *lcg_floats(n, 3 * i + 1, -0.1, 0.1))
        payload += struct.pack("<%df" % n, *lcg_floats(n, 3 * i + 2, -0.01, 0.01))
        payload += struct.pack("<%df" % n, *lcg_floats(n, 3 * i + 3, 0.0, 1e-4))
    vals = dict(version=1, header_bytes=FIXED + len(args), payload_bytes=len(payload),
                ntensors=len(shapes), vocab_size=V, max_seq_len=maxT, num_layers=L,
                num_heads=NH, hidden_size=C, seq_len=4, micro_batch_size=2, num_micro_batches=1,
                tile_seqs=1, attn_block=0, ln_eps=1e-5, lr=1e-3, min_lr=1e-4, decay_style=0,
                warmup_iters=1, decay_iters=10, beta1=0.9, beta2=0.95, eps=1e-8,
                weight_decay=0.1, clip_grad=1.0, step=3, train_cursor=24, val_cursor=0,
                rng0=0, rng1=0, rng2=0, rng3=0, seed=1234, args_len=len(args))
    head = struct.pack(HEAD, MAGIC, *[vals[k] for k, _ in FIELDS])
    body = head + args + payload
    return body + struct.pack("<Q", fnv1a(body)) + END


def records(data, header_bytes, ntensors):
    """{name: (offset of its floats, rows, cols)} of the records that fit in data."""
    out, at = {}, header_bytes
    for _ in range(ntensors):
        if at + NAME_MAX + 8 > len(data):
            break
        name = data[at:at + NAME_MAX].split(b"\0")[0].decode("latin-1")
        r, c = struct.unpack_from("<ii", data, at + NAME_MAX)
        out[name] = (at + NAME_MAX + 8, r, c)
        at += NAME_MAX + 8 + 12 * max(r, 0) * max(c, 0)
    return out


def parse_value(text, kind):
    if kind in "fd":
        return float(text)
    return int(text, 0)


def edit(data, edits):
    data = bytearray(data)
    keep_trailer = False
    for e in edits:
        key, _, value = e.partition("=")
        head = list(struct.unpack_from(HEAD, data, 0))
        names = [k for k, _ in FIELDS]
        args = bytes(data[FIXED:FIXED + head[names.index("args_len") + 1]])
        if key == "trailer":
            keep_trailer = value == "keep"
        elif key in names:
            i = names.index(key)
            head[i + 1] = parse_value(value, FIELDS[i][1])
            data[:FIXED] = struct.pack(HEAD, *head)
        elif key == "args" or key.startswith("args+"):
            if key == "args":
                new = value.replace("\\n", "\n").encode()
            else:
                k = key[5:]
                lines = [ln for ln in args.decode("latin-1").split("\n") if ln]
                lines = [ln for ln in lines if ln.split(" = ")[0] != k]
                if value:
                    lines.append("%s = %s" % (k, value))
                new = ("\n".join(lines) + "\n").encode("latin-1")
            grow = len(new) - len(args)
            head[names.index("args_len") + 1] = len(new)
            head[names.index("header_bytes") + 1] += grow
            data[FIXED:FIXED + len(args)] = new
            data[:FIXED] = struct.pack(HEAD, *head)
        elif key.startswith("rec") and "." in key:
            i, _, what = key[3:].partition(".")
            at = head[names.index("header_bytes") + 1]
            for _ in range(int(i)):  # record i's head: skip the records before it
                r, c = struct.unpack_from("<ii", data, at + NAME_MAX)
                at += NAME_MAX + 8 + 12 * r * c
            if what == "name":
                data[at:at + NAME_MAX] = value.encode().ljust(NAME_MAX, b"\0")
            else:
                struct.pack_into("<i", data, at + NAME_MAX + (4 if what == "cols" else 0),
                                 int(value))
        elif "[" in key and key.endswith("]"):
            tensor, idx = key[:-1].split("[")
            state = 0
            if tensor.endswith((".m", ".v")):
                state = 1 if tensor.endswith(".m") else 2
                tensor = tensor[:-2]
            recs = records(data, head[names.index("header_bytes") + 1],
                           head[names.index("ntensors") + 1])
            off, r, c = recs[tensor]
            at = off + 4 * (state * r * c + int(idx))
            data[at:at + 4] = struct.pack("<f", float(value))
        else:
            sys.exit("ckpt_craft.py: unknown edit '%s'" % e)
    if not keep_trailer and len(data) >= 16:
        data[-16:-8] = struct.pack("<Q", fnv1a(bytes(data[:-16])))
    return bytes(data)


def llmc_model(version):
    V, Vp, maxT, L, NH, C = 8, 16 if version == 3 else 8, 4, 1, 2, 4
    hdr = [20240326, version, maxT, V, L, NH, C, Vp if version == 3 else 0] + [0] * 248
    n = (Vp + maxT + 2) * C + L * (12 * C * C + 13 * C)
    return struct.pack("<256i", *hdr) + struct.pack("<%df" % n, *lcg_floats(n, 5, -0.1, 0.1))


def main(argv):
    if len(argv) >= 3 and argv[1] == "seed":
        out = seed_checkpoint()
    elif len(argv) >= 4 and argv[1] == "edit":
        with open(argv[2], "rb") as f:
            out = edit(f.read(), argv[4:])
        argv = argv[:2] + argv[3:]
    elif len(argv) >= 3 and argv[1] == "llmc":
        out = llmc_model(int(argv[3]) if len(argv) > 3 else 3)
    else:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[2], "wb") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    assert FIXED == 180, FIXED
    sys.exit(main(sys.argv))
