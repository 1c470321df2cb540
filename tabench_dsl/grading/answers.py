"""The answers files: JSONL, CSV or Inspect AI logs, one (system, question, answer) a record, read
as a stream.

The reader is chosen by the file's suffix: `.csv` is CSV, `.eval` and `.json` are Inspect AI logs
(read through `inspect_log`, which alone imports `inspect_ai`, from the optional `inspect` extra),
a `.json` file that starts as promptfoo's `eval -o` output is a promptfoo results file
(`promptfoo_results`), a `.json` or `.jsonl` file that starts as OpenAI's hosted Evals output
items do is read as their answers (`core.evals_output_items`, the format's one reader, shared
with `tabench import openai-evals`), anything else is JSONL. Several files are read one after the
other as one stream: a (system, question) pair given in two of them is a duplicate like one given
twice in one file.

JSONL holds one `{"system", "question", "answer"}` object per line. CSV (chosen by the `.csv`
extension, read with the standard `csv` module, so RFC 4180 quoting) starts with a header naming the
`system`, `question` and `answer` columns, in any order; a quoted field may span lines.

A record that does not parse, lacks a field, has a non-string field or an empty system or question,
names a question the battery does not have, or repeats a (system, question) pair already given is
reported as `path:line: message` and skipped; the run goes on and the CLI exits 1 at the end. A CSV
record is reported at the line where it starts. An empty answer is graded like any other. Blank
lines are ignored. Keys (JSONL) or columns (CSV) other than the three are ignored, with one warning
naming them (not one per line: a file exported with an `id` on every line would otherwise bury the
real problems). The file is never loaded whole: grading
100,000 answers holds one record at a time (plus the set of pairs seen, to catch duplicates).
A resumed grading of one JSONL file keeps what reading it found (`answers_scan`), and the next
resume over the same bytes replays that instead of decoding the file again.

JSONL lines are decoded by `jsonl.decode_line`: a byte order mark is dropped, and bytes that are not
UTF-8 or a lone surrogate escape are reported as `path:line:col: message`, at the fault. A CSV file
may start with a byte order mark too; its bytes that are not UTF-8 are reported the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path

import msgspec

from ..core.evals_output_items import is_output_items, naming_hint, output_answers
from ..core.jsonl import BadLine, decode_line, strip_bom
from ..core.records import Answer
from ..store.key_cells import KEY_BASE
from ..store.pair_set import FirstSeen, pair_keys
from .answers_csv import FIELDS, CsvRows, is_csv
from .answers_halves import HalfRead, SecondHalf, line_blocks
from .answers_parts import AnswerProblem, DoneFilter, empty_field
from .answers_scan import Chunk, Note, ScanRecorder, kept_scan, scan_items, scannable
from .inspect_log import is_inspect_log, log_rows
from .log_bounds import LogRejected, check_log
from .promptfoo_results import is_promptfoo_results, result_rows
from .resume_skip import ResumeSkip

_decoder = msgspec.json.Decoder(Answer)


class _StrictAnswer(Answer, frozen=True, forbid_unknown_fields=True):
    """`Answer` that rejects other keys: decoding with it first keeps the common line (no other
    key) one decode; only a line it rejects is decoded again to name its keys."""


_strict_decoder = msgspec.json.Decoder(_StrictAnswer)
#: A block of lines decoded in one call, as one JSON array (`_all_passed_over`).
_block_decoder = msgspec.json.Decoder(list[_StrictAnswer])
#: Bytes of a JSONL answers file read as one block of lines (about 4,000 answers).
BLOCK_BYTES = 1 << 20
_keys_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])


class AnswerReader:
    """Iterate the good answers of `path` (a file, or a sequence of files read in turn); bad lines
    go to `on_problem` and are counted.

    `questions` is the set of question ids the battery knows. Warnings (keys that are ignored) go to
    `on_warning`; they do not count as bad lines. `system_from` and `question_from` say where an
    Inspect log's system and question come from (`inspect_log.log_rows`). `done`, when given,
    takes `--resume`'s done pairs out as they are read (`DoneFilter`), so a resumed run pays
    nothing more for them. `keep_scans` (with `done`, one JSONL file): keep a scan of the file read
    to its end, or replay the one kept for the same bytes (`answers_scan`). Iterate once.
    """

    def __init__(
        self,
        path: str | Path | Sequence[str | Path],
        questions: Collection[str],
        *,
        on_problem: Callable[[AnswerProblem], None] | None = None,
        on_warning: Callable[[AnswerProblem], None] | None = None,
        system_from: str | None = None,
        question_from: str | None = None,
        done: DoneFilter | None = None,
        keep_scans: bool = False,
    ) -> None:
        self.paths = [str(path)] if isinstance(path, str | Path) else [str(p) for p in path]
        #: The file being read (the first before reading starts); problems are reported in it.
        self.path = self.paths[0] if self.paths else ""
        self._index = 0  # its place in `paths`
        self.system_from = system_from
        self.question_from = question_from
        self._done = done
        self.passed_over = None if done is None else done.passed_over
        self.passed_over_all = None if done is None else done.passed_over_all
        self.questions = questions
        self.on_problem = on_problem
        self.on_warning = on_warning
        #: How many lines were skipped as bad.
        self.problems = 0
        #: How many good answers were yielded.
        self.count = 0
        #: The ignored keys (or CSV columns) already warned about.
        self.unknown_keys: set[str] = set()
        #: How many Inspect logs were not read at all (out of bounds or unreadable): exit 2.
        self.unreadable_logs = 0
        #: Each name's number in a pair's key (`_key`): `done.numbers`, then new names' after.
        self._numbers: dict[str, int] = dict((None if done is None else done.numbers) or {})
        #: The done pairs' keys, whose rows the pairs seen are laid out in (a byte a pair).
        self._pair_cells = None if done is None else done.cells
        self._good: dict[str, str] | None = None
        self.keep_scans = (
            keep_scans and done is not None and len(self.paths) == 1 and scannable(self.paths[0])
        )
        self._recorder: ScanRecorder | None = None

    def _report(self, line: int, message: str, col: int | None = None) -> None:
        self.problems += 1
        if self._recorder is not None:
            self._recorder.note(line, message, col, warning=False)
        if self.on_problem is not None:
            self.on_problem(AnswerProblem(self.path, line, message, col))

    def _unknown(self, line: int, keys: Iterable[str]) -> None:
        new = sorted(set(keys) - self.unknown_keys)
        if not new:
            return
        self.unknown_keys.update(new)
        names = ", ".join(repr(key) for key in new)
        message = f"unknown key(s) {names} ignored (warned once, not on every line that has them)"
        if self._recorder is not None:
            self._recorder.note(line, message, None, warning=True)
        if self.on_warning is not None:
            self.on_warning(AnswerProblem(self.path, line, message))

    def __iter__(self) -> Iterator[Answer]:
        # pair key (`_key`) -> where it was first given (`_where`): ints, not the tuples a
        # million pairs would hold in a resumed run's memory and hash again at each lookup.
        seen = FirstSeen(self._pair_cells)
        for index, path in enumerate(self.paths):
            self.path = path
            self._index = index
            self.unknown_keys = set()  # each file warns of its own
            if is_csv(path) or is_inspect_log(path) or is_promptfoo_results(path) or is_output_items(path):
                yield from self._answers(seen)
            elif self.keep_scans and (kept := kept_scan(path, self.questions)) is not None:
                yield from self._scanned_answers(scan_items(*kept))
            else:
                self._recorder = ScanRecorder(path, self.questions) if self.keep_scans else None
                yield from self._jsonl_answers(seen)
                if self._recorder is not None:  # the file read to its end
                    self._recorder.keep()

    def _rows(self) -> Iterator[tuple[int, Answer]]:
        """The numbered rows of the CSV file or Inspect log being read (JSONL: `_jsonl_answers`)."""
        if is_csv(self.path):
            return iter(CsvRows(self.path, self._report, self._unknown))
        if is_promptfoo_results(self.path):
            return self._promptfoo_rows()
        if is_output_items(self.path):
            return self._output_item_rows()
        return self._log_rows()

    def _log_rows(self) -> Iterator[tuple[int, Answer]]:
        """The rows of an Inspect log; a log that cannot be read is reported at its fault."""
        rows = log_rows(
            self.path, system_from=self.system_from, question_from=self.question_from, report=self._report
        )
        try:
            yield from rows
        except LogRejected as bad:
            self.unreadable_logs += 1
            self._report(
                bad.line, f"not graded, not an Inspect log it is safe to read: {bad.message}", bad.col
            )

    def _promptfoo_rows(self) -> Iterator[tuple[int, Answer]]:
        """The rows of a promptfoo results file; a file that cannot be read is reported."""
        try:
            yield from result_rows(self.path, report=self._report)
        except LogRejected as bad:
            self.unreadable_logs += 1
            self._report(
                bad.line,
                f"not graded, not a promptfoo results file it is safe to read: {bad.message}",
                bad.col,
            )

    def _output_item_rows(self) -> Iterator[tuple[int, Answer]]:
        """The answers of a hosted Evals output items file, held to a log's bounds before it is
        read whole; a row without an answer is reported, a file that cannot be read too."""
        try:
            check_log(self.path)
            with open(self.path, "rb") as f:
                text = f.read().decode("utf-8-sig")
            rows = list(output_answers(self.path, text))
        except (LogRejected, UnicodeDecodeError, ValueError, RecursionError) as bad:
            self.unreadable_logs += 1
            line, col = (bad.line, bad.col) if isinstance(bad, LogRejected) else (1, None)
            reason = bad.message if isinstance(bad, LogRejected) else str(bad).splitlines()[0][:200]
            self._report(line, f"not graded, not hosted Evals output items it is safe to read: {reason}", col)
            return
        hint = naming_hint(
            self.path, [found for _, found in rows if not isinstance(found, str)], self.questions
        )
        if hint is not None and self.on_warning is not None:
            self.on_warning(AnswerProblem(self.path, 1, hint))
        for line, found in rows:
            if isinstance(found, str):
                self._report(line, found)
            else:
                yield line, found

    def _key(self, system: str, question: str) -> int:
        number = self._numbers.setdefault  # each name numbered on first sight
        return number(system, len(self._numbers)) * KEY_BASE + number(question, len(self._numbers))

    def _answers(self, seen: FirstSeen) -> Iterator[Answer]:
        passed_over = self.passed_over
        for number, answer in self._rows():
            # `str.strip` first: the common answer has both names, and is tested without a call.
            if not (answer.system.strip() and answer.question.strip()):
                self._report(number, f"bad answer: `{empty_field(answer)}` is empty")
                continue
            if answer.question not in self.questions:
                self._report(number, f"unknown question {answer.question!r}")
                continue
            pair = (answer.system, answer.question)
            key = self._key(*pair)
            first = seen.get(key)
            if first is not None:
                self._duplicate(number, pair, first)
                continue
            seen[key] = number * len(self.paths) + self._index
            self.count += 1
            if passed_over is not None and passed_over(answer.system, answer.question):
                continue
            yield answer

    def _duplicate(self, number: int, pair: tuple[str, str], first: int) -> None:
        first_line, index = divmod(first, len(self.paths))
        first_path = self.paths[index]
        at = f"line {first_line}" if first_path == self.path else f"{first_path}:{first_line}"
        self._report(
            number, f"duplicate answer of system {pair[0]!r} to question {pair[1]!r} (first at {at}); skipped"
        )

    def _jsonl_answers(self, seen: FirstSeen) -> Iterator[Answer]:
        """The good answers of the JSONL file being read, with `_answers`'s checks in its order, in
        one loop: no generator between the lines and the checks (a resume reads a million lines
        only to skip them)."""
        passed_over, questions, path = self.passed_over, self.questions, self.path
        files, index = len(self.paths), self._index
        #: One string per distinct name: each line decodes its own copies, which a million pairs
        #: kept in `seen` would otherwise hold.
        names: dict[str, str] = {}
        halves = isinstance(self._done, ResumeSkip) and files == 1
        half = SecondHalf.begin(path, self.blocks_passed_over) if halves else None
        with open(path, "rb") as f:
            read = 0  # lines before the block
            for block in line_blocks(f, BLOCK_BYTES, half, lambda lines: self._take_half(half, seen, lines)):
                if self._recorder is not None:
                    self._recorder.read(block, read + 1)
                done = self.passed_over_all is not None and self._all_passed_over(block, read, seen)
                start, read = read + 1, read + len(block)
                if done:
                    continue
                for number, raw in enumerate(block, start=start):
                    if raw[:1] != b"{":  # as `numbered_lines`: a line starting so has no BOM, isn't blank
                        raw = strip_bom(raw)
                        if not raw.strip():
                            continue
                    decoded = _strict_answer(raw)
                    answer = (
                        self._loose_answer(number, raw, decoded) if isinstance(decoded, BadLine) else decoded
                    )
                    if answer is None:
                        continue
                    system, question = answer.system, answer.question
                    if not (system.strip() and question.strip()):
                        self._report(number, f"bad answer: `{empty_field(answer)}` is empty")
                        continue
                    if question not in questions:
                        self._report(number, f"unknown question {question!r}")
                        continue
                    pair = system, question = (
                        names.setdefault(system, system),
                        names.setdefault(question, question),
                    )
                    key = self._key(system, question)
                    first = seen.get(key)
                    if first is not None:
                        self._duplicate(number, pair, first)
                        continue
                    seen[key] = number * files + index
                    self.count += 1
                    if self._recorder is not None:
                        self._recorder.good(number, system, question)
                    if passed_over is None or not passed_over(system, question):
                        yield Answer(system, question, answer.answer)

    def blocks_passed_over(self, cut: int) -> HalfRead | None:
        """In a forked child (`answers_halves`): what the lines from byte `cut` on add when each
        block of them is done answers (`_all_passed_over`); None at the first block that is not."""
        done, path = self._done, self.path
        assert isinstance(done, ResumeSkip)
        done.on_skipped = lambda count: None  # the reader tells the progress bar, once it takes them
        counted, skipped, named = self.count, done.count, len(self._numbers)
        seen, recording = FirstSeen(self._pair_cells), self._recorder is not None
        recorder = self._recorder = ScanRecorder(path, self.questions, cut) if recording else None
        with open(path, "rb") as f:
            f.seek(cut)
            read = 0
            while block := f.readlines(BLOCK_BYTES):
                if recorder is not None:
                    recorder.read(block, read + 1)
                if not self._all_passed_over(block, read, seen):
                    return None
                read += len(block)
        if len(self._numbers) != named:  # keys of names this reader numbers otherwise: read there
            return None
        columns = None if recorder is None else recorder.columns()
        rows = None if done.coverage is None else done.coverage.rows()
        return HalfRead(read, self.count - counted, seen.blocks(), done.count - skipped, rows, columns)

    def _take_half(self, half: SecondHalf | None, seen: FirstSeen, lines: int) -> bool:
        """Take what the second half's child read (`blocks_passed_over`) after the `lines` read here,
        when it read only done answers, none of a pair given here; False: read it here."""
        found = None if half is None else half.result()
        if found is None or not all(seen.isdisjoint(keys) for keys, _, _ in found.blocks):
            return False
        for keys, first, step in found.blocks:
            seen.note_block(keys, first + lines * step, step)
        self.count += found.answers
        assert isinstance(self._done, ResumeSkip) and half is not None
        self._done.absorb(found.skipped, found.rows)
        if self._recorder is not None and found.columns is not None:
            self._recorder.absorb(*found.columns, start=half.cut)
        return True

    def _all_passed_over(self, block: list[bytes], number: int, seen: FirstSeen) -> bool:
        """True when every line of `block` (lines `number` + 1 on) is a good answer with no other
        key, the first of its pair, and `passed_over_all` takes every pair out: then each is noted
        as the line loop notes it (its pair seen, the answer counted as read) in a few calls over
        the block, not a loop of Python over its lines. False, nothing noted, when any line is not
        such an answer: the block is then read line by line, its lines checked and reported as
        ever. A resume with nothing left to grade reads its answers this way.

        The lines are decoded as one JSON array. Each starts with `{`, and an answer's values are
        strings, which cannot hold a line break, so each line is one element or the array does not
        decode as answers: as many answers as lines means each line decoded alone to its own."""
        joined = b",".join(block)
        # Every line but the last ends in its one line break: each starts with `{` when each
        # break but the last's is followed by one.
        if joined[:1] != b"{" or joined.count(b"\n,{") != len(block) - 1:
            return False
        try:
            answers = _block_decoder.decode(b"[" + joined + b"]")
        except (msgspec.DecodeError, RecursionError):
            return False
        if len(answers) != len(block):
            return False
        systems = [answer.system for answer in answers]
        questions = [answer.question for answer in answers]
        if not all(map(str.strip, set(systems))):
            return False  # an empty name: reported by the line loop
        if self._good is None:  # the battery's questions with a name (not only spaces)
            self._good = {question: question for question in self.questions if question.strip()}
        try:  # one string per distinct question, the battery's own, as the line loop keeps them
            questions = list(map(self._good.__getitem__, questions))
        except KeyError:
            return False  # an empty or unknown question: reported by the line loop
        keys = pair_keys(self._numbers, systems, questions)
        if keys and min(keys) < 0:  # a name seen for the first time: numbered as `_key` would
            for name in sorted(set(questions).union(systems).difference(self._numbers)):
                self._numbers[name] = len(self._numbers)
            keys = pair_keys(self._numbers, systems, questions)
        if len(set(keys)) != len(keys) or not seen.isdisjoint(keys):
            return False  # a duplicate: reported by the line loop
        assert self.passed_over_all is not None
        if not self.passed_over_all(keys, systems, questions):
            return False
        files = len(self.paths)
        first = (number + 1) * files + self._index  # where each line is, as the line loop keeps it
        seen.note_block(keys, first, files)
        self.count += len(keys)
        if self._recorder is not None:
            self._recorder.good_block(systems, questions)
        return True

    def _scanned_answers(self, items: Iterator[Note | Chunk]) -> Iterator[Answer]:
        """The answers of a file's kept scan still to grade (each read from its offset); its
        problems and warnings reported again where they were, its done answers noted in chunks."""
        passed_over, passed_over_all = self.passed_over, self.passed_over_all
        assert passed_over_all is not None
        for item in items:
            if isinstance(item, Note):
                if item.warning:
                    if self.on_warning is not None:
                        self.on_warning(AnswerProblem(self.path, item.line, item.message))
                else:
                    self._report(item.line, item.message, item.col)
                continue
            self.count += len(item.systems)
            keys = pair_keys(self._numbers, item.systems, item.questions)
            if passed_over_all(keys, item.systems, item.questions):
                continue
            for i, pair in enumerate(zip(item.systems, item.questions, strict=True)):
                if passed_over is None or not passed_over(*pair):
                    yield item.answer(i)

    def _loose_answer(self, number: int, raw: bytes, bad: BadLine) -> Answer | None:
        """The answer of a line the strict decoder refused: one with other keys (warned of once),
        or None once the line is reported as bad."""
        if bad.shape and "unknown field" in bad.message:
            try:
                answer = decode_line(_decoder, raw)
                keys = decode_line(_keys_decoder, raw)
            except BadLine as again:
                bad = again
            else:
                self._unknown(number, set(keys) - set(FIELDS))
                return answer
        kind = "bad answer" if bad.shape else "not a JSON object"
        self._report(number, f"{kind}: {bad.message}", bad.col)
        return None


def _strict_answer(raw: bytes) -> Answer | BadLine:
    """Line `raw` decoded as an answer with no other key, or why not (`decode_line`'s `BadLine`).
    A line that starts as an object is first decoded without `decode_line`'s calls; one that
    fails is decoded again through it, so a bad line is worded exactly as it always was."""
    if raw[:1] == b"{":
        try:
            return _strict_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            pass  # decoded again below, for the words and column `decode_line` gives
    try:
        return decode_line(_strict_decoder, raw)
    except BadLine as bad:
        return bad
