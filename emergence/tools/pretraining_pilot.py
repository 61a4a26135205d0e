"""A pre-pretraining pilot for claim 9: how many steps each synthetic task needs to be learned.

Claim 9 compares a model pre-pretrained on Dyck or on a neural cellular automaton (and the
control, i.i.d. random tokens) with its from-scratch twin. The comparison says something only
if the synthetic task was learned before the corpus phase starts, so the pre-pretraining
budget (language_model.pretraining.steps) is chosen on the synthetic task alone, never on the
corpus outcome: each task is trained well past the budget on the size that gets twins, its
held-out loss read at every evaluation. The first steps only learn which symbols occur (the
loss falls from ln V to about their unigram entropy, on every task alike), so the structure a
task has to teach is measured below that entropy: a seed counts the task as learned at the
first evaluation that has made `fraction` of the run's drop from the unigram entropy of the
held-out symbols to its best loss. The control (i.i.d. symbols) has no such drop.
The rows printed go, with the budget chosen from them, into docs/pilots.md (pretraining), the budget into params.yaml.

    python -m emergence.tools.pretraining_pilot --steps 1600 [--eval-every 50]
        [--tasks dyck neural_ca random] [--fraction 0.9] [--profile default]
"""
from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from emergence.common.import_closure import module_code_version
from emergence.common.schema import to_params
from emergence.core.train import schedules
from emergence.pipeline.config import load_params
from emergence.runs import language_model as lm
from emergence.runs.runner import prepare_device, train_seeds

EVAL_SEQUENCES = 64


def unigram_entropy(tokens: np.ndarray) -> float:
    """Entropy (nats) of the symbols at the predicted positions (all but the first): the loss of
    the best predictor that ignores the context."""
    _, counts = np.unique(tokens[:, 1:], return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def learned_step(steps: np.ndarray, loss: np.ndarray, fraction: float, reference: float) -> np.ndarray:
    """Per seed (rows of `loss` [seed, step]), the first step whose loss has made `fraction` of
    the drop from `reference` to the seed's lowest loss; NaN for a seed that never went below
    `reference` (nothing learned beyond it)."""
    best = np.nanmin(loss, axis=1, keepdims=True)
    reached = loss <= reference - fraction * (reference - best)
    out = steps[np.argmax(reached, axis=1)].astype(float)
    out[best[:, 0] >= reference] = np.nan
    return out


def pretraining_curve(params: dict, kind: str, steps: int, eval_every: int, scratch: Path
                      ) -> tuple[np.ndarray, np.ndarray, float]:
    """(evaluation steps, held-out loss [seed, step], the held-out symbols' unigram entropy) of
    every seed of the twinned size trained on one synthetic task exactly as the twins'
    pre-pretraining is (lm.pretrain), for `steps`."""
    section = lm.LanguageModelTraining.of(params["language_model"])
    size = section.pretraining.sizes[0]
    seq_len = section.seq_len
    cfg = lm.model_config(section.sizes[size], lm.layout_of(section))
    train = replace(section.train, steps=steps, eval_every=eval_every, checkpoint_log_until=0,
                    checkpoint_every=steps, resume_every=steps)
    device = prepare_device(train)
    task = lm.pretraining_task(section.corpus, section.pretraining, kind, seq_len, EVAL_SEQUENCES).to(device)
    arrays, _, _ = train_seeds(task, cfg, train, scratch, f"pilot-{kind}-{size}",
                               trajectory_key={"pre": lm.pretraining_of(section, kind), "train": to_params(train),
                                               "size": size},
                               code=module_code_version(lm.__name__), checkpoint_dir=None, device=device)
    return np.asarray(schedules(train)[0]), arrays["loss"], unigram_entropy(task.eval_tokens.cpu().numpy())


def pilot_row(kind: str, steps: np.ndarray, loss: np.ndarray, unigram: float, fraction: float, budget: int) -> dict:
    """What docs/pilots.md records for one task (losses are means over seeds)."""
    learned = learned_step(steps, loss, fraction, unigram)
    at = {int(s): round(float(np.mean(loss[:, i])), 4) for i, s in enumerate(steps)
          if s in (0, 100, budget, 400, 800, steps[-1])}
    return {"task": kind, "unigram_entropy": round(unigram, 4), "loss_at": at,
            "best": round(float(np.mean(np.nanmin(loss, axis=1))), 4),
            f"learned_{fraction:g}": [None if np.isnan(x) else int(x) for x in learned],
            "median_learned": float(np.nanmedian(learned)) if np.isfinite(learned).any() else None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--tasks", nargs="+", default=list(lm.PRETRAINING_TASKS))
    parser.add_argument("--fraction", type=float, default=0.9)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args(argv)
    params = load_params(profile=args.profile)
    section = lm.LanguageModelTraining.of(params["language_model"])
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.tasks:
            steps, loss, unigram = pretraining_curve(params, kind, args.steps, args.eval_every, Path(tmp))
            budget = section.pretraining.steps.get(kind, args.steps)
            print(pilot_row(kind, steps, loss, unigram, args.fraction, budget), flush=True)


if __name__ == "__main__":
    main()
