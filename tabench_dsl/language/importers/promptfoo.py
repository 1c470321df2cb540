"""`tabench import promptfoo`: a `promptfooconfig.yaml` and the files it names, or a results file
(`promptfoo eval -o out.json`, version 3), whose `config` is the config it ran.

Each test, once per prompt, becomes a question; its id is `test-N` (N: the test's place in the
config's list of tests, 1-based, as promptfoo's `testIdx + 1`), `test-N.prompt-M` when the config
has several prompts (and `CONFIG.test-N` when several configs are imported into one battery, CONFIG
being the config's folder name), so a promptfoo results file (`promptfoo eval -o out.json`) of a
config imported alone names the same questions (`grading.promptfoo_results`). Tests are read inline,
or from the CSV or YAML file `tests: file://...` names (CSV: a column per var, `__expected` columns
holding `type:value` asserts, `__description`); `defaultTest`'s vars and asserts apply to every
test.

    prompt     the prompt template with the test's vars put in as literal text (`{{ name }}` only:
               nothing is run, and a Nunjucks tag or filter stays as written)
    gold       a `factuality` value, else an `equals` value, else a `contains`/`icontains` value
               (a `contains-any` list: the first, and the rest accepted)
    scoring    the `llm-rubric` and `model-graded-closedqa` texts; a test with a rubric and no
               reference takes the rubric as its gold, and its scoring says so
    match      `equals` (a number, a choice letter, or the whole answer as a pattern) and `regex`

A `file://` reference is read only inside the config's folder and only as text (`.txt`, `.md`,
`.json` chat prompts, `.csv` and `.yaml` tests); JavaScript and Python asserts, prompt functions
and any other file are named in the summary and left behind, never run.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...core.closed_match import MatchCheck, check_pattern
from ...core.errors import UsageError
from ...core.question_ids import QuestionIds
from ..yaml_io import yaml_position
from .checks import closed_check, text_check
from .sources import (
    Imported,
    ImportedQuestion,
    chat_text,
    csv_rows,
    inside_file,
    inside_files,
    read_source,
    yaml_document,
)

#: A `{{ name }}` placeholder of a Nunjucks template (a filter or an expression is left as written).
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: The asserts whose value is a reference answer, best first.
GOLD_ASSERTS = ("factuality", "equals", "contains", "icontains", "contains-any", "icontains-any")
RUBRIC_ASSERTS = ("llm-rubric", "model-graded-closedqa")
CODE_ASSERTS = ("javascript", "python", "webhook")
#: The scoring text of a question whose gold is its rubric (no reference answer in the test).
RUBRIC_AS_GOLD = (
    "The gold above is a criterion (promptfoo llm-rubric), not an answer: pass an answer that meets it."
)


def import_config(sources: list[Path], imported: Imported) -> None:
    """Read each promptfoo config in `sources` into `imported`."""
    ids = QuestionIds()
    for source in sources:
        _Config(source, imported, ids, prefixed=len(sources) > 1).read()


class _Config:
    def __init__(self, path: Path, imported: Imported, ids: QuestionIds, *, prefixed: bool) -> None:
        self.path, self.imported, self.ids = path, imported, ids
        self.folder = path.resolve().parent
        self.text = read_source(path, "promptfoo config")
        document = yaml_document(path, "promptfoo config")
        if not isinstance(document, dict):
            raise UsageError(f"{path}: not a promptfoo config (a mapping)")
        #: Where the config sits in the file: at the top, or under `config` in a results file.
        self.base: list[str | int] = []
        if isinstance(document.get("config"), dict) and "results" in document:
            document, self.base = document["config"], ["config"]
            imported.mapped["a results file's config -> its tests (its outputs: grade --answers)"] += 1
        self.document = document
        self.rubric = path.parent.name if path.stem == "promptfooconfig" else path.stem
        #: With several configs, ids start with the config's name (`NAME.test-N`) to stay unique.
        self.prefix = f"{self.rubric}." if prefixed else ""

    def read(self) -> None:
        prompts = self._prompts()
        if not prompts:
            raise UsageError(f"{self.path}: no prompt it names could be read as text")
        if "providers" in self.document:
            self.imported.unmapped[
                "providers: answers come from your systems (grade --answers out.json)"
            ] += 1
        default = self.document.get("defaultTest")
        default = default if isinstance(default, dict) else {}
        for number, (test, line, origin) in enumerate(self._tests(), start=1):
            self._test(number, prompts, test, default, line, origin)

    def _prompts(self) -> list[str]:
        raw = self.document.get("prompts")
        items = raw if isinstance(raw, list) else [raw] if raw is not None else []
        prompts: list[str] = []
        for item in items:
            if isinstance(item, dict):
                item = item.get("raw", item.get("id"))
            if not isinstance(item, str):
                self.imported.unmapped["a prompt that is not text"] += 1
            elif item.startswith("file://"):
                prompts.extend(
                    text for file in self._files(item, "prompt") for text in self._prompt_file(file)
                )
            else:
                prompts.append(item)
        return prompts

    def _files(self, reference: str, what: str) -> list[Path]:
        """The files `reference` names inside the config's folder of the kinds a `what` is read
        from; each other one named in the summary."""
        files = inside_files(reference, self.folder)
        suffixes = (".txt", ".md", ".json") if what == "prompt" else (".csv", ".yaml", ".yml")
        if not files or any(f.suffix.lower() not in suffixes for f in files):
            kinds = "a text or chat JSON file" if what == "prompt" else "a CSV or YAML file"
            self.imported.unmapped[
                f"{what} {reference}: not {kinds} inside the config's folder (not read)"
            ] += 1
        return [f for f in files if f.suffix.lower() in suffixes]

    def _prompt_file(self, file: Path) -> list[str]:
        suffix = file.suffix.lower()
        text = read_source(file, "prompt file")
        if suffix == ".json":
            import json

            try:
                chat = chat_text(json.loads(text))
            except (ValueError, RecursionError):
                chat = None
            return [chat] if chat else [text]
        return [part.strip("\n") for part in re.split(r"\n-{3,}\n", text) if part.strip()]

    def _tests(self) -> list[tuple[dict[str, object], int, str]]:
        raw = self.document.get("tests")
        items = raw if isinstance(raw, list) else [raw] if raw is not None else []
        tests: list[tuple[dict[str, object], int, str]] = []
        for index, item in enumerate(items):
            if isinstance(item, dict):
                line = (
                    yaml_position(self.text, [*self.base, "tests", index])[0] if isinstance(raw, list) else 1
                )
                tests.append((item, line, f"{self.path.name}:{line}"))
            elif isinstance(item, str):
                for file in self._files(item, "tests"):
                    tests.extend(self._test_file(file))
        return tests

    def _test_file(self, file: Path) -> list[tuple[dict[str, object], int, str]]:
        if file.suffix.lower() == ".csv":
            return [
                (_csv_test(row), line, f"{file.name}:{line}") for line, row in csv_rows(file, "tests file")
            ]
        document = yaml_document(file, "tests file")
        text = read_source(file, "tests file")
        items = document if isinstance(document, list) else []
        return [
            (item, yaml_position(text, [i])[0], f"{file.name}:{yaml_position(text, [i])[0]}")
            for i, item in enumerate(items)
            if isinstance(item, dict)
        ]

    def _test(
        self,
        number: int,
        prompts: list[str],
        test: dict[str, object],
        default: dict[str, object],
        line: int,
        origin: str,
    ) -> None:
        """The test's question under each prompt (`test-N`, `test-N.prompt-M`), or one skip."""
        where = origin.rpartition(":")[0] or str(self.path)
        vars_: dict[str, object] = {}
        for source in (default.get("vars"), test.get("vars")):
            if isinstance(source, dict):
                vars_.update(source)
        values: dict[str, str] = {}
        for key, value in vars_.items():
            text = self._var_text(value)
            if text is None:
                self.imported.skip(where, line, f"var {key!r} is not text (a list or a file it cannot read)")
                return
            values[str(key)] = text
        asserts = [
            self._resolved(a)
            for source in (default.get("assert"), test.get("assert"))
            if isinstance(source, list)
            for a in source
        ]
        gold, accept, scoring, check = self._asserts(asserts, values)
        if gold is None and scoring is None:
            self.imported.skip(
                where, line, "no reference answer or rubric (factuality, equals, contains, llm-rubric)"
            )
            return
        if gold is None:
            assert scoring is not None
            gold, scoring = scoring, RUBRIC_AS_GOLD
            self.imported.mapped["llm-rubric (no reference) -> gold"] += 1
        for index, template in enumerate(prompts, start=1):
            name = f"{self.prefix}test-{number}" + (f".prompt-{index}" if len(prompts) > 1 else "")
            self.imported.mapped["prompt + vars -> prompt"] += 1
            question = ImportedQuestion(
                id=self.ids.make(name),
                prompt=render(template, values),
                gold=gold,
                origin=origin,
                accept=accept,
                scoring=scoring,
                match=check,
            )
            self.imported.add(self.rubric, question)

    def _resolved(self, item: object) -> object:
        """An assert given as `$ref: '#/assertionTemplates/NAME'`: the one the config holds there
        (a reference within the config only; any other is left as it is)."""
        reference = item.get("$ref") if isinstance(item, dict) else None
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return item
        node: object = self.document
        for part in reference[2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else item

    def _var_text(self, value: object) -> str | None:
        if isinstance(value, bool) or value is None:
            return None if value is None else str(value).lower()
        if isinstance(value, int | float):
            return str(value)
        if not isinstance(value, str):
            return None
        if value.startswith("file://"):
            file = inside_file(value, self.folder)
            if file is None or file.suffix.lower() not in (".txt", ".md"):
                return None
            return read_source(file, "var file")
        return value

    def _asserts(
        self, asserts: list[object], values: dict[str, str]
    ) -> tuple[str | None, tuple[str, ...], str | None, MatchCheck | None]:
        references: dict[str, list[str]] = {}
        rubrics: list[str] = []
        check: MatchCheck | None = None
        for item in asserts:
            kind = item.get("type") if isinstance(item, dict) else None
            value = item.get("value") if isinstance(item, dict) else None
            if not isinstance(kind, str):
                self.imported.unmapped["an assert without a type ($ref, assert-set)"] += 1
                continue
            if kind in CODE_ASSERTS or (isinstance(value, str) and value.startswith("file://")):
                self.imported.unmapped[f"{kind} assert: code or a file, never run (left behind)"] += 1
                continue
            texts = [
                render(str(v), values)
                for v in (value if isinstance(value, list) else [value])
                if v is not None
            ]
            if kind in GOLD_ASSERTS and texts:
                references.setdefault(kind, texts)
                self.imported.mapped[f"{kind} -> gold"] += 1
                if kind == "equals" and check is None:
                    check = _equals_check(texts[0])
            elif kind in RUBRIC_ASSERTS and texts:
                rubrics.extend(texts)
                self.imported.mapped[f"{kind} -> scoring"] += 1
            elif kind == "regex" and texts and check is None:
                problem = check_pattern(texts[0])
                if problem is None:
                    check = MatchCheck("regex", texts[0])
                    self.imported.mapped["regex -> match regex"] += 1
                else:
                    self.imported.unmapped[f"regex assert RE2 cannot run ({problem.split(' (')[0]})"] += 1
            else:
                self.imported.unmapped[f"{kind} assert: no field of a question holds it"] += 1
        golds = next((references[k] for k in GOLD_ASSERTS if k in references), None)
        gold = golds[0] if golds else None
        accept = tuple(dict.fromkeys(g for g in (golds or [])[1:] if g.strip() and g != gold))
        scoring = "\n\n".join(rubrics) if rubrics else None
        return gold, accept, scoring, check


def _equals_check(value: str) -> MatchCheck | None:
    """`equals` as a check: a number or a choice letter read as one, else the whole answer equal
    to `value` (white space aside)."""
    return closed_check(value) or text_check([value], how="whole")


def _csv_test(row: dict[str, str]) -> dict[str, object]:
    """A test from a CSV row: columns are vars, `__expected*` columns `type:value` asserts."""
    vars_: dict[str, object] = {}
    asserts: list[object] = []
    test: dict[str, object] = {"vars": vars_, "assert": asserts}
    for column, cell in row.items():
        if column.startswith("__expected"):
            if cell.strip():
                kind, sep, value = cell.partition(":")
                if sep and (
                    kind in GOLD_ASSERTS + RUBRIC_ASSERTS + CODE_ASSERTS or kind in ("regex", "similar")
                ):
                    asserts.append({"type": kind, "value": value.strip()})
                elif cell.startswith(("eval:", "grade:", "fn:")):
                    kind = {"eval:": "javascript", "fn:": "javascript", "grade:": "llm-rubric"}[
                        cell.split(":")[0] + ":"
                    ]
                    asserts.append({"type": kind, "value": cell.partition(":")[2].strip()})
                else:
                    asserts.append({"type": "equals", "value": cell})
        elif column == "__description":
            test["description"] = cell
        elif not column.startswith("__"):
            vars_[column] = cell
    return test


def render(template: str, values: dict[str, str]) -> str:
    """`template` with each `{{ name }}` of `values` replaced by its text, literally."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group()), template)
