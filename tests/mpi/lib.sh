# SPDX-License-Identifier: MIT
# tests/mpi/lib.sh: launching ranks on this machine for the MPI tests; source it after
# tests/cli/lib.sh (which sets HX_BUILDDIR, STARPU_HOME and the TAP helpers).
#
#   hx_mpirun NP CMD [ARGS...]   mpirun -np NP CMD ARGS with the settings every test needs
#
# What it sets, and why (design/starpu.md §7):
#   --oversubscribe      np 4 on 2 cores would fail with "not enough slots"
#   --allow-run-as-root  only when run as root (CI containers)
#   --bind-to none       StarPU binds its own threads; Open MPI's binding would fight it
#   STARPU_NCPU          workers per rank: HX_MPI_NCPU, default 1 (busy workers share the
#                        cores, and StarPU's own policies spin idle ones, so ranks x workers
#                        should not exceed the cores)
#   STARPU_WORKERS_NOBIND=1  otherwise every rank binds its worker 0 to core 0
#   OMPI_MCA_mpi_yield_when_idle=1  ranks waiting in MPI give their core away
#   ASAN_OPTIONS         HX_MPI_ASAN_OPTIONS where a script set it (tests/device/lib.sh:
#                        its own processes unwind fast, the ranks keep the slow unwinder)
# stdin is /dev/null: under `timeout` mpirun is not in the terminal's foreground process
# group, and reading the terminal to forward it to rank 0 would stop it (SIGTTIN).
# --mca orte_tmpdir_base: each test's own directory ($TMP of tests/cli/lib.sh) for Open
# MPI's session directory: make check -jN starts jobs at once, and Open MPI 4.1 races on the
# shared /tmp/ompi.HOST.UID (one job removes it while another creates its own below it:
# "orte_session_dir failed", open-mpi/ompi#8510; seen once in CI here).
# HX_MPIRUN_FLAGS adds mpirun options (e.g. "--mca orte_enable_recovery 1"); HX_MPI_TIMEOUT
# (default 300 s) bounds the whole launch so a hung job fails the test instead of hanging it.
# shellcheck shell=sh

hx_mpirun() {
    hx_np=$1
    shift
    hx_root=
    if [ "$(id -u)" -eq 0 ]; then
        hx_root=--allow-run-as-root
    fi
    # shellcheck disable=SC2086  # HX_MPIRUN_FLAGS and the -x pair are lists of words
    timeout -k 10 "${HX_MPI_TIMEOUT:-300}" \
        mpirun -np "$hx_np" --oversubscribe --bind-to none $hx_root ${HX_MPIRUN_FLAGS:-} \
        --mca orte_tmpdir_base "${TMP:-${TMPDIR:-/tmp}}" \
        -x STARPU_NCPU="${HX_MPI_NCPU:-1}" -x STARPU_WORKERS_NOBIND=1 \
        -x OMPI_MCA_mpi_yield_when_idle=1 ${STARPU_HOME:+-x STARPU_HOME} \
        ${HX_MPI_ASAN_OPTIONS:+-x ASAN_OPTIONS="$HX_MPI_ASAN_OPTIONS"} "$@" </dev/null
}

# relay_launch WHAT: a launch's TAP lines (the last run's $OUT) renumbered into this script's
# stream, as "ok N - WHAT: ...", counting into $n and $failed, then one more line: the launch
# exited 0 after its whole plan (else its stderr's last 20 lines as diagnostics).  For
# scripts that run a TAP program several times and print the plan last ("1..$n").
relay_launch() {
    rl_planned=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$OUT" | head -n 1)
    rl_seen=0
    while IFS= read -r line; do
        case $line in
        "ok "* | "not ok "*)
            n=$((n + 1))
            rl_seen=$((rl_seen + 1))
            verdict=${line%% [0-9]*}
            rest=${line#"$verdict" }
            rest=${rest#*[0-9] }
            rest=${rest#- }
            [ "$verdict" = "not ok" ] && failed=$((failed + 1))
            echo "$verdict $n - $1: $rest"
            ;;
        "#"*) echo "$line" ;;
        esac
    done <"$OUT"
    n=$((n + 1))
    if [ "$RC" -eq 0 ] && [ -n "$rl_planned" ] && [ "$rl_seen" -eq "$rl_planned" ]; then
        echo "ok $n - $1: the launch exits 0 after all $rl_planned checks"
    else
        failed=$((failed + 1))
        echo "not ok $n - $1: the launch exits $RC after $rl_seen of ${rl_planned:-?} checks"
        grep -v '^\[starpu' "$ERR" | tail -n 20 | diag
    fi
}
