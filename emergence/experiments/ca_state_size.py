"""Claims 4 and 5 on the cellular automata: the plateau against the state size S, with and
without an attention bias towards the window."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="ca_state_size", title="the automata's plateau against state size and bias",
    params="sweeps.ca_state_size", chapter="05_cellular_automata", figure="fig-ca-plateau",
    stages=("ca_state_size", "ca_state_size_summary"),
    args="emergence.runs.sweeps.ca_state_size:StateSizeSweepArgs",
    cells="emergence.runs.sweeps.ca_state_size:planned_cells", train_stage="ca_state_size",
    metrics="emergence.analysis.summary_metrics:ca_state_size_metrics", metrics_read=("ca_state_size_summary",),
    rules="emergence.claims.scorecard:automata_claims", rules_read=("ca_state_size_summary",),
)
