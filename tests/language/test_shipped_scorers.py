"""The shipped scorers: tabench-neutral-1.1 is tabench-1.1's rules and reply contract in neutral words.

tabench-1.1 stays the seed byte for byte (test_seed_identity.py); this file holds the neutral scorer
to the same contract: the same reply shape, markers, facets, decoding defaults, contradiction and
injection lists, the same USER and STERN frames, and a SYSTEM prompt whose only changed lines are
the two that spoke of a codebase and of the project's history.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tabench_dsl.core.resources import specs_dir
from tabench_dsl.language.battery import shipped_scorers
from tabench_dsl.language.scorer import read_settings

SEED, NEUTRAL = specs_dir() / "tabench-1.1", specs_dir() / "tabench-neutral-1.1"


def _settings(folder: Path):
    errors: list = []
    settings = read_settings((folder / "scorer.yaml").read_text(encoding="utf-8"), folder, errors)
    assert errors == [] and settings is not None
    return settings


def test_both_scorers_are_shipped() -> None:
    assert shipped_scorers() == ["tabench-1.1", "tabench-neutral-1.1"]


def test_neutral_settings_equal_the_seed_scorers_but_for_the_name() -> None:
    seed, neutral = _settings(SEED), _settings(NEUTRAL)
    assert (seed.name, neutral.name) == ("tabench-1.1", "tabench-neutral-1.1")
    assert msgspec.structs.replace(neutral, name=seed.name) == seed


def test_neutral_user_and_stern_frames_are_the_seed_scorers() -> None:
    for part in ("user.j2", "stern.j2"):
        assert (NEUTRAL / part).read_bytes() == (SEED / part).read_bytes(), part


def test_neutral_system_changes_only_the_codebase_and_history_lines() -> None:
    seed = (SEED / "system.j2").read_text(encoding="utf-8").splitlines()
    neutral = (NEUTRAL / "system.j2").read_text(encoding="utf-8").splitlines()
    assert len(seed) == len(neutral)
    changed = [i for i, (a, b) in enumerate(zip(seed, neutral, strict=True)) if a != b]
    assert [seed[i].split(" ", 1)[0] for i in changed] == ["Bare", "FACETS"]
    text = "\n".join(neutral)
    for word in ("codebase", "memos-agent", "h02", "archaeology", "mechanism"):
        assert word not in text, word
    # The rules themselves stay: each rule sentence of the seed's line is in the neutral line.
    for rule in (
        "Missing answer = fail.",
        "Extra correct detail = pass.",
        "grade the body, never the summary alone",
    ):
        assert rule in text
