# make report [PROFILE=default|smoke|paper]   whole pipeline, ends with the report's paths
# make compare [BASE=rev] [HEAD=rev]          two revisions (git revisions or `dvc exp` names) side by side
#                                             from the DVC cache -> report/_compare/
# make plan                                   the stages a params edit reruns (before dvc status can see it)
#                                             and the cells it would train
# make test                                   unit tests + smoke pipeline in a temporary copy
# make bench                                  training throughput -> data/bench/throughput.json
# make cuda-kernels                           optional, GPU machines: the mixers' library kernels
#                                             (sweeps.mixers.kernels: cuda); mamba-ssm compiles
#                                             against the CUDA toolkit (nvcc), several minutes
PROFILE ?= default
BASE ?= HEAD~1
HEAD ?= workspace
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
export DVC_NO_ANALYTICS := 1
export PATH := $(BIN):$(PATH)

.PHONY: report compare plan test bench env cuda-kernels clean-scratch

env: $(VENV)/.installed

$(VENV)/.installed: requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, alone: its pin picks the local CPU wheel here and the CUDA build elsewhere.
	$(BIN)/pip install --quiet "$$(grep -i '^torch==' requirements.lock)"
	$(BIN)/pip install --quiet -r requirements.lock
	touch $@

report: env
	$(BIN)/python -m emergence.pipeline.config set-profile $(PROFILE)
	$(BIN)/python -m emergence.pipeline.cost
	$(BIN)/python -m emergence.pipeline.prebuild
	$(BIN)/dvc repro
	@echo "HTML: $(abspath report/_output/index.html)"
	@echo "PDF:  $(abspath report/_output/report.pdf)"

compare: env
	$(BIN)/python -m emergence.report.compare $(BASE) $(HEAD)

plan: env
	$(BIN)/python -m emergence.pipeline.config plan
	$(BIN)/python -m emergence.pipeline.cost --no-calibrate

test: env
	$(BIN)/python -m pytest -q

bench: env
	$(BIN)/python -m emergence.tools.bench --out data/bench/throughput.json

cuda-kernels: env
	$(BIN)/pip install "flash-linear-attention==0.6.0"
	$(BIN)/pip install --no-build-isolation "mamba-ssm==2.3.2.post1"

clean-scratch:
	rm -rf data/.scratch
