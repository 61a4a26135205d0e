"""Stage lm_train: every size of the small-language-model family, all seeds, with checkpoints."""
from pathlib import Path

from emergence.stage import stage_run

OUT = Path("data/lm/models")

if __name__ == "__main__":
    with stage_run("lm_train") as params:
        from emergence.experiments.language_model import train_size, variants

        for name, (size, pretrained) in variants(params["language_model"]).items():
            train_size(params, size, OUT / name, Path("data/.scratch"), pretrained)
