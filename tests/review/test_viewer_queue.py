"""The viewer's adjudicate queue and what a reviewer decides by, through its JSON API: how many answers
await a decision, each one's key (gold, accepted variants, trap, scoring) read from the prompt it was
graded with, the outcome bars' interval whiskers (the report's too), and the panel agreement and T1
precision worded as the terminal words them."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Audit, JudgeInfo
from tabench_dsl.review.report import render_report
from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import compile_battery_at, load_run

RUBRIC = '''\
question sea {
  prompt "Into which sea does the Nile flow?"
  gold "The Mediterranean Sea"
  accept "the Mediterranean"
  accept "Mare Nostrum"
  trap "The Nile does not flow into the Red Sea."
  scoring """
    Naming the delta without the sea is partial,
    not full credit.
    """
}
question rhine {
  prompt "Roughly how long is the Rhine?"
  gold "About 1,230 km"
}
'''


def write_rivers(folder: Path, scorer: str = "tabench-neutral-1.1") -> Path:
    folder.mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        f"name: rivers\nscorer: {scorer}\nrubrics: [rivers.rubric]\n", encoding="utf-8"
    )
    (folder / "rivers.rubric").write_text(RUBRIC, encoding="utf-8")
    return folder


@pytest.fixture
def rivers(tmp_path: Path) -> tuple[Path, Path]:
    """A battery under the neutral scorer and a run of it: two answers await a decision, one of them
    graded with an older prompt of its question."""
    battery = write_rivers(tmp_path / "rivers")
    compiled = compile_battery_at(battery)
    now = {q: compiled.questions[q].sha256 for q in ("sea", "rhine")}
    records = [
        make_record("sys-a", "sea", "adjudicate", prompt_sha256=now["sea"], battery="rivers"),
        make_record("sys-b", "sea", "adjudicate", prompt_sha256="0" * 64, battery="rivers"),
        make_record("sys-a", "rhine", "pass", prompt_sha256=now["rhine"], battery="rivers"),
        make_record("sys-b", "rhine", "t1", prompt_sha256=now["rhine"], battery="rivers"),
    ]
    return battery, write_results(tmp_path / "run.jsonl", records)


async def test_the_queue_counts_the_undecided_and_shrinks_with_each_decision(aiohttp_client, rivers) -> None:
    battery, results = rivers
    client = await aiohttp_client(make_app(Index(load_run(results, battery=battery), reviewer="ana")))
    assert (await (await client.get("/api/totals")).json())["awaiting"] == 2
    # The entry point lists exactly these: adjudicate and undecided.
    page = await (await client.get("/api/records?verdict=adjudicate&human=undecided")).json()
    assert [item["system"] for item in page["items"]] == ["sys-a", "sys-b"]
    body = {"system": "sys-a", "question": "sea", "verdict": "pass", "note": ""}
    assert (await client.post("/api/decision", json=body)).status == 200
    assert (await (await client.get("/api/totals")).json())["awaiting"] == 1


async def test_the_detail_carries_the_key_from_the_graded_prompt(aiohttp_client, rivers) -> None:
    battery, results = rivers
    client = await aiohttp_client(make_app(Index(load_run(results, battery=battery), reviewer="ana")))
    key = (await (await client.get("/api/record/sys-a/sea")).json())["key"]
    assert key == {
        "gold": "The Mediterranean Sea",
        "accept": ["the Mediterranean", "Mare Nostrum"],
        "trap": "The Nile does not flow into the Red Sea.",
        "scoring": "Naming the delta without the sea is partial,\nnot full credit.",
        "source": "graded",
    }
    # Graded with another prompt: today's battery's key, said to be so.
    other = (await (await client.get("/api/record/sys-b/sea")).json())["key"]
    assert other["source"] == "battery" and other["trap"] == "The Nile does not flow into the Red Sea."
    plain = (await (await client.get("/api/record/sys-a/rhine")).json())["key"]
    assert plain == {
        "gold": "About 1,230 km",
        "accept": [],
        "trap": None,
        "scoring": None,
        "source": "graded",
    }


async def test_without_a_battery_the_key_is_unknown(aiohttp_client, rivers) -> None:
    _, results = rivers
    client = await aiohttp_client(make_app(Index(load_run(results), reviewer="ana")))
    assert (await (await client.get("/api/record/sys-a/sea")).json())["key"] is None


async def test_the_chart_bars_carry_the_score_interval(aiohttp_client, rivers) -> None:
    battery, results = rivers
    client = await aiohttp_client(make_app(Index(load_run(results, battery=battery), reviewer="ana")))
    totals = await (await client.get("/api/totals")).json()
    by_system = {s["system"]: s for s in totals["systems"]}
    for bar in totals["charts"]["systems"]["bars"]:
        row = by_system[bar["label"]]
        assert (bar["ci_low"], bar["ci_high"]) == (row["ci_low"], row["ci_high"])
        assert 0 <= bar["ci_low"] <= bar["score"] <= bar["ci_high"] <= 1
    for bar in totals["charts"]["questions"]["bars"]:
        assert bar["ci_low"] is not None and bar["ci_low"] <= bar["score"] <= bar["ci_high"]


def test_the_report_draws_the_whiskers(rivers) -> None:
    battery, results = rivers
    run = load_run(results, battery=battery)
    html = render_report(run)
    # One whisker per bar: two systems and two questions, each with its interval as its tooltip.
    assert html.count('<g class="whisker"') == 4
    low, high = run_interval(run, "sys-a")
    assert f"<title>sys-a: score 95% interval {100 * low:.1f}% – {100 * high:.1f}%</title>" in html


def run_interval(run, system: str) -> tuple[float, float]:
    from tabench_dsl.review.totals import compute_totals

    row = next(s for s in compute_totals(run.records).systems if s.system == system)
    assert row.ci_low is not None and row.ci_high is not None
    return row.ci_low, row.ci_high


JUDGE = JudgeInfo("openai", "judge-a", endpoint="http://127.0.0.1:1/v1")


async def test_t1_precision_is_worded_as_the_terminal_words_it(
    aiohttp_client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = []
    for system, verdict in (("sys-a", "pass"), ("sys-b", "fail")):
        record = make_record(system, "rhine", "t1")
        record = msgspec.structs.replace(record, audit=Audit(verdict, f"judge says {verdict}", JUDGE))  # type: ignore[arg-type]
        records.append(record)
    results = write_results(tmp_path / "run.jsonl", records)
    client = await aiohttp_client(make_app(Index(load_run(results), reviewer="ana")))
    lines = (await (await client.get("/api/totals")).json())["agreement_lines"]
    assert len(lines) == 1 and lines[0].startswith("T1 precision against the judge: agreed 1 of 2, 50")
    assert main(["totals", str(results)]) == 0
    # The terminal wraps the caption to its table's width: the same words, in the same order.
    assert " ".join(lines[0].split()) in " ".join(capsys.readouterr().out.split())


async def test_panel_agreement_is_worded_as_the_terminal_words_it(
    aiohttp_client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tabench_dsl.core.records import Attempt, PanelVote

    other = JudgeInfo("anthropic", "judge-b", endpoint="http://127.0.0.1:2")
    panel = JudgeInfo("panel", "openai:judge-a + anthropic:judge-b", label="panel (majority)")
    records = []
    for system, (a, b, verdict) in (
        ("sys-a", ("pass", "pass", "pass")),
        ("sys-b", ("pass", "fail", "adjudicate")),
    ):
        votes = [
            PanelVote(
                judge, vote, f"says {vote}", attempts=[Attempt("first", f'{{"verdict": "{vote}"}}', 1.0)]
            )  # type: ignore[arg-type]
            for judge, vote in ((JUDGE, a), (other, b))
        ]
        base = make_record(system, "rhine", "pass")
        records.append(
            msgspec.structs.replace(
                base, verdict=verdict, judge=panel, panel=votes, cause="panel_split" if a != b else None
            )
        )
    results = write_results(tmp_path / "run.jsonl", records)
    client = await aiohttp_client(make_app(Index(load_run(results), reviewer="ana")))
    lines = (await (await client.get("/api/totals")).json())["agreement_lines"]
    assert len(lines) == 1 and lines[0].startswith("2 answer(s) graded by the panel, 1 split; Fleiss' kappa")
    assert main(["totals", str(results)]) == 0
    assert " ".join(lines[0].split()) in " ".join(capsys.readouterr().out.split())
