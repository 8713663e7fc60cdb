"""Tests for offline_eval.data: loading, aliases, and the wording of every validation problem."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from offline_eval.data import (
    DataProblem,
    DatasetError,
    LoadResult,
    SkippedRecord,
    load_samples,
    samples_from_records,
)
from offline_eval.sample import Sample

FIXTURES = Path(__file__).parent / "fixtures" / "data"

GOOD = {"question": "q?", "answer": "a", "contexts": ["c"]}


def write_text(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def write_jsonl(tmp_path: Path, records: list, name: str = "data.jsonl") -> Path:
    return write_text(tmp_path, name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def problems(path: Path, **kwargs) -> list[str]:
    """Load ``path`` expecting failure; return the problems as strings with the directory removed."""
    with pytest.raises(DatasetError) as info:
        load_samples(path, **kwargs)
    return [str(p).replace(str(path.parent) + "/", "") for p in info.value.problems]


def one_problem(path: Path) -> str:
    found = problems(path)
    assert len(found) == 1, found
    return found[0]


# --------------------------------------------------------------------------------------------------
# Formats and aliases
# --------------------------------------------------------------------------------------------------


def test_jsonl_seed_names_defaults_and_sources():
    path = FIXTURES / "seed.jsonl"
    result = load_samples(path)
    assert result.n_records == 3 and result.skipped == []
    first, second, third = result.samples
    assert first == Sample(
        sample_id="q-1",
        question="What is the capital of France?",
        answer="Paris.",
        contexts=("Paris is the capital of France.", "France is in Europe."),
        reference_answer="Paris",
        category="geo",
    )
    # The blank line 2 is not a record: the second record is on line 3 but is record number 2.
    assert second.sample_id == "2"
    assert second.source == f"{path}:3"
    assert second.answer == "" and second.contexts == ()
    assert second.reference_answer is None and second.category is None
    # Numbers become text; an empty reference means "no reference".
    assert third.sample_id == "7" and third.category == "3"
    assert third.reference_answer is None
    assert first.source == f"{path}:1"


def test_json_samples_object_with_ragas_02_names():
    path = FIXTURES / "ragas_v02.json"
    result = load_samples(path)
    assert [s.sample_id for s in result.samples] == ["1", "2"]
    s1, s2 = result.samples
    assert s1.question == "When was the Eiffel Tower built?"
    assert s1.contexts == ("The Eiffel Tower was built from 1887 to 1889.",)
    assert s1.answer == "Between 1887 and 1889."
    assert s1.reference_answer == "1887-1889"
    assert s2.reference_answer is None
    assert s2.contexts == ("It is 330 m tall.", "It was the tallest structure until 1930.")
    assert s2.source == f"{path}#2"


def test_json_array_with_ragas_01_names():
    result = load_samples(FIXTURES / "ragas_v01.json")
    s1, s2 = result.samples
    assert (s1.question, s1.answer, s1.contexts) == ("What is H2O?", "Water.", ("Water is H2O.",))
    assert s1.reference_answer == "Water"  # ground_truths: a list of one
    assert s2.reference_answer == "Table salt"  # ground_truth: a string


def test_csv_quotes_commas_multiline_cells_and_empty_optional_cells():
    path = FIXTURES / "seed.csv"
    result = load_samples(path)
    c1, c2 = result.samples
    assert c1.question == 'Say "hi", please'
    assert c1.answer == "hi, there"
    assert c1.contexts == ("first chunk", "second, with comma")
    assert c1.reference_answer is None  # empty cell
    assert c1.category == "greeting"
    assert c1.source == f"{path}:2"  # the header is line 1
    assert c2.question == "A question\nspanning two lines"
    assert c2.contexts == ()
    assert c2.reference_answer == "ref" and c2.category is None
    assert c2.source == f"{path}:3"


def test_csv_line_numbers_are_physical_lines_after_a_multiline_cell(tmp_path):
    path = write_text(
        tmp_path,
        "data.csv",
        'question,answer,contexts\n"two\nlines",a,[]\n\nq3,a,not json\n',
    )
    found = one_problem(path)
    assert found.startswith("data.csv line 5: field 'contexts': ")
    assert "not json" in found and "JSON list of strings" in found


def test_csv_with_ragas_02_columns(tmp_path):
    path = write_text(
        tmp_path, "d.csv", 'user_input,response,retrieved_contexts,reference\nq,r,"[""c""]",gold\n'
    )
    (s,) = load_samples(path).samples
    assert (s.question, s.answer, s.contexts, s.reference_answer) == ("q", "r", ("c",), "gold")


@pytest.mark.parametrize("name", ["data.ndjson", "DATA.JSONL"])
def test_jsonl_extensions(tmp_path, name):
    path = write_jsonl(tmp_path, [GOOD], name=name)
    assert load_samples(path).samples[0].question == "q?"


def test_str_path_is_used_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path, [GOOD, {**GOOD, "contexts": "x"}])
    with pytest.raises(DatasetError) as info:
        load_samples("data.jsonl")
    assert str(info.value) == (
        "data.jsonl line 2: field 'contexts': expected a list of strings, got a string "
        '(for one chunk write ["x"])'
    )
    assert load_samples("data.jsonl", skip_invalid=True).samples[0].source == "data.jsonl:1"


def test_unknown_extension(tmp_path):
    path = write_text(tmp_path, "data.txt", json.dumps([GOOD]))
    found = one_problem(path)
    assert found.startswith("data.txt: unsupported file type ('.txt')")
    assert ".jsonl" in found and ".csv" in found


def test_unknown_fields_are_ignored(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "metadata": {"a": 1}, "id": "not-used", "score": 3}])
    (s,) = load_samples(path).samples
    assert s.sample_id == "1"


def test_aliases_with_different_values_conflict(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "response": "other answer"}])
    found = one_problem(path)
    assert found.startswith("data.jsonl line 1: field 'answer': given under several names")
    assert "'answer' = \"a\"" in found and "'response' = \"other answer\"" in found


def test_aliases_with_equal_values_are_fine_and_null_alias_is_ignored(tmp_path):
    path = write_jsonl(
        tmp_path,
        [{**GOOD, "user_input": "q?", "reference": None, "ground_truth": "g", "ground_truths": ["g"]}],
    )
    (s,) = load_samples(path).samples
    assert s.question == "q?" and s.reference_answer == "g"


def test_reference_and_ground_truth_conflict(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "reference": "x", "ground_truth": "y"}])
    assert "field 'reference_answer': given under several names" in one_problem(path)


def test_ground_truths_with_several_answers_is_an_error(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "ground_truths": ["a", "b"]}])
    found = one_problem(path)
    assert found.startswith("data.jsonl line 1: field 'ground_truths': ")
    assert "got a list of 2" in found and "single reference" in found


def test_ground_truths_empty_list_means_no_reference(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "ground_truths": []}])
    assert load_samples(path).samples[0].reference_answer is None


# --------------------------------------------------------------------------------------------------
# Sample ids
# --------------------------------------------------------------------------------------------------


def test_csv_ground_truths_cell_holding_a_json_list_is_a_list(tmp_path):
    header = "question,answer,contexts,ground_truths\n"
    path = write_text(tmp_path, "data.csv", header + 'q?,a,[],"[""Blue.""]"\nq2?,a,[],Blue [sic]\n')
    first, second = load_samples(path).samples
    assert first.reference_answer == "Blue."
    assert second.reference_answer == "Blue [sic]"  # not a list: the text itself


@pytest.mark.parametrize("field", ["question", "answer", "reference_answer", "category", "sample_id"])
def test_lone_surrogate_is_rejected_with_file_line_and_field(tmp_path, field):
    text = json.dumps({**GOOD, field: "ok \ud800 text"})  # json.dumps writes the escape: \ud800
    path = write_text(tmp_path, "data.jsonl", json.dumps(GOOD) + "\n" + text + "\n")
    assert one_problem(path) == (f"data.jsonl line 2: field '{field}': contains a lone surrogate \\ud800 at "
                                 "character 4: not valid Unicode text (a \\u escape without its pair?)")


def test_lone_surrogate_in_a_context_names_the_element(tmp_path):
    path = write_text(tmp_path, "data.jsonl", json.dumps({**GOOD, "contexts": ["fine", "bad \udfff"]}) + "\n")
    assert "field 'contexts': element [1] contains a lone surrogate \\udfff at character 5" in one_problem(path)
    # A surrogate pair is a real character (an emoji) and loads as one.
    path = write_text(tmp_path, "pair.jsonl", '{"question": "q?", "answer": "\\ud83d\\ude00", "contexts": []}\n')
    assert load_samples(path).samples[0].answer == "\U0001f600"


def test_lone_surrogate_from_python_records_is_rejected():
    with pytest.raises(DatasetError, match="record 1: field 'answer': contains a lone surrogate"):
        samples_from_records([{**GOOD, "answer": "\ud800"}])


def test_ids_default_to_position_and_numbers_keep_their_text(tmp_path):
    path = write_text(
        tmp_path,
        "data.json",
        '[{"question": "a", "answer": "", "contexts": []},'
        ' {"question": "b", "answer": "", "contexts": [], "sample_id": 1.50},'
        ' {"question": "c", "answer": "", "contexts": [], "sample_id": 12345678901234567890}]',
    )
    ids = [s.sample_id for s in load_samples(path).samples]
    assert ids == ["1", "1.50", "12345678901234567890"]


def test_duplicate_ids_name_both_locations(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "sample_id": "x"}, GOOD, {**GOOD, "sample_id": "x"}])
    found = one_problem(path)
    assert found.startswith("data.jsonl line 3: field 'sample_id': duplicate sample id 'x'")
    assert "line 1" in found and "line 3" in found


def test_explicit_id_colliding_with_a_default_id_is_explained(tmp_path):
    path = write_jsonl(tmp_path, [GOOD, {**GOOD, "sample_id": 1}])
    found = one_problem(path)
    assert "duplicate sample id '1'" in found
    assert "line 1 (no sample_id given, so its position 1 is used)" in found


def test_duplicate_ids_in_json_use_record_numbers(tmp_path):
    path = write_text(tmp_path, "d.json", json.dumps([{**GOOD, "sample_id": "a"}, {**GOOD, "sample_id": "a"}]))
    found = one_problem(path)
    assert found.startswith("d.json record 2: field 'sample_id': duplicate")
    assert "record 1" in found


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "got a boolean (true)"), ("", "got an empty string"), ([1], "got a list"), ({}, "got an object")],
)
def test_bad_sample_ids(tmp_path, value, expected):
    path = write_jsonl(tmp_path, [{**GOOD, "sample_id": value}])
    found = one_problem(path)
    assert found.startswith("data.jsonl line 1: field 'sample_id': expected a non-empty string or a number")
    assert expected in found


# --------------------------------------------------------------------------------------------------
# Field validation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"question": ""}, "field 'question': expected a non-empty string, got an empty string"),
        ({"question": "  \n"}, "field 'question': expected a non-empty string, got a blank string"),
        ({"question": None}, "field 'question': expected a non-empty string, got null"),
        ({"question": 5}, "field 'question': expected a non-empty string, got a number (5)"),
        ({"user_input": ["q"], "question": None}, "field 'user_input': expected a non-empty string, got a list"),
        ({"answer": None}, "field 'answer': expected a string (an empty string is allowed), got null"),
        ({"answer": 42}, "field 'answer': expected a string (an empty string is allowed), got a number (42)"),
        ({"contexts": "one chunk"}, "field 'contexts': expected a list of strings, got a string"),
        ({"contexts": None}, "field 'contexts': expected a list of strings (use [] when nothing was retrieved), got null"),
        ({"contexts": {"a": "b"}}, "field 'contexts': expected a list of strings, got an object"),
        ({"contexts": ["ok", 3]}, "field 'contexts': element [1]: expected a string, got a number (3)"),
        ({"contexts": ["ok", None]}, "field 'contexts': element [1]: expected a string, got null"),
        ({"contexts": ["ok", "ok", ""]}, "field 'contexts': element [2] is an empty string"),
        ({"contexts": [" "]}, "field 'contexts': element [0] is a blank string"),
        ({"reference_answer": 3}, "field 'reference_answer': expected a string or null, got a number (3)"),
        ({"reference": ["x"]}, "field 'reference': expected a string or null, got a list"),
        ({"category": False}, "field 'category': expected a string, a number or null, got a boolean (false)"),
    ],
)
def test_field_problems_name_file_line_field_and_types(tmp_path, change, expected):
    record = {**GOOD, **change}
    path = write_jsonl(tmp_path, [GOOD, record])
    found = one_problem(path)
    assert found.startswith(f"data.jsonl line 2: {expected}"), found


@pytest.mark.parametrize("field", ["question", "answer", "contexts"])
def test_missing_required_field(tmp_path, field):
    record = {k: v for k, v in GOOD.items() if k != field}
    path = write_jsonl(tmp_path, [record])
    found = one_problem(path)
    assert found.startswith(f"data.jsonl line 1: field '{field}': missing: ")


def test_missing_field_with_wrong_case_gets_a_hint(tmp_path):
    path = write_jsonl(tmp_path, [{"Question": "q", "answer": "a", "contexts": []}])
    assert "found 'Question': field names are case-sensitive" in one_problem(path)


def test_empty_answer_and_empty_contexts_are_allowed(tmp_path):
    path = write_jsonl(tmp_path, [{"question": "q", "answer": "", "contexts": []}])
    (s,) = load_samples(path).samples
    assert s.answer == "" and s.contexts == ()


def test_blank_reference_and_category_mean_absent(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "reference_answer": "  ", "category": ""}])
    (s,) = load_samples(path).samples
    assert s.reference_answer is None and s.category is None


def test_all_problems_are_collected(tmp_path):
    path = write_jsonl(
        tmp_path,
        [
            {"question": "", "answer": None, "contexts": "x"},
            GOOD,
            {**GOOD, "contexts": ["", 1]},
        ],
    )
    found = problems(path)
    assert found == [
        "data.jsonl line 1: field 'question': expected a non-empty string, got an empty string",
        "data.jsonl line 1: field 'answer': expected a string (an empty string is allowed), got null",
        'data.jsonl line 1: field \'contexts\': expected a list of strings, got a string (for one chunk write ["x"])',
        "data.jsonl line 3: field 'contexts': element [0] is an empty string; remove it (an empty list [] is allowed)",
        "data.jsonl line 3: field 'contexts': element [1]: expected a string, got a number (1)",
    ]


def test_repeated_key_in_a_record_is_an_error(tmp_path):
    path = write_text(tmp_path, "data.jsonl", '{"question": "a", "question": "b", "answer": "", "contexts": []}\n')
    found = one_problem(path)
    assert found.startswith("data.jsonl line 1: field 'question': the key appears more than once")


# --------------------------------------------------------------------------------------------------
# CSV specifics
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "cell", "expected"),
    [
        ("contexts", '"[""a"", 2]"', "element [1]: expected a string, got a number (2)"),
        ("contexts", '"{""a"": 1}"', "expected a JSON list of strings in this CSV cell"),
        ("contexts", "just text", 'the cell "just text" is not valid JSON'),
        ("contexts", '""', "got an empty string; write [] when nothing was retrieved"),
        ("contexts", '"[""""]"', "element [0] is an empty string"),
        ("ground_truths", '"[""a"", ""b""]"', "expected at most one reference answer, got a list of 2"),
        ("ground_truths", '"[""a"""', "expected a JSON list of strings in this CSV cell"),
        ("ground_truths", "[1]", "expected a list with one string, got a list containing a number (1)"),
    ],
)
def test_csv_list_cell_problems(tmp_path, field, cell, expected):
    row = f'q,a,{cell},' if field == "contexts" else f'q,a,"[]",{cell}'
    path = write_text(tmp_path, "data.csv", f'question,answer,contexts,ground_truths\nq,a,"[]",\n{row}\n')
    found = one_problem(path)
    assert found.startswith(f"data.csv line 3: field '{field}': "), found
    assert expected in found


