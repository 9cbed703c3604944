#!/bin/bash
# Train legacy_mnist on every host of a Cloud TPU pod, the XRT way (torch_xla 1.x).
#
#   TPU_NAME=my-v3-32 ./run_pod.sh --epochs 5
#
# xla_dist starts the XRT server on every TPU VM of the pod, exports XRT_* on each
# worker, runs the command after `--` on all of them, and streams their output here.
set -euo pipefail

TPU_NAME=${TPU_NAME:?set TPU_NAME to the name of the TPU pod}
LOG_DIR=${LOG_DIR:-logs}
mkdir -p "$LOG_DIR"

export XRT_TPU_CONFIG="localservice;0;localhost:51011"

python3 -m torch_xla.distributed.xla_dist \
  --tpu=$TPU_NAME \
  --restart-tpuvm-pod-server \
  --env XLA_USE_BF16=1 \
  --env=XLA_IR_DEBUG=0 \
  -- \
  python3 ~/legacy_mnist/train.py \
    --batch-size 64 \
    --checkpoint '$HOME/legacy_mnist/model.pt' \
    "$@" 2>&1 | tee "$LOG_DIR/train.log"
