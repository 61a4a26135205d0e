"""Claims 6 and 7 on the cellular automata: the same model shapes as `architecture` (whose
rules decide both tasks)."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="ca_architecture", title="heads, width and depth on the automata", params="sweeps.ca_architecture",
    chapter="04_architecture", figure="fig-architecture-ca",
    args="emergence.runs.sweeps.architecture:ArchitectureSweepArgs",
    files="emergence.runs.sweeps.architecture:sweep_files", summarize="emergence.analysis.architecture:summarize",
    reads=("cellular_automata.task", "cellular_automata.model.norm", "cellular_automata.model.positional",
           "cellular_automata.bias", "cellular_automata.train"),
    summary_reads=("cellular_automata.analysis",),
    metrics="emergence.analysis.summary_metrics:architecture_metrics", metrics_read=("ca_architecture_summary",),
)
