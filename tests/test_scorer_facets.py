"""A scorer folder decides its facet names and the builtin judge's section markers; no code does.

Each test copies the shipped scorer into the test's folder, changes its settings (and templates),
and loads a battery that names the copy by path.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.battery import load_battery
from tabench_dsl.cli import main
from tabench_dsl.errors import SpecErrors
from tabench_dsl.render import compile_battery

SHIPPED = Path(__file__).resolve().parent.parent / "specs" / "tabench-1.1"
SHIPPED_FACETS = "facets: [extra_correct_info, missing_minor, erroneous_assertion]"


def copy_scorer(root: Path, *, replace: dict[str, str] | None = None, add: str = "") -> Path:
    """The shipped scorer copied to `root/scorer`: `replace` (old -> new) applied to scorer.yaml and
    every template, `add` appended to scorer.yaml."""
    folder = root / "scorer"
    shutil.copytree(SHIPPED, folder)
    for file in folder.iterdir():
        text = file.read_text(encoding="utf-8")
        for old, new in (replace or {}).items():
            text = text.replace(old, new)
        file.write_text(text + (add if file.name == "scorer.yaml" else ""), encoding="utf-8")
    return folder


def write_battery(root: Path, rubric: str) -> Path:
    """A battery in `root/bat` graded under the scorer copy at `root/bat/scorer`."""
    battery = root / "bat"
    battery.mkdir(parents=True)
    (battery / "battery.yaml").write_text("name: b\nscorer: scorer\nrubrics: [q.rubric]\nt1: false\n")
    (battery / "q.rubric").write_text(textwrap.dedent(rubric), encoding="utf-8")
    return battery


def facet_rubric(name: str) -> str:
    return f'''\
    question q1 {{
      prompt "Which stages make up the pipeline?"
      gold "Ingest, Index, Recall, Compact"
      facet {name} "talks about something else"
    }}
    '''


# -- facet names ---------------------------------------------------------------------------------


def test_a_facet_the_scorer_defines_compiles(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, facet_rubric("off_topic"))
    copy_scorer(battery, replace={SHIPPED_FACETS: "facets: [off_topic, extra_correct_info]"})
    compiled = compile_battery(load_battery(battery))
    assert "off_topic: talks about something else" in compiled.questions["q1"].system


def test_a_facet_the_scorer_does_not_define_is_an_error_naming_its_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    copy_scorer(battery, replace={SHIPPED_FACETS: "facets: [off_topic, extra_correct_info]"})
    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    assert raised.value.render() == textwrap.dedent("""\
        bat/q.rubric:4:9: unknown facet 'missing_minor'
              facet missing_minor "talks about something else"
                    ^
        hint: facets are off_topic, extra_correct_info""")
    assert main(["lint", "bat"]) == 2
    assert "hint: facets are off_topic, extra_correct_info" in capsys.readouterr().out


def test_without_a_facet_list_the_default_names_apply(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    copy_scorer(battery, replace={SHIPPED_FACETS: ""})
    compiled = compile_battery(load_battery(battery))
    assert "missing_minor: talks about something else" in compiled.questions["q1"].system
    other = write_battery(tmp_path / "other", facet_rubric("off_topic"))
    copy_scorer(other, replace={SHIPPED_FACETS: ""})
    with pytest.raises(SpecErrors, match="unknown facet 'off_topic'"):
        load_battery(other)


@pytest.mark.parametrize(
    ("facets", "message"),
    [
        ("facets: off_topic", "scorer facets must be a list of names"),
        ("facets: [off_topic, 'two words']", "scorer facets must be a list of names"),
        ("facets: []", "scorer facets must be a list of names"),
    ],
)
def test_a_malformed_facet_list_is_an_error_at_its_line(tmp_path: Path, facets: str, message: str) -> None:
    battery = write_battery(tmp_path, facet_rubric("off_topic"))
    scorer = copy_scorer(battery, replace={SHIPPED_FACETS: facets})
    line = scorer.joinpath("scorer.yaml").read_text().splitlines().index(facets) + 1
    with pytest.raises(SpecErrors) as raised:
        load_battery(battery)
    (error,) = raised.value.errors
    assert (error.message, error.path, error.line) == (message, str(scorer / "scorer.yaml"), line)
