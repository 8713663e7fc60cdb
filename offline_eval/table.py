"""Read a table of records from JSON, JSON Lines or CSV, knowing where each record came from.

The one reader behind the dataset loader (``offline_eval.data``) and the labels loader
(``offline_eval.agreement``). It decodes the file, splits it into rows with their locations (``line
N`` for JSONL and CSV -- the physical line, the CSV header being line 1 -- or ``record N`` for JSON)
and says what is wrong with the file as a whole (``TableError``) or with one row (``Row.problem``);
what a record must hold is the caller's business.

JSON Lines are split on ``"\\n"`` only: ``str.splitlines()`` would also split on U+2028 and friends,
which JSON strings may contain raw. JSON objects remember keys given twice, and numbers with a
fraction remember their text (``1.50`` stays ``"1.50"`` as an id). Only the standard library is used.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: File extension (lower case) → format name.
EXTENSIONS: dict[str, str] = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
}


class TableError(Exception):
    """A problem with the file as a whole; ``location`` (``line 3, column 5``) when it has one."""

    def __init__(self, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location


@dataclass
class Row:
    """One record as read, before the caller checks its fields."""

    location: str  # "line 3" / "record 2"
    line: int | None  # the physical line (JSONL, CSV); None for a record of a JSON array
    position: int  # 1-based position among the records
    value: Any = None  # the parsed JSON value, or {column: cell} for CSV; None when unreadable
    problem: str | None = None  # why the row could not be read (broken JSON, wrong number of cells)
    from_csv: bool = False


# --------------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------------


def read_text(p: Path, *, extensions: Mapping[str, str] | None = EXTENSIONS) -> tuple[str, str | None]:
    """Check the path, pick the format by extension, and decode the bytes as UTF-8 (a leading BOM is
    dropped). With ``extensions=None`` any extension is read and the format is None (the caller sniffs)."""
    if not p.exists():
        raise TableError(f"file not found (looked for {p.absolute()})")
    if p.is_dir():
        raise TableError("is a directory; expected a .json, .jsonl/.ndjson or .csv file")
    ext = p.suffix.lower()
    fmt = None if extensions is None else extensions.get(ext)
    if extensions is not None and fmt is None:
        found = f"'{ext}'" if ext else "no extension"
        raise TableError(
            f"unsupported file type ({found}); the format is chosen by the extension: "
            ".json, .jsonl/.ndjson or .csv",
        )
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TableError(f"cannot read the file: {exc.strerror or exc}") from None
    if not data:
        raise TableError("the file is empty (0 bytes)")

    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TableError("the file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8")
    bom = b"\xef\xbb\xbf"
    body = data[len(bom) :] if data.startswith(bom) else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + (len(data) - len(body))  # offset in the file, counting the BOM
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        raise TableError(
            f"not valid UTF-8: byte 0x{data[offset]:02x} at byte offset {offset} (column {column} "
            "of this line, counting bytes); the file may be in another encoding such as Latin-1 "
            "or Windows-1252 -- save it as UTF-8",
            location=f"line {line}",
        ) from None
    if not text.strip():
        raise TableError("the file is empty (only whitespace)")
    return text, fmt


# --------------------------------------------------------------------------------------------------
# JSON values
# --------------------------------------------------------------------------------------------------


class JsonObject(dict):
    """A JSON object that remembers keys it saw more than once (``json`` keeps only the last)."""

    duplicate_keys: tuple[str, ...] = ()


def _object_hook(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = JsonObject()
    dups = []
    for key, value in pairs:
        if key in obj and key not in dups:
            dups.append(key)
        obj[key] = value
    if dups:
        obj.duplicate_keys = tuple(dups)
    return obj


class JsonFloat(float):
    """A JSON number with a fraction or exponent, remembering its text, so ``"id": 1.50`` → ``"1.50"``."""

    text: str

    def __new__(cls, text: str) -> JsonFloat:
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def json_loads(text: str) -> Any:
    """Parse JSON keeping repeated keys and number texts; NaN and Infinity parse to floats."""
    return json.loads(
        text,
        object_pairs_hook=_object_hook,
        parse_float=JsonFloat,
        parse_constant=JsonFloat,  # NaN, Infinity, -Infinity
    )


def number_text(value: int | float) -> str:
    """The number as written in the JSON file when known (``1.50`` stays ``"1.50"``), else ``str()``."""
    return getattr(value, "text", None) or str(value)


def describe(value: Any) -> str:
    """Name the JSON type of ``value`` for "expected X, got Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, str):
        if not value:
            return "an empty string"
        if not value.strip():
            return "a blank string (only whitespace)"
        return "a string"
    if isinstance(value, (int, float)):
        return f"a number ({number_text(value)})"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------


