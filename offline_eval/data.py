"""Load the user's dataset and check it before anything is evaluated.

A dataset is a list of *records*, one per RAG interaction. This module turns a file (or, for the
Python API, an iterable of dicts) into :class:`~offline_eval.sample.Sample` objects, or explains
precisely why it cannot.

Formats (chosen by the file extension, case-insensitive)
    ``.json``            a top-level array of objects, or an object ``{"samples": [...]}``
    ``.jsonl``/``.ndjson`` one JSON object per line; blank lines are ignored
    ``.csv``             a header row, then one record per row; the ``contexts`` cell holds a JSON
                         list of strings, e.g. ``["first chunk", "second chunk"]`` (``[]`` for none),
                         and so does a ``ground_truths`` cell that starts with ``[``

Field names: three spellings are accepted, so that data prepared for RAGAS loads unchanged.

    =================  ==================  ==================  =============================
    field              seed names          RAGAS 0.2+          RAGAS 0.1
    =================  ==================  ==================  =============================
    question           ``question``        ``user_input``      ``question``
    contexts           ``contexts``        ``retrieved_contexts`` ``contexts``
    answer             ``answer``          ``response``        ``answer``
    reference_answer   ``reference_answer`` ``reference``      ``ground_truth`` / ``ground_truths``
    sample_id          ``sample_id``       —                   —
    category           ``category``        —                   —
    =================  ==================  ==================  =============================

``ground_truths`` (RAGAS 0.1, a list) must hold at most one string: we compare against a single
reference answer and refuse to pick one of several for you. If one record gives the same field under
two names with *different* values, that is an error; identical values are fine. Any other field is
ignored.

Validation rules, and why
    * ``question``: a non-empty string. Nothing can be judged without it.
    * ``answer``: a string. An *empty* answer is allowed (the system may really have answered
      nothing; the metrics then report "not computable"), but ``null`` or a number is an error,
      because it usually means a column was mis-mapped.
    * ``contexts``: a list of strings in rank order. ``[]`` is allowed (nothing was retrieved), but an
      empty string *inside* the list is an error: it is almost always a chunking bug, and scoring it
      would silently drag context precision down.
    * ``reference_answer``: optional; ``null`` and ``""`` both mean "no reference".
    * ``category``: optional string; numbers are converted to their text (``3`` → ``"3"``).
    * ``sample_id``: optional; defaults to the record's 1-based position (``"1"``, ``"2"``, ...);
      numbers become their text. Ids must be unique.
    * ``NaN`` (what pandas writes for a missing value) is treated like ``null``.
    * No text may hold a lone UTF-16 surrogate (a JSON ``"\\ud800"`` escape without its pair): it is not
      Unicode text, and the judge's tokenizer would stop the run on it.

Nothing is altered: strings are stored exactly as read (whitespace, quotes, braces, any script).
``strip()`` is used only to *test* whether a value is blank.

Every problem is collected, not just the first, and each one names the file, the location (``line
N`` for JSONL and CSV -- the physical line, the CSV header being line 1 -- or ``record N`` for JSON),
the field, and what was expected versus what was found::

    data.jsonl line 3: field 'contexts': expected a list of strings, got a string

Problems with the file as a whole (missing, empty, not UTF-8, broken JSON, ...) always raise
:class:`DatasetError`. Problems with one record raise too, unless ``skip_invalid=True``, in which
case the record is left out and reported in :attr:`LoadResult.skipped`.

Reading the file into rows is ``offline_eval.table``'s (shared with the labels loader); this module
checks what a record must hold. Only the standard library is used, so loading and validating never
needs the heavy dependencies.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any, Callable

from offline_eval.sample import Sample
from offline_eval.table import EXTENSIONS, TableError, describe, number_text, read_rows, read_text

__all__ = [
    "FIELD_ALIASES",
    "SUPPORTED_EXTENSIONS",
    "DataProblem",
    "DatasetError",
    "LoadResult",
    "SkippedRecord",
    "load_samples",
    "samples_from_records",
]

#: Accepted names for each :class:`Sample` field, in order of preference. When a record uses more
#: than one name for a field, the values must agree.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "sample_id": ("sample_id",),
    "question": ("question", "user_input"),
    "answer": ("answer", "response"),
    "contexts": ("contexts", "retrieved_contexts"),
    "reference_answer": ("reference_answer", "reference", "ground_truth", "ground_truths"),
    "category": ("category",),
}

#: File extension (lower case) → format name.
SUPPORTED_EXTENSIONS: dict[str, str] = EXTENSIONS

#: :class:`DatasetError` lists at most this many problems; the rest are counted.
MAX_PROBLEMS_SHOWN = 20

_REQUIRED = ("question", "answer", "contexts")
_SURROGATE = re.compile("[\ud800-\udfff]")


# --------------------------------------------------------------------------------------------------
# Public result and error types
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataProblem:
    """One thing wrong with the input, phrased so the user can find and fix it.

    ``location`` is ``None`` for problems with the file as a whole; ``field`` is ``None`` when the
    problem is not about one field (a line that is not valid JSON, a record that is not an object).
    """

    file: str
    location: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        head = self.file if self.location is None else f"{self.file} {self.location}"
        return f"{head}: {self.detail}"

    @property
    def detail(self) -> str:
        """The problem without the file and location: ``field 'F': MESSAGE``."""
        if self.field is None:
            return self.message
        return f"field '{self.field}': {self.message}"


@dataclass(frozen=True)
class SkippedRecord:
    """A record left out because ``skip_invalid=True``; ``problems`` omit the file name."""

    location: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class LoadResult:
    """What was loaded: the valid samples in input order, the skipped records, and the total count.

    ``n_records == len(samples) + len(skipped)``.
    """

    samples: list[Sample]
    skipped: list[SkippedRecord]
    n_records: int


class DatasetError(Exception):
    """The dataset cannot be used as it is. ``problems`` lists every problem found."""

    def __init__(self, problems: Iterable[DataProblem]) -> None:
        self.problems: list[DataProblem] = list(problems)
        # Passing the list as the only argument keeps the exception picklable.
        super().__init__(self.problems)

    def __str__(self) -> str:
        n = len(self.problems)
        if n == 1:
            return str(self.problems[0])
        lines = [f"{n} problems in the dataset:"]
        lines += [f"  {p}" for p in self.problems[:MAX_PROBLEMS_SHOWN]]
        if n > MAX_PROBLEMS_SHOWN:
            lines.append(f"  ... and {n - MAX_PROBLEMS_SHOWN} more")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------


def load_samples(path: str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Read and validate a dataset file (``.json``, ``.jsonl``/``.ndjson`` or ``.csv``).

    Messages and :attr:`Sample.source` use the path exactly as given (``data.jsonl:3``), so they
    match what the user typed. Raises :class:`DatasetError` listing every problem found; with
    ``skip_invalid=True`` invalid records are skipped instead (problems with the file itself still
    raise, and so does a file in which no record is valid).
    """
    file = str(path)
    try:
        text, fmt = read_text(Path(path))
        rows = read_rows(text, fmt or "", looks_like_record=lambda doc: any(a in doc for a in FIELD_ALIASES["question"]),
                         on_csv_header=lambda header, line: _check_csv_header(header, file, line))
    except TableError as exc:
        raise _file_error(file, exc.message, exc.location) from None
    raws = []
    for row in rows:
        separator = "#" if row.line is None else ":"
        raw = _RawRecord(location=row.location, source=f"{file}{separator}{row.line or row.position}",
                         position=row.position, value=row.value, from_csv=row.from_csv)
        if row.problem:
            raw.problems.append((None, row.problem))
        elif not row.from_csv:
            _check_object(raw, row.value, "each line" if row.line else "this record")
        raws.append(raw)
    return _finish(raws, file, skip_invalid)


