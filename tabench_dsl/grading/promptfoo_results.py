"""promptfoo results files (`promptfoo eval -o out.json`) read as answers.

Each result is one answer:

    system    the result's provider (`provider.label`, else `provider.id`: `openai:gpt-5`); a
              results file too old to name providers names its system by its file name
    question  `test-N` (N: the result's `testIdx` + 1), with `.prompt-M` when the file holds more
              than one prompt template (M: the template's place among the distinct ones, 1-based):
              the ids `tabench import promptfoo` gives the same config's questions. A file too old
              to carry `testIdx` numbers its tests by the first appearance of their vars
    answer    `response.output` (text; any other output as its JSON)

Both shapes promptfoo writes are read: `{"results": [...]}` (before version 3) and `{"evalId",
"results": {"version": 3, "prompts": [...], "results": [...]}}`. A result that ended in an
error with no output, or has no output, is reported at its position (1-based) and skipped. The
file is held to the bounds of a JSON log (`log_bounds.check_log`: size, nesting) before it is
parsed whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.records import Answer
from .log_bounds import LogRejected, check_log

#: How much of a `.json` file is read to tell whether it is a promptfoo results file.
_HEAD_BYTES = 4096
#: The start of a promptfoo results file: an object whose first key is `evalId` or `results`.
_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"(?:evalId|results)"\s*:')


def is_promptfoo_results(path: str | Path) -> bool:
    """True when `path` is a `.json` file that starts as promptfoo writes its results."""
    if Path(path).suffix.lower() != ".json":
        return False
    try:
        with open(path, "rb") as f:
            return _HEAD.match(f.read(_HEAD_BYTES)) is not None
    except OSError:
        return False


def result_rows(path: str | Path, *, report: Callable[[int, str], None]) -> Iterator[tuple[int, Answer]]:
    """The answers of the results file at `path`, each with its position; `LogRejected` for a file
    out of bounds or not of promptfoo's shape."""
    check_log(path)
    try:
        with open(path, "rb") as f:
            document = json.loads(f.read().decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        raise LogRejected(f"not JSON ({str(exc)[:200]})") from None
    results, prompts = _results(document)
    templates = _prompt_numbers(results, prompts)
    several = len(set(templates.values())) > 1
    tests: dict[str, int] = {}
    fallback_system = Path(path).stem
    for position, result in enumerate(results, start=1):
        if not isinstance(result, dict):
            report(position, "a result that is not an object")
            continue
        output = (
            (result.get("response") or {}).get("output") if isinstance(result.get("response"), dict) else None
        )
        if output is None:
            report(position, f"no output ({_first_line(result.get('error')) or 'no response'}); not graded")
            continue
        test = result.get("testIdx")
        if not isinstance(test, int):
            test = tests.setdefault(json.dumps(result.get("vars"), sort_keys=True), len(tests))
        question = f"test-{test + 1}"
        if several:
            question += f".prompt-{templates[_prompt_key(result, prompts)]}"
        answer = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        yield position, Answer(_provider(result) or fallback_system, question, answer)


def _results(document: Any) -> tuple[list[Any], list[Any]]:
    body = document.get("results") if isinstance(document, dict) else None
    if isinstance(body, list):
        return body, []
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        prompts = body.get("prompts")
        return body["results"], prompts if isinstance(prompts, list) else []
    raise LogRejected("not a promptfoo results file (no `results` list)")


def _prompt_key(result: dict[str, Any], prompts: list[Any]) -> str:
    """The template a result was asked with: its prompt's `raw` in the file's prompts list (v3:
    one entry per prompt and provider), else the result's own `prompt.display` or `label`."""
    index = result.get("promptIdx")
    if isinstance(index, int) and 0 <= index < len(prompts) and isinstance(prompts[index], dict):
        return str(prompts[index].get("raw"))
    prompt = result.get("prompt")
    if isinstance(prompt, dict):
        return str(prompt.get("display") or prompt.get("label") or prompt.get("raw"))
    return str(prompt)


def _prompt_numbers(results: list[Any], prompts: list[Any]) -> dict[str, int]:
    """Each distinct template's number (1-based), in the order the file names them."""
    numbers: dict[str, int] = {}
    for entry in prompts:
        if isinstance(entry, dict):
            numbers.setdefault(str(entry.get("raw")), len(numbers) + 1)
    for result in results:
        if isinstance(result, dict):
            numbers.setdefault(_prompt_key(result, prompts), len(numbers) + 1)
    return numbers


def _provider(result: dict[str, Any]) -> str | None:
    provider = result.get("provider")
    if isinstance(provider, dict):
        name = provider.get("label") or provider.get("id")
        return str(name) if name else None
    return provider if isinstance(provider, str) and provider else None


def _first_line(value: object) -> str:
    return str(value).strip().splitlines()[0][:200] if value else ""
