"""Claim 8: the causal MLP-Mixer against the transformer, and the recurrent sequence mixers."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="mixers", title="sequence mixers against attention", params="sweeps.mixers",
    chapter="07_mixers", figure="fig-mixer-emergence",
    args="emergence.runs.sweeps.mixers:MixerSweepArgs",
    files="emergence.runs.sweeps.mixers:sweep_files", summarize="emergence.analysis.mixers:summarize",
    reads=("linear_map.task", "linear_map.model", "linear_map.train", "linear_map.bias",
           "cellular_automata.task", "cellular_automata.model", "cellular_automata.train", "cellular_automata.bias"),
    summary_reads=("linear_map.analysis", "cellular_automata.analysis"),
    metrics="emergence.analysis.summary_metrics:mixers_metrics", metrics_read=("mixers_summary",),
    rules="emergence.claims.scorecard:mixer_claims", rules_read=("mixers_summary",),
)
