"""`tabench calibrate`: the agreement and kappa arithmetic, the report, --json, --min-agreement,
and a language-model judge (the scripted server) graded through the whole runner path."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from support.judge_server import Fault

from tabench_dsl.cli import main
from tabench_dsl.core.records import JudgeInfo, Record
from tabench_dsl.core.stats import cohen_kappa
from tabench_dsl.grading.calibrate import Case, summarise

RUBRIC = """
question stages {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  trap "There is no Summarize stage."
  exemplar correct "Ingest, Index, Recall, Compact." why "all four"
  exemplar partial "Ingest, Index, Recall." why "three of four"
  exemplar incorrect "Ingest, Summarize." why "names the trap"
  # The builtin judge cannot see that the order is wrong: a miss.
  exemplar incorrect "Compact, Recall, Index, Ingest, in that order." why "the order is reversed"
}
"""

BUILTIN = JudgeInfo(
    "builtin", "lexical-1", language_model=False, label="builtin lexical judge (not a language model)"
)


def write_battery(root: Path, rubric: str = RUBRIC) -> Path:
    folder = root / "cal"
    folder.mkdir()
    (folder / "battery.yaml").write_text(
        "name: cal\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "p.policy").write_text("S1: Judge the substance.\n", encoding="utf-8")
    (folder / "q.rubric").write_text(textwrap.dedent(rubric), encoding="utf-8")
    return folder


def test_kappa_of_a_hand_computed_case() -> None:
    # expected p p p f f f f f / got p p f f f f f p: observed 6/8; chance (3*3 + 5*5)/64 = 34/64;
    # kappa = (48/64 - 34/64) / (30/64) = 14/30.
    pairs = [
        ("pass", "pass"),
        ("pass", "pass"),
        ("pass", "fail"),
        ("fail", "fail"),
        ("fail", "fail"),
        ("fail", "fail"),
        ("fail", "fail"),
        ("fail", "pass"),
    ]
    assert cohen_kappa(pairs) == pytest.approx(14 / 30)
    assert cohen_kappa([("pass", "pass"), ("fail", "fail")]) == pytest.approx(1.0)
    assert cohen_kappa([("pass", "fail"), ("fail", "pass")]) == pytest.approx(-1.0)
    assert cohen_kappa([("pass", "pass"), ("pass", "pass")]) is None  # chance agreement is certain: undefined
    assert cohen_kappa([("pass", "fail"), ("pass", "fail")]) == 0.0
    assert cohen_kappa([]) is None


def _record(system: str, verdict: str) -> Record:
    return Record(
        system=system,
        question="q",
        tier="t2",
        verdict=verdict,
        reason=f"said {verdict}",
        prompt_sha256="0" * 64,
        judge=BUILTIN,
    )


def test_adjudicate_and_error_count_as_disagreement() -> None:
    cases = [
        Case("q", i, kind, f"answer {i}", "why", expected)
        for i, (kind, expected) in enumerate(
            [("correct", "pass"), ("correct", "pass"), ("incorrect", "fail"), ("partial", "fail")], 1
        )
    ]
    records = [
        _record(cases[0].system, "pass"),
        _record(cases[1].system, "adjudicate"),
        _record(cases[2].system, "fail"),
    ]  # the fourth has no record: error
    result = summarise("b", BUILTIN, cases, records)
    assert (result.n, result.agree, result.agreement) == (4, 2, 0.5)
    assert result.confusion == {
        "pass": {"pass": 1, "fail": 0, "adjudicate": 1, "error": 0},
        "fail": {"pass": 0, "fail": 1, "adjudicate": 0, "error": 1},
    }
    # labels: expected p p f f / got p adj f err -> observed 1/2, chance (2*1 + 2*1)/16 = 1/4.
    assert result.kappa == pytest.approx((0.5 - 0.25) / 0.75)
    assert [(m.index, m.got, m.reason) for m in result.misses] == [
        (2, "adjudicate", "said adjudicate"),
        (4, "error", "no record was written"),
    ]


def test_report_with_the_builtin_judge(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(write_battery(work))]) == 0
    out = capsys.readouterr().out
    # The judge is named as every output names it (`JudgeInfo.describe`: totals, report, grade).
    label = "builtin lexical judge (not a language model), builtin:lexical-1"
    assert out.startswith(f"calibrate cal: 4 exemplar(s) graded by {label}\n")
    assert "agreement 75.0% (3/4), Cohen's kappa 0.500" in out
    assert "pass                       1           0           0           0" in out
    assert "fail                       1           2           0           0" in out
    assert "  stages exemplar 4 (incorrect): expected fail, got pass [t2]" in out
    assert "    answer: Compact, Recall, Index, Ingest, in that order." in out
    assert "    why:    the order is reversed" in out
    assert "    judge:  names all 4 required elements of the gold" in out
    assert out.rstrip().endswith(f"note: these verdicts come from the {label}.")


def test_a_named_model_with_no_judge_configured_is_a_usage_error(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    battery = str(write_battery(work))
    assert main(["calibrate", battery, "--model", "gpt-x"]) == 2
    captured = capsys.readouterr()
    assert "tabench: error: judge model 'gpt-x' is named (--model) but nothing reaches it" in captured.err
    assert captured.out == ""
    assert main(["calibrate", battery]) == 0
    assert "notice" not in capsys.readouterr().err


def test_min_agreement_sets_the_exit_status(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    battery = str(write_battery(work))
    assert main(["calibrate", battery, "--min-agreement", "0.8"]) == 1
    assert "(BELOW the minimum 80.0%)" in capsys.readouterr().out
    assert main(["calibrate", battery, "--min-agreement", "75"]) == 0
    assert main(["calibrate", battery, "--min-agreement", "0.75"]) == 0
    assert main(["calibrate", battery, "--min-agreement", "150"]) == 2


def test_json_fields(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = work / "exemplars.jsonl"
    assert main(["calibrate", str(write_battery(work)), "--json", "--out", str(out_file)]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert (obj["battery"], obj["n"], obj["agree"], obj["agreement"]) == ("cal", 4, 3, 0.75)
    assert obj["kappa"] == pytest.approx(0.5)
    assert obj["judge"] == {
        "backend": "builtin",
        "model": "lexical-1",
        "language_model": False,
        "label": "builtin lexical judge (not a language model)",
        "endpoint": "",
        "price": None,
    }
    assert obj["misses"] == [
        {
            "question": "stages",
            "index": 4,
            "kind": "incorrect",
            "answer": "Compact, Recall, Index, Ingest, in that order.",
            "why": "the order is reversed",
            "expected": "fail",
            "got": "pass",
            "tier": "t2",
            "reason": "names all 4 required elements of the gold",
            "holdout": False,
        }
    ]
    # The records were kept, one per exemplar, under systems named after the exemplars.
    lines = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["system"] for r in lines) == [
        "exemplar.1.correct",
        "exemplar.2.partial",
        "exemplar.3.incorrect",
        "exemplar.4.incorrect",
    ]


def test_no_exemplars(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    battery = str(write_battery(work, 'question q {\n  prompt "p"\n  gold "g"\n}\n'))
    assert main(["calibrate", battery]) == 0
    assert "no exemplars to grade" in capsys.readouterr().out
    assert main(["calibrate", battery, "--min-agreement", "0.5"]) == 1


LLM_RUBRIC = """
question stages {
  prompt "Which stages make up the memory pipeline?"
  gold "Ingest, Index, Recall, Compact"
  exemplar correct "Ingest, Index, Recall, Compact." why "T1 passes it: no judge call"
  exemplar correct "Ingestion, indexing, recall and compaction." why "same stages"
  exemplar partial "Ingest, Index, Recall." why "three of four"
  exemplar incorrect "Ingest, Summarize." why "names a stage that does not exist"
}
"""


async def test_a_language_model_judge_goes_through_t1_stern_retry_and_adjudicate(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    battery = write_battery(work, LLM_RUBRIC)

    def responder(body: dict) -> str | Fault:
        answer = body["messages"][1]["content"]
        if "Summarize" in answer:  # a fail with a pass-shaped reason, stern retry included
            return json.dumps({"verdict": "fail", "reason": "The answer matches the gold."})
        if "compaction" in answer:
            return json.dumps({"verdict": "pass", "reason": "all four stages"})
        return json.dumps({"verdict": "fail", "reason": "omits Compact"})

    server = await judge_server(responder)
    argv = [
        "calibrate",
        str(battery),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
        "--json",
        "--min-agreement",
        "0.75",
        "--out",
        str(work / "exemplars.jsonl"),
    ]
    assert await asyncio.to_thread(main, argv) == 0
    obj = json.loads(capsys.readouterr().out)
    users = [r["messages"][1]["content"] for r in server.requests]
    # Exemplar 1 passed T1 (no call); 2 and 3 were asked once; 4 was asked, then stern-retried.
    assert len(users) == 4 and not any(u.endswith("Ingest, Index, Recall, Compact.") for u in users)
    assert [u.startswith("STERN RETRY") for u in users].count(True) == 1
    assert obj["judge"]["language_model"] is True and "not a language model" not in obj["judge"]["label"]
    # The judge as the records carry it: the label of an HTTP judge is its endpoint.
    records = [json.loads(line) for line in (work / "exemplars.jsonl").read_text().splitlines()]
    assert {json.dumps(r["judge"]) for r in records if r["tier"] == "t2"} == {json.dumps(obj["judge"])}
    assert (obj["n"], obj["agree"]) == (4, 3)
    assert obj["confusion"]["fail"] == {"pass": 0, "fail": 1, "adjudicate": 1, "error": 0}
    assert obj["confusion"]["pass"] == {"pass": 2, "fail": 0, "adjudicate": 0, "error": 0}
    assert [(m["index"], m["got"]) for m in obj["misses"]] == [(4, "adjudicate")]


async def test_a_second_calibration_is_served_from_the_cache(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    battery = write_battery(work, LLM_RUBRIC)
    server = await judge_server([json.dumps({"verdict": "fail", "reason": "omits Compact"})])
    argv = [
        "calibrate",
        str(battery),
        "--judge",
        server.url,
        "--model",
        "m",
        "--json",
        "--cache",
        str(work / "c.sqlite"),
    ]
    assert await asyncio.to_thread(main, argv) == 0
    first = json.loads(capsys.readouterr().out)
    calls = len(server.requests)
    assert calls == 3  # exemplar 1 passes T1
    assert await asyncio.to_thread(main, argv) == 0
    assert len(server.requests) == calls
    assert json.loads(capsys.readouterr().out) == first


async def test_a_language_model_judge_is_named_as_totals_name_it(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    battery = write_battery(work, LLM_RUBRIC)
    server = await judge_server([json.dumps({"verdict": "fail", "reason": "omits Compact"})])
    out = work / "exemplars.jsonl"
    argv = ["calibrate", str(battery), "--judge", server.url, "--model", "m", "--no-cache", "--out", str(out)]
    assert await asyncio.to_thread(main, argv) == 0
    host = server.url.split("/")[2]
    assert capsys.readouterr().out.startswith(f"calibrate cal: 4 exemplar(s) graded by {host}:m\n")
    assert main(["totals", str(out)]) == 0
    assert f"judge: {host}:m" in capsys.readouterr().out


async def test_calibrate_ends_with_the_causes_of_errors_and_adjudicates(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    battery = write_battery(work, LLM_RUBRIC)

    def responder(body: dict) -> str | Fault:
        answer = body["messages"][1]["content"]
        return "no verdict" if "Summarize" in answer else Fault.ERROR_500

    server = await judge_server(responder)
    argv = ["calibrate", str(battery), "--judge", server.url, "--model", "m", "--no-cache", "--retries", "0"]
    assert await asyncio.to_thread(main, [*argv, "--json"]) == 0
    captured = capsys.readouterr()
    causes = json.loads(captured.out)["causes"]
    assert [(c["verdict"], c["cause"], c["count"]) for c in causes] == [
        ("error", "transport", 2),
        ("adjudicate", "malformed", 1),
    ]
    assert "500" in causes[0]["first"]
    assert "  2 error (transport): " in captured.err and "  1 adjudicate (malformed): " in captured.err
    assert await asyncio.to_thread(main, argv) == 0
    assert "why answers ended in error or adjudicate" in capsys.readouterr().err


async def test_calibrate_sends_the_schema_params_and_header(work: Path, judge_server, capsys) -> None:
    from support.helpers_grading import PASS

    server = await judge_server([PASS])
    argv = ["calibrate", str(write_battery(work)), "--judge", server.url, "--model", "m", "--no-cache"]
    argv += ["--structured", "on", "--judge-param", "top_p=0.5", "--judge-header", "X-Team=calibrators-Zq81"]
    assert await asyncio.to_thread(main, argv) in (0, 1)
    assert server.requests and all(r["top_p"] == 0.5 and "response_format" in r for r in server.requests)
    assert all(r["_headers"]["x-team"] == "calibrators-Zq81" for r in server.requests)
    out, err = capsys.readouterr()
    assert "calibrators-Zq81" not in out + err
