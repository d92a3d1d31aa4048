/* SPDX-License-Identifier: MIT */
/* runtime/devices.h: the device half of hx_runtime_init (runtime/devices.c), internal. */
#ifndef HX_RUNTIME_DEVICES_H
#define HX_RUNTIME_DEVICES_H

#include <starpu.h>

#include "helix/runtime.h"

struct hx_devices {
    int nopencl, ncuda; /* device workers to start */
};

/* Device counts and placement from the options and STARPU_NOPENCL / STARPU_NCUDA, checked
 * against the devices found, with the environment StarPU needs; before starpu_conf_init,
 * which aborts on a malformed variable.  HX_OK or HX_EINVAL naming the flag or variable. */
int hx_devices_choose(const struct hx_runtime_opts *o, struct hx_devices *d);
/* The counts into @p conf, after starpu_conf_init. */
void hx_devices_apply(const struct hx_devices *d, struct starpu_conf *conf);
/* After starpu_init: the workers asked for exist (HX_EINVAL naming what was found), and the
 * OpenCL kernels are compiled. */
int hx_devices_check(const struct starpu_conf *conf);
/* Before starpu_shutdown. */
void hx_devices_shutdown(void);

#endif /* HX_RUNTIME_DEVICES_H */
