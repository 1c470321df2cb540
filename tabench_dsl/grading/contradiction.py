"""The contradiction check (docs/language.md section 8.4): does a judge's reason conclude pass or fail?

A `fail` verdict whose reason is pass-shaped gets one stern retry; a `pass` whose reason is
fail-shaped is recorded as a warning. Every phrase list lives in the scorer's YAML (`contradiction:`);
this module is only the algorithm (the lists are checked where the scorer is loaded,
`language.scorer`):

1. Normalise: casefold, curly quotes to straight, `isn't` -> `is not`, hyphens between words to
   spaces (`full-credit` reads as `full credit`); blank out quoted text (`says "correct order"`
   quotes the answer) and `neutral` phrases (`the correct answer is ...` describes the gold, it
   does not judge the answer).
2. Split into clauses at sentence marks, commas, colons, dashes, and before contrast words
   (`but`, `however`) and concessive words (`although`, `though`).
3. Give each clause a polarity. A fail phrase (`wrong`, `fails`, `missing`) makes it fail unless it
   is negated (`nothing missing`) or the clause has a mitigator (`minor`); a pass phrase makes it
   pass unless a negator or qualifier stands within `window` words before it (`not acceptable`,
   `partially correct`, `would be correct`) or a qualifier right after it (`correct if`,
   `correct in part`): a negated or qualified pass phrase makes the clause fail. Fail wins in a clause.
4. Conclude. A contrast word starts a new segment, and the last segment that concludes anything
   decides (`wrong at first glance, but actually correct`; `correct names but wrong order`).
   Within a segment, reading clauses in order, the first polarity sets the state and a later fail
   wins over a pass (an explicit fail conclusion wins: `right idea, wrong function name`); a
   leading concession (`although phrased differently, the answer is correct`) counts only when
   nothing else concludes; a trailing concession (`correct, though the order is wrong`) can bring
   a fail but never a pass.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple

from ..core.scorer import ContradictionSettings, phrase_regex
from .timed_regex import TimedPattern, time_budget

Polarity = Literal["pass", "fail"] | None
ClauseKind = Literal["main", "contrast", "concession"]
#: The time the scorer's phrase patterns get to read one reason (seconds).
REASON_SECONDS = 0.5

#: Contractions spelled out, so `n't` reads as the negator `not`.
_CONTRACTIONS = (
    (re.compile(r"\bcan'?t\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"n't\b"), " not"),
)
#: Quoted text: "...", `...`, or '...' opened and closed outside a word (not an apostrophe). What
#: stands in quotes is the answer's or the gold's wording, not the judge's conclusion.
_QUOTED = re.compile(r'"[^"\n]*"|`[^`\n]*`|(?<!\w)\'[^\'\n]*\'(?!\w)')
#: A hyphen joining two words (`full-credit`, `borderline-acceptable`).
_WORD_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")
#: Clause breaks: sentence marks and colons before a space or the end, commas, semicolons, dashes.
_BREAK = re.compile(r"[.!?:]+(?=\s|$)|[;,\n]|\s[-\u2013\u2014]+\s|[\u2013\u2014]")
#: A sentence end (a clause after it starts a new sentence).
_SENTENCE_END = re.compile(r"[.!?;\n]")
_WORD = re.compile(r"\w+")
#: A phrase of words and spaces only (no regex syntax that could behave differently in a clause).
_PLAIN = re.compile(r"[^\W_]+(?: [^\W_]+)*")


class _Clause(NamedTuple):
    """One clause of a reason: its text, whether it opens a sentence, and what opens it."""

    text: str
    leads_sentence: bool
    kind: ClauseKind


class ContradictionCheck:
    """The compiled phrase lists of one scorer. Build it once with `from_settings` and reuse it."""

    def __init__(
        self,
        *,
        pass_shaped: Iterable[str],
        fail_shaped: Iterable[str],
        negators: Iterable[str] = (),
        qualifiers: Iterable[str] = (),
        qualifiers_after: Iterable[str] = (),
        mitigators: Iterable[str] = (),
        contrast: Iterable[str] = (),
        concessive: Iterable[str] = (),
        neutral: Iterable[str] = (),
        window: int = 3,
        trusted: bool = True,
    ) -> None:
        self.window = window
        # Trusted lists run on Python's `re`, which no time budget reaches: no budget is set up.
        self._timed = not trusted
        alternation = functools.partial(_alternation, timed=not trusted)
        self._pass = alternation(pass_shaped)
        self._fail = alternation(fail_shaped)
        self._negator = alternation(negators)
        self._qualifier = alternation(qualifiers)
        self._qualifier_after = alternation(qualifiers_after, anchored=True)
        self._mitigator = alternation(mitigators)
        self._neutral = alternation(neutral)
        contrast_words = list(contrast)
        concessive_words = list(concessive)
        self._contrast_start = alternation(contrast_words, anchored=True)
        self._concessive_start = alternation(concessive_words, anchored=True)
        self._opener = alternation(contrast_words + concessive_words)
        # Whether a pass or a fail phrase occurs anywhere in a text, looked up before its clauses
        # are read: a reason with neither concludes nothing (None when a phrase depends on what
        # stands around it, where the clauses' edges could tell otherwise: see `_loose`).
        self._any_pass = _loose(pass_shaped) if trusted else None
        self._any_fail = _loose(fail_shaped) if trusted else None
        # Plain-word openers (the default lists) match inside a clause only where they match in the
        # whole text: one search of the text then tells whether any clause is cut or opened by one.
        self._plain_openers = all(_PLAIN.fullmatch(p) for p in contrast_words + concessive_words)

    @classmethod
    def from_settings(cls, settings: ContradictionSettings) -> ContradictionCheck:
        """Build from a scorer's `contradiction:` settings (checked when the scorer was loaded)."""
        return cls(**{name: getattr(settings, name) for name in settings.__struct_fields__})

    def is_pass_shaped(self, reason: str) -> bool:
        """True when the reason concludes the answer is correct, acceptable or borderline-acceptable."""
        # A clause is pass only through a pass phrase in it: without one anywhere, none is.
        if self._any_pass is not None:
            text = _normalise(reason, self._neutral)
            if self._any_pass.search(text) is None:
                return False
        return self.conclusion(reason) == "pass"

    def is_fail_shaped(self, reason: str) -> bool:
        """True when the reason concludes the answer is wrong, missing or not acceptable."""
        # A clause is fail through a fail phrase, or a negated or qualified pass phrase, in it.
        if self._any_pass is not None and self._any_fail is not None:
            text = _normalise(reason, self._neutral)
            if self._any_fail.search(text) is None and self._any_pass.search(text) is None:
                return False
        return self.conclusion(reason) == "fail"

    def conclusion(self, reason: str) -> Polarity:
        """What the reason concludes: "pass", "fail", or None when it concludes neither.

        The clauses form segments, a new one at each contrast word; the last segment that
        concludes anything decides. The scorer's phrase patterns get `REASON_SECONDS` for one
        reason (`timed_regex`): a reason they cannot read in that time concludes neither.
        """
        if not self._timed:
            return self._conclusion(reason)
        try:
            with time_budget(REASON_SECONDS):
                return self._conclusion(reason)
        except TimeoutError:
            return None

    def _conclusion(self, reason: str) -> Polarity:
        outcome: Polarity = None
        segment: list[_Clause] = []
        for clause in [*self._clauses(_normalise(reason, self._neutral)), None]:
            if clause is None or (clause.kind == "contrast" and segment):
                outcome = self._segment_conclusion(segment) or outcome
                segment = []
            if clause is not None:
                segment.append(clause)
        return outcome

    def _segment_conclusion(self, clauses: list[_Clause]) -> Polarity:
        """Within one segment: a fail anywhere wins; a leading concession counts only as a fallback,
        a trailing concession only brings a fail."""
        state: Polarity = None
        held: Polarity = None
        for index, clause in enumerate(clauses):
            polarity = self._polarity(clause.text)
            if polarity is None:
                continue
            if clause.kind == "concession":
                followed = index + 1 < len(clauses) and not clauses[index + 1].leads_sentence
                if clause.leads_sentence and followed:
                    held = held or polarity
                    continue
                if polarity == "pass" and state is not None:
                    continue
            if state is None or polarity == "fail":
                state = polarity
        return state if state is not None else held

    def _clauses(self, text: str) -> list[_Clause]:
        """The clauses of a normalised reason, split at breaks and before contrast/concession words."""
        out: list[_Clause] = []
        position = 0
        sentence_start = True
        openers = not self._plain_openers or self._opener.search(text) is not None
        for match in _BREAK.finditer(text + "."):
            piece = text[position : match.start()]
            if not openers:  # no contrast or concession word anywhere: the piece is one main clause
                part = piece.strip()
                if part:
                    out.append(_Clause(part, sentence_start, "main"))
                    sentence_start = False
                if _SENTENCE_END.search(match.group()):
                    sentence_start = True
                position = match.end()
                continue
            cuts = [m.start() for m in self._opener.finditer(piece) if piece[: m.start()].strip()]
            for begin, stop in zip([0, *cuts], [*cuts, len(piece)], strict=True):
                part = piece[begin:stop].strip()
                if part:
                    out.append(_Clause(part, sentence_start, self._kind(part)))
                    sentence_start = False
            if _SENTENCE_END.search(match.group()):
                sentence_start = True
            position = match.end()
        return out

    def _kind(self, clause: str) -> ClauseKind:
        if self._contrast_start.match(clause):
            return "contrast"
        if self._concessive_start.match(clause):
            return "concession"
        return "main"

    def _polarity(self, clause: str) -> Polarity:
        """The polarity of one clause: fail beats pass; a negated or qualified pass phrase is fail."""
        mitigated: bool | None = None  # looked up only when a phrase needs it
        fail = pass_ = False
        for match in self._fail.finditer(clause):
            if mitigated is None:
                mitigated = self._mitigator.search(clause) is not None
            if not mitigated and not self._negated(clause, match.start()):
                fail = True
        for match in self._pass.finditer(clause):
            qualified_after = bool(self._qualifier_after.match(clause[match.end() :].lstrip()))
            if qualified_after and mitigated is None:
                mitigated = self._mitigator.search(clause) is not None
            if (
                self._negated(clause, match.start())
                or self._qualified(clause[: match.start()])
                or (qualified_after and not mitigated)
            ):
                fail = True
            else:
                pass_ = True
        if fail:
            return "fail"
        return "pass" if pass_ else None

    def _window(self, before: str) -> str:
        words = _WORD.findall(before)
        return " ".join(words[-self.window :]) if self.window > 0 else ""

    def _negated(self, clause: str, start: int) -> bool:
        return bool(self._negator.search(self._window(clause[:start])))

    def _qualified(self, before: str) -> bool:
        return bool(self._qualifier.search(self._window(before)))


