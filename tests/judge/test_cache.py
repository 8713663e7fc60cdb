"""The judge cache: a file that cannot be used is refused up front, naming it (exit 2 on the command
line); one that fails mid-run turns itself off and the run goes on. No model is loaded."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from offline_eval import modelstore
from offline_eval.cli import cli
from offline_eval.judge.cache import CacheError, JudgeCache


def _put(cache: JudgeCache, key: str) -> None:
    cache.put(key, model_sha256="m", prompt="p", schema="{}", params={}, output='{"a": 1}', prompt_tokens=3,
              completion_tokens=1, seconds=0.5, probabilities={"a": {"yes": 0.25, "no": 0.75}})


def test_round_trip(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    _put(cache, "k")
    assert cache.get("k") == ('{"a": 1}', 3, 1, 0.5, {"a": {"yes": 0.25, "no": 0.75}}) and len(cache) == 1


def test_a_cache_from_before_verdict_probabilities_still_opens(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE judge_calls (key TEXT PRIMARY KEY, model_sha256 TEXT NOT NULL, prompt TEXT NOT NULL, "
               "schema TEXT NOT NULL, params TEXT NOT NULL, output TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
               "completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL, created REAL NOT NULL)")
    db.execute("INSERT INTO judge_calls VALUES ('k', 'm', 'p', '{}', '{}', 'out', 1, 2, 0.1, 0)")
    db.commit()
    db.close()
    assert JudgeCache(path).get("k") == ("out", 1, 2, 0.1, {})


def test_corrupt_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a SQLite database, just bytes " * 100)
    with pytest.raises(CacheError) as exc:
        JudgeCache(path)
    assert str(exc.value).startswith(f"{path}: the judge cache cannot be used (file is not a database)")
    assert "--no-cache" in str(exc.value)


def test_folder_that_cannot_be_made_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheError, match="file/cache.sqlite: the judge cache cannot be used"):
        JudgeCache(tmp_path / "file" / "cache.sqlite")


def test_read_only_cache_is_refused_when_opened(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    _put(JudgeCache(path), "k")
    connect = sqlite3.connect
    # Permissions do not bind root, so open the file the way SQLite opens a read-only one.
    monkeypatch.setattr(sqlite3, "connect", lambda p, **kw: connect(f"file:{p}?mode=ro", uri=True, **kw))
    with pytest.raises(CacheError, match="readonly database"):
        JudgeCache(path)


def test_failure_mid_run_turns_the_cache_off_and_says_why(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    _put(cache, "k")
    cache._db.close()  # the file goes away under the run (a full disk behaves the same)
    assert cache.get("k") is None
    _put(cache, "k2")
    assert cache.problem.startswith(f"{tmp_path / 'c.sqlite'}: the judge cache failed during the run")


def test_cli_corrupt_cache_exits_2_before_any_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def no_model(*args, **kwargs):
        raise AssertionError("a model was resolved")

    monkeypatch.setattr(modelstore, "resolve", no_model)
    (tmp_path / "data.jsonl").write_text(json.dumps({"question": "q?", "contexts": [], "answer": "a"}) + "\n")
    (tmp_path / "bad.sqlite").write_bytes(b"garbage" * 200)
    result = CliRunner().invoke(cli, ["evaluate", "data.jsonl", "--cache", "bad.sqlite", "--metrics", "faithfulness"])
    assert result.exit_code == 2, result.output
    assert "bad.sqlite: the judge cache cannot be used" in result.output
    assert "Traceback" not in result.output
