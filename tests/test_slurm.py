"""Cells built as a SLURM job array on a real single-node cluster (slurmctld, slurmd and munge
from Debian, brought up by .ci/slurm-up.sh; ../shared/recipes/slurm.md): the same bytes as the
local executor, a killed task resubmitted, a rerun that submits nothing."""
import copy
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from emergence.pipeline.config import REPO_ROOT
from emergence.runs import build_log
from emergence.runs import cells
from emergence.runs.executor import ExecutorError, SlurmArgs, run_slurm

from test_executor import POOLED, SERIAL, _digests, _sweep_files

SLURM = SlurmArgs(partition="", timeout_min=10, cpus_per_task=1, gpus_per_task=0, mem_gb=0.0, max_resubmit=2,
                  array_parallelism=16)


def _cluster_up() -> str | None:
    """None where a cluster answers (bringing one up with .ci/slurm-up.sh where we are root), else why not."""
    if shutil.which("sinfo") and subprocess.run(["sinfo", "-h"], capture_output=True).returncode == 0:
        return None
    if os.geteuid() != 0:
        return "no SLURM cluster answers and bringing one up needs root"
    up = subprocess.run(["bash", str(REPO_ROOT / ".ci" / "slurm-up.sh")], capture_output=True, text=True)
    return None if up.returncode == 0 else f".ci/slurm-up.sh failed (packages not installable?): {up.stderr[-500:]}"


@pytest.fixture(scope="module")
def cluster():
    reason = _cluster_up()
    if reason:
        pytest.skip(reason)
    saved = {k: os.environ.get(k) for k in ("PATH", "PYTHONPATH")}
    # submitit polls sacct, which needs slurmdbd; .ci/bin/sacct answers from squeue instead. The
    # tasks import this test module (its functions are pickled by reference) from PYTHONPATH.
    os.environ["PATH"] = f"{REPO_ROOT / '.ci' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(Path(__file__).parent),
                                                *filter(None, [saved["PYTHONPATH"]])])
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _submitted(folder: Path) -> int:
    """Job folders submitit made: one per submitted array."""
    return len({p.name.split("_")[0] for p in folder.glob("*") if p.is_dir()}) if folder.exists() else 0


def test_a_sweep_built_on_slurm_has_the_bytes_of_the_local_executors(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(build_log, "LOOKUPS", [])
    monkeypatch.setattr(build_log, "POOLS", [])
    monkeypatch.setattr(build_log, "COLD_WORKERS", [])
    monkeypatch.setattr(build_log, "STAGE", "sweep_test")
    files = _sweep_files()
    on_slurm = replace(SERIAL, executor="slurm", slurm=SLURM)
    cells.write_sweep(copy.deepcopy(files), tmp_path / "slurm", tmp_path / "scratch-slurm", on_slurm)
    usage = build_log.usage()
    assert usage["cells_built"] == 3 and usage["workers"] == 6  # one array task per seed group
    cells.write_sweep(copy.deepcopy(files), tmp_path / "serial", tmp_path / "scratch-serial", SERIAL)
    cells.write_sweep(copy.deepcopy(files), tmp_path / "pooled", tmp_path / "scratch-pooled", POOLED)
    assert _digests(tmp_path / "slurm") == _digests(tmp_path / "serial") == _digests(tmp_path / "pooled")
    assert len(_digests(tmp_path / "slurm")) == 3
    logs = tmp_path / "scratch-slurm" / "slurm" / "sweep_test"
    # three cells of two seed groups on 16 array tasks: the six groups, then the cells assembled
    assert _submitted(logs) == 2 and list(logs.rglob("*_log.out"))     # two arrays, their task logs kept
    monkeypatch.setattr(build_log, "LOOKUPS", [])
    cells.write_sweep(copy.deepcopy(files), tmp_path / "again", tmp_path / "scratch-slurm", on_slurm)
    assert _submitted(logs) == 2 and build_log.usage()["cells_built"] == 0  # a rerun submits nothing
    # cells of one seed group go out whole: one array
    whole = tmp_path / "scratch-whole" / "slurm" / "sweep_test"
    cells.write_sweep(_sweep_files(seeds_per_group=2), tmp_path / "whole", tmp_path / "scratch-whole", on_slurm)
    cells.write_sweep(_sweep_files(seeds_per_group=2), tmp_path / "whole-here", tmp_path / "scratch-here", SERIAL)
    assert _submitted(whole) == 1 and _digests(tmp_path / "whole") == _digests(tmp_path / "whole-here")


def _dies_on_first_try(marker: str, value: int) -> int:
    """SIGKILLs its own task the first time (no result written: submitit sees a dead task)."""
    path = Path(marker)
    if not path.exists():
        path.write_text("tried")
        os.kill(os.getpid(), 9)
    return value * 10


def test_a_killed_task_is_resubmitted_and_the_array_completes(cluster, tmp_path):
    jobs = [(str(tmp_path / f"marker{i}"), i) for i in range(2)]
    assert run_slurm(_dies_on_first_try, jobs, SLURM, tmp_path / "logs") == [0, 10]
    assert _submitted(tmp_path / "logs") == 2                           # the array, then the resubmission


def _always_fails(value: int) -> int:
    raise ValueError(f"bad cell {value}")


def test_tasks_that_keep_failing_stop_with_their_error_and_logs(cluster, tmp_path):
    with pytest.raises(ExecutorError, match=r"(?s)still failed after 1 resubmissions .*logs under .*bad cell 1"):
        run_slurm(_always_fails, [(1,)], replace(SLURM, max_resubmit=1), tmp_path / "logs")


def test_an_unreachable_cluster_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch, no sinfo
    with pytest.raises(ExecutorError, match="cannot be reached: sbatch and sinfo are not on PATH"):
        run_slurm(_always_fails, [(1,)], SLURM, tmp_path / "logs")
