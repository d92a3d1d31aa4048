#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/example.sh: examples/mpi_train, a distributed loop written with the public API,
# trains on 2 and 4 ranks (dp, tp x dp, ZeRO-3): the loss goes down and every rank ends
# with bitwise the same loss; a mesh that cannot be formed exits 2 with one message.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"
plan 7
EX=$HX_BUILDDIR/examples/mpi_train
run hx_mpirun 2 "$EX"
ok "mpi_train at np 2 (dp 2): exit 0, ranks agree" 'rc_is 0 && out_has "ranks agree bitwise"'
ok "mpi_train at np 2: the loss goes down" \
   'awk "/^loss / { exit !(\$4 < \$2) }" "$OUT" && out_has "^loss "'
run hx_mpirun 4 "$EX" --tp 2
ok "mpi_train at np 4 --tp 2: exit 0, ranks agree" \
   'rc_is 0 && out_has "dp 2 x tp 2" && out_has "ranks agree bitwise"'
run hx_mpirun 4 "$EX" --zero-stage 3
ok "mpi_train at np 4 --zero-stage 3: exit 0, ranks agree" \
   'rc_is 0 && out_has "s_p 4" && out_has "ranks agree bitwise"'
run hx_mpirun 3 "$EX" --tp 2
ok "mpi_train at np 3 --tp 2: exit 2" 'rc_is 2'
ok "mpi_train at np 3 --tp 2: one message naming the mesh" \
   '[ "$(grep -c "helix: error:" "$ERR")" -eq 1 ] && err_has "cannot form a mesh"'
run hx_mpirun 2 "$EX" --bogus
ok "mpi_train --bogus: exit 2 naming it" 'rc_is 2 && err_has "--bogus"'
finish
