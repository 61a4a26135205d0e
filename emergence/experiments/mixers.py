"""Claim 8: the causal MLP-Mixer against the transformer, and the recurrent sequence mixers."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="mixers", title="sequence mixers against attention", params="sweeps.mixers",
    chapter="07_mixers", figure="fig-mixer-emergence",
    stages=("mixers", "mixers_summary"),
    args="emergence.runs.sweeps.mixers:MixerSweepArgs",
    cells="emergence.runs.sweeps.mixers:planned_cells", train_stage="mixers",
    metrics="emergence.analysis.summary_metrics:mixers_metrics", metrics_read=("mixers_summary",),
    rules="emergence.claims.scorecard:mixer_claims", rules_read=("mixers_summary",),
)
