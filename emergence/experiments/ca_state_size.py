"""Claims 4 and 5 on the cellular automata: the plateau against the state size S, with and
without an attention bias towards the window."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="ca_state_size", title="the automata's plateau against state size and bias",
    params="sweeps.ca_state_size", chapter="05_ca_state_size", figure="fig-ca-plateau",
    args="emergence.runs.sweeps.ca_state_size:StateSizeSweepArgs",
    files="emergence.runs.sweeps.ca_state_size:sweep_files", summarize="emergence.analysis.ca_state_size:summarize",
    reads=("cellular_automata.task", "cellular_automata.model", "cellular_automata.bias", "cellular_automata.train"),
    summary_reads=("cellular_automata.analysis",),
    metrics="emergence.analysis.summary_metrics:ca_state_size_metrics", metrics_read=("ca_state_size_summary",),
    rules="emergence.claims.scorecard:automata_claims", rules_read=("ca_state_size_summary",),
)