def read_rows(
    text: str,
    fmt: str,
    *,
    looks_like_record: Callable[[Mapping[str, Any]], bool] = lambda doc: False,
    on_csv_header: Callable[[list[str], int], None] = lambda header, line: None,
) -> list[Row]:
    """The rows of a decoded table in format ``fmt`` ("json", "jsonl", "csv"). Raises TableError for a
    file that holds no records or cannot be parsed as a whole.

    ``looks_like_record(doc)`` decides whether a JSON object that is not ``{"samples": [...]}`` gets
    the hint to wrap it in [ ]; ``on_csv_header(header, line)`` may reject a CSV header before any row
    is read.
    """
    if fmt == "json":
        return _rows_from_json(text, looks_like_record)
    if fmt == "jsonl":
        return _rows_from_jsonl(text)
    return _rows_from_csv(text, on_csv_header)


def _rows_from_json(text: str, looks_like_record: Callable[[Mapping[str, Any]], bool]) -> list[Row]:
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data" and exc.lineno > 1:
            hint = " (this looks like JSON Lines, one object per line: name the file .jsonl)"
        raise TableError(f"invalid JSON: {exc.msg}{hint}", location=f"line {exc.lineno}, column {exc.colno}") from None

    if isinstance(doc, dict):
        if "samples" not in doc:
            keys = ", ".join(repr(k) for k in list(doc)[:8])
            hint = "; it looks like a single record: wrap it in [ ] or write it as JSON Lines" \
                if looks_like_record(doc) else ""
            raise TableError(
                "expected a top-level array of records or an object {\"samples\": [...]}, "
                f"got an object with keys {keys}{hint}",
            )
        if "samples" in getattr(doc, "duplicate_keys", ()):
            raise TableError("the key 'samples' appears more than once")
        items = doc["samples"]
        if not isinstance(items, list):
            raise TableError(f"'samples' must be an array of records, got {describe(items)}")
    elif isinstance(doc, list):
        items = doc
    else:
        raise TableError(
            "expected a top-level array of records or an object {\"samples\": [...]}, "
            f"got {describe(doc)}",
        )
    if not items:
        raise TableError("the file contains no records")
    return [Row(location=f"record {n}", line=None, position=n, value=item) for n, item in enumerate(items, start=1)]


def _rows_from_jsonl(text: str) -> list[Row]:
    # Split on "\n" only (see the module docstring). A trailing "\r" (Windows line ends) is whitespace
    # to the JSON parser.
    rows: list[Row] = []
    n_broken = 0
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        row = Row(location=f"line {line_no}", line=line_no, position=len(rows) + 1)
        try:
            row.value = json_loads(line)
        except json.JSONDecodeError as exc:
            n_broken += 1
            row.problem = f"invalid JSON at column {exc.colno}: {exc.msg}"
        rows.append(row)

    if n_broken:
        # A pretty-printed JSON file named .jsonl breaks on every line; say so once instead.
        try:
            json_loads(text)
        except json.JSONDecodeError:
            pass
        else:
            raise TableError(
                "this is one JSON document spread over several lines, not JSON Lines "
                "(one object per line): name the file .json",
            )
    if not rows:
        raise TableError("the file contains no records")
    return rows


def _rows_from_csv(text: str, on_header: Callable[[list[str], int], None]) -> list[Row]:
    # A cell can never be longer than the file, so raising the csv module's default 128 KiB cell
    # limit to the file length accepts any real file; the old limit is restored afterwards.
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, len(text) + 1))
    try:
        return _parse_csv(text, on_header)
    finally:
        csv.field_size_limit(old_limit)


def _parse_csv(text: str, on_header: Callable[[list[str], int], None]) -> list[Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows: list[Row] = []
    last_line = 0  # reader.line_num after the previous row: the next row starts on the line after
    try:
        for cells in reader:
            start = last_line + 1
            last_line = reader.line_num
            if not cells:  # a blank line
                continue
            if header is None:
                header = [cell.strip() for cell in cells]
                on_header(header, start)
                continue
            row = Row(location=f"line {start}", line=start, position=len(rows) + 1, from_csv=True)
            if len(cells) != len(header):
                row.problem = f"expected {len(header)} cells (one per header column), got {len(cells)}"
            else:
                row.value = {name: cell for name, cell in zip(header, cells) if name}
            rows.append(row)
    except csv.Error as exc:
        raise TableError(f"cannot parse the CSV: {exc}", location=f"line {reader.line_num}") from None
    if not rows:
        raise TableError("the file contains no records (only a header row)")
    return rows
