#!/bin/bash
# device run: SEED's layouts on a 16-core node with its inference server on the GPU
set -u
t0=$(date +%s)
mkdir -p /tmp/site && tar -xJf .whl/site312.tar.xz -C /tmp/site || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 RAY_DEDUP_LOGS=0
echo "unpacked in $(( $(date +%s) - t0 )) s"; nproc; free -g | head -2; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import ray, torch, gymnasium, pydantic, optuna; import sweeps.engine.algorithms, envs; print('imports ok', ray.__version__, torch.__version__, torch.cuda.is_available())" || exit 4
L1=${L1:-SEED:16x1:sync,SEED:64x1:sync,SEED:16x8:sync,SEED:4x16:async,SEED:64x2:sync}
python3 benchmarks/bench_sampling_layout.py --layouts "$L1" --step-cpu-ms 10 --seconds 10 \
  --gpus-per-learner 0.5 --inference-gpus 0.5 --timeout 120 --out $OUT/bench_seed_gpu_16cpu.json 2>&1 | tee $OUT/log_gpu.txt
echo "gpu part done at $(( $(date +%s) - t0 )) s"
L2=${L2:-SEED:64x1:sync,SEED:16x8:sync}
python3 benchmarks/bench_sampling_layout.py --layouts "$L2" --step-cpu-ms 10 --seconds 10 \
  --gpus-per-learner 1 --timeout 120 --out $OUT/bench_seed_cpu_inference_16cpu.json 2>&1 | tee $OUT/log_cpu.txt
echo "total $(( $(date +%s) - t0 )) s"
