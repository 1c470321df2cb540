"""`tabench align`: people's verdicts that overturned the tool become exemplars, measured on a
held-out share; the example battery graded by the builtin judge, decisions written as the
documented decisions file lines, everything through main(argv)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.language.battery import load_battery
from tabench_dsl.review.align_cases import holdout_fraction
from tabench_dsl.store.results import iter_records

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lark-internals"


@pytest.fixture
def graded(tmp_path: Path, capsys) -> tuple[Path, Path]:
    battery = tmp_path / "battery"
    shutil.copytree(EXAMPLE, battery)
    results = tmp_path / "run.jsonl"
    assert (
        main(["grade", str(battery), "--answers", str(battery / "answers.jsonl"), "--out", str(results)]) == 0
    )
    capsys.readouterr()
    return battery, results


def audit_line(record, verdict: str, reviewer: str = "ana", note: str = "") -> str:
    return json.dumps(
        {
            "system": record.system,
            "question": record.question,
            "verdict": verdict,
            "prompt_sha256": record.prompt_sha256,
            "reviewer": reviewer,
            "time": "2026-01-01T00:00:00Z",
            "note": note,
            "kind": "audit",
            "answer_sha256": hashlib.sha256(record.answer.encode()).hexdigest(),
        }
    )


def overturn(results: Path, picks: list[tuple[str, str, str]]) -> list:
    """Audit the judge's verdict on each (system, question) as the opposite, with a note."""
    records = {r.key: r for r in iter_records(results)}
    lines, chosen = [], []
    for system, question, note in picks:
        record = records[(system, question)]
        person = "fail" if record.verdict == "pass" else "pass"
        lines.append(audit_line(record, person, note=note))
        chosen.append((record, person))
    results.with_name("run.decisions.jsonl").write_text("\n".join(lines) + "\n")
    return chosen


def test_the_patch_proposes_one_exemplar_per_training_disagreement_and_changes_nothing(
    graded, capsys
) -> None:
    battery, results = graded
    before = {p: p.read_text() for p in (battery / "questions").iterdir()}
    chosen = overturn(results, [("agent-c", "default-parser", 'says "LALR"'), ("agent-b", "auto-lexer", "")])
    status = main(["align", str(results), "--battery", str(battery), "--holdout", "0"])
    out = capsys.readouterr().out
    assert status == 0
    added = [line for line in out.splitlines() if line.startswith("+  exemplar")]
    expected = []
    for record, person in chosen:
        kind = "correct" if person == "pass" else "incorrect"
        why = (
            'says \\"LALR\\"' if record.question == "default-parser" else f"a reviewer {person}ed this answer"
        )
        expected.append(f'+  exemplar {kind} {json.dumps(record.answer, ensure_ascii=False)} why "{why}"')
    assert added == expected
    assert {p: p.read_text() for p in (battery / "questions").iterdir()} == before  # no --apply


def test_apply_writes_exemplars_fmt_leaves_alone_after_the_last_one(graded, capsys) -> None:
    battery, results = graded
    overturn(results, [("agent-c", "default-parser", "wrong")])
    old = load_battery(battery).question("default-parser")
    assert main(["align", str(results), "--battery", str(battery), "--holdout", "0", "--apply"]) == 0
    capsys.readouterr()
    new = load_battery(battery).question("default-parser")
    assert new.exemplars[:-1] == old.exemplars
    assert new.exemplars[-1].why == "wrong"
    assert main(["fmt", "--check", str(battery / "questions")]) == 0