def samples_from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    source: str = "<memory>",
    skip_invalid: bool = False,
) -> LoadResult:
    """Validate in-memory records (dicts, or :class:`Sample` objects, checked by the same rules).

    The same field names and rules as for files apply. Records are located as ``record N``
    (1-based) and ``source`` stands in for the file name in messages and in :attr:`Sample.source`
    (``<memory>#2``).

    For a pandas DataFrame pass ``df.to_dict("records")``; for a Hugging Face dataset, the dataset
    itself (iterating it yields dicts).
    """
    if isinstance(records, (str, bytes, Mapping)):
        kind = "a string" if isinstance(records, (str, bytes)) else "a mapping"
        raise DatasetError(
            [
                DataProblem(
                    source,
                    None,
                    None,
                    f"expected an iterable of records (dicts or Sample objects), got {kind}; "
                    "for columns in a dict, build one dict per row first",
                )
            ]
        )
    raws: list[_RawRecord] = []
    for n, record in enumerate(records, start=1):
        where = f"{source}#{n}"
        if isinstance(record, Sample):
            # Built in code, not by a loader: nothing has checked it yet. Its own source is kept.
            where = record.source if record.source != "<memory>" else where
            record = _sample_fields(record)
        raw = _RawRecord(location=f"record {n}", source=where, position=n, value=record)
        if not isinstance(record, Mapping):
            hint = (
                " (iterating a pandas DataFrame yields column names; pass df.to_dict('records'))"
                if isinstance(record, str)
                else ""
            )
            raw.problems.append((None, f"expected a dict or a Sample, got {describe(record)}{hint}"))
        raws.append(raw)
    return _finish(raws, source, skip_invalid)


