"""The CLI end to end with the real tiny judge and real embedders: reports, determinism across
processes, offline under a socket ban, resume after a killed run, warm cache."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
EXAMPLE = REPO / "examples" / "sample.jsonl"
# The RAGAS form of answer relevancy too, so that the real embedders run end to end.
FAST_FLAGS = ["--judge", "tiny", "--max-claims", "3", "--n-questions", "1", "--n-ctx", "4096",
              "--metrics", "+answer_relevancy_ragas"]

_NO_NETWORK = '''
import socket
def _blocked(*args, **kwargs):
    raise OSError("network access attempted during an offline evaluation")
socket.socket.connect = _blocked
socket.socket.connect_ex = _blocked
socket.create_connection = _blocked
socket.getaddrinfo = _blocked
'''


def _env(home: Path, extra_path: Path | None = None) -> dict[str, str]:
    from offline_eval import modelstore

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(OFFLINE_EVAL_HOME=str(home), OFFLINE_EVAL_MODELS=str(modelstore.models_dir()), CI="true")
    if extra_path:
        env["PYTHONPATH"] = f"{extra_path}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def _cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "offline_eval", "evaluate", str(EXAMPLE), "--out", str(out), *FAST_FLAGS]


def _run(out: Path, home: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(_cmd(out), env=_env(home, extra_path), capture_output=True, text=True, cwd=REPO)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc


@pytest.fixture(scope="module")
def cold_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("cold")
    proc = _run(base / "out", base / "home")
    return base, proc


def test_all_four_reports_are_written_and_strict(cold_run):
    base, proc = cold_run
    out = base / "out"
    for name in ("report.json", "report.md", "report.html", "junit.xml", "timing.json"):
        assert (out / name).stat().st_size > 0, name

    def no_nan(token):
        raise AssertionError(f"non-strict JSON token {token}")

    report = json.loads((out / "report.json").read_text("utf-8"), parse_constant=no_nan)
    assert set(report) >= {"run", "samples", "aggregate", "by_category", "gate", "skipped_records"}
    assert report["run"]["judge"]["name"] == "smollm2-135m" and len(report["run"]["judge"]["sha256"]) == 64
    assert [s["sample_id"] for s in report["samples"]][:2] == ["refund-window", "api-rate-limit"]
    for sample in report["samples"]:
        for metric, value in sample["scores"].items():
            assert value is None or 0.0 <= value <= 1.0
            if value is None and metric != "context_relevant_ratio":
                assert metric in sample["not_computable"]
    # The Chinese samples were judged in Chinese and embedded with the multilingual model.
    assert {s["language"] for s in report["samples"]} == {"en", "zh"}
    assert report["run"]["embedders"]["zh"]["name"] == "use-multilingual-v3"
    assert report["run"]["usage"]["judge_calls"] > 0
    exit_code = 0 if report["gate"]["passed"] else 1
    assert proc.returncode == exit_code
    assert "gate PASSED" in proc.stdout or "gate FAILED" in proc.stdout


def test_second_cold_process_offline_gives_identical_bytes(cold_run, tmp_path):
    """A second cold run, in another process with every socket call failing, writes the same report."""
    base, _ = cold_run
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "sitecustomize.py").write_text(_NO_NETWORK)
    _run(tmp_path / "out", tmp_path / "home", extra_path=sandbox)
    for name in ("report.json", "report.md", "report.html", "junit.xml"):
        assert (tmp_path / "out" / name).read_bytes() == (base / "out" / name).read_bytes(), name


def test_warm_rerun_hits_the_cache_and_gives_identical_bytes(cold_run, tmp_path):
    base, _ = cold_run
    _run(tmp_path / "out", base / "home")
    timing = json.loads((tmp_path / "out" / "timing.json").read_text())
    assert timing["cache_hits"] == timing["judge_calls"] > 0
    assert (tmp_path / "out" / "report.json").read_bytes() == (base / "out" / "report.json").read_bytes()


def test_killed_run_resumes_and_ends_with_the_same_report(cold_run, tmp_path):
    base, _ = cold_run
    home = tmp_path / "home"
    proc = subprocess.Popen(_cmd(tmp_path / "partial"), env=_env(home), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = home / "judge-cache.sqlite"
    deadline = time.time() + 600
    done = 0
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
        if cache.exists():
            try:
                done = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
            except sqlite3.Error:
                continue
            if done >= 6:
                break
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "partial" / "report.json").exists()

    _run(tmp_path / "out", home)
    timing = json.loads((tmp_path / "out" / "timing.json").read_text())
    assert timing["cache_hits"] >= 6
    assert (tmp_path / "out" / "report.json").read_bytes() == (base / "out" / "report.json").read_bytes()


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    home = tmp_path / "home"
    proc = subprocess.Popen(_cmd(tmp_path / "out"), env=_env(home), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    cache = home / "judge-cache.sqlite"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
        try:
            if cache.exists() and sqlite3.connect(cache).execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0] >= 2:
                break
        except sqlite3.Error:
            continue
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "run the same command again to resume" in stderr
    assert "Traceback" not in stderr


def test_ctrl_c_on_ray_workers_exits_130_and_the_run_resumes_in_process(cold_run, tmp_path):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group, Ray's processes too) during a
    --workers 2 run: exit 130 with the resume hint; the same run in one process then ends with the
    in-process report's bytes, answered partly from what the workers computed."""
    pytest.importorskip("ray")
    base, _ = cold_run
    home = tmp_path / "home"
    cmd = _cmd(tmp_path / "partial") + ["--workers", "2", "--threads", "1"]
    proc = subprocess.Popen(cmd, env=_env(home), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    cache = home / "judge-cache.sqlite"
    deadline = time.time() + 300
    stored = 0
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
        try:
            if cache.exists():
                stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
        except sqlite3.Error:
            continue
        if stored >= 1:  # a sample is done: the driver stored its calls
            break
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    assert "run the same command again to resume" in stderr and "Traceback" not in stderr
    assert "/6 samples" in stderr  # the progress lines, as in a single-process run

    _run(tmp_path / "out", home)
    timing = json.loads((tmp_path / "out" / "timing.json").read_text())
    assert timing["executor"] == "in-process" and timing["cache_hits"] >= stored
    assert (tmp_path / "out" / "report.json").read_bytes() == (base / "out" / "report.json").read_bytes()
