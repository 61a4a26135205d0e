#!/usr/bin/env bash
# The checks that need a GPU, as one prepared run for a lent device machine (one H200, Python
# 3.12 with torch preinstalled, no network): the CUDA tests, the paper configuration's training
# throughput against the plain loop and the matmul ceilings, and the paper profile's training
# plan calibrated on that device. Two steps:
#
#   here (a machine with PyPI):  bash .ci/device-check.sh wheels
#       the packages the device image lacks (netCDF4, cftime, submitit) as cp312 wheels in .whl/,
#       which git ignores;
#   there (the device tool):     run(command="bash .ci/device-check.sh run", carry=[".whl"], timeout_s=540)
#       writes under $OUT: gpu.txt, cuda-tests.log, bench.json + bench.log, plan.txt.
#
# Sized to end in about 7 minutes of a 10-minute call, leaving time to rerun once inside the
# 15-minute device budget; each part has its own time limit so one slow part cannot eat the rest.
set -uo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  wheels)
    grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p .whl
    for pin in "$(grep -i '^netCDF4==' requirements.lock)" "cftime==1.6.6.1" "$(grep -i '^submitit==' requirements.lock)"; do
      python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl "$pin" || exit 1
    done
    ls -l .whl
    ;;
  run)
    out="${OUT:-/tmp/device-check}"
    mkdir -p "$out"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      || { echo "no wheels in .whl: run 'bash .ci/device-check.sh wheels' here first and carry .whl"; exit 1; }
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 DVC_NO_ANALYTICS=1
    { nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"; } \
      > "$out/gpu.txt" 2>&1
    cat "$out/gpu.txt"
    # The CUDA tests (tests/test_cuda.py: the training path on the device against the CPU, the seed
    # axis, the fused attention kernel, bf16 autocast with float32 evaluation).
    timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider tests/test_cuda.py 2>&1 | tee "$out/cuda-tests.log"
    # Throughput of the paper's linear-map configuration: float32 and bf16, eager and compiled,
    # seeds per group 1 to 8, against the plain single-seed loop and the device's matmul ceilings.
    timeout 200 python3 -m emergence.bench --configs paper --groups 1,8 --rounds 1 --seconds 3 --compile default \
      --out "$out/bench.json" 2>&1 | tee "$out/bench.log" | grep -v '^\s*$' | tail -40
    # The paper profile's plan, each kind of cell (task, mixer, precision, compile mode) timed on
    # this device for a second after warm-up, and each language-model variant (on a 2-core CPU the
    # twelve kinds of cell took 8.5 min at 3 s).
    timeout 180 python3 -m emergence.cost --profile paper --calibrate-seconds 1 2>&1 | tee "$out/plan.txt"
    ;;
  *)
    echo "usage: bash .ci/device-check.sh wheels|run" >&2
    exit 2
    ;;
esac
