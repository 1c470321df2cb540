"""`tabench diff A B`: two gradings of the same answers, every figure worked out by hand below."""

from __future__ import annotations

import json

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision, JudgeInfo, Record, record_encoder
from tabench_dsl.review.diff import diff_records
from tabench_dsl.store.decisions import decisions_path

OLD = JudgeInfo(backend="openai", model="old-judge")
NEW = JudgeInfo(backend="anthropic", model="new-judge")

# (question, A's outcome, B's outcome) for system "s" on the pairs both files hold.
BOTH = [
    *[(f"p{i}", "pass", "pass") for i in range(4)],
    ("q1", "pass", "fail"),
    *[(f"r{i}", "fail", "pass") for i in range(3)],
    ("q2", "fail", "fail"),
    ("q3", "adjudicate", "pass"),
    ("q4", "error", "pass"),
    ("q5", "fail", "adjudicate"),  # B's adjudicate is decided fail by a person (decisions file)
]


def rec(question: str, verdict: str, judge: JudgeInfo, system: str = "s") -> Record:
    return Record(system, question, "t2", verdict, f"{judge.model} says {verdict}", f"sha-{question}", judge)


def write(path, records) -> None:
    path.write_bytes(b"".join(record_encoder.encode(r) + b"\n" for r in records))