# --------------------------------------------------------------------------------------------------
# Reading the file: everything here is a file-level problem
# --------------------------------------------------------------------------------------------------


@dataclass
class _RawRecord:
    """A record as read, before field validation. ``problems`` holds (field, message) pairs."""

    location: str  # "line 3" / "record 2"
    source: str  # "data.jsonl:3" / "data.json#2", becomes Sample.source
    position: int  # 1-based position among records: the default sample_id
    value: Any
    problems: list[tuple[str | None, str]] = dc_field(default_factory=list)
    from_csv: bool = False


def _sample_fields(sample: Sample) -> dict[str, Any]:
    """A Sample as the record it stands for (its ``source`` is given again by position)."""
    return {f.name: getattr(sample, f.name) for f in dc_fields(Sample) if f.name != "source"}


def _file_error(file: str, message: str, location: str | None = None) -> DatasetError:
    return DatasetError([DataProblem(file, location, None, message)])


def _check_object(raw: _RawRecord, value: Any, what: str) -> None:
    if not isinstance(value, dict):
        raw.problems.append((None, f"{what} must be a JSON object {{...}}, got {describe(value)}"))
        return
    for key in getattr(value, "duplicate_keys", ()):
        raw.problems.append(
            (key, "the key appears more than once in this record; only one value can be kept")
        )


def _check_csv_header(header: list[str], file: str, line: int) -> None:
    problems = []
    seen: set[str] = set()
    for name in header:
        if name and name in seen:
            problems.append(f"column '{name}' appears more than once in the header")
        seen.add(name)
    lower = {name.lower(): name for name in header}
    for field in _REQUIRED:
        aliases = FIELD_ALIASES[field]
        if any(a in seen for a in aliases):
            continue
        near = [lower[a] for a in aliases if a in lower]
        hint = f" (found '{near[0]}': names are case-sensitive)" if near else ""
        names = " or ".join(f"'{a}'" for a in aliases)
        problems.append(f"no {field} column: expected a column named {names}{hint}")
    if problems:
        found = ", ".join(f"'{h}'" for h in header)
        raise DatasetError(
            [DataProblem(file, f"line {line}", None, f"{msg}; header columns: {found}") for msg in problems]
        )


