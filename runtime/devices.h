/* SPDX-License-Identifier: MIT */
/* runtime/devices.h: the device half of hx_runtime_init (runtime/devices.c), internal. */
#ifndef HX_RUNTIME_DEVICES_H
#define HX_RUNTIME_DEVICES_H

#include <starpu.h>

#include "helix/runtime.h"

/* Device counts and placement into @p conf, with the environment StarPU needs; before
 * starpu_init.  HX_OK or HX_EINVAL naming the flag or variable. */
int hx_devices_configure(const struct hx_runtime_opts *o, struct starpu_conf *conf);
/* After starpu_init: the workers asked for exist (HX_EINVAL naming what was found), and the
 * OpenCL kernels are compiled. */
int hx_devices_check(const struct starpu_conf *conf);
/* Before starpu_shutdown. */
void hx_devices_shutdown(void);

#endif /* HX_RUNTIME_DEVICES_H */
