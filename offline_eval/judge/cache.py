"""Every judge call, stored in SQLite: a rerun is instant, an interrupted run resumes.

The key is the sha256 of (model file sha256, exact prompt text, schema, sampling parameters), so a hit
is by construction the answer the same computation would give. The table doubles as a log of every
prompt and response, readable with any SQLite client.

A cache that cannot be used (corrupt, read-only, in a folder that cannot be written) is refused when
it is opened, before any model loads, with a ``CacheError`` naming the file. One that fails later in a
run (a full disk) does not stop the run: the cache turns itself off and records why in ``problem``.

One process writes a run's cache. Ray workers open it ``read_only`` (through a reader on the
driver's machine) and hand what they computed back to the driver, which stores it; threads of one
process (a judge server's requests in flight) share one connection under a lock.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_calls (
    key TEXT PRIMARY KEY,
    model_sha256 TEXT NOT NULL,
    prompt TEXT NOT NULL,
    schema TEXT NOT NULL,
    params TEXT NOT NULL,
    output TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL,
    probabilities TEXT NOT NULL DEFAULT '{}'
)
"""


def cache_key(model_sha256: str, prompt: str, schema: str, params: dict[str, Any]) -> str:
    blob = json.dumps([model_sha256, prompt, schema, params], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CacheError(RuntimeError):
    """The judge cache file cannot be used; the message names it and says how to run on."""


class JudgeCache:
    """A SQLite table of judge calls. Each store commits at once, so a killed run loses nothing done.

    ``read_only``: look-ups only, from a cache another process writes (a Ray worker's view of the run's
    cache); it is never created, changed or migrated.
    """

    def __init__(self, path: Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self.problem: str | None = None  # set when the cache failed mid-run and turned itself off
        self._lock = threading.Lock()
        try:
            if read_only:
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30,
                                           check_same_thread=False)
                self._db.execute("SELECT probabilities FROM judge_calls LIMIT 0")
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(judge_calls)")}
            if "probabilities" not in columns:  # a cache written before verdict probabilities were kept
                self._db.execute("ALTER TABLE judge_calls ADD COLUMN probabilities TEXT NOT NULL DEFAULT '{}'")
            self._db.commit()
            # A read-only file opens and reads fine; only a write shows it, and that must not wait for
            # the first stored call. An empty delete is a write that changes nothing.
            self._db.execute("DELETE FROM judge_calls WHERE key = ''")
            self._db.commit()
        except (sqlite3.Error, OSError) as exc:
            raise CacheError(f"{self.path}: the judge cache cannot be used ({exc}); run with --no-cache, or "
                             "--cache FILE to use another file") from None

    def _failed(self, exc: Exception) -> None:
        self.problem = f"{self.path}: the judge cache failed during the run ({exc}); later calls were not cached"

    def get(self, key: str) -> tuple[str, int, int, float, dict[str, dict[str, float]]] | None:
        if self.problem:
            return None
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT output, prompt_tokens, completion_tokens, seconds, probabilities FROM judge_calls "
                    "WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            return None
        return None if row is None else (row[0], int(row[1]), int(row[2]), float(row[3]), json.loads(row[4]))

    def put(
        self,
        key: str,
        *,
        model_sha256: str,
        prompt: str,
        schema: str,
        params: dict[str, Any],
        output: str,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        probabilities: dict[str, dict[str, float]] | None = None,
    ) -> None:
        if self.problem:
            return
        if self.read_only:
            raise CacheError(f"{self.path}: opened read-only; the process that runs the evaluation stores calls")
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO judge_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, model_sha256, prompt, schema, json.dumps(params, sort_keys=True), output, prompt_tokens,
                     completion_tokens, seconds, time.time(), json.dumps(probabilities or {}, sort_keys=True)),
                )
                self._db.commit()
        except sqlite3.Error as exc:
            self._failed(exc)  # hours of judging are worth more than the cache: run on without it

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0])

    def close(self) -> None:
        self._db.close()
