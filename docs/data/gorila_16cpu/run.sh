#!/bin/bash
# device run: Gorila's learners to 8 on a 16-core node (benchmarks/bench_gorila_learners.py)
set -u
t0=$(date +%s)
mkdir -p /tmp/site && tar -xJf .whl/site312.tar.xz -C /tmp/site || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 RAY_DEDUP_LOGS=0
echo "unpacked in $(( $(date +%s) - t0 )) s"; nproc; free -g | head -2
grep -m1 "model name" /proc/cpuinfo; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import ray, torch, gymnasium, pydantic, optuna; import sweeps.engine.algorithms, envs; print('imports ok', ray.__version__, torch.__version__)" || exit 4
timeout ${BENCH_TIMEOUT:-430} python3 benchmarks/bench_gorila_learners.py --learners ${LEARNERS:-1,2,4,8} --apex \
  --reps 1 --seconds ${SECONDS_PER_POINT:-15} --num-cpus 16 --env-runners 4 --hidden 256,256 \
  --cpus-per-learner 1 --out $OUT/bench_gorila_learners_16cpu.json 2>&1 | tee $OUT/log.txt
echo "total $(( $(date +%s) - t0 )) s"