def test_csv_without_question_column(tmp_path):
    path = write_text(tmp_path, "data.csv", 'Question,answer,contexts\nq,a,[]\n')
    found = one_problem(path)
    assert found.startswith("data.csv line 1: no question column: expected a column named 'question' or 'user_input'")
    assert "found 'Question': names are case-sensitive" in found
    assert "header columns: 'Question', 'answer', 'contexts'" in found


def test_csv_missing_several_required_columns_reported_once_each(tmp_path):
    path = write_text(tmp_path, "data.csv", "foo,bar\n1,2\n3,4\n")
    found = problems(path)
    assert [f.split(":")[1].strip() for f in found] == [
        "no question column",
        "no answer column",
        "no contexts column",
    ]


def test_csv_row_with_wrong_number_of_cells(tmp_path):
    path = write_text(tmp_path, "data.csv", "question,answer,contexts\nq,a,[],extra\n")
    assert one_problem(path) == "data.csv line 2: expected 3 cells (one per header column), got 4"


def test_csv_with_only_a_header(tmp_path):
    path = write_text(tmp_path, "data.csv", "question,answer,contexts\n")
    assert one_problem(path) == "data.csv: the file contains no records (only a header row)"


def test_csv_empty_sample_id_cell_defaults_and_empty_answer_cell_is_empty_answer(tmp_path):
    path = write_text(tmp_path, "data.csv", "sample_id,question,answer,contexts\n,q,,[]\n")
    (s,) = load_samples(path).samples
    assert s.sample_id == "1" and s.answer == ""