def test_json_gives_the_split_and_the_held_out_figures(graded, capsys) -> None:
    battery, results = graded
    picks = [(s, q, "") for s in ("agent-a", "agent-b", "agent-c") for q in ("default-parser", "auto-lexer")]
    overturn(results, picks)
    args = ["align", str(results), "--battery", str(battery), "--holdout", "0.5", "--seed", "3", "--json"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    held = [p for p in picks if holdout_fraction(3, p[0], p[1]) < 0.5]
    assert document["n_holdout"] == len(held) and document["n_train"] == len(picks) - len(held)
    assert document["proposed"] == len(picks) - len(held)
    # Every held-out answer was overturned: the unpatched judge disagrees with the people on each.
    assert document["before"]["n"] == len(held)
    assert document["before"]["agreement"]["hits"] == 0
    assert set(document["after"]) == {"n", "agreement", "kappa"}
    assert document["breaking"]["breaking"] is True
    added = [line for line in document["patch"].splitlines() if line.startswith("+  exemplar")]
    assert len(added) == document["placed"] == document["proposed"]


def test_at_most_max_per_question_and_never_the_same_answer_twice(graded, capsys) -> None:
    battery, results = graded
    overturn(results, [(s, "default-parser", "") for s in ("agent-a", "agent-b", "agent-c")])
    args = [
        "align",
        str(results),
        "--battery",
        str(battery),
        "--holdout",
        "0",
        "--max-per-question",
        "1",
        "--json",
    ]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["placed"] == 1 and len(document["left_out"]) == 2
    assert all("--max-per-question" in left["reason"] for left in document["left_out"])


def test_dry_run_shows_the_calls_and_sends_nothing(graded, capsys, tmp_path: Path) -> None:
    battery, results = graded
    overturn(results, [(s, "default-parser", "") for s in ("agent-a", "agent-b", "agent-c")])
    patch = tmp_path / "align.patch"
    args = [
        "align",
        str(results),
        "--battery",
        str(battery),
        "--holdout",
        "0.5",
        "--dry-run",
        "--out",
        str(patch),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "the re-check would grade" in out and "before:" in out and "after:" in out
    assert patch.read_text().startswith("--- a/")


def test_no_decided_answer_is_a_usage_error(graded, capsys) -> None:
    battery, results = graded
    assert main(["align", str(results), "--battery", str(battery)]) == 2
    assert "no answer a person decided or audited" in capsys.readouterr().err


async def test_a_judge_that_learns_from_exemplars_agrees_more_after_the_patch(
    monkeypatch, capsys, tmp_path: Path, judge_server
) -> None:
    """A judge that fails every answer calling the last stage "compaction" unless its prompt shows
    such an answer as correct: people pass them all; the held-out answers measure the patch."""
    import asyncio

    from support.make_results import write_battery

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TABENCH_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)

    def judge(body: dict) -> str:
        system = body["messages"][0]["content"]
        if "compaction" in body["messages"][-1]["content"] and "compaction" not in system:
            return json.dumps({"verdict": "fail", "reason": "Calls a stage compaction.", "facets": {}})
        return json.dumps({"verdict": "pass", "reason": "Names the pipeline.", "facets": {}})

    server = await judge_server(judge)
    battery = write_battery(tmp_path / "battery")
    answers = tmp_path / "answers.jsonl"
    lines = [
        json.dumps(
            {"system": f"s{k:02}", "question": "h02", "answer": f"ingest, index, recall, compaction ({k})"}
        )
        for k in range(12)
    ]
    answers.write_text("\n".join(lines) + "\n")
    results = tmp_path / "run.jsonl"
    judge_flags = ["--judge", server.url, "--model", "m", "--no-cache"]
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(results), *judge_flags]
    assert await asyncio.to_thread(main, argv) == 0
    decisions = [audit_line(record, "pass", note="compaction is Compact") for record in iter_records(results)]
    assert all(record.verdict == "fail" for record in iter_records(results))
    results.with_name("run.decisions.jsonl").write_text("\n".join(decisions) + "\n")
    capsys.readouterr()
    cached = ["--judge", server.url, "--model", "m", "--cache", str(tmp_path / "replies.sqlite")]
    argv = ["align", str(results), "--battery", str(battery), "--holdout", "0.5", "--json", *cached]
    assert await asyncio.to_thread(main, argv) == 0
    document = json.loads(capsys.readouterr().out)
    calls = server.calls
    assert await asyncio.to_thread(main, argv) == 0  # a second run: every reply from the cache
    assert server.calls == calls and json.loads(capsys.readouterr().out) == document
    held = sum(holdout_fraction(0, f"s{k:02}", "h02") < 0.5 for k in range(12))
    assert document["n_holdout"] == held > 0 and document["placed"] == 3  # --max-per-question 3
    assert document["before"]["agreement"]["hits"] == 0
    assert document["after"]["agreement"]["hits"] == held
    assert {e["kind"] for e in document["exemplars"]} == {"correct"}


def test_hostile_inputs_are_clear_errors(graded, capsys, tmp_path: Path) -> None:
    battery, results = graded
    decisions = results.with_name("run.decisions.jsonl")
    decisions.write_text('{"system": "a"}\n{"bad json\n')
    assert main(["align", str(results), "--battery", str(battery)]) == 2
    err = capsys.readouterr().err
    assert f"{decisions}:1:" in err and "Traceback" not in err
    overturn(results, [("agent-c", "default-parser", "")])
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "link.patch"
    link.symlink_to(target)
    for out in (link, results, battery / "questions" / "parsing.rubric"):
        assert main(["align", str(results), "--battery", str(battery), "--out", str(out)]) == 2
        assert "never" in capsys.readouterr().err
    assert target.read_text() == "keep me"
    for flag in (["--holdout", "1"], ["--max-per-question", "0"], ["--decisions", str(tmp_path / "none")]):
        assert main(["align", str(results), "--battery", str(battery), *flag]) == 2
        capsys.readouterr()
