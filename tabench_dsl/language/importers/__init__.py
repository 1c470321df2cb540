"""Batteries from other tools' evals: `tabench import KIND SOURCE...` (docs/migrating.md).

One module per source kind reads its files into an `Imported` (the questions, what was mapped,
what was left behind and the items skipped, `sources`); `battery_text` writes the rubric files
and the manifest; the command (`cli.import_cmd`) writes them through `outputs`. Where it sits:
docs/architecture.md; what each source maps to: docs/migrating.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ...core.errors import UsageError
from .sources import Imported

#: The kinds `tabench import` takes, each with what its SOURCE files are.
KINDS: dict[str, str] = {
    "openai-evals": "a registry eval YAML (evals/registry/evals/NAME.yaml), or a hosted Evals export: "
    "a data-source JSONL and its testing-criteria JSON",
    "promptfoo": "a promptfooconfig.yaml",
    "inspect": "an Inspect AI dataset file (.jsonl or .csv)",
}


def import_sources(
    kind: str,
    sources: list[Path],
    *,
    fields: Mapping[str, str] | None = None,
    evals: Sequence[str] = (),
) -> Imported:
    """Read `sources` as `kind` (one of `KINDS`). `fields` (inspect only) names the column each
    `Sample` field is read from, as Inspect's `FieldSpec` does (`{"input": "question"}`); `evals`
    (openai-evals registry files only) picks the evals to import by name."""
    imported = Imported()
    if evals:
        if kind != "openai-evals" or not all(s.suffix.lower() in (".yaml", ".yml") for s in sources):
            raise UsageError(
                "--eval picks evals of registry eval files: `tabench import openai-evals NAME.yaml`"
            )
        from .openai_evals import import_registry

        import_registry(sources, imported, evals=evals)
        return imported
    if fields:
        if kind != "inspect":
            raise UsageError("--field names a dataset's columns: it is for `tabench import inspect` only")
        from .inspect_dataset import import_dataset

        import_dataset(sources, imported, fields=fields)
        return imported
    _reader(kind, sources)(sources, imported)
    return imported


def _reader(kind: str, sources: list[Path]) -> Callable[[list[Path], Imported], None]:
    if kind == "openai-evals":
        suffixes = {source.suffix.lower() for source in sources}
        if suffixes <= {".yaml", ".yml"}:
            from .openai_evals import import_registry

            return import_registry
        if suffixes <= {".jsonl", ".json"}:
            from .openai_hosted import import_hosted

            return import_hosted
        raise UsageError("openai-evals takes registry eval YAML files, or a hosted export's .jsonl and .json")
    if kind == "promptfoo":
        from .promptfoo import import_config

        return import_config
    if kind == "inspect":
        from .inspect_dataset import import_dataset

        return import_dataset
    raise UsageError(f"unknown import kind {kind!r}; kinds are " + ", ".join(KINDS))
