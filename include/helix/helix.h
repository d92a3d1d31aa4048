/* SPDX-License-Identifier: MIT */
/**
 * @file helix/helix.h
 * @brief helix: transformer training as StarPU task graphs.  Include this one header.
 *
 * error.h    status codes, HX_ERR, logging
 * runtime.h  StarPU lifecycle (workers, policy, BLAS threads)
 * tensor.h   row-tiled tensors over StarPU handles
 * ops.h      the operations of the IR and their arguments
 * graph.h    the IR: nodes, dependencies, DOT export, submission
 * layers.h   graph builders for transformer layers
 * gpt.h      the GPT-2 training step
 * model.h    the model interface the parallel passes consume (parameters)
 * sched.h    scheduling policies by name
 * data.h     byte corpora and batches
 * trace.h    task traces for Perfetto
 * threads.h  where the threads of a run spent their time: on a core or waiting for one
 * checkpoint.h  save, verify and load the training state; llm.c import
 * overlap.h  the operator overlap table (OEF) that profile-overlap writes and planners read
 */
#ifndef HELIX_HELIX_H
#define HELIX_HELIX_H

#include "helix/checkpoint.h"
#include "helix/collectives.h"
#include "helix/tp_overlap.h"
#include "helix/comm.h"
#include "helix/data.h"
#include "helix/error.h"
#include "helix/gpt.h"
#include "helix/graph.h"
#include "helix/layers.h"
#include "helix/mesh.h"
#include "helix/model.h"
#include "helix/ops.h"
#include "helix/overlap.h"
#include "helix/plan.h"
#include "helix/runtime.h"
#include "helix/sched.h"
#include "helix/tensor.h"
#include "helix/threads.h"
#include "helix/trace.h"

#define HX_VERSION "0.1.0"

#endif /* HELIX_HELIX_H */
