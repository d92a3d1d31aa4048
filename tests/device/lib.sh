# SPDX-License-Identifier: MIT
# tests/device/lib.sh: the OpenCL device of the device tests, sourced after tests/cli/lib.sh.
# On a machine without a GPU the device is PoCL's CPU device (helix enables it: runtime/
# devices.c); POCL_DEVICES=basic runs kernels inside StarPU's OpenCL worker thread, and one
# kernel cache in the build tree (POCL_CACHE_DIR) is compiled by the first test and reused
# by the others (shared/design/devices.md).
#   device_require   skips the whole script when helix has no OpenCL (configure found no
#                    StarPU OpenCL, CL/cl.h or CLBlast), unless HX_REQUIRE_OPENCL=1
#                    (scripts/check sets it: CI installs them), where it bails out
# shellcheck shell=sh
POCL_DEVICES=${POCL_DEVICES:-basic}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$HX_BUILDDIR/tests/.pocl}
export POCL_DEVICES POCL_CACHE_DIR

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
