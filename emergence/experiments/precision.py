"""Not a claim of the paper: does bfloat16 change the emergence statistics the claims read?
The check that chose each profile's precision, rerun."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="precision", title="bfloat16 against float32", params="sweeps.precision",
    chapter="08_precision", figure="fig-precision-curves",
    stages=("precision", "precision_summary"),
    args="emergence.runs.sweeps.precision:PrecisionCheckArgs",
    cells="emergence.runs.sweeps.precision:planned_cells", train_stage="precision",
    metrics="emergence.analysis.summary_metrics:precision_metrics", metrics_read=("precision_summary",),
)
