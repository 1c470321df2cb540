"""T1 respects the trap: an answer T1 would pass that carries the trap's own words (tokens of the
trap that neither the gold, the accepted variants nor the prompt have) goes to the judge; T1 still
never fails; the manifest's `t1_trap: false` turns this off. Graded against the scripted judge server
through the real runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers_grading import FAIL, PASS, grade

from tabench_dsl.core.records import Answer
from tabench_dsl.core.trap_words import states_truth, trap_words
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery

RUBRIC = """\
question objects {
  prompt "Which object types does git store?"
  gold "blob, tree, commit and tag"
  accept "blobs, trees, commits and tags"
  trap "There is no branch object: a branch is a ref."
}
question port {
  prompt "Which port does the daemon listen on?"
  gold "7311"
}
"""


def battery_folder(root: Path, extra: str = "") -> Path:
    folder = root / "battery"
    folder.mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        f"name: git\nscorer: tabench-1.1\npolicies: [rules.policy]\nrubrics: [q.rubric]\n{extra}",
        encoding="utf-8",
    )
    (folder / "rules.policy").write_text("S1: Judge the substance.\n", encoding="utf-8")
    (folder / "q.rubric").write_text(RUBRIC, encoding="utf-8")
    return folder


def test_the_trap_words_are_the_trap_tokens_no_key_nor_the_prompt_has() -> None:
    words = trap_words(
        "There is no branch object: a branch is a ref.",
        gold="blob, tree, commit and tag",
        accept=["blobs, trees, commits and tags"],
        prompt="Which object types does git store?",
    )
    assert words == ("branch", "ref")
    assert trap_words(None, gold="x", accept=[], prompt="y") == ()


@pytest.mark.parametrize(
    ("trap", "truth"),
    [
        ("There is no Summarize stage.", True),
        ("Summarize does not exist; the pipeline ends at Compact.", True),
        ("asyncio.Lock isn't reentrant.", True),
        ("The claim that lark packrat-parses is false.", True),
        ("The pipeline has a Summarize stage.", False),
        ("Use the -s flag.", False),
    ],
)
def test_a_trap_states_the_truth_when_it_denies_something(trap: str, truth: bool) -> None:
    assert states_truth(trap) is truth


def test_the_compiled_battery_carries_the_words_and_the_setting(tmp_path: Path) -> None:
    on = compile_battery(load_battery(battery_folder(tmp_path / "on")))
    assert on.t1_trap is True
    assert on.questions["objects"].trap_words == ("branch", "ref")
    assert on.questions["port"].trap_words == ()
    off = compile_battery(load_battery(battery_folder(tmp_path / "off", "t1_trap: false\n")))
    assert off.t1_trap is False and off.questions["objects"].trap_words == ()
    # The setting shapes no prompt.
    assert [q.system for q in off.questions.values()] == [q.system for q in on.questions.values()]


async def test_an_answer_carrying_the_trap_words_goes_to_the_judge(tmp_path: Path, judge_server) -> None:
    server = await judge_server([FAIL])
    battery = compile_battery(load_battery(battery_folder(tmp_path)))
    answers = [
        Answer("b", "objects", "blob, tree, commit and tag, plus the branch object"),
        Answer("a", "objects", "Blob, tree, commit and tag."),
        Answer("c", "objects", "It is blob, tree, commit and tag: there are no others."),  # framing words
        Answer("a", "port", "7311"),
    ]
    records, stats = await grade(battery, server.url, answers, tmp_path / "r.jsonl")
    by = {(r.system, r.question): r for r in records}
    deferred = by[("b", "objects")]
    assert (deferred.tier, deferred.verdict) == ("t2", "fail")  # the judge's verdict, read with the trap
    assert deferred.warnings == ["T1 deferred to the judge: the answer carries the trap's own words: branch"]
    assert (by[("a", "objects")].tier, by[("a", "objects")].verdict) == ("t1", "pass")
    assert (by[("c", "objects")].tier, by[("c", "objects")].verdict) == ("t1", "pass")
    assert (by[("a", "port")].tier, by[("a", "port")].verdict) == ("t1", "pass")
    assert server.calls == 1 and stats.t1 == 3


@pytest.mark.parametrize("answer", ["blob, tree, commit and tag; there is no branch object", "no"])
async def test_t1_never_fails_a_trap_word_answer_the_judge_passes(
    tmp_path: Path, judge_server, answer: str
) -> None:
    # A correct answer may name the trap to refute it: the judge reads it and may pass it. An answer
    # T1 would not pass anyway ("no") is graded as before, with no deferral noted.
    server = await judge_server([PASS])
    battery = compile_battery(load_battery(battery_folder(tmp_path)))
    records, _ = await grade(battery, server.url, [Answer("a", "objects", answer)], tmp_path / "r.jsonl")
    (record,) = records
    assert (record.tier, record.verdict) == ("t2", "pass")
    assert bool(record.warnings) == (answer != "no")


async def test_t1_trap_false_lets_t1_pass_as_before(tmp_path: Path, judge_server) -> None:
    server = await judge_server([FAIL])
    battery = compile_battery(load_battery(battery_folder(tmp_path, "t1_trap: false\n")))
    answers = [Answer("b", "objects", "blob, tree, commit and tag, plus the branch object")]
    records, _ = await grade(battery, server.url, answers, tmp_path / "r.jsonl")
    assert [(r.tier, r.verdict, r.warnings) for r in records] == [("t1", "pass", [])]
    assert server.calls == 0