# --------------------------------------------------------------------------------------------------
# File-level problems
# --------------------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    found = one_problem(tmp_path / "nope.jsonl")
    assert found.startswith("nope.jsonl: file not found")


def test_directory(tmp_path):
    (tmp_path / "dir.jsonl").mkdir()
    assert "is a directory" in one_problem(tmp_path / "dir.jsonl")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty (0 bytes)"),
        (b"  \n\n\t\n", "the file is empty (only whitespace)"),
        (b"\xef\xbb\xbf", "the file is empty (only whitespace)"),
    ],
)
@pytest.mark.parametrize("name", ["data.jsonl", "data.json", "data.csv"])
def test_empty_files(tmp_path, content, expected, name):
    path = tmp_path / name
    path.write_bytes(content)
    assert one_problem(path) == f"{name}: {expected}"


@pytest.mark.parametrize("name", ["data.jsonl", "data.json", "data.csv"])
def test_utf8_bom_is_accepted(tmp_path, name):
    text = {
        "data.jsonl": json.dumps(GOOD) + "\n",
        "data.json": json.dumps([GOOD]),
        "data.csv": 'question,answer,contexts\nq?,a,"[""c""]"\n',
    }[name]
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    (s,) = load_samples(path).samples
    assert (s.question, s.answer, s.contexts) == ("q?", "a", ("c",))