# --------------------------------------------------------------------------------------------------
# Record validation: these are record-level problems
# --------------------------------------------------------------------------------------------------


class _Absent:
    """Marker: the field was given, but as "no value" (``null``, or ``""`` for an optional field)."""


_ABSENT = _Absent()


class _Bad(Exception):
    def __init__(self, *messages: str) -> None:
        self.messages = messages


def _finish(raws: list[_RawRecord], file: str, skip_invalid: bool) -> LoadResult:
    """Validate every record, check ids are unique, and either raise or build the result."""
    samples: list[Sample] = []
    skipped: list[SkippedRecord] = []
    problems: list[DataProblem] = []
    first_use: dict[str, _RawRecord] = {}
    defaulted: set[str] = set()  # locations whose id came from their position

    for raw in raws:
        found = list(raw.problems)
        sample: Sample | None = None
        sample_id: str | None = None
        if isinstance(raw.value, Mapping):
            # Validate the fields even when the record already has a problem (a repeated key), so
            # that one run reports everything.
            sample, sample_id, is_default, field_problems = _validate(raw)
            found += field_problems
            if is_default:
                defaulted.add(raw.location)

        if sample_id is not None:
            if sample_id in first_use:
                first = first_use[sample_id]
                found.append(("sample_id", _duplicate_message(sample_id, first, raw, defaulted)))
            else:
                first_use[sample_id] = raw

        if found:
            record_problems = [DataProblem(file, raw.location, f, m) for f, m in found]
            problems += record_problems
            if skip_invalid:
                skipped.append(SkippedRecord(raw.location, tuple(p.detail for p in record_problems)))
        else:
            assert sample is not None
            samples.append(sample)

    if problems and not skip_invalid:
        raise DatasetError(problems)
    if not samples:
        raise DatasetError(
            problems
            + [
                DataProblem(
                    file,
                    None,
                    None,
                    f"no valid records: all {len(raws)} records have problems, so nothing is left "
                    "to evaluate",
                )
            ]
        )
    return LoadResult(samples=samples, skipped=skipped, n_records=len(raws))


def _duplicate_message(sample_id: str, first: _RawRecord, raw: _RawRecord, defaulted: set[str]) -> str:
    def how(r: _RawRecord) -> str:
        if r.location in defaulted:
            return f"{r.location} (no sample_id given, so its position {r.position} is used)"
        return r.location

    return (
        f"duplicate sample id {sample_id!r}: used by {how(first)} and by {how(raw)}; "
        "sample ids must be unique"
    )


def _validate(raw: _RawRecord) -> tuple[Sample | None, str | None, bool, list[tuple[str | None, str]]]:
    """Check one record's fields. Returns (sample or None, sample_id or None, id defaulted?, problems)."""
    record: Mapping[str, Any] = raw.value
    problems: list[tuple[str | None, str]] = []
    csv_cells = raw.from_csv

    def get(field: str, normalize: Callable[[Any, str], Any]) -> Any:
        value, field_problems = _resolve(record, field, normalize, csv_cells)
        problems.extend(field_problems)
        return value

    sample_id = get("sample_id", _norm_sample_id)
    question = get("question", _norm_question)
    answer = get("answer", _norm_answer)
    contexts = get("contexts", lambda v, a: _norm_contexts(v, csv_cells))
    reference = get("reference_answer", lambda v, a: _norm_reference(v, a, csv_cells))
    category = get("category", _norm_category)

    id_problem = any(f in FIELD_ALIASES["sample_id"] for f, _ in problems)
    is_default = sample_id is _ABSENT
    if is_default:
        sample_id = str(raw.position)
    elif id_problem:
        sample_id = None
    if problems:
        return None, sample_id, is_default, problems
    sample = Sample(
        sample_id=sample_id,
        question=question,
        answer=answer,
        contexts=contexts,
        reference_answer=None if reference is _ABSENT else reference,
        category=None if category is _ABSENT else category,
        source=raw.source,
    )
    return sample, sample_id, is_default, problems


