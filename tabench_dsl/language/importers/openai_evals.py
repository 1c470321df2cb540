"""`tabench import openai-evals`: the open-source `openai/evals` registry.

SOURCE is a registry eval file, `evals/registry/evals/NAME.yaml`, which may declare several evals.
Each eval with a `class` of the basic templates (`Match`, `Includes`, `FuzzyMatch`) or the
model-graded one (`ModelBasedClassify` with a `modelgraded_spec`) becomes one rubric file, named
after the eval, read from the samples JSONL its `samples_jsonl` names in the registry's `data/`
folder (the folder beside `evals/`; a path leading out of the registry is refused). Each sample:

    input            the prompt (a chat list becomes `role: content` paragraphs; one user
                     message alone is its text)
    ideal            the gold; when a list, the first is the gold and the rest accepted variants
    question id      EVAL.LINE, the sample's line in the JSONL file

A `Match` whose gold is a number or a lone choice letter also gets a `match` check (`match number`,
`match choice`), so a closed answer passes without a judge call. A model-graded eval's grading
instruction (the spec's prompt after its `[END DATA]`, in `evals/registry/modelgraded/SPEC.yaml`,
with any `criteria`) becomes each question's `scoring` text. An eval of another class runs code of
its own and is named and skipped; two evals reading the same samples file write them once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...core.errors import UsageError
from ...core.question_ids import QuestionIds
from .checks import closed_check, text_check
from .sources import Imported, ImportedQuestion, LfsPointer, chat_text, inside_file, jsonl_rows, yaml_document

#: The eval classes whose grading is a comparison with the sample's `ideal`.
BASIC_CLASSES = {
    "evals.elsuite.basic.match:Match": "Match",
    "evals.elsuite.basic.includes:Includes": "Includes",
    "evals.elsuite.basic.fuzzy_match:FuzzyMatch": "FuzzyMatch",
}
MODELGRADED_CLASS = "evals.elsuite.modelgraded.classify:ModelBasedClassify"


def import_registry(sources: list[Path], imported: Imported, *, evals: Sequence[str] = ()) -> None:
    """Read each registry eval file in `sources` into `imported`: every eval they declare, or the
    ones `evals` names (an eval's name, `coqa-closedqa`, or its id, `coqa-closedqa.dev.v0`)."""
    ids = QuestionIds()
    samples_read: dict[Path, str] = {}
    wanted, found = set(evals), set()
    for source in sources:
        document = yaml_document(source, "registry eval file")
        if not isinstance(document, dict):
            raise UsageError(f"{source}: not a registry eval file (a mapping of eval names)")
        registry = source.resolve().parent.parent
        for key, spec in document.items():
            if not (isinstance(spec, dict) and "class" in spec):
                continue
            names = {str(key), str(key).split(".")[0]}
            if wanted and not wanted & names:
                continue
            found |= wanted & names
            _import_eval(str(key), spec, source, registry, imported, ids, samples_read)
    if wanted - found:
        raise UsageError("--eval " + ", ".join(sorted(wanted - found)) + ": no such eval in the files given")


def _import_eval(
    key: str,
    spec: dict[str, object],
    source: Path,
    registry: Path,
    imported: Imported,
    ids: QuestionIds,
    samples_read: dict[Path, str],
) -> None:
    name = key.split(".")[0]
    class_name = str(spec["class"])
    args = spec.get("args") if isinstance(spec.get("args"), dict) else {}
    assert isinstance(args, dict)
    template = BASIC_CLASSES.get(class_name)
    if template is None and class_name != MODELGRADED_CLASS:
        imported.unmapped[f"eval {name}: class {class_name} runs code of its own (skipped)"] += 1
        return
    samples_name = args.get("samples_jsonl")
    samples = inside_file(f"data/{samples_name}", registry) if isinstance(samples_name, str) else None
    if samples is None:
        imported.unmapped[
            f"eval {name}: samples_jsonl {samples_name!r} not found in the registry's data/"
        ] += 1
        return
    if samples in samples_read:
        imported.unmapped[
            f"eval {name}: its samples are those of eval {samples_read[samples]}, written once"
        ] += 1
        return
    samples_read[samples] = name
    scoring = None
    if template is None:
        scoring = _modelgraded_scoring(args, registry, imported, name)
    for other in ("few_shot_jsonl", "num_few_shot"):
        if other in args:
            imported.unmapped[f"{other}: few-shot examples are not part of a question"] += 1
    try:
        rows = list(jsonl_rows(samples, imported, "samples file"))
    except LfsPointer as pointer:
        imported.skip(samples, 1, f"eval {name}: {pointer}")
        return
    for line, row in rows:
        _sample(name, template, scoring, samples, line, row, imported, ids)


def _sample(
    name: str,
    template: str | None,
    scoring: str | None,
    samples: Path,
    line: int,
    row: dict[str, object],
    imported: Imported,
    ids: QuestionIds,
) -> None:
    """One sample of eval `name` (`template`: its basic class, None for a model-graded one)."""
    prompt = chat_text(row.get("input"))
    golds = _ideals(row.get("ideal"))
    if prompt is None or not prompt.strip():
        imported.skip(samples, line, "no `input` text or chat list")
        return
    if not golds:
        imported.skip(samples, line, "no `ideal` answer to grade against")
        return
    imported.mapped["input -> prompt"] += 1
    imported.mapped["ideal[0] -> gold"] += 1
    accept = tuple(dict.fromkeys(g for g in golds[1:] if g.strip() and g != golds[0]))
    if accept:
        imported.mapped["ideal[1:] -> accept"] += 1
    if scoring is not None:
        imported.mapped["modelgraded_spec's grading instruction -> scoring"] += 1
    check = closed_check(golds[0], letters=template == "Match") if template else None
    if check is None and template == "Match":  # Match: the answer starts with an ideal
        check = text_check(golds, how="prefix")
    if check is not None:
        imported.mapped[f"{template} on a closed ideal -> match {check.kind}"] += 1
    elif template is not None:
        imported.unmapped[f"{template}'s string test: T1 and the judge grade instead"] += 1
    question = ImportedQuestion(
        id=ids.make(f"{name}.{line}"),
        prompt=prompt,
        gold=golds[0],
        origin=f"{samples.name}:{line}",
        accept=accept,
        scoring=scoring,
        match=check,
    )
    imported.add(name, question)


def _ideals(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        texts = [str(v) for v in value if isinstance(v, str | int | float) and not isinstance(v, bool)]
        return texts if texts and texts[0].strip() else []
    return []


def _modelgraded_scoring(
    args: dict[object, object], registry: Path, imported: Imported, name: str
) -> str | None:
    """A model-graded eval's grading instruction, as a `scoring` text."""
    spec_name = args.get("modelgraded_spec")
    spec_file = inside_file(f"modelgraded/{spec_name}.yaml", registry) if isinstance(spec_name, str) else None
    if spec_file is None:
        imported.unmapped[f"eval {name}: modelgraded_spec {spec_name!r} not found in the registry"] += 1
        return None
    document = yaml_document(spec_file, "model-graded spec")
    spec = document.get(spec_name) if isinstance(document, dict) else None
    prompt = spec.get("prompt") if isinstance(spec, dict) else None
    if not isinstance(prompt, str):
        imported.unmapped[f"eval {name}: modelgraded_spec {spec_name!r} has no prompt"] += 1
        return None
    instruction = prompt.partition("[END DATA]")[2].strip() or prompt.strip()
    spec_args = args.get("modelgraded_spec_args")
    criteria = spec_args.get("criteria") if isinstance(spec_args, dict) else None
    if criteria is None and isinstance(spec, dict) and isinstance(spec.get("args"), dict):
        criteria = spec["args"].get("criteria")
    if isinstance(criteria, dict):
        instruction += "\n\nCriteria:\n" + "\n".join(f"- {text}" for text in criteria.values())
    imported.unmapped[f"modelgraded_spec {spec_name}: its choice letters; tabench's verdict grades"] += 1
    return instruction
