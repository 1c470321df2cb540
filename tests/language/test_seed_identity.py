"""The golden identity of the prompt contract (docs/language.md section 7).

A battery whose every field is the seed prompt's placeholder text compiles to the seed's SYSTEM
block byte for byte, and its USER and STERN prompts for the answer `{{candidate answer}}` equal the
seed's USER and stern-retry blocks. `tests/golden/seed-identity/expected/` holds the three blocks,
copied from the seed document by hand (text between the fences, without the final line break),
and are checked against the seed document itself: a copy of it ships in `tests/data/seed/`, and
where the steering repository sits beside this one (`../shared/seed/`), that copy is checked to be
its original byte for byte.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.nodes import Battery, Exemplar, Pos, Question, Rule, Scorer
from tabench_dsl.core.resources import specs_dir
from tabench_dsl.core.scorer import ScorerSettings
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import (
    ANSWER_PLACEHOLDER,
    compile_battery,
    render_stern,
    render_system,
    render_user,
)

CASE = Path(__file__).parents[1] / "golden" / "seed-identity"
SEED_NAME = "000_033347dd35560e32.txt"
SEED = Path(__file__).resolve().parents[1] / "data" / "seed" / SEED_NAME
#: The original, in the steering repository beside this one (absent from a plain clone).
STEERING_SEED = Path(__file__).resolve().parents[2].parent / "shared" / "seed" / SEED_NAME
SEED_BLOCKS = {"SYSTEM": "system", "USER": "user", "USER (stern retry)": "stern"}


def _expected(part: str) -> str:
    return (CASE / "expected" / f"{part}.txt").read_bytes().decode("utf-8")


def test_placeholder_answer_is_the_seeds() -> None:
    assert ANSWER_PLACEHOLDER == "{{candidate answer}}"


def test_expected_copies_equal_the_seed_blocks() -> None:
    if STEERING_SEED.exists():
        assert SEED.read_bytes() == STEERING_SEED.read_bytes()
    text = SEED.read_bytes().decode("utf-8")
    blocks = dict(re.findall(r"^## ([^\n]+)\n\n```\n(.*?)\n```$", text, flags=re.M | re.S))
    assert set(blocks) == set(SEED_BLOCKS)
    for title, part in SEED_BLOCKS.items():
        assert blocks[title] == _expected(part), title


def test_expected_copies_end_without_a_line_break() -> None:
    for part in ("system", "user", "stern"):
        assert not _expected(part).endswith("\n")
    assert _expected("user") == "-- CANDIDATE ANSWER --\n{{candidate answer}}"


def test_placeholder_battery_compiles_to_the_seed() -> None:
    battery = load_battery(CASE)
    compiled = compile_battery(battery)
    assert list(compiled.questions) == ["seed"]
    assert compiled.questions["seed"].system == _expected("system")
    assert compiled.user.fill(ANSWER_PLACEHOLDER) == _expected("user")
    assert compiled.stern.fill(ANSWER_PLACEHOLDER) == _expected("stern")
    assert render_user(battery.scorer, ANSWER_PLACEHOLDER) == _expected("user")
    assert render_stern(battery.scorer, ANSWER_PLACEHOLDER) == _expected("stern")


def test_hand_built_placeholder_nodes_render_the_seed() -> None:
    # The same identity without the file front end: only the renderer and the shipped scorer.
    path = specs_dir() / "tabench-1.1"
    scorer = Scorer(
        name="tabench-1.1",
        path=str(path),
        settings=ScorerSettings(name="tabench-1.1"),  # the shipped templates' names are the defaults
    )
    pos = Pos("seed.rubric", 1, 1)
    question = Question(
        id="seed",
        prompt="{{question prompt}}",
        gold="{{answer_gold}}",
        pos=pos,
        accept=("{{accepted variant}}",),
        trap="{{honesty trap}}",
        structure="{{output structure}}",
        scoring="{{scoring rubric}}",
        guide="{{facet guide}}",
        exemplars=(
            Exemplar(kind="correct", answer="{{exemplar answer}}", why="{{why it is correct}}", pos=pos),
        ),
    )
    rule = Rule(text="{{policies: the battery's S-rules, one per line}}", id=None, pos=pos)
    battery = Battery(
        name="seed", manifest="seed/battery.yaml", scorer=scorer, policies=(rule,), questions=(question,)
    )
    assert render_system(battery, question) == _expected("system")


def test_cli_prints_the_seed_blocks(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["compile", str(CASE), "--part", "all"]) == 0
    out = capsysbinary.readouterr().out.decode("utf-8")
    assert out == (
        f"## seed system\n{_expected('system')}\n"
        f"## seed user\n{_expected('user')}\n"
        f"## seed stern\n{_expected('stern')}\n"
    )