def _resolve(
    record: Mapping[str, Any], field: str, normalize: Callable[[Any, str], Any], csv_cells: bool
) -> tuple[Any, list[tuple[str | None, str]]]:
    """Find ``field`` under any of its names, normalize it, and check that the names agree.

    Returns ``(value, problems)``; ``value`` is ``_ABSENT`` when the field is not given (``None`` when
    it is given but invalid). ``null``/NaN count as "not given", and so does an empty CSV cell when
    another column for the same field has a value.
    """
    aliases = FIELD_ALIASES[field]
    present = [a for a in aliases if a in record]
    problems: list[tuple[str | None, str]] = []
    found: list[tuple[str, Any]] = []
    nulls: list[str] = []
    empty_cells: list[str] = []
    for alias in present:
        value = record[alias]
        if _is_null(value):
            nulls.append(alias)
            continue
        if csv_cells and value == "":
            empty_cells.append(alias)
            continue
        try:
            normalized = normalize(value, alias)
            _check_unicode(normalized)
        except _Bad as bad:
            problems += [(alias, m) for m in bad.messages]
            continue
        if normalized is not _ABSENT:
            found.append((alias, normalized))
    if problems:
        return None, problems

    if not found and empty_cells:
        if field not in _REQUIRED:
            return _ABSENT, []  # an empty CSV cell for an optional field: not given
        alias = empty_cells[0]
        try:
            return normalize("", alias), []
        except _Bad as bad:
            return None, [(alias, m) for m in bad.messages]

    distinct = []
    for alias, value in found:
        if all(value != v for _, v in distinct):
            distinct.append((alias, value))
    if len(distinct) > 1:
        shown = " and ".join(f"'{a}' = {_preview(v)}" for a, v in distinct)
        return None, [
            (
                field,
                f"given under several names with different values: {shown}; these names mean the "
                "same field, so keep only one",
            )
        ]
    if found:
        return found[0][1], []

    if field in _REQUIRED:
        names = " or ".join(f"'{a}'" for a in aliases)
        if nulls:
            return None, [(nulls[0], f"{_EXPECTED[field]}, got null")]
        near = _case_insensitive_match(record, aliases)
        hint = f" (found '{near}': field names are case-sensitive)" if near else ""
        return None, [(field, f"missing: {_EXPECTED[field]} under the name {names}{hint}")]
    return _ABSENT, []


_EXPECTED = {
    "question": "expected a non-empty string",
    "answer": "expected a string (an empty string is allowed)",
    "contexts": "expected a list of strings (use [] when nothing was retrieved)",
}


def _norm_question(value: Any, alias: str) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{_EXPECTED['question']}, got {describe(value)}")
    if not value.strip():
        raise _Bad(f"{_EXPECTED['question']}, got {describe(value)}")
    return value


def _norm_answer(value: Any, alias: str) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{_EXPECTED['answer']}, got {describe(value)}")
    return value


def _csv_json_list(cell: str, example: str) -> list[Any]:
    """A CSV cell holding a JSON list (CSV has no lists of its own); ``example`` shows the right form."""
    try:
        value = json.loads(cell)
    except json.JSONDecodeError as exc:
        raise _Bad(
            f"expected a JSON list of strings in this CSV cell, e.g. {example}; the cell {_preview(cell)} is "
            f"not valid JSON ({exc.msg} at character {exc.pos + 1})"
        ) from None
    if not isinstance(value, list):
        raise _Bad(f"expected a JSON list of strings in this CSV cell, e.g. {example}, got JSON {describe(value)}")
    return value