def _normalise(reason: str, neutral: Any) -> str:
    text = reason.casefold().replace("\u2019", "'").replace("\u2018", "'")
    # Each step runs only when the text holds what it looks for (the outcome is the same).
    quotes = "'" in text
    if quotes or "cant" in text or "wont" in text or "cannot" in text:
        for pattern, replacement in _CONTRACTIONS:
            text = pattern.sub(replacement, text)
    if quotes or '"' in text or "`" in text:
        text = _QUOTED.sub(_blank, text)
    if "-" in text:
        text = _WORD_HYPHEN.sub(" ", text)
    return neutral.sub(_blank, text)


def _blank(match: Any) -> str:
    return " " * len(match.group())


def _join(phrases: Iterable[str]) -> str:
    """One alternation of phrase regexes, longest first; a space matches any run of white space."""
    parts = sorted({p.strip().casefold() for p in phrases if p and p.strip()}, key=len, reverse=True)
    return "|".join(phrase_regex(p) for p in parts)


#: What makes a phrase's match depend on the text around it (lookarounds, anchors, word
#: boundaries; conservatively, `^` and `$` anywhere, in a set too).
_CONTEXT = re.compile(r"\(\?[=!<]|\\[bBAZ]|[\^$]")
#: A regex ending in a lookahead that holds no group (nor an escaped parenthesis): the part before it.
_TRAILING_LOOKAHEAD = re.compile(r"(.*)\(\?[=!](?:[^()\\]|\\[^()])*\)", re.DOTALL)


