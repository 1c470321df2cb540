"""`tabench compile` in-process through `main(argv)`: selection, headers, JSON lines, lock and check."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tabench_dsl.cli import main

RUBRIC = """\
question a {
  prompt "First?"
  gold "One"
}

question b {
  prompt "Second?"
  gold "Two"
  accept "2"
}
"""

USER_PREFIX = "-- CANDIDATE ANSWER --\n"
STERN_PREFIX = (
    "STERN RETRY: your previous judgment contradicted itself (fail verdict with a pass-shaped reason). "
    "Re-judge carefully; verdict must match reason.\n\n-- CANDIDATE ANSWER --\n"
)


def _battery(root: Path, rubric: str = RUBRIC) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "battery.yaml").write_text(
        "name: cli-test\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (root / "p.policy").write_text("S1: Be exact.\n", encoding="utf-8")
    (root / "q.rubric").write_text(rubric, encoding="utf-8")
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["compile", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _systems(capsys: pytest.CaptureFixture[str], battery: Path) -> dict[str, str]:
    status, out, _ = _run(capsys, str(battery), "--json")
    assert status == 0
    return {obj["question"]: obj["system"] for obj in map(json.loads, out.splitlines())}


def test_question_prints_its_system_prompt_and_one_line_break(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    status, out, err = _run(capsys, str(battery), "--question", "b")
    assert (status, err) == (0, "")
    assert out.endswith(
        '"question": "Second?"\n}\n-- FACET GUIDE (this question) --\n\n'
        "-- GRADED EXEMPLARS (verified anchors; calibrate against these) --\n"
        "kind=correct answers PASS · kind=incorrect answers FAIL · kind=partial marks the "
        "BOUNDARY: read its why for exactly which elements pass and which fail. A candidate "
        "matching an exemplar's shape gets that exemplar's verdict.\n[]\n"
    )
    assert "Global policies:\nS1: Be exact.\nBare 'cannot determine'" in out
    assert '"accepted_variants": [\n  "2"\n ]' in out
    assert not out.startswith("##")


def test_part_all_puts_a_header_before_each_part(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    systems = _systems(capsys, battery)
    status, out, _ = _run(capsys, str(battery), "--part", "all", "--answer", "ans")
    assert status == 0
    expected = "".join(
        f"## {q} system\n{systems[q]}\n## {q} user\n{USER_PREFIX}ans\n## {q} stern\n{STERN_PREFIX}ans\n"
        for q in ("a", "b")
    )
    assert out == expected


def test_an_answer_without_a_part_shows_every_prompt_the_judge_receives(tmp_path, capsys) -> None:
    # The answer is in the USER and STERN prompts only: --answer alone printing the SYSTEM prompt
    # would show nothing of it.
    battery = _battery(tmp_path / "b")
    systems = _systems(capsys, battery)
    status, out, err = _run(capsys, str(battery), "--question", "a", "--answer", "<think>hm</think>One")
    assert status == 0
    assert out == f"## a system\n{systems['a']}\n## a user\n{USER_PREFIX}One\n## a stern\n{STERN_PREFIX}One\n"
    assert "1 reasoning block(s) cut" in err


def test_user_part_without_answer_shows_the_seed_placeholder(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    status, out, _ = _run(capsys, str(battery), "--question", "a", "--part", "user")
    assert (status, out) == (0, USER_PREFIX + "{{candidate answer}}\n")


def test_several_questions_get_headers(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    systems = _systems(capsys, battery)
    status, out, _ = _run(capsys, str(battery), "--question", "b", "--question", "a")
    assert status == 0
    assert out == f"## b system\n{systems['b']}\n## a system\n{systems['a']}\n"


def test_json_lines(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    status, out, _ = _run(capsys, str(battery), "--json")
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == 2 and out.endswith("\n")
    objs = [json.loads(line) for line in lines]
    assert [list(o) for o in objs] == [["question", "system", "sha256"]] * 2
    assert [o["question"] for o in objs] == ["a", "b"]
    for o in objs:
        assert o["sha256"] == hashlib.sha256(o["system"].encode("utf-8")).hexdigest()
        assert o["system"].startswith("You are scoring ONE benchmark question")

    status, out, _ = _run(capsys, str(battery), "--json", "--question", "a", "--answer", "naïve {{ x }}")
    (obj,) = map(json.loads, out.splitlines())
    assert list(obj) == ["question", "system", "sha256", "user", "stern"]
    assert obj["user"] == USER_PREFIX + "naïve {{ x }}"
    assert obj["stern"] == STERN_PREFIX + "naïve {{ x }}"


def test_unknown_question_is_a_usage_error(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    status, out, err = _run(capsys, str(battery), "--question", "bb")
    assert (status, out) == (2, "")
    assert err == "tabench: error: no question 'bb' in battery cli-test; did you mean b?\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["--lock", "--question", "a"],
        ["--check", "--json"],
        ["--json", "--part", "user"],
        ["--lock", "--check"],
    ],
)
def test_conflicting_flags_are_usage_errors(tmp_path, capsys, argv) -> None:
    battery = _battery(tmp_path / "b")
    status, out, err = _run(capsys, str(battery), *argv)
    assert (status, out) == (2, "")
    assert "Traceback" not in err and err


def test_lock_then_check(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    systems = _systems(capsys, battery)
    status, out, _ = _run(capsys, str(battery / "battery.yaml"), "--lock")
    lock = battery / "tabench.lock"
    assert (status, out) == (0, f"wrote {lock}: 2 question(s)\n")
    data = json.loads(lock.read_text(encoding="utf-8"))
    assert data == {
        "lock": 1,
        "battery": "cli-test",
        "scorer": "tabench-1.1",
        "questions": {q: hashlib.sha256(s.encode("utf-8")).hexdigest() for q, s in systems.items()},
        # Eight hex digits of each prompt line's sha256: what --check tells changed lines by.
        "lines": {
            q: " ".join(hashlib.sha256(line.encode("utf-8")).hexdigest()[:8] for line in s.split("\n"))
            for q, s in systems.items()
        },
    }
    assert _run(capsys, str(battery), "--check") == (0, f"{lock}: all 2 prompt(s) match\n", "")

    # A gold edited, a question added and one removed: each is named, exit 1.
    (battery / "q.rubric").write_text(
        RUBRIC.replace('gold "Two"', 'gold "Two!"').replace("question a {", "question c {"), encoding="utf-8"
    )
    status, out, _ = _run(capsys, str(battery), "--check")
    old_b = data["questions"]["b"]
    new_b = hashlib.sha256(_systems(capsys, battery)["b"].encode("utf-8")).hexdigest()
    assert status == 1
    assert out == (
        "c: added since the lock\n"
        f"b: prompt drifted (locked {old_b[:12]}, now {new_b[:12]})\n"
        '    +  "answer_gold": "Two!",\n'
        "    - 1 line(s) of the locked prompt no longer in it\n"
        "a: in the lock but no longer in the battery\n"
        f"{lock}: 3 difference(s); see a prompt with `tabench compile {battery} --question ID --part "
        f"system`, accept them with `tabench compile {battery} --lock`\n"
    )

    # Locking again accepts the change.
    assert _run(capsys, str(battery), "--lock")[0] == 0
    assert _run(capsys, str(battery), "--check")[0] == 0


def test_a_lock_without_lines_still_checks_and_says_how_to_get_them(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    assert _run(capsys, str(battery), "--lock")[0] == 0
    lock = battery / "tabench.lock"
    data = json.loads(lock.read_text(encoding="utf-8"))
    del data["lines"]  # as a lock written before lines were kept
    lock.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (battery / "q.rubric").write_text(RUBRIC.replace('gold "Two"', 'gold "Two!"'), encoding="utf-8")
    status, out, _ = _run(capsys, str(battery), "--check")
    assert status == 1
    assert out.splitlines()[1] == (
        "    (this lock keeps no prompt lines: `--lock` again to see what changes next time)"
    )


def test_policy_edit_drifts_every_question(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    assert _run(capsys, str(battery), "--lock")[0] == 0
    (battery / "p.policy").write_text("S1: Be exact.\nS2: And brief.\n", encoding="utf-8")
    status, out, _ = _run(capsys, str(battery), "--check")
    assert status == 1
    drifted = [line for line in out.splitlines()[:-1] if not line.startswith("    ")]
    assert [line.split(":")[0] for line in drifted] == ["a", "b"]
    assert out.count("    + S2: And brief.\n") == 2  # the new rule's line, in each prompt


def test_check_without_lock_or_with_a_bad_lock(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    lock = battery / "tabench.lock"
    status, out, err = _run(capsys, str(battery), "--check")
    assert (status, out) == (2, "")
    assert err == f"tabench: error: {lock}: no lock file; write one with `tabench compile BATTERY --lock`\n"
    lock.write_text("{not json", encoding="utf-8")
    status, _, err = _run(capsys, str(battery), "--check")
    assert status == 2 and err.startswith(f"tabench: error: {lock}: not a tabench lock file")


def test_output_is_utf8_whatever_the_locale(tmp_path) -> None:
    battery = _battery(tmp_path / "b", RUBRIC.replace('"One"', '"Ünïcødé — 日本"'))
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "LC_ALL": "C", "LANG": "C"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tabench_dsl",
            "compile",
            str(battery),
            "--question",
            "a",
            "--part",
            "system",
            "--answer",
            "é",
        ],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"answer_gold": "Ünïcødé — 日本"'.encode() in proc.stdout
    assert proc.stdout.endswith(b"[]\n")


def test_broken_scorer_template_is_a_spec_error(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    scorer = battery / "my-scorer"
    scorer.mkdir()
    (scorer / "scorer.yaml").write_text("name: my-scorer\n", encoding="utf-8")
    (scorer / "system.j2").write_text("line one\n{% if policies %}unclosed\n", encoding="utf-8")
    (scorer / "user.j2").write_text("{{ answer }}\n", encoding="utf-8")
    (scorer / "stern.j2").write_text("{{ answer }}\n", encoding="utf-8")
    manifest = battery / "battery.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("tabench-1.1", "my-scorer"), encoding="utf-8"
    )
    status, out, err = _run(capsys, str(battery))
    assert (status, out) == (2, "")
    assert err == (
        f"{scorer / 'system.j2'}:2:1: scorer template: Unexpected end of template. Jinja was looking for "
        "the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is "
        "'if'.\n    {% if policies %}unclosed\n    ^\n"
    )

    (scorer / "system.j2").write_text("{{ policies }} {{ polices }}\n", encoding="utf-8")
    status, out, err = _run(capsys, str(battery))
    assert (status, out) == (2, "")
    assert err == f"tabench: error: {scorer / 'system.j2'}: 'polices' is undefined\n"


def test_answer_is_shown_as_the_judge_receives_it(tmp_path, capsys) -> None:
    battery = _battery(tmp_path / "b")
    answer = "<think>Maybe 3? No.</think>\nThe answer is 2."
    status, out, err = _run(capsys, str(battery), "--question", "a", "--part", "user", "--answer", answer)
    assert status == 0
    # The reasoning block is cut, as grading cuts it: the judge never receives it.
    assert out == f"{USER_PREFIX}The answer is 2.\n"
    cut = "tabench: --answer: 1 reasoning block(s) cut, as grading cuts them: the judge never receives them"
    assert err == cut + "\n"
    status, out, err = _run(capsys, str(battery), "--json", "--question", "a", "--answer", answer)
    assert status == 0 and json.loads(out)["user"] == f"{USER_PREFIX}The answer is 2." and "Maybe" not in out
    # An answer without reasoning is shown as given, and nothing is said.
    status, out, err = _run(capsys, str(battery), "--question", "a", "--part", "user", "--answer", "2")
    assert (status, out, err) == (0, f"{USER_PREFIX}2\n", "")