def _norm_contexts(value: Any, csv_cell: bool) -> tuple[str, ...]:
    if csv_cell:
        if not value.strip():
            raise _Bad(
                f"expected a JSON list of strings in this CSV cell, got {describe(value)}; "
                "write [] when nothing was retrieved"
            )
        value = _csv_json_list(value, '["first chunk", "second chunk"] or [] for none')
    if isinstance(value, str):
        raise _Bad(f"expected a list of strings, got a string (for one chunk write [{_preview(value)}])")
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()  # a numpy array, e.g. from a pandas DataFrame
    if not isinstance(value, (list, tuple)):
        raise _Bad(f"expected a list of strings, got {describe(value)}")
    messages = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            messages.append(f"element [{i}]: expected a string, got {describe(item)}")
        elif not item.strip():
            messages.append(
                f"element [{i}] is {describe(item)}; remove it (an empty list [] is allowed)"
            )
    if messages:
        raise _Bad(*messages)
    return tuple(str(item) for item in value)


def _norm_reference(value: Any, alias: str, csv_cell: bool = False) -> str | _Absent:
    if csv_cell and alias == "ground_truths" and value.lstrip().startswith("["):
        # RAGAS 0.1's list field, written to CSV: a JSON list, not the reference's literal text.
        value = _csv_json_list(value, '["the reference answer"]')
    if alias == "ground_truths" and isinstance(value, (list, tuple)):
        strings = [v for v in value if not _is_null(v)]
        bad = [v for v in strings if not isinstance(v, str)]
        if bad:
            raise _Bad(f"expected a list with one string, got a list containing {describe(bad[0])}")
        given = [v for v in strings if v.strip()]
        if len(given) > 1:
            raise _Bad(
                f"expected at most one reference answer, got a list of {len(given)}; offline-eval "
                "compares against a single reference, so keep the one you want (or put it in "
                "'reference')"
            )
        return given[0] if given else _ABSENT
    if not isinstance(value, str):
        raise _Bad(f"expected a string or null, got {describe(value)}")
    return value if value.strip() else _ABSENT


def _norm_category(value: Any, alias: str) -> str | _Absent:
    if isinstance(value, str):
        return value if value.strip() else _ABSENT
    if _is_number(value):
        return number_text(value)
    raise _Bad(f"expected a string, a number or null, got {describe(value)}")


def _norm_sample_id(value: Any, alias: str) -> str | _Absent:
    if isinstance(value, str):
        if value.strip():
            return value
        raise _Bad(f"expected a non-empty string or a number, got {describe(value)}")
    if _is_number(value):
        return number_text(value)
    raise _Bad(f"expected a non-empty string or a number, got {describe(value)}")


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def _check_unicode(value: Any) -> None:
    """Reject lone UTF-16 surrogates (a JSON "\\ud800" escape without its pair): they are not text, and
    tokenising them would stop the run after the judging had begun."""
    texts = [("", value)] if isinstance(value, str) else []
    if isinstance(value, tuple):
        texts = [(f"element [{i}] ", v) for i, v in enumerate(value)]
    problems = []
    for where, text in texts:
        found = _SURROGATE.search(text)
        if found:
            problems.append(
                f"{where}contains a lone surrogate \\u{ord(found.group()):04x} at character {found.start() + 1}: "
                "not valid Unicode text (a \\u escape without its pair?)"
            )
    if problems:
        raise _Bad(*problems)


def _is_null(value: Any) -> bool:
    """``None``, or a float NaN (pandas' missing value)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _preview(value: Any, limit: int = 40) -> str:
    """A short ``repr``-like rendering for messages: JSON text, cut to ``limit`` characters."""
    try:
        text = json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _case_insensitive_match(record: Mapping[str, Any], aliases: tuple[str, ...]) -> str | None:
    wanted = {a.lower() for a in aliases}
    for key in record:
        if isinstance(key, str) and key.strip().lower() in wanted:
            return key
    return None
