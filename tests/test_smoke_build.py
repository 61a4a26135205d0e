"""The shared smoke build's protocol (tests/smoke_build.py): claimed once per run, waited for,
its failure reported with its log, copied for editing without DVC's lock state."""
import pytest

import smoke_build
from smoke_build import sh


def test_the_build_is_claimed_once_and_running_until_its_status_is_written(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(smoke_build.subprocess, "Popen", lambda args, **kw: started.append(args))
    monkeypatch.setattr(smoke_build, "_BUILD", None)
    folder = tmp_path / "smoke-build"
    assert smoke_build.start(folder) and not smoke_build.start(folder)
    assert len(started) == 1 and started[0][-1] == str(folder)
    assert smoke_build.running(folder)
    (folder / "rc").write_text("0")
    assert not smoke_build.running(folder)
    assert smoke_build.wait(folder) == folder / "repo"


def test_a_failed_build_is_reported_with_its_log_and_a_missing_one_times_out(tmp_path):
    folder = tmp_path / "smoke-build"
    folder.mkdir()
    (folder / "claimed").touch()
    with pytest.raises(TimeoutError):
        smoke_build.wait(folder, timeout_s=0.5)
    (folder / "build.log").write_text("stage mixers failed: boom")
    (folder / "rc").write_text("1")
    with pytest.raises(AssertionError, match="boom"):
        smoke_build.wait(folder)


def test_a_copy_leaves_out_dvcs_lock_state_and_commits_the_results(tmp_path):
    built = tmp_path / "built"
    (built / ".dvc" / "tmp").mkdir(parents=True)
    (built / ".dvc" / "tmp" / "rwlock").write_text('{"read": {"data": [{"pid": 1}]}}')
    (built / ".dvc" / "config").write_text("[core]\n")
    (built / ".dvc" / ".gitignore").write_text("/tmp\n")
    sh(["git", "init", "-q"], built)
    sh(["git", "add", "-A"], built)
    sh(["git", "commit", "-qm", "copy"], built)
    (built / "dvc.lock").write_text("schema: '2.0'\n")  # what the build leaves uncommitted
    copy = smoke_build.copy_of(built, tmp_path / "copy" / "repo")
    assert not (copy / ".dvc" / "tmp").exists() and (copy / ".dvc" / "config").is_file()
    assert sh(["git", "log", "-1", "--format=%s"], copy).stdout.strip() == "results"
    assert sh(["git", "status", "--porcelain"], copy).stdout == ""
    assert (built / ".dvc" / "tmp" / "rwlock").is_file()  # the build itself untouched
