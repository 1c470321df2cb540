"""The one check before tabench writes or appends to a file the user names: never over data.

A command that writes a file (`report --html`, `grade --out`, `calibrate --out`, `compile --lock`,
the decisions `view` and `adjudicate` append to) calls `check_output` first. It refuses, with a
usage error naming the path (exit 2), to write:

- over one of the command's own inputs, however it is reached (the same path, a symlink, a hard
  link): `report X.jsonl --html X.jsonl` would otherwise replace the results with the page, and
  `grade --out` may be neither the answers file nor the file a `--judge replay:FILE` reads
  (`grading_inputs`);
- into a folder, a device or a FIFO, or through a symbolic link, dangling or not (the file is then
  opened with `O_NOFOLLOW` too: `core.safe_open`);
- into an existing non-empty file that is not of the kind the command writes, as tabench wrote it:
  an HTML report carrying its marker, a results file, a batch ledger, a decisions file, a lock, a
  reply cache. Appending to any
  other file would mix records into it, and cutting a torn last line (`results.repair_tail`) would
  cut that file's own last line.

A missing or empty file is always fine. Each kind is recognised by a function that reads only the
start of the file (`holds_records`, `report.is_report_file`, ...).

A new folder (`tabench import`'s battery) is checked by `check_new_folder` (missing, or an empty
folder that is no link) and written by `write_new_folder`, each file created new, never through a
link.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from .core.display import shown
from .core.errors import UsageError
from .core.jsonl import BadLine, decode_line

#: Lines `holds_records` reads at most before it decides a file is not of the kind it looks for.
LINES_LOOKED_AT = 64
#: The longest first lines it reads (a record with a 256 KiB answer and its replies fits well).
_LINE_LIMIT = 8 << 20


def check_output(
    path: str | Path,
    *,
    option: str,
    kind: str,
    recognise: Callable[[Path], bool],
    inputs: Mapping[str, str | Path | None] | None = None,
    append: bool = False,
) -> None:
    """Raise `UsageError` unless writing (or, with `append`, appending) to `path` destroys nothing.

    `option` names the path in the message (`--html`); `kind` says what the command writes ("an
    HTML report"); `recognise(path)` is true for an existing file of that kind tabench wrote.
    `inputs` maps a description ("the results file it reads") to each file the command reads.
    """
    path = Path(path)
    where = f"{option} {shown(str(path))}" if option else shown(str(path))
    verb = "append to" if append else "overwrite"
    for role, source in (inputs or {}).items():
        if source is not None and same_file(path, Path(source)):
            raise UsageError(f"{where}: that is {role}; tabench never writes over its input")
    try:
        info = path.lstat()  # a link, dangling or not, is looked at, never through
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{where}: cannot check it: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{where} is a symbolic link; tabench never writes through a link")
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{where} is a folder")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{where} is not a regular file; tabench writes {kind} only to a file")
    if info.st_size and not recognise(path):
        raise UsageError(
            f"{where} exists and is not {kind} written by tabench; refusing to {verb} it "
            "(choose another path, or remove the file first)"
        )


def same_file(a: Path, b: Path) -> bool:
    """True when `a` and `b` are one file, however reached (a link, a hard link); False when one is
    missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def holds_records(path: Path, decoder: msgspec.json.Decoder) -> bool:
    """True when one of the first `LINES_LOOKED_AT` non-blank lines of `path` decodes with
    `decoder`: a file tabench appended those records to. One bad line (edited by hand, or from a
    newer tabench) does not make a results file foreign; a file with none of them is not ours."""
    try:
        with open(path, "rb") as f:
            seen = 0
            while seen < LINES_LOOKED_AT:
                line = f.readline(_LINE_LIMIT)
                if not line:
                    return False
                if not line.strip():
                    continue
                seen += 1
                try:
                    decode_line(decoder, line)  # as the readers decode it (a BOM, deep nesting)
                    return True
                except BadLine:
                    continue
    except OSError:
        return False
    return False


def is_results_file(path: Path) -> bool:
    """True for a results file `tabench grade` wrote (`holds_records` of result records)."""
    from .store.light_records import light_record_decoder

    return holds_records(path, light_record_decoder)


def is_decisions_file(path: Path) -> bool:
    """True for a decisions file `tabench view` or `adjudicate` wrote."""
    from .core.records import decision_decoder

    return holds_records(path, decision_decoder)


def is_lock_file(path: Path) -> bool:
    """True for a `tabench.lock` that `compile --lock` wrote."""
    from .language.lock import read_lock

    try:
        read_lock(path)
    except (UsageError, RecursionError):  # RecursionError: JSON nested deeper than Python recurses
        return False
    return True


def check_results_out(
    path: str | Path, *, option: str, inputs: Mapping[str, str | Path | None] | None = None
) -> None:
    """`check_output` for a results file a command appends records to (`grade`, `calibrate`)."""
    check_output(
        path, option=option, kind="a results file", recognise=is_results_file, inputs=inputs, append=True
    )


def grading_inputs(*, judge: str | None, answers: str | Path | None = None) -> dict[str, str | Path | None]:
    """The files a grading command (`grade`, `calibrate`) reads, for `check_results_out`'s `inputs`:
    the answers file, and the results file a `--judge replay:FILE` replays (appending the new
    records to it would have the judge replay its own output)."""
    inputs: dict[str, str | Path | None] = {"the answers file": answers}
    if judge is not None and judge.startswith("replay:"):
        inputs["the results file --judge replays"] = judge.removeprefix("replay:")
    return inputs


def is_ledger_file(path: Path) -> bool:
    """True for a batch ledger `grade --batch` wrote (`holds_records` of ledger entries)."""
    from .grading.batch.ledger import entry_decoder

    return holds_records(path, entry_decoder)


def check_ledger_out(results: str | Path) -> None:
    """`check_output` for the batch ledger beside `results` that `grade --batch` appends to (and
    whose torn last line it cuts): never a file of another kind, nor a link."""
    from .grading.batch.ledger import ledger_path

    check_output(
        ledger_path(results),
        option="",
        kind="a batch ledger",
        recognise=is_ledger_file,
        inputs={"the results file": results},
        append=True,
    )


def is_cache_file(path: Path) -> bool:
    """True for an SQLite database, as the reply cache is (its first 16 bytes say so)."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def check_cache_out(path: str | Path) -> None:
    """`check_output` for the reply cache a grading writes replies to."""
    check_output(path, option="--cache", kind="a reply cache", recognise=is_cache_file, append=True)


def check_decisions_out(path: str | Path, *, results: str | Path) -> None:
    """`check_output` for the decisions file beside `results` that `view` and `adjudicate` append to."""
    check_output(
        path,
        option="",
        kind="a decisions file",
        recognise=is_decisions_file,
        inputs={"the results file": results},
        append=True,
    )


def check_new_folder(path: str | Path, *, option: str) -> None:
    """Raise `UsageError` unless `path` may become a new battery folder (`tabench import`): a
    missing name, or an empty folder that is no link; never a file, a link or a folder with
    anything in it. Its parent must exist."""
    path = Path(path)
    where = f"{option} {shown(str(path))}"
    try:
        info = path.lstat()
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise UsageError(f"{where}: its parent folder does not exist") from None
        return
    except OSError as exc:
        raise UsageError(f"{where}: cannot check it: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{where} is a symbolic link; tabench never writes through a link")
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{where} exists and is not a folder")
    with os.scandir(path) as entries:
        empty = next(entries, None) is None
    if not empty:
        raise UsageError(
            f"{where} is not empty; tabench import writes a new battery only into an empty folder"
        )


def write_new_folder(folder: str | Path, texts: Mapping[str, str]) -> None:
    """Create `folder` (checked by `check_new_folder` first) and write each text at its relative
    path in it: every subfolder made here, every file created new and never through a link
    (`core.safe_open.open_new`)."""
    from .core.safe_open import open_new

    folder = Path(folder)
    os.makedirs(folder, exist_ok=True)
    for relative, text in texts.items():
        target = folder / relative
        if not target.parent.is_dir():
            os.makedirs(target.parent)
        with os.fdopen(open_new(target, 0o644), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
