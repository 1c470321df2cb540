"""The JSON Schemas of battery.yaml and scorer.yaml give the loaders' verdict: a table of good and
bad manifests and settings, each checked by both (the schema through `jsonschema`, over the YAML as
PyYAML reads it, as the loaders do)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from tabench_dsl.cli import main
from tabench_dsl.language.battery import read_battery
from tabench_dsl.language.schemas import battery_schema, missing_fragments, scorer_schema

RUBRIC = 'question h01 {\n  prompt "p"\n  gold "g"\n  exemplar correct "g" why "w"\n}\n'
BASE = "name: demo\nscorer: tabench-1.1\nrubrics: [q.rubric]\n"

#: (manifest text, whether the loader accepts it), written by hand.
MANIFESTS = [
    (BASE, True),
    (BASE + "policies: p.policy\n", True),
    (BASE + "policies: [p.policy]\nt1: false\n", True),
    (BASE + "judge: {model: gpt-4.1, temperature: 0.5, max_tokens: 10, backend: openai}\n", True),
    (BASE + "judge: {price: {input: 0.4, output: 1.6, cached_input: 0.1, cache_write: 0}}\n", True),
    (
        BASE
        + "judge:\n  rule: unanimous\n  panel:\n"
        + "    - {backend: openai}\n    - {backend: anthropic, model: m}\n",
        True,
    ),
    (BASE + "judge: {prompt_cache: false}\n", True),
    (BASE + "t1_trap: false\n", True),
    (BASE + "reasoning_tags: [['<think>', '</think>'], ['<r>', '</r>']]\n", True),
    (BASE + "reasoning_tags: []\n", True),
    (BASE + "judge: {structured: auto}\n", True),
    (BASE + "judge: {structured: off}\n", True),
    (BASE + "judge: {reasoning: {effort: low}}\n", True),
    (BASE + "judge: {max_tokens: 4000, reasoning: {budget_tokens: 2048}}\n", True),
    (BASE + "lint: {ignore: [W102], count: [W103, W104]}\n", True),
    (BASE + "lint: {ignore: W102}\n", True),
    (BASE + "lint: {}\n", True),
    (BASE + "lint: {ignore: [E201]}\n", False),  # an error cannot be turned off
    (BASE + "lint: {ignore: [W999]}\n", False),
    (BASE + "lint: {hide: [W102]}\n", False),
    (BASE + "lint: [W102]\n", False),
    (BASE + "t1_trap: sometimes\n", False),
    (BASE + "reasoning_tags: off\n", False),
    (BASE + "reasoning_tags: ['<think>', '</think>']\n", False),
    (BASE + "reasoning_tags: [['< think>', '</think>']]\n", False),
    (BASE + "judge: {structured: always}\n", False),
    (BASE + "judge: {reasoning: {effort: extreme}}\n", False),
    (BASE + "judge: {reasoning: {budget_tokens: 100}}\n", False),
    (BASE + "judge: {reasoning: {depth: 3}}\n", False),
    ("name: demo\nscorer: tabench-1.1\n", False),  # no rubrics
    ("scorer: tabench-1.1\nrubrics: [q.rubric]\n", False),  # no name
    (BASE.replace("demo", "Demo Bench"), False),
    (BASE.replace("name: demo", "name: ''"), False),
    (BASE + "rubric: [x]\n", False),  # unknown key
    (BASE + "t1: maybe\n", False),
    (BASE + "judge: openai\n", False),
    (BASE + "judge: {max_tokens: 0}\n", False),
    (BASE + "judge: {max_tokens: lots}\n", False),
    (BASE + "judge: {temperature: hot}\n", False),
    (BASE + "judge: {rule: plurality}\n", False),
    (BASE + "judge: {prompt_cache: sometimes}\n", False),
    (BASE + "judge: {modle: x}\n", False),
    (BASE + "judge: {price: {input: 1}}\n", False),
    (BASE + "judge: {price: {input: -1, output: 1}}\n", False),
    (BASE + "judge: {price: {input: 1, output: 1, extra: 2}}\n", False),
    (BASE + "judge: {panel: [{backend: openai}]}\n", False),
    (BASE + "judge: {panel: [{model: a}, {backend: b}]}\n", False),
    (BASE + "judge: {panel: [{backend: a, rule: majority}, {backend: b}]}\n", False),
    (BASE + "policies: {a: b}\n", False),
    ("- a list\n", False),
]

MINIMAL_TEMPLATES = {
    "system.j2": "S {{ question_json }}",
    "user.j2": "{{ answer }}",
    "stern.j2": "{{ answer }}",
}

#: (scorer.yaml text, whether the loader accepts it), written by hand.
SCORERS = [
    ("", True),
    ("name: house\nfacets: [a, b_c]\n", True),
    ("judge: {temperature: 0, max_tokens: 5, model: m}\n", True),
    ("templates: {system: system.j2}\nbuiltin: {question_start: '-- Q --'}\n", True),
    ("contradiction: {pass_shaped: ['correct'], window: 2}\ninjection: ['ignore previous']\n", True),
    ("judge: {temperature: 3}\n", False),
    ("judge: {max_tokens: 0}\n", False),
    ("facets: []\n", False),
    ("facets: [a, a]\n", False),
    ("facets: ['bad name']\n", False),
    ("templates: {system: ../x.j2}\n", False),
    ("templates: {other: x.j2}\n", False),
    ('builtin: {question_start: "two\\nlines"}\n', False),
    ("contradiction: {window: -1}\n", False),
    ("contradiction: {negators: not-a-list}\n", False),
    ("injection: [1]\n", False),
    ("colour: blue\n", False),
    ("- a\n", False),
]


def _loader_accepts_manifest(tmp_path: Path, text: str) -> bool:
    folder = tmp_path / "bat"
    folder.mkdir()
    (folder / "battery.yaml").write_text(text, encoding="utf-8")
    (folder / "q.rubric").write_text(RUBRIC, encoding="utf-8")
    (folder / "p.policy").write_text("S1: x\n", encoding="utf-8")
    return not read_battery(folder).errors


def _schema_accepts(schema: dict, text: str) -> bool:
    try:
        jsonschema.validate(yaml.safe_load(text), schema, cls=jsonschema.Draft7Validator)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.mark.parametrize(("text", "good"), MANIFESTS, ids=[str(i) for i in range(len(MANIFESTS))])
def test_battery_schema_and_loader_agree(text: str, good: bool, tmp_path: Path) -> None:
    assert _loader_accepts_manifest(tmp_path, text) is good
    assert _schema_accepts(battery_schema(), text) is good


def _loader_accepts_scorer(tmp_path: Path, text: str) -> bool:
    folder = tmp_path / "bat"
    scorer = folder / "house"
    scorer.mkdir(parents=True)
    (scorer / "scorer.yaml").write_text(text, encoding="utf-8")
    for name, template in MINIMAL_TEMPLATES.items():
        (scorer / name).write_text(template, encoding="utf-8")
    (folder / "battery.yaml").write_text("name: demo\nscorer: house\nrubrics: [q.rubric]\n", encoding="utf-8")
    (folder / "q.rubric").write_text(RUBRIC, encoding="utf-8")
    return not [e for e in read_battery(folder).errors if e.path.endswith("scorer.yaml")]


@pytest.mark.parametrize(("text", "good"), SCORERS, ids=[str(i) for i in range(len(SCORERS))])
def test_scorer_schema_and_loader_agree(text: str, good: bool, tmp_path: Path) -> None:
    assert _loader_accepts_scorer(tmp_path, text) is good
    assert _schema_accepts(scorer_schema(), text) is good


def test_every_loader_key_has_its_schema() -> None:
    # A key the loader reads without a fragment in language/schemas.py: add its fragment there.
    assert missing_fragments() == []


def test_the_schemas_are_valid_draft_7() -> None:
    jsonschema.Draft7Validator.check_schema(battery_schema())
    jsonschema.Draft7Validator.check_schema(scorer_schema())


def test_shipped_scorer_and_examples_pass_their_schemas() -> None:
    root = Path(__file__).parents[2]
    for file in root.glob("specs/*/scorer.yaml"):
        assert _schema_accepts(scorer_schema(), file.read_text(encoding="utf-8")), file
    for file in [*root.glob("examples/*/battery.yaml"), *root.glob("tests/golden/*/battery.yaml")]:
        assert _schema_accepts(battery_schema(), file.read_text(encoding="utf-8")), file


def test_schema_command_prints_them(capsys) -> None:
    assert main(["schema", "battery"]) == 0
    assert json.loads(capsys.readouterr().out) == battery_schema()
    assert main(["schema", "scorer"]) == 0
    assert json.loads(capsys.readouterr().out) == scorer_schema()


def test_new_writes_the_schema_line_and_file(tmp_path: Path, capsys) -> None:
    assert main(["new", "demo", "--dir", str(tmp_path)]) == 0
    manifest = (tmp_path / "demo" / "battery.yaml").read_text(encoding="utf-8")
    assert manifest.splitlines()[0] == "# yaml-language-server: $schema=battery.schema.json"
    written = json.loads((tmp_path / "demo" / "battery.schema.json").read_text(encoding="utf-8"))
    assert written == battery_schema()
    assert _schema_accepts(written, manifest)
