#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/mpi/parity_grid_llama.sh: tests/mpi/parity_grid.sh on the Llama settings (--model
# llama: RMSNorm split over Y, SwiGLU's gate|up blocks and the 2 key/value heads over X,
# RoPE, an untied output layer, no biases), the model of tests/mpi/parity_llama.sh.
# shellcheck disable=SC2034 # read by parity_grid.sh
GRID_MODEL_SED='s/--num-layers 2/--num-layers 4 --model llama --num-query-groups 2 --ffn-hidden-size 96/; s/--lr 2e-3/--lr 1e-3/'
. "$(dirname "$0")/parity_grid.sh"
