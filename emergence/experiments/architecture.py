"""Claims 6 and 7: heads, head size, width and depth, on the linear map (the rules read the
automata's shapes too, ca_architecture)."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="architecture", title="heads, width and depth on the linear map", params="sweeps.architecture",
    chapter="04_architecture", figure="fig-architecture",
    stages=("architecture", "architecture_summary"),
    args="emergence.runs.sweeps.architecture:ArchitectureSweepArgs",
    cells="emergence.runs.sweeps.architecture:planned_cells", train_stage="architecture",
    metrics="emergence.analysis.summary_metrics:architecture_metrics", metrics_read=("architecture_summary",),
    rules="emergence.claims.scorecard:architecture_claims",
    rules_read=("architecture_summary", "ca_architecture_summary"),
)