def _loose(phrases: Iterable[str]) -> re.Pattern[str] | None:
    """The phrases as one regex that matches wherever one of them could match in a clause, to tell
    whether any occurs in a text at all: without the word-boundary lookarounds, without a leading
    `^`, a trailing `$` or a trailing lookahead (each only narrows a match; `_widened`). A phrase
    matching inside a clause (a piece of the text) then matches those characters in the whole
    text too, so a text where this finds nothing has no clause where a phrase matches. None when a
    phrase looks at its surroundings in another way."""
    widened = []
    for phrase in phrases:
        if not phrase or not phrase.strip():
            continue
        regex = _widened(phrase_regex(phrase.strip().casefold()))
        if regex is None:
            return None
        widened.append(regex)
    try:
        return re.compile("|".join(f"(?:{r})" for r in widened) if widened else r"(?!)")
    except re.error:  # a phrase written to be read only inside the whole alternation
        return None


def _widened(regex: str) -> str | None:
    """`regex` without a leading `^`, a trailing `$` or a trailing lookahead of no groups; None
    when it still holds anything that looks around the match (`_CONTEXT`)."""
    regex = regex.removeprefix("^")
    if regex.endswith("$") and not regex.endswith("\\$"):
        regex = regex[:-1]
    ahead = _TRAILING_LOOKAHEAD.fullmatch(regex)
    if ahead is not None:
        regex = ahead.group(1)
    return None if _CONTEXT.search(regex) else regex


def _alternation(phrases: Iterable[str], *, anchored: bool = False, timed: bool = False) -> Any:
    """Compile phrases into one regex matched on word boundaries (or at the start, when anchored):
    a `TimedPattern` when `timed` (a battery's own lists), else Python's `re`."""
    joined = _join(phrases)
    compile_pattern: Any = TimedPattern if timed else re.compile
    if not joined:
        return compile_pattern(r"(?!)")
    if anchored:
        return compile_pattern(rf"(?:{joined})(?!\w)")
    return compile_pattern(rf"(?<!\w)(?:{joined})(?!\w)")
