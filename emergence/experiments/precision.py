"""Not a claim of the paper: does bfloat16 change the emergence statistics the claims read?
The check that chose each profile's precision, rerun."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="precision", title="bfloat16 against float32", params="sweeps.precision",
    chapter="08_precision", figure="fig-precision-curves",
    args="emergence.runs.sweeps.precision:PrecisionCheckArgs",
    files="emergence.runs.sweeps.precision:sweep_files", summarize="emergence.analysis.precision_agreement:summarize",
    reads=("linear_map.task", "linear_map.model", "linear_map.train", "linear_map.bias",
           "cellular_automata.task", "cellular_automata.model", "cellular_automata.train", "cellular_automata.bias"),
    summary_reads=("linear_map.analysis", "linear_map.train.precision", "cellular_automata.analysis",
                   "cellular_automata.train.precision", "language_model.train.precision"),
    metrics="emergence.analysis.summary_metrics:precision_metrics", metrics_read=("precision_summary",),
)
