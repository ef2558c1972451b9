#!/bin/bash
# device run: the sampling layouts study on a 16-core node
set -u
t0=$(date +%s)
mkdir -p /tmp/site && tar -xJf .whl/site312.tar.xz -C /tmp/site || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 RAY_DEDUP_LOGS=0
echo "unpacked in $(( $(date +%s) - t0 )) s"; nproc; free -g | head -2; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import ray, torch, gymnasium, pydantic, optuna; import sweeps.engine.algorithms, envs; print('imports ok', ray.__version__, torch.__version__, torch.cuda.is_available())" || exit 4
GPU=1; python3 -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" || GPU=0
python3 benchmarks/bench_sampling_layout.py --layouts IMPALA:1x1:sync --step-cpu-ms 10 --seconds 10 \
  --gpus-per-learner $GPU --timeout 150 --out $OUT/probe.json 2>&1 | tee $OUT/probe_log.txt
grep -q '"error"' $OUT/probe.json && { echo "GPU learner failed: CPU learner"; GPU=0; }
LAYOUTS=${LAYOUTS:-IMPALA:15x1:sync,IMPALA:4x16:async,IMPALA:64x1:sync,IMPALA:1x64:async,IMPALA:32x1:sync,IMPALA:15x8:sync,IMPALA:8x8:async,IMPALA:64x4:sync}
python3 benchmarks/bench_sampling_layout.py --layouts "$LAYOUTS" --step-cpu-ms 10 --seconds 10 \
  --gpus-per-learner $GPU --timeout 150 --out $OUT/bench_sampling_layout_16cpu.json 2>&1 | tee $OUT/log.txt
echo "total $(( $(date +%s) - t0 )) s"
