"""New exemplars placed in rubric files as `tabench align` writes them: after the question's last
exemplar (or before its `}`), in fmt's layout, a long string's lines kept whole, the line breaks of
the file kept; what cannot be placed is left out with its reason."""

from __future__ import annotations

from pathlib import Path

from support.make_results import write_battery

from tabench_dsl.language.align import NewExemplar, exemplar_line, plan_patch, unified_patch
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.formatting import format_text

LONG = '''question q1 {
  prompt "What is kept?"
  gold "In SQLite"
  exemplar correct """
    In SQLite,
    beside the index.
    """ why "names it"
  t1 off
}
'''


def battery_with(tmp_path: Path, rubric: str, newline: str = "\n") -> Path:
    folder = write_battery(tmp_path / "battery")
    (folder / "memos.rubric").write_bytes(rubric.replace("\n", newline).encode())
    return folder


def test_the_line_is_fmts_layout_and_fmt_leaves_the_patched_file_alone(tmp_path: Path) -> None:
    folder = write_battery(tmp_path / "battery")
    rubric = folder / "memos.rubric"
    rubric.write_text(format_text(rubric.read_text(), rubric))  # a file fmt wrote
    new = NewExemplar(
        "h02", "incorrect", 'Five "stages"\tand a\nline', "names a Summarize stage", "a", "ann", "fail"
    )
    assert (
        exemplar_line(new)
        == '  exemplar incorrect "Five \\"stages\\"\\tand a\\nline" why "names a Summarize stage"'
    )
    patch = plan_patch(load_battery(folder), [new], max_per_question=3)
    ((path, (_, after)),) = patch.files.items()
    assert format_text(after, path) == after
    added = [line[1:] for line in unified_patch(patch).splitlines() if line.startswith("+  ")]
    assert added == [exemplar_line(new)]
    # h02 had no exemplar: the new one stands just before its closing brace.
    lines = after.splitlines()
    assert lines[patch.placed[0].line - 1] == exemplar_line(new) and lines[patch.placed[0].line] == "}"


def test_after_a_long_string_exemplar_and_with_the_files_line_breaks(tmp_path: Path) -> None:
    folder = battery_with(tmp_path, LONG, "\r\n")
    new = NewExemplar("q1", "correct", "SQLite", "names it", person_verdict="pass")
    patch = plan_patch(load_battery(folder), [new], max_per_question=3)
    (after,) = patch.texts.values()
    assert '    """ why "names it"\r\n' + exemplar_line(new) + "\r\n  t1 off\r\n" in after
    question = load_battery(folder).question("q1")
    assert question is not None and len(question.exemplars) == 1  # nothing written


def test_a_partial_answer_a_person_passed_expects_pass(tmp_path: Path) -> None:
    new = NewExemplar("h01", "partial", "SQLite, I think", "partially right", person_verdict="pass")
    assert exemplar_line(new).endswith(' why "partially right" expect pass')
    patch = plan_patch(load_battery(write_battery(tmp_path / "b")), [new], max_per_question=1)
    assert len(patch.placed) == 1 and not patch.placed[0].t1_passes


def test_left_out_with_reasons(tmp_path: Path) -> None:
    folder = battery_with(tmp_path, LONG)
    exemplars = [
        NewExemplar("nope", "correct", "x", "y"),
        NewExemplar("q1", "correct", "in sqlite,  BESIDE the index.", "same answer as the written one"),
        NewExemplar("q1", "incorrect", "In Redis", "wrong store"),
        NewExemplar("q1", "incorrect", "in redis", "the same answer again"),
        NewExemplar("q1", "incorrect", "In a file", "one too many"),
    ]
    patch = plan_patch(load_battery(folder), exemplars, max_per_question=1)
    assert [p.exemplar.answer for p in patch.placed] == ["In Redis"]
    reasons = [left.reason for left in patch.left_out]
    assert reasons[0] == "no such question in the battery"
    assert (
        "exemplar with this answer already" in reasons[1]
        and "exemplar with this answer already" in reasons[2]
    )
    assert "--max-per-question" in reasons[3]


def test_an_incorrect_exemplar_t1_would_pass_is_flagged_w104(tmp_path: Path) -> None:
    new = NewExemplar(
        "h01", "incorrect", "In SQLite, on a network drive", "the drive is wrong", person_verdict="fail"
    )
    patch = plan_patch(load_battery(write_battery(tmp_path / "b")), [new], max_per_question=3)
    assert patch.placed[0].t1_passes