def test_undecodable_bytes_report_line_and_offset(tmp_path):
    path = tmp_path / "data.jsonl"
    line1 = (json.dumps(GOOD) + "\n").encode()
    path.write_bytes(line1 + b'{"question": "caf\xe9"}\n')
    found = one_problem(path)
    offset = len(line1) + len(b'{"question": "caf')
    assert found.startswith("data.jsonl line 2: not valid UTF-8: byte 0xe9 at byte offset ")
    assert f"byte offset {offset} (column 18 of this line" in found
    assert "Latin-1" in found


def test_undecodable_bytes_offset_counts_the_bom(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\xff")
    assert "line 1: not valid UTF-8: byte 0xff at byte offset 3 " in one_problem(path)


def test_utf16_file_is_named(tmp_path):
    path = tmp_path / "data.json"
    path.write_bytes(json.dumps([GOOD]).encode("utf-16"))
    assert "UTF-16" in one_problem(path)


def test_json_syntax_error_has_line_and_column(tmp_path):
    path = write_text(tmp_path, "data.json", '[\n  {"question": "q",\n   "answer" "a"}\n]')
    found = one_problem(path)
    assert found == "data.json line 3, column 13: invalid JSON: Expecting ':' delimiter"


def test_json_lines_in_a_json_file_get_a_hint(tmp_path):
    path = write_text(tmp_path, "data.json", json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    found = one_problem(path)
    assert found.startswith("data.json line 2, column 1: invalid JSON: Extra data")
    assert "name the file .jsonl" in found


def test_pretty_json_in_a_jsonl_file_gets_one_hint(tmp_path):
    path = write_text(tmp_path, "data.jsonl", json.dumps([GOOD, GOOD], indent=2))
    found = one_problem(path)
    assert "not JSON Lines" in found and "name the file .json" in found


def test_jsonl_broken_line_is_a_record_problem(tmp_path):
    path = write_text(tmp_path, "data.jsonl", json.dumps(GOOD) + '\n{"question": \n')
    assert one_problem(path) == "data.jsonl line 2: invalid JSON at column 14: Expecting value"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ('"just a string"', "got a string"),
        ('{"data": []}', "got an object with keys 'data'"),
        (json.dumps(GOOD), "it looks like a single record"),
        ('{"samples": {"a": 1}}', "'samples' must be an array of records, got an object"),
        ("[]", "the file contains no records"),
        ('{"samples": []}', "the file contains no records"),
    ],
)
def test_json_top_level_shape(tmp_path, doc, expected):
    path = write_text(tmp_path, "data.json", doc)
    found = one_problem(path)
    assert found.startswith("data.json: ") and expected in found


