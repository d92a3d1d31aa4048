/* SPDX-License-Identifier: MIT */
/* sim/payloads.h: what SMPI copies of a simulation's messages (sim/contiguous.c). */
#ifndef HX_SIM_PAYLOADS_H
#define HX_SIM_PAYLOADS_H

/* Messages up to this many bytes arrive with their bytes (StarPU-MPI's envelopes; helix's
 * gathered trace, runtime/trace.c, sends in pieces this size); larger ones are tiles, whose
 * bytes no simulated kernel reads: they take their time on the network, and nothing is
 * copied. */
#define HX_SIM_COPY_MAX 65536

/* Have SMPI copy only messages of at most HX_SIM_COPY_MAX bytes, and StarPU-MPI's early
 * data too (once per simulated rank). */
void hx_sim_payloads_install(void);

/* StarPU-MPI's unpack of early data above HX_SIM_COPY_MAX bytes copies nothing
 * (sim/early_data.c); hx_sim_payloads_install calls it. */
void hx_sim_early_data_install(void);

#endif /* HX_SIM_PAYLOADS_H */