@pytest.fixture
def gradings(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(a, [rec(q, x, OLD) for q, x, _ in BOTH] + [rec("only-a", "pass", OLD)])
    # B graded q1 twice: the last record stands.
    first = [rec("q1", "pass", NEW)]
    write(b, first + [rec(q, y, NEW) for q, _, y in BOTH] + [rec("only-b", "fail", NEW, "t")])
    decision = Decision("s", "q5", "fail", "sha-q5", "ann", "2026-12-01T00:00:00Z", note="wrong port")
    decisions_path(b).write_bytes(record_encoder.encode(decision) + b"\n")
    return a, b


def test_figures_by_hand(gradings) -> None:
    from tabench_dsl.review.viewer.run import load_run

    a, b = (load_run(path).records for path in gradings)
    diff = diff_records(a, b)
    # 12 pairs in both; q4 has an error in A: 11 compared.
    assert (diff.in_both, diff.compared, diff.with_error) == (12, 11, 1)
    # Agreed: p0-p3, q2, q5 (B's adjudicate decided fail) = 6 of 11.
    assert (diff.agreed, diff.agreement) == (6, 6 / 11)
    # A: pass 5, fail 5, adjudicate 1; B: pass 8, fail 3. Chance = (5*8 + 5*3) / 121 = 55/121;
    # observed 66/121; kappa = (66 - 55) / (121 - 55) = 1/6.
    assert diff.kappa == pytest.approx(1 / 6)
    assert (diff.a_pass, diff.b_pass) == (5, 8)
    # Discordant: pass -> not 1 (q1); not -> pass 4 (r0-r2, q3). p = 2 * (C(5,0) + C(5,1)) / 2^5.
    assert (diff.pass_to_not, diff.not_to_pass) == (1, 4)
    assert diff.p_value == 12 / 32
    assert [(f.question, f.a, f.b) for f in diff.flips] == [
        ("q1", "pass", "fail"),
        ("q3", "adjudicate", "pass"),
        ("q4", "error", "pass"),
        ("r0", "fail", "pass"),
        ("r1", "fail", "pass"),
        ("r2", "fail", "pass"),
    ]
    assert diff.flips[0].reason_a == "old-judge says pass" and diff.flips[0].reason_b == "new-judge says fail"
    assert [(p.system, p.question) for p in diff.only_in_a] == [("s", "only-a")]
    assert [(p.system, p.question) for p in diff.only_in_b] == [("t", "only-b")]


def test_cli_table(gradings, capsys) -> None:
    a, b = gradings
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "pairs in both: 12 (11 graded on both sides, 1 with an error on a side" in out
    assert "flipped: 6" in out
    assert "agreement: 6 of 11 (54.5%); Cohen's kappa 0.167" in out
    assert "pass -> not 1, not -> pass 4; McNemar exact p = 0.375" in out
    assert "only in A: 1; only in B: 1" in out
    assert "only in A: s/only-a" in out and "only in B: t/only-b" in out
    assert "old-judge says pass" in out and "new-judge says fail" in out
    # Each side names who judged it.
    assert f"A: {a} (judge: openai:old-judge)" in out and f"B: {b} (judge: anthropic:new-judge)" in out


def test_cli_json(gradings, capsys) -> None:
    a, b = gradings
    assert main(["diff", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["a"] == str(a) and data["b"] == str(b)
    assert data["a_judges"] == ["openai:old-judge"] and data["b_judges"] == ["anthropic:new-judge"]
    assert data["kappa"] == pytest.approx(1 / 6) and data["p_value"] == 0.375
    assert len(data["flips"]) == 6
    assert data["only_in_b"] == [{"system": "t", "question": "only-b"}]


def test_identical_gradings_agree(gradings, capsys) -> None:
    a, _ = gradings
    assert main(["diff", str(a), str(a), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["flips"], data["agreement"], data["p_value"]) == ([], 1.0, 1.0)


def test_a_bad_line_is_named_and_exit_1(gradings, capsys) -> None:
    a, b = gradings
    with open(b, "ab") as f:
        f.write(b"{not json\n")
    assert main(["diff", str(a), str(b)]) == 1
    assert f"{b}:15: not a result record" in capsys.readouterr().err  # 14 records, then the bad line


def test_missing_file_is_a_usage_error(tmp_path, gradings, capsys) -> None:
    a, _ = gradings
    assert main(["diff", str(a), str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl: no such results file" in capsys.readouterr().err


def test_hostile_names_are_shown_as_text(tmp_path, capsys) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    name = "[bold]x\x1b[31m"
    write(a, [rec("q", "pass", OLD, system=name)])
    write(b, [rec("q", "fail", NEW, system=name)])
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "[bold]x" in out


def test_report_compare_shows_the_flips_and_b_beside_each_answer(gradings, capsys) -> None:
    a, b = gradings
    out = a.parent / "report.html"
    assert main(["report", str(a), "--html", str(out), "--compare", str(b)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "<h2>Compared with another grading</h2>" in html
    assert "flipped: 6" in html and "Cohen&#39;s kappa 0.167" in html
    flips = html.split('<table id="flips">', 1)[1].split("</table>", 1)[0]
    assert flips.count("<tr>") == 7  # the heading and six flips
    # Each answer says what B made of it; B's q5 counts as the person's decision.
    assert 'B (b.jsonl): <span class="badge fail">fail</span> new-judge says fail' in html
    assert 'B (b.jsonl): <span class="badge fail">fail</span> new-judge says adjudicate' in html
    assert "B (b.jsonl): not graded there" in html  # only-a


def test_report_refuses_to_write_over_the_compared_file(gradings, capsys) -> None:
    a, b = gradings
    before = b.read_bytes()
    assert main(["report", str(a), "--html", str(b), "--compare", str(b)]) == 2
    assert b.read_bytes() == before


async def test_two_real_judges_that_disagree(tmp_path, monkeypatch, judge_server, capsys) -> None:
    """Grade the same answers with two judge servers scripted to disagree on the answers holding
    "teal", then diff the two results files: exactly those flip, with each judge's reason."""
    import asyncio

    from support.helpers_grading import FAIL, PASS, user_content, write_battery

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lenient = await judge_server(lambda body: PASS)
    strict = await judge_server(lambda body: FAIL if "teal" in user_content(body) else PASS)
    battery = write_battery(tmp_path)
    colours = ["blue", "teal", "sky blue", "teal-ish", "azure"]
    rows = [{"system": f"s{i}", "question": "h03", "answer": c} for i, c in enumerate(colours)]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for server, out in ((lenient, "a.jsonl"), (strict, "b.jsonl")):
        argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
        assert await asyncio.to_thread(main, [*argv, "--out", out, "--no-cache"]) == 0
    capsys.readouterr()
    assert main(["diff", "a.jsonl", "b.jsonl", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(f["system"], f["a"], f["b"]) for f in data["flips"]] == [
        ("s1", "pass", "fail"),
        ("s3", "pass", "fail"),
    ]
    assert data["flips"][0]["reason_a"] == "names all four stages"
    assert data["flips"][0]["reason_b"] == "omits the Compact stage"
    # 5 compared, 3 agree; all of A pass: chance agreement = 1 * 3/5, kappa = (0.6 - 0.6) / 0.4 = 0.
    assert (data["compared"], data["agreed"], data["kappa"]) == (5, 3, 0.0)
    # pass -> fail 2, fail -> pass 0: p = 2 * (1/2)^2 = 0.5.
    assert (data["pass_to_not"], data["not_to_pass"], data["p_value"]) == (2, 0, 0.5)