def test_record_that_is_not_an_object(tmp_path):
    json_path = write_text(tmp_path, "data.json", json.dumps([GOOD, ["q", "a"], "text"]))
    assert problems(json_path) == [
        "data.json record 2: this record must be a JSON object {...}, got a list",
        "data.json record 3: this record must be a JSON object {...}, got a string",
    ]
    jsonl_path = write_text(tmp_path, "data.jsonl", json.dumps(GOOD) + "\n42\n")
    assert one_problem(jsonl_path) == "data.jsonl line 2: each line must be a JSON object {...}, got a number (42)"


def test_crlf_line_ends(tmp_path):
    path = write_text(tmp_path, "data.jsonl", json.dumps(GOOD) + "\r\n\r\n" + json.dumps(GOOD | {"sample_id": "b"}) + "\r\n")
    result = load_samples(path)
    assert [s.source for s in result.samples] == [f"{path}:1", f"{path}:3"]
    assert result.samples[0].answer == "a"


# --------------------------------------------------------------------------------------------------
# skip_invalid
# --------------------------------------------------------------------------------------------------


def test_skip_invalid_skips_bad_records_and_lists_them(tmp_path):
    path = write_jsonl(tmp_path, [GOOD, {**GOOD, "answer": None, "contexts": [""]}, {**GOOD, "sample_id": "z"}])
    result = load_samples(path, skip_invalid=True)
    assert isinstance(result, LoadResult)
    assert [s.sample_id for s in result.samples] == ["1", "z"]
    assert result.n_records == 3
    assert result.skipped == [
        SkippedRecord(
            "line 2",
            (
                "field 'answer': expected a string (an empty string is allowed), got null",
                "field 'contexts': element [0] is an empty string; remove it (an empty list [] is allowed)",
            ),
        )
    ]


