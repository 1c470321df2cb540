"""Inspect AI evaluation logs (`.eval`, `.json`) read as answers, with Inspect's own log API.

Each sample of a log is one answer:

    system    the log's model (`openai/gpt-x`), or the value of `system_from`: a field of the
              sample's metadata, else a task argument of that name
    question  the sample id, or the value of the sample metadata field `question_from`
    answer    the sample's final completion (`sample.output.completion`): the text blocks of the
              final message as Inspect joins them, or the answer a solver set; never the message's
              reasoning blocks (`ContentReasoning`: `reasoning_content`, Anthropic thinking, or a
              `<think>` block Inspect parsed out). A `<think>` block left in the text is cut when
              the answer is graded, as any answer's is (`core.reasoning`)

Epochs: a log run with more than one epoch holds each sample once per epoch; tabench grades one
answer per (system, question) pair (a second would be skipped as a duplicate), so each later
epoch's answers become a system of their own, `SYSTEM#epochN` (`epoch_system`). Epoch 1 keeps the
system as it is, so a log of one epoch and the first epoch of a log of several name the same
system, and `tabench_dsl.inspect.battery_scorer` names the systems of its records the same way.

A sample is reported (and skipped) as a line of a JSONL file would be, at `path:N`, N being its
position in the log (1-based): a sample Inspect recorded as an error, a field `system_from` or
`question_from` names that it lacks or holds something other than text or a number. `inspect_ai`
is imported here alone, when a log is read: without the `inspect` extra, reading one is a usage
error naming it (`core.extras`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.extras import require
from ..core.records import Answer

#: The suffixes read as Inspect logs.
LOG_SUFFIXES = (".eval", ".json")
PURPOSE = "reading Inspect AI logs"


def is_inspect_log(path: str | Path) -> bool:
    """True when `path` is read as an Inspect log (`.eval` or `.json`, in any case)."""
    return Path(path).suffix.lower() in LOG_SUFFIXES


def _log_api() -> Any:
    return require("inspect_ai.log", extra="inspect", purpose=PURPOSE)


def _outside_the_loop(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, called in a thread of its own when this thread runs an event
    loop. Inspect's synchronous log API runs a coroutine to completion, which inside a running loop
    it can do only by patching that loop (and uvloop's cannot be patched); the answers are read in
    grading's loop, which waits for the read as it would for reading a JSONL line."""
    import asyncio
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args, **kwargs).result()


def logs_in_folder(folder: Path) -> list[Path]:
    """The Inspect logs in `folder` and below, as Inspect lists them (`list_eval_logs`), in name
    order so that a rerun reads them in the same order."""
    from urllib.parse import unquote, urlparse

    infos = _outside_the_loop(_log_api().list_eval_logs, str(folder), recursive=True)
    paths = []
    for info in infos:
        name = info.name
        paths.append(Path(unquote(urlparse(name).path)) if name.startswith("file:") else Path(name))
    return sorted(paths)


def epoch_system(system: str, epoch: int) -> str:
    """The system an answer of epoch `epoch` is graded as: `system` for the first epoch,
    `system#epochN` for a later one."""
    return system if epoch <= 1 else f"{system}#epoch{epoch}"


def _text(value: object) -> str | None:
    """A metadata or task-argument value as a name: text as it is, a number as written; None for
    anything else (a list, a mapping, a boolean, null)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def log_rows(
    path: str | Path,
    *,
    system_from: str | None = None,
    question_from: str | None = None,
    report: Callable[[int, str], None],
) -> Iterator[tuple[int, Answer]]:
    """The answers of the Inspect log at `path`, each with its position in the log; a sample that
    gives none is passed to `report(position, message)` and skipped."""
    log = _outside_the_loop(_log_api().read_eval_log, str(path))
    task_args: Mapping[str, Any] = log.eval.task_args or {}
    for number, sample in enumerate(log.samples or (), start=1):
        where = f"sample {sample.id!r} (epoch {sample.epoch})"
        if sample.error is not None:
            message = sample.error.message.splitlines()[0] if sample.error.message else "an error"
            report(number, f"{where} ended in an error in Inspect ({message}); not graded")
            continue
        metadata: Mapping[str, Any] = sample.metadata or {}
        system: str | None = str(log.eval.model)
        if system_from is not None:
            if system_from in metadata:
                system = _text(metadata[system_from])
            elif system_from in task_args:
                system = _text(task_args[system_from])
            else:
                report(number, f"{where}: no metadata field or task argument {system_from!r} (--system-from)")
                continue
            if system is None:
                report(number, f"{where}: {system_from!r} is not text or a number (--system-from)")
                continue
        question = str(sample.id)
        if question_from is not None:
            value = _text(metadata[question_from]) if question_from in metadata else None
            if value is None:
                problem = "is not text or a number" if question_from in metadata else "is missing"
                report(number, f"{where}: metadata field {question_from!r} {problem} (--question-from)")
                continue
            question = value
        assert system is not None  # None was reported above
        completion = sample.output.completion
        if not completion and _reasoning_only(sample.output):
            report(number, f"{where}: the completion holds reasoning only, no text; not graded")
            continue
        yield number, Answer(epoch_system(system, sample.epoch), question, completion)


def _reasoning_only(output: Any) -> bool:
    """Whether the final message holds reasoning blocks and no text (a model that spent its token
    budget thinking): said so, rather than as an empty answer."""
    if not output.choices:
        return False
    content = output.choices[0].message.content
    return not isinstance(content, str) and any(part.type == "reasoning" for part in content)


def count_log_samples(path: str | Path) -> int:
    """The samples in the log at `path` (its header's count; an upper bound on its answers), for
    a progress total. Reads the header alone."""
    header = _outside_the_loop(_log_api().read_eval_log, str(path), header_only=True)
    if header.results is not None:
        return int(header.results.total_samples)
    ids = header.eval.dataset.sample_ids
    samples = len(ids) if ids is not None else int(header.eval.dataset.samples or 0)
    return samples * (header.eval.config.epochs or 1)
