"""Stage lm_train: every variant of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR

Each variant (a size, or a size's pre-pretrained twin) goes through the cell cache, keyed by
what training it executes (language_model.training_key), so a variant trained before is copied,
not retrained; the missing ones are built in parallel where `execution` allows
(emergence/runs/executor.py); the folder of all variants replaces the old one atomically. A
from-scratch variant's seed groups are kept in the group store, so more seeds train only the
groups they add.
"""
import sys
from pathlib import Path

from emergence.common.schema import load
from emergence.pipeline.stage import SCRATCH, stage_run
from emergence.runs.executor import ExecutionArgs
from emergence.runs.language_model import LanguageModelTraining
from emergence.runs.lm_builds import train_variants

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(LanguageModelTraining.of(params["language_model"]),
                       load(ExecutionArgs, params["execution"], "execution", declared_only=True), out, SCRATCH)