def test_skip_invalid_skips_the_later_duplicate(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "sample_id": "x"}, {**GOOD, "sample_id": "x", "answer": "2nd"}])
    result = load_samples(path, skip_invalid=True)
    assert [s.answer for s in result.samples] == ["a"]
    assert result.skipped[0].location == "line 2"
    assert "duplicate sample id 'x'" in result.skipped[0].problems[0]


def test_skip_invalid_still_raises_for_file_problems(tmp_path):
    path = write_text(tmp_path, "data.json", "[{")
    with pytest.raises(DatasetError, match="invalid JSON"):
        load_samples(path, skip_invalid=True)
    with pytest.raises(DatasetError, match="file not found"):
        load_samples(tmp_path / "missing.csv", skip_invalid=True)


def test_skip_invalid_with_nothing_left_raises(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "question": ""}, {**GOOD, "answer": 1}])
    found = problems(path, skip_invalid=True)
    assert len(found) == 3
    assert found[-1] == "data.jsonl: no valid records: all 2 records have problems, so nothing is left to evaluate"
    assert found[0].startswith("data.jsonl line 1: field 'question'")


# --------------------------------------------------------------------------------------------------
# Data is kept exactly
# --------------------------------------------------------------------------------------------------


def test_strings_are_kept_byte_exact():
    path = FIXTURES / "exact.jsonl"
    original = json.loads(path.read_text(encoding="utf-8").split("\n")[0])
    (s,) = load_samples(path).samples
    assert s.question == "北京是中国的首都吗？"
    assert s.answer == original["answer"] == '是的，{"city": "北京"} \'quoted\' \\ back'
    assert s.contexts == tuple(original["contexts"])
    assert s.contexts[0] == "  leading and trailing spaces  "
    assert s.contexts[1] == '{"json": [1, 2, {"nested": "}"}]}'
    assert s.contexts[2] == "line1\nline2\ttab\u2028sep"  # U+2028 must not split the JSONL line
    assert s.reference_answer == " 是 "


