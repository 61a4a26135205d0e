#!/usr/bin/env bash
# The checks that need a GPU, as one prepared run for a lent device machine (one H200, 16 CPU
# cores, Python 3.12 with torch preinstalled, no network): the CUDA tests (the library kernels of
# the mixers included, and the executor's GPU pool); the paper configuration's training
# throughput at 8 and 32 seeds a batch against the plain single-seed loop and the matmul
# ceilings, eager and under CUDA graphs; how it scales with processes sharing the GPU; the paper
# profile's training plan calibrated on that device. Two steps:
#
#   here (a machine with PyPI):  bash .ci/device-check.sh wheels
#       the packages the device image lacks (netCDF4, cftime, submitit, flash-linear-attention)
#       as wheels in .whl/, which git ignores;
#   there (the device tool):     run(command="bash .ci/device-check.sh run", carry=[".whl"], timeout_s=570)
#       writes under $OUT: gpu.txt, cuda-tests.log, bench.json, bench-graphs.json, gpu-scaling.json,
#       plan.txt and bench.log (the measurements' output).
#
# Each part has its own time limit (550 s in all) so one slow part cannot eat the rest; the most
# wanted come first. Sized from the first run on an H200 (2026-12-04; the machine started in
# ~30 s): the four CUDA tests of then ~25 s, fla's Triton kernels ~40 s each to compile, each bench row
# ~20 s (a fresh process that starts CUDA), sixteen one-thread CPU processes more than 35 s to
# start, the plan 140 s (two compiled mixers, cold inductor cache). Measured then and left out
# now: one seed a batch (185 seed-steps/s float32, 175 bf16), torch.compile's default mode (1.07
# times eager at eight seeds a batch) and 16 one-thread CPU processes (1, 4 and 8 measured).
set -uo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  wheels)
    grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
    mkdir -p .whl
    for pin in "$(grep -i '^netCDF4==' requirements.lock)" "cftime==1.6.6.1" "$(grep -i '^submitit==' requirements.lock)" \
               "flash-linear-attention==0.6.0" "fla-core==0.6.0"; do
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
    { nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
      nproc; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|Flags' | cut -c1-400; } > "$out/gpu.txt" 2>&1
    cat "$out/gpu.txt"
    # The CUDA tests: tests/test_cuda.py (the training path on the device against the CPU, the seed
    # axis, the fused attention kernel, bf16 autocast with float32 evaluation) and the library
    # kernels of the mixers against their reference forms (fla's; mamba-ssm needs a compile).
    timeout 120 python3 -m pytest -q -s -o addopts= -p no:cacheprovider -rs tests/test_cuda.py \
      tests/test_mixer_kernels.py -k "cuda" 2>&1 | tee "$out/cuda-tests.log"
    # Throughput of the paper's linear-map configuration, float32 and bf16, eager, at 8 (the
    # paper profile's) and 32 seeds a batch, against the plain single-seed loop and the device's
    # matmul ceilings.
    timeout 130 python3 -m emergence.tools.bench --configs paper --groups 8,32 --rounds 1 --seconds 3 --compile none \
      --out "$out/bench.json" 2>&1 | tee -a "$out/bench.log" | grep -v '^\s*$' | tail -30
    # CUDA graphs (torch.compile's reduce-overhead) at 1 and 8 seeds a batch, float32 and bf16:
    # a step there waits on kernel launches, which graphs replay at once.
    timeout 100 python3 -m emergence.tools.bench --configs paper+graphs --groups 8 --rounds 1 --seconds 3 \
      --compile reduce-overhead --out "$out/bench-graphs.json" 2>&1 | tee -a "$out/bench.log" | grep -E '^round|wrote'
    # Processes sharing the GPU: 1, 2 and 4 training the paper configuration at once (several
    # may fit where one leaves the GPU idle).
    timeout 70 python3 -m emergence.tools.bench --configs paper --scaling 2,4 --device cuda --rounds 1 --seconds 3 \
      --out "$out/gpu-scaling.json" 2>&1 | tee -a "$out/bench.log" | grep -E 'processes|wrote'
    # The paper profile's plan, each kind of cell (task, mixer, precision, compile mode) timed on
    # this device for a second after warm-up, and each language-model variant.
    timeout 130 python3 -m emergence.pipeline.cost --profile paper --calibrate-seconds 1 2>&1 | tee "$out/plan.txt"
    ;;
  *)
    echo "usage: bash .ci/device-check.sh wheels|run" >&2
    exit 2
    ;;
esac
