"""Stage lm_train: every size of the small-language-model family, all seeds, with checkpoints.

    python -m stages.lm_train MODELS_DIR
"""
import sys
from pathlib import Path

from emergence.experiments.language_model import train_variants
from emergence.stage import SCRATCH, stage_run

if __name__ == "__main__":
    (out,) = map(Path, sys.argv[1:])
    with stage_run("lm_train") as params:
        train_variants(params, out, SCRATCH)