def test_csv_keeps_quotes_braces_chinese_and_whitespace(tmp_path):
    contexts = ['{"k": "v"}', " 中文 ", 'say "x"']
    cell = json.dumps(contexts, ensure_ascii=False).replace('"', '""')
    path = write_text(tmp_path, "d.csv", f'question,answer,contexts\n" 问题 ","a ""b"" {{c}}","{cell}"\n')
    (s,) = load_samples(path).samples
    assert s.question == " 问题 " and s.answer == 'a "b" {c}'
    assert s.contexts == tuple(contexts)


# --------------------------------------------------------------------------------------------------
# Python API and the error types
# --------------------------------------------------------------------------------------------------


def test_samples_from_records_dicts_and_samples():
    ready = Sample(sample_id="s", question="q", answer="a", contexts=("c",), source="mine")
    result = samples_from_records([GOOD, ready, {**GOOD, "ground_truth": "g"}], source="api")
    first, second, third = result.samples
    assert second == ready and second.source == "mine"
    assert first.sample_id == "1" and first.source == "api#1"
    assert third.sample_id == "3" and third.reference_answer == "g"


def test_sample_objects_are_validated_like_dicts():
    bad = Sample(sample_id="", question="q", answer=None, contexts=("c", "  "))  # type: ignore[arg-type]
    with pytest.raises(DatasetError) as info:
        samples_from_records([GOOD, bad])
    fields = [(p.location, p.field) for p in info.value.problems]
    assert fields == [("record 2", "sample_id"), ("record 2", "answer"), ("record 2", "contexts")]


def test_samples_from_records_problems_use_record_numbers():
    with pytest.raises(DatasetError) as info:
        samples_from_records([GOOD, {**GOOD, "contexts": "c"}, 5])
    assert [str(p) for p in info.value.problems] == [
        '<memory> record 2: field \'contexts\': expected a list of strings, got a string (for one chunk write ["c"])',
        "<memory> record 3: expected a dict or a Sample, got a number (5)",
    ]


def test_samples_from_records_duplicate_with_sample():
    ready = Sample(sample_id="1", question="q", answer="a", contexts=())
    with pytest.raises(DatasetError, match="duplicate sample id '1'"):
        samples_from_records([GOOD, ready])


def test_samples_from_records_nan_is_missing_and_array_like_contexts():
    class ArrayLike:  # stands in for a numpy array from pandas, without importing numpy
        def tolist(self):
            return ["c1", "c2"]

    nan = float("nan")
    (s,) = samples_from_records([{"question": "q", "answer": "a", "contexts": ArrayLike(), "reference": nan, "category": nan}]).samples
    assert s.contexts == ("c1", "c2") and s.reference_answer is None and s.category is None
    with pytest.raises(DatasetError, match="field 'answer': expected a string .* got null"):
        samples_from_records([{**GOOD, "answer": nan}])


def test_samples_from_records_rejects_a_mapping_or_dataframe_like():
    with pytest.raises(DatasetError, match="got a mapping"):
        samples_from_records({"question": ["q"]})  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match=r"df.to_dict\('records'\)"):
        samples_from_records(["question", "answer"])  # type: ignore[list-item]


def test_samples_from_records_empty():
    with pytest.raises(DatasetError, match="no valid records: all 0 records"):
        samples_from_records([])


def test_data_problem_str():
    assert str(DataProblem("f.jsonl", "line 3", "contexts", "bad")) == "f.jsonl line 3: field 'contexts': bad"
    assert str(DataProblem("f.jsonl", "line 3", None, "bad")) == "f.jsonl line 3: bad"
    assert str(DataProblem("f.jsonl", None, None, "bad")) == "f.jsonl: bad"
    assert str(DataProblem("f.jsonl", None, "x", "bad")) == "f.jsonl: field 'x': bad"


def test_dataset_error_lists_at_most_20_problems(tmp_path):
    path = write_jsonl(tmp_path, [{**GOOD, "answer": None}] * 25)
    with pytest.raises(DatasetError) as info:
        load_samples(path)
    text = str(info.value)
    lines = text.splitlines()
    assert lines[0] == "25 problems in the dataset:"
    assert len(lines) == 22
    assert "line 20: field 'answer'" in lines[20] and "line 21" not in text
    assert lines[-1] == "  ... and 5 more"
    assert len(info.value.problems) == 25


def test_dataset_error_pickles():
    err = DatasetError([DataProblem("f", "line 1", "question", "bad")])
    copy = pickle.loads(pickle.dumps(err))
    assert copy.problems == err.problems and str(copy) == "f line 1: field 'question': bad"
