#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/sim_models_merge.py: merge StarPU history models that ranks calibrated apart.

    sim_models_merge.py OUT_DIR IN_DIR...

Each IN_DIR is a sampling directory (codelets/45/<symbol>.<host>) one rank wrote: ranks of a
pipeline see different shapes (the first stage the embedding, the last the head), and two
ranks writing one directory lose each other's entries.  OUT_DIR/codelets/45 gets, per file,
the union of the history entries (rows "hash size flops mean dev sum sum2 n") of every input,
section by section (a section is one "# Model for <arch>" block); an entry two ranks measured
keeps the one with more samples.  Files whose sections differ in number are refused."""
import os
import re
import sys

ENTRY = re.compile(r"^[0-9a-f]{8}\s")


def sections(path):
    """The file's lines split at each '# number of entries' header: a list of
    (lines before the entries, {hash: line})."""
    out, head, entries, count_left = [], [], None, 0
    for line in open(path):
        if entries is not None and ENTRY.match(line):
            entries[line.split()[0]] = line
            continue
        if entries is not None:
            out.append((head, entries))
            head, entries = [], None
        head.append(line)
        if line.startswith("# hash"):
            entries = {}
    if entries is not None:
        out.append((head, entries))
        head = []
    return out, head


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_dir, inputs = sys.argv[1], sys.argv[2:]
    merged = {}
    for d in inputs:
        cdir = os.path.join(d, "codelets", "45")
        for name in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
            secs, tail = sections(os.path.join(cdir, name))
            if name not in merged:
                merged[name] = (secs, tail)
                continue
            have, _ = merged[name]
            if len(have) != len(secs):
                sys.exit(f"sim_models_merge: {name}: {len(have)} sections in one input, "
                         f"{len(secs)} in {d}: calibrate every rank on the same workers")
            for (_, mine), (_, theirs) in zip(have, secs):
                for h, line in theirs.items():
                    if h not in mine or int(line.split()[7]) > int(mine[h].split()[7]):
                        mine[h] = line
    os.makedirs(os.path.join(out_dir, "codelets", "45"), exist_ok=True)
    for name, (secs, tail) in merged.items():
        with open(os.path.join(out_dir, "codelets", "45", name), "w") as f:
            for head, entries in secs:
                # the "# number of entries" count precedes the regression lines: fix it
                for i, line in enumerate(head):
                    if line.startswith("# number of entries"):
                        head[i + 1] = f"{len(entries)}\n"
                f.writelines(head)
                f.writelines(entries.values())
            f.writelines(tail)
    print(f"sim_models_merge: {len(merged)} models from {len(inputs)} directories into {out_dir}")


main()
