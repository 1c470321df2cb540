"""`tabench grade` with a judge panel (`--judge` more than once, or the manifest's `judge.panel`) and
with `--t1-audit`, in-process through `main(argv)` against scripted judge servers that disagree."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import FAIL, PASS, user_content, write_battery
from support.judge_server import Fault

from tabench_dsl.cli import main
from tabench_dsl.grading.shards import audit_share
from tabench_dsl.store.results import iter_records


def answers_file(folder: Path, rows: list[tuple[str, str, str]]) -> Path:
    path = folder / "answers.jsonl"
    lines = (json.dumps({"system": s, "question": q, "answer": a}) for s, q, a in rows)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def by_word(table: dict[str, str]):
    """A responder answering by the candidate answer's text."""

    def reply(body: dict) -> str:
        return table[user_content(body).rsplit("\n", 1)[1]]

    return reply


SKY = [("a", "h03", "azure"), ("b", "h03", "grey"), ("c", "h03", "blue")]


async def test_judge_given_three_times_grades_as_a_majority_panel(work: Path, capsys, judge_server) -> None:
    first = await judge_server(by_word({"azure": PASS, "grey": FAIL, "blue": PASS}))
    second = await judge_server(by_word({"azure": PASS, "grey": FAIL, "blue": FAIL}))
    third = await judge_server(by_word({"azure": FAIL, "grey": FAIL, "blue": PASS}))
    battery, answers = write_battery(work), answers_file(work, SKY)
    judges = [arg for s in (first, second, third) for arg in ("--judge", s.url)]
    argv = ["grade", str(battery), "--answers", str(answers), *judges, "--model", "m"]
    assert await run([*argv, "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)
    records = {r.system: r for r in iter_records(work / "results.jsonl")}
    assert {s: r.verdict for s, r in records.items()} == {"a": "pass", "b": "fail", "c": "pass"}
    assert [v.verdict for v in records["c"].votes] == ["pass", "fail", "pass"]
    assert {r.judge.backend for r in records.values()} == {"panel"}
    # Rows (pass, fail): a (2,1), b (0,3), c (2,1): P = (1/3 + 1 + 1/3) / 3 = 5/9; p = (4/9, 5/9),
    # Pe = 41/81; kappa = (45/81 - 41/81) / (40/81) = 0.1.
    panel = totals["panel"]
    assert panel["kappa"] == pytest.approx(0.1) and (panel["answers"], panel["rated"]) == (3, 3)
    assert [(j["pass"], j["fail"]) for j in panel["judges"]] == [(2, 1), (1, 2), (1, 2)]
    assert sum(s["judge_calls"] for s in totals["systems"]) == 9
    # The table says the same in words; a rerun is served from each judge's own cache entries.
    # grade ends with the per-system table and points at totals, which shows the panel.
    assert await run([*argv, "--out", "again.jsonl"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Judge panel" not in out and "tabench totals again.jsonl shows the rest:" in out
    assert "the judge panel" in out
    assert await run(["totals", "again.jsonl"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Judge panel" in out and "Fleiss' kappa 0.100 over 3 answer(s)" in out
    assert (first.calls, second.calls, third.calls) == (3, 3, 3)
    again = {r.system: r.verdict for r in iter_records(work / "again.jsonl")}
    assert again == {"a": "pass", "b": "fail", "c": "pass"}


async def test_unanimous_rule_by_flag_and_resume_after_every_judge_failed(
    work: Path, capsys, judge_server
) -> None:
    down = [True]

    def flaky(body: dict) -> str | Fault:
        return Fault.ERROR_500 if down[0] else PASS

    yes, sometimes = await judge_server([PASS]), await judge_server(flaky)
    battery, answers = write_battery(work), answers_file(work, SKY[:1])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", yes.url, "--judge", sometimes.url]
    argv += ["--model", "m", "--panel-rule", "unanimous", "--retries", "0"]
    assert await run(argv) == 0
    (record,) = iter_records(work / "results.jsonl")
    assert (record.verdict, record.cause) == ("adjudicate", "panel_split")  # pass and error: not unanimous
    assert record.judge.label == "panel (unanimous)"
    assert "the panel split (unanimous)" in record.reason
    # Every judge failing leaves an error, which --resume grades again.
    broken = await judge_server([Fault.ERROR_503])
    argv2 = [*argv[:4], "--judge", broken.url, "--judge", sometimes.url, *argv[8:], "--out", "r2.jsonl"]
    assert await run(argv2) == 1
    down[0] = False
    argv3 = [*argv[:4], "--judge", yes.url, "--judge", sometimes.url, *argv[8:], "--out", "r2.jsonl"]
    assert await run([*argv3, "--resume"]) == 0
    assert [r.verdict for r in iter_records(work / "r2.jsonl")] == ["error", "pass"]


@pytest.mark.slow
async def test_a_panel_with_two_workers_records_what_one_process_records(work: Path, judge_server) -> None:
    words = {f"w{i}": (PASS if i % 3 else FAIL) for i in range(12)}
    other = {f"w{i}": (PASS if i % 2 else FAIL) for i in range(12)}
    a, b, c = (
        await judge_server(by_word(words)),
        await judge_server(by_word(other)),
        await judge_server([FAIL]),
    )
    words.update({f"7311 w{i}": (PASS if i % 2 else FAIL) for i in range(12)})
    other.update({f"7311 w{i}": PASS for i in range(12)})
    battery = write_battery(work)  # h03 has T1 off; the h02 answers pass T1 and are audited
    rows = [(f"s{i}", "h03", f"w{i}") for i in range(12)] + [
        (f"s{i}", "h02", f"7311 w{i}") for i in range(12)
    ]
    answers = answers_file(work, rows)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--no-cache",
        "--model",
        "m",
        "--t1-audit",
        "0.5",
    ]
    argv += ["--judge", a.url, "--judge", b.url, "--judge", c.url]
    assert await run([*argv, "--out", "one.jsonl"]) == 0
    assert await run([*argv, "--out", "two.jsonl", "--workers", "2"]) == 0

    def outcome(path: str) -> dict:
        return {
            r.key: (
                r.tier,
                r.verdict,
                [v.verdict for v in r.votes],
                None if r.audited is None else (r.audited.verdict, [v.verdict for v in r.audited.panel]),
            )
            for r in iter_records(work / path)
        }

    one = outcome("one.jsonl")
    assert one == outcome("two.jsonl") and len(one) == 24
    audited = sorted(key[0] for key, row in one.items() if row[3] is not None)
    assert audited == sorted(f"s{i}" for i in range(12) if audit_share(f"s{i}", "h02") < 0.5)
    assert 0 < len(audited) < 12
    assert {row[:2] for key, row in one.items() if key[1] == "h02"} == {("t1", "pass")}


MANIFEST_PANEL = """\
name: demo
scorer: tabench-1.1
policies: [rules.policy]
rubrics: [questions.rubric]
judge:
  max_tokens: 200
  rule: {rule}
  panel:
    - {{backend: openai, model: first-m}}
    - {{backend: openai, model: second-m, temperature: 0.5}}
"""


@pytest.mark.parametrize(("rule", "expected"), [("majority", "adjudicate"), ("unanimous", "adjudicate")])
async def test_the_manifest_names_the_panel(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, rule: str, expected: str
) -> None:
    def by_model(body: dict) -> str:
        return PASS if body["model"] == "first-m" else FAIL

    server = await judge_server(by_model)
    battery = write_battery(work)
    (battery / "battery.yaml").write_text(MANIFEST_PANEL.format(rule=rule), encoding="utf-8")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    answers = answers_file(work, SKY[:1])
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 0
    (record,) = iter_records(work / "results.jsonl")
    assert (record.verdict, record.cause) == (expected, "panel_split")
    assert [v.judge.model for v in record.votes] == ["first-m", "second-m"]
    assert [
        (r["temperature"], r["max_tokens"]) for r in sorted(server.requests, key=lambda r: r["model"])
    ] == [
        (0, 200),
        (0.5, 200),
    ]
    # One --judge overrides the manifest's panel with that one judge.
    assert (
        await run(
            [
                "grade",
                str(battery),
                "--answers",
                str(answers),
                "--out",
                "one.jsonl",
                "--judge",
                "openai:first-m",
            ]
        )
        == 0
    )
    (single,) = iter_records(work / "one.jsonl")
    assert single.verdict == "pass" and single.votes == [] and single.judge.backend == "openai"


@pytest.mark.parametrize(
    ("judge_yaml", "line", "col", "message"),
    [
        ("  panel: openai\n", 6, 10, "judge panel must be a list of judges, not 'openai'"),
        ("  panel: [{backend: openai}]\n", 6, 10, "a judge panel needs at least two judges"),
        ("  panel:\n    - {model: m}\n    - {backend: openai}\n", 7, 7, "a panel judge needs a backend"),
        (
            "  panel:\n    - {backend: openai, colour: red}\n    - {backend: openai}\n",
            7,
            25,
            "unknown panel judge key 'colour'",
        ),
        ("  panel: [openai, anthropic]\n", 6, 11, "a panel judge must be a mapping, not 'openai'"),
        ("  rule: most\n", 6, 9, "unknown judge rule 'most'"),
        (
            "  panel:\n    - {backend: openai, max_tokens: -1}\n    - {backend: openai}\n",
            7,
            37,
            "panel judge max_tokens must be a positive whole number",
        ),
    ],
)
def test_manifest_panel_mistakes_are_pointed_at(
    work: Path, capsys, judge_yaml: str, line: int, col: int, message: str
) -> None:
    battery = write_battery(work)
    manifest = (
        "name: demo\nscorer: tabench-1.1\npolicies: [rules.policy]\nrubrics: [questions.rubric]\njudge:\n"
    )
    (battery / "battery.yaml").write_text(manifest + judge_yaml, encoding="utf-8")
    assert main(["lint", str(battery)]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert f"battery.yaml:{line}:{col}" in text and message in text
    assert "Traceback" not in text


async def test_a_manifest_panel_may_not_name_a_url(work: Path, capsys, judge_server) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    manifest = "name: demo\nscorer: tabench-1.1\npolicies: [rules.policy]\nrubrics: [questions.rubric]\n"
    manifest += f"judge:\n  model: m\n  panel: [{{backend: builtin}}, {{backend: '{server.url}'}}]\n"
    (battery / "battery.yaml").write_text(manifest, encoding="utf-8")
    assert await run(["grade", str(battery), "--answers", str(answers_file(work, SKY[:1]))]) == 2
    assert f"pass --judge {server.url}" in capsys.readouterr().err
    assert server.calls == 0
    assert main(["lint", str(battery)]) == 0  # lint warns, where the panel is written
    captured = capsys.readouterr()
    warning = f"battery.yaml:7:10: warning: judge panel backend '{server.url}' is a URL"
    assert warning in captured.out + captured.err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--t1-audit", "1.5"], "--t1-audit must be a share from 0 to 1"),
        (["--t1-audit", "-0.1"], "--t1-audit must be a share from 0 to 1"),
        (["--judge", "builtin", "--judge", "builtin"], "--judge names the same judge twice"),
        (["--panel-rule", "most"], "invalid choice"),
    ],
)
async def test_panel_and_audit_usage_errors_exit_2(
    work: Path, capsys, extra: list[str], message: str
) -> None:
    battery, answers = write_battery(work), answers_file(work, SKY[:1])
    assert await run(["grade", str(battery), "--answers", str(answers), *extra]) == 2
    assert message in capsys.readouterr().err


T1_PASSES = [(f"s{i}", "h02", "It listens on 7311.") for i in range(40)]


async def test_t1_audit_keeps_the_pass_and_reports_precision(work: Path, capsys, judge_server) -> None:
    """The judge fails every T1 pass of a system whose name ends in 7 (s7, s17, s27, s37)."""

    def judge(body: dict) -> str:
        return FAIL if body["messages"][1]["content"].endswith("!") else PASS

    server = await judge_server(judge)
    rows = [(s, q, a + "!" if s.endswith("7") else a) for s, q, a in T1_PASSES]
    battery, answers = write_battery(work), answers_file(work, rows)
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await run([*argv, "--t1-audit", "1", "--json", "--no-cache"]) == 0
    totals = json.loads(capsys.readouterr().out)
    records = list(iter_records(work / "results.jsonl"))
    assert {(r.tier, r.verdict) for r in records} == {("t1", "pass")}  # T1 is final
    assert all(r.audited is not None for r in records) and server.calls == 40
    audit = totals["t1_audit"]
    assert (audit["audited"], audit["n"], audit["agreed"]) == (40, 40, 36)
    assert audit["precision"] == pytest.approx(0.9)
    # Wilson 95% for 36 of 40: centre (0.9 + 1.9208/40) / (1 + 3.8415/40) = 0.8650, half 0.1003.
    assert audit["ci_low"] == pytest.approx(0.7695, abs=1e-4) and audit["ci_high"] == pytest.approx(
        0.9604, abs=1e-4
    )
    assert sorted(d["system"] for d in audit["disagreements"]) == ["s17", "s27", "s37", "s7"]
    assert {s["system"]: s["pass"] for s in totals["systems"]}["s7"] == 1
    assert sum(s["judge_calls"] for s in totals["systems"]) == 40
    # A share audits the pairs whose hash falls below it, the same ones on every run.
    picked = sorted(s for s, _, _ in rows if audit_share(s, "h02") < 0.25)
    for out in ("q1.jsonl", "q2.jsonl"):
        assert await run([*argv, "--t1-audit", "0.25", "--out", out, "--no-cache"]) == 0
        audited = sorted(r.system for r in iter_records(work / out) if r.audited is not None)
        assert audited == picked
    assert 0 < len(picked) < 40
    text_run = await run([*argv, "--t1-audit", "1", "--out", "t.jsonl"])
    assert text_run == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tabench totals t.jsonl shows the rest:" in out and "the T1 audit" in out
    assert await run(["totals", "t.jsonl"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "T1 audit" in out and "agreed 36 of 40" in out


async def test_no_audit_without_the_flag(work: Path, judge_server) -> None:
    server = await judge_server([FAIL])
    battery, answers = write_battery(work), answers_file(work, T1_PASSES[:5])
    assert (
        await run(["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"])
        == 0
    )
    assert server.calls == 0
    assert b'"audit"' not in (work / "results.jsonl").read_bytes()


CALIBRATION_RUBRIC = """\
question stages {
  prompt "Which stages make up the memory pipeline?"
  gold "Ingest, Index, Recall, Compact"
  exemplar correct "Ingest, Index, Recall, Compact." why "T1 passes it: no judge call"
  exemplar correct "Ingestion, indexing, recall and compaction." why "same stages"
  exemplar partial "Ingest, Index, Recall." why "three of four"
  exemplar incorrect "Ingest, Summarize." why "names a stage that does not exist"
}
"""


async def test_calibrate_shows_every_judge_beside_the_panel(work: Path, capsys, judge_server) -> None:
    """A strict judge (fails all), a lenient one (passes all) and a right one. Expected p p f f;
    exemplar 1 passes T1, so it counts as pass for every judge.
    strict  p f f f: 3/4, kappa (3/4 - 8/16) / (1 - 8/16) = 0.5
    lenient p p p p: 2/4, chance (2*4)/16 = 1/2, kappa 0
    right   p p f f: 4/4, kappa 1; the panel (majority) p p f f: 4/4."""

    def right(body: dict) -> str:
        return PASS if "compaction" in user_content(body) else FAIL

    strict, lenient, correct = (
        await judge_server([FAIL]),
        await judge_server([PASS]),
        await judge_server(right),
    )
    battery = write_battery(work)
    (battery / "questions.rubric").write_text(CALIBRATION_RUBRIC, encoding="utf-8")
    argv = ["calibrate", str(battery), "--model", "m", "--no-cache"]
    argv += [arg for s in (strict, lenient, correct) for arg in ("--judge", s.url)]
    assert await run([*argv, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert (obj["agree"], obj["n"]) == (4, 4)
    assert [(j["agree"], j["kappa"]) for j in obj["judges"]] == [(3, 0.5), (2, 0.0), (4, 1.0)]
    assert [[*row["votes"].values(), row["panel"]] for row in obj["exemplars"]] == [
        ["pass", "pass", "pass", "pass"],
        ["fail", "pass", "pass", "pass"],
        ["fail", "pass", "fail", "fail"],
        ["fail", "pass", "fail", "fail"],
    ]
    assert await run(argv) == 0
    out = capsys.readouterr().out
    assert "judges side by side" in out and "panel: agreement 100.0% (4/4)" in out
    assert "J2" in out and "agreement 50.0% (2/4), kappa 0.000" in out


async def test_a_panel_is_not_graded_in_batches(work: Path, capsys, judge_server) -> None:
    # A batch holds one judge's requests; a panel asks several judges about each answer.
    first, second = await judge_server(lambda body: PASS), await judge_server(lambda body: PASS)
    battery, answers = write_battery(work), answers_file(work, SKY[:1])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", first.url, "--judge", second.url]
    assert await run([*argv, "--model", "m", "--batch"]) == 2
    err = capsys.readouterr().err
    assert "--batch grades with one judge" in err and "Traceback" not in err
    assert first.requests == [] and second.requests == []
