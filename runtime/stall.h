/* SPDX-License-Identifier: MIT */
/* runtime/stall.h: the task watchdog (runtime/stall.c), internal.  hx_runtime_init sets its
 * timeout, hx_graph_wait and hx_runtime_shutdown wait through it, hx_runtime_shutdown stops
 * it.  Test: tests/schedulers/stall.c. */
#ifndef HX_RUNTIME_STALL_H
#define HX_RUNTIME_STALL_H

/* hx_runtime_opts.stall_timeout: > 0 seconds; 0 follows the collective engine's
 * (hx_comm_timeout, none while it is closed); < 0 never. */
void hx_stall_configure(double timeout);
/* starpu_task_wait_for_all, ending the process with HX_EXIT_COMM_TIMEOUT when no task
 * terminates for the timeout while tasks are still submitted. */
void hx_stall_wait_for_all(void);
/* Join the watchdog's thread (before StarPU stops); hx_stall_wait_for_all starts it again. */
void hx_stall_stop(void);

#endif /* HX_RUNTIME_STALL_H */
