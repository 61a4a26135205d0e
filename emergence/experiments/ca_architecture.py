"""Claims 6 and 7 on the cellular automata: the same model shapes as `architecture` (whose
rules decide both tasks)."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="ca_architecture", title="heads, width and depth on the automata", params="sweeps.ca_architecture",
    chapter="04_architecture", figure="fig-architecture-ca",
    stages=("ca_architecture", "ca_architecture_summary"),
    args="emergence.runs.sweeps.architecture:ArchitectureSweepArgs",
    cells="emergence.runs.sweeps.architecture:planned_cells", train_stage="ca_architecture",
    metrics="emergence.analysis.summary_metrics:architecture_metrics", metrics_read=("ca_architecture_summary",),
)
