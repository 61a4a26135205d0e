"""The typed views the library takes, built from a (test-edited) merged params dict."""
from emergence.common.experiments import experiment, resolve
from emergence.common.schema import load
from emergence.runs.cells import Setting
from emergence.runs.executor import ExecutionArgs


def setting(params: dict) -> Setting:
    return Setting.of(params)


def section(params: dict, name: str):
    """Experiment `name`'s own params section, typed by its declared args."""
    return experiment(name).section(params)


def files(params: dict, name: str):
    """Experiment `name`'s declared result files, as its generated stage builds them."""
    declared = experiment(name)
    return resolve(declared.files)(Setting.of(params), declared.section(params), name)


def execution(params: dict) -> ExecutionArgs:
    return load(ExecutionArgs, params["execution"], "execution")
