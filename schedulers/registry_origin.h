/* SPDX-License-Identifier: MIT */
/* schedulers/registry_origin.h: between the plug-in loader and the registry (internal).
 * While a plug-in's entry point runs, the registry names that file in its messages and
 * records it as the origin of each policy it registers (hx_sched_plugin_of). */
#ifndef HX_SCHED_REGISTRY_ORIGIN_H
#define HX_SCHED_REGISTRY_ORIGIN_H

/** The plug-in whose hx_sched_plugin_init runs now (the path outlives the process), or
 *  NULL once it returned. */
void hx_sched_registry_loading(const char *plugin);

#endif /* HX_SCHED_REGISTRY_ORIGIN_H */
