# SPDX-License-Identifier: MIT
# tests/device/lib.sh: the OpenCL device of the device tests, sourced after tests/cli/lib.sh.
# On a machine without a GPU the device is PoCL's CPU device (helix enables it: runtime/
# devices.c); POCL_DEVICES=basic runs kernels inside StarPU's OpenCL worker thread, and one
# kernel cache in the build tree (POCL_CACHE_DIR) is compiled by the first test and reused
# by the others (shared/design/devices.md).
#   trace_count FILE [OP...]   "cpu=N opencl=M fetch=K": rank 0's compute tasks (of the ops
#                    named, else all) on CPU and on OpenCL workers, by the trace's row names,
#                    and the input fetches into device memory; all 0 for an unreadable trace
#   count_of COUNTS KEY   one number of trace_count's line
#   device_require   skips the whole script when helix has no OpenCL (configure found no
#                    StarPU OpenCL, CL/cl.h or CLBlast), unless HX_REQUIRE_OPENCL=1
#                    (scripts/check sets it: CI installs them), where it bails out
# shellcheck shell=sh
POCL_DEVICES=${POCL_DEVICES:-basic}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$HX_BUILDDIR/tests/.pocl}
export POCL_DEVICES POCL_CACHE_DIR
pocl_process # (tests/cli/lib.sh: the sanitizer build's settings for PoCL's processes)

device_require() {
    if grep -q '^#define HX_HAVE_OPENCL 1' "$HX_BUILDDIR/config.h"; then
        return 0
    fi
    if [ "${HX_REQUIRE_OPENCL:-0}" = 1 ]; then
        echo "Bail out! helix was built without OpenCL (see configure's summary); install" \
            "ocl-icd-opencl-dev libclblast-dev pocl-opencl-icd (scripts/setup) and reconfigure"
        exit 1
    fi
    echo "1..0 # SKIP helix was built without OpenCL"
    exit 0
}

trace_count() {
    python3 - "$@" <<'PY'
import json, sys
try:
    ev = json.load(open(sys.argv[1]))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
except Exception:
    print("cpu=0 opencl=0 fetch=0"); sys.exit()
ops = set(sys.argv[2:])
rows = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
        if e.get("ph") == "M" and e.get("name") == "thread_name"}
n = {"cpu": 0, "opencl": 0, "fetch": 0}
for e in ev:
    if e.get("ph") != "X" or e.get("pid") != 0:
        continue
    if e.get("cat") == "transfer":
        n["fetch"] += 1
    elif e.get("cat") == "compute" and (not ops or e.get("name") in ops):
        n["opencl" if "(OpenCL" in rows.get((e["pid"], e["tid"]), "") else "cpu"] += 1
print("cpu=%d opencl=%d fetch=%d" % (n["cpu"], n["opencl"], n["fetch"]))
PY
}
count_of() { echo "$1" | sed -n "s/.*$2=\([0-9]*\).*/\1/p"; }
