"""The one table reader behind the dataset and labels loaders: rows with their locations, file-level
problems as TableError, row-level ones on the row."""

from __future__ import annotations

import pytest

from offline_eval.table import TableError, read_rows, read_text


def test_jsonl_rows_keep_their_lines_and_split_only_on_newline():
    rows = read_rows('{"a": "x\u2028y"}\n\n{"a": 2}\r\n{broken\n', "jsonl")
    assert [(r.location, r.line, r.position) for r in rows] == [("line 1", 1, 1), ("line 3", 3, 2), ("line 4", 4, 3)]
    assert rows[0].value == {"a": "x\u2028y"} and rows[1].value == {"a": 2}
    assert rows[2].value is None and rows[2].problem.startswith("invalid JSON at column 2")


def test_json_array_or_samples_object_and_what_json_remembers():
    rows = read_rows('{"samples": [{"id": 1.50, "k": 1, "k": 2}, 3]}', "json")
    assert [r.location for r in rows] == ["record 1", "record 2"] and rows[1].value == 3
    assert rows[0].value["id"].text == "1.50" and rows[0].value.duplicate_keys == ("k",)
    with pytest.raises(TableError, match="wrap it in"):
        read_rows('{"question": "q"}', "json", looks_like_record=lambda doc: "question" in doc)
    with pytest.raises(TableError, match="no records"):
        read_rows("[]", "json")


def test_csv_rows_cells_and_header_check():
    headers = []
    rows = read_rows('id,text\n1,"two\nlines"\n\n2\n', "csv", on_csv_header=lambda h, line: headers.append((h, line)))
    assert headers == [(["id", "text"], 1)]
    assert rows[0].value == {"id": "1", "text": "two\nlines"} and rows[0].location == "line 2" and rows[0].from_csv
    assert rows[1].location == "line 5" and rows[1].problem == "expected 2 cells (one per header column), got 1"


def test_pretty_printed_json_named_jsonl_is_said_once():
    with pytest.raises(TableError, match="one JSON document spread over several lines"):
        read_rows('{\n  "a": 1\n}\n', "jsonl")


def test_read_text_decodes_and_names_what_is_wrong(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n")
    assert read_text(path) == ("a,b\n", "csv")
    path.write_bytes(b"a\n\xff\n")
    with pytest.raises(TableError) as info:
        read_text(path)
    assert info.value.location == "line 2" and "not valid UTF-8: byte 0xff" in info.value.message
    other = tmp_path / "labels.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(TableError, match="unsupported file type"):
        read_text(other)
    assert read_text(other, extensions=None) == ("x", None)  # the caller sniffs
