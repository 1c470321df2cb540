"""T1 rule v2: pass only an answer in which a key stands as the answer (docs/language.md, T1).

Rule v2 narrows rule v1: it passes an answer only where v1 would (every token of some key is in the
answer) and no rule below objects to that key. Each rule is small and named, and `objections` says
which rules object to each key, so the fidelity bench can show what each rule buys.

- `weak_key`: a key whose words are all stop words, single letters or punctuation (`A+`, `IS`,
  `Of`, `No`) never passes alone.
- `echo`: a key whose words the question already has (`Michigan` for "michigan or ohio state")
  is no evidence: any answer names it.
- `contiguous`: the key's tokens stand together and in order (articles between them aside: "a
  blob, a tree and a tag"), numbers read as numbers (`t1_reading`): never scattered, never a
  piece of a longer number (`8 %` is not in "6.8%").
- `negation`: the key's clause negates (not, never, no, n't, nor, rather than, instead of, ...).
- `hedge`: the key's clause hedges (might, maybe, possibly, unlikely, unclear, may be, ...).
- `decline`: the answer declines or protests anywhere ("I'm sorry", "cannot determine",
  "couldn't find", "as an AI", ...).
- `candidates`: the key is one of several candidates its clause lists ("TypeError, ValueError,
  KeyError or RuntimeError"; "A or B"), unless the item beside it is a key too.
- `date`: a key that is a year, or a month and year, found inside a fuller date of the answer when
  another key gives a fuller date (variant `1979` in "May 5, 1979" for gold "3 March 1979").
- `years`: the keys name a year and the answer names another year besides ("by Gutenberg in 1440"
  for keys `Johannes Gutenberg` and `circa 1439`).
- `first_sentence`: the key stands in the answer's first sentence, where an answer gives its
  answer; a key met only further on is more often named in passing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from .t1_reading import Word, read, texts
from .t1_reading import tokens as tokens_v1

#: The rule names, in the order they are documented and reported.
RULES = (
    "weak_key",
    "echo",
    "contiguous",
    "negation",
    "hedge",
    "decline",
    "candidates",
    "date",
    "years",
    "first_sentence",
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _phrases(text: str) -> tuple[tuple[str, ...], ...]:
    """`|`-separated phrases, each as its tokens (`n't` is the tokens `n` ... `t`: "can | t")."""
    return tuple(tuple(phrase.split()) for phrase in text.split("|"))


#: Words that carry no answer alone: articles, pronouns, auxiliaries, prepositions, conjunctions.
STOP_WORDS = _words(
    """a an the and or nor but if then so as of at by for from in into on onto to up with without
    about above after before below between over under out off via per is are was were be been
    being am do does did done has have had having will would shall should can could may might must
    it its this that these those there here i me my we us our you your he him his she her they them
    their who whom whose which what when where why how all any both each few more most other some
    such no not only own same than too very s t just yes also"""
)
#: A clause with one of these negates what it says (and `n't`: `_negated`).
NEGATIONS = _phrases(
    "not | never | no | nor | neither | cannot | rather than | instead of | unlike | none | nobody | "
    "nothing | incorrect | misconception | myth"
)
#: A clause with one of these hedges what it says.
HEDGES = _phrases(
    "unlikely | might | maybe | perhaps | possibly | possible | unclear | uncertain | unsure | unknown | "
    "may be | could be | not sure | some sources | disputed | debated | speculated"
)
#: An answer with one of these anywhere declines to answer, or answers under protest.
DECLINES = _phrases(
    "sorry | cannot determine | can t determine | unable to | could not find | couldn t find | "
    "no information | not have access | don t have access | as an ai | not able to | no definitive | "
    "real time | i m not sure | do not know | don t know"
)
#: Words that join the items of a list.
LIST_WORDS = _words("or and nor vs versus")
#: Words that offer an alternative.
ALTERNATIVES = _words("or nor vs versus")
MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)


class Key(NamedTuple):
    """One key as rule v2 reads it: its tokens, and which date parts it states."""

    words: tuple[str, ...]
    content: frozenset[str]
    date: DateParts | None
    #: Its tokens as rule v1 reads them: v2 passes only where v1 would.
    v1: frozenset[str]


class DateParts(NamedTuple):
    """Which parts of a date a key states: its year, and whether a month and a day."""

    year: str
    month: bool
    day: bool


def is_year(token: str) -> bool:
    return len(token) == 4 and token.isdigit() and 1000 <= int(token) <= 2199


def _is_day(token: str) -> bool:
    return token.isdigit() and 1 <= int(token) <= 31


def date_parts(words: Sequence[str]) -> DateParts | None:
    """The date a short text states (a year; with a month; with a day), or None."""
    years = [w for w in words if is_year(w)]
    if len(years) != 1 or len(words) > 4:
        return None
    month = any(w in MONTHS for w in words)
    day = month and any(_is_day(w) for w in words if w != years[0])
    return DateParts(years[0], month, day)


def read_key(key: str) -> Key:
    """`key` (the gold or an accepted variant) as rule v2 reads it."""
    words = tuple(texts(read(key)))
    content = frozenset(w for w in words if (len(w) > 1 or w.isdigit()) and w not in STOP_WORDS and w != "%")
    return Key(words, content, date_parts(words), tokens_v1(key))


def _has(tokens: Sequence[str], phrases: Iterable[tuple[str, ...]]) -> bool:
    """Whether one of `phrases` stands in `tokens` (a phrase's first word looked up first)."""
    present = set(tokens)
    for phrase in phrases:
        if phrase[0] not in present:
            continue
        n = len(phrase)
        for i in range(len(tokens) - n + 1):
            if tokens[i] == phrase[0] and tuple(tokens[i : i + n]) == phrase:
                return True
    return False


def _negated(tokens: Sequence[str]) -> bool:
    """A negation in `tokens`, the contracted `n't` included (`isn`, `t`)."""
    if _has(tokens, NEGATIONS):
        return True
    return any(t == "t" and i and tokens[i - 1].endswith("n") for i, t in enumerate(tokens))


#: Words an answer may set between a key's words: articles ("a blob, a tree, a commit and a tag" for
#: `blob, tree, commit and tag`), and the `and` a list puts before its last item ("Ingest, Index,
#: Recall and Compact" for `Ingest, Index, Recall, Compact`); never in place of one (`Vitamin A`
#: is not in "vitamin C"). Not `or`: a list of alternatives is candidates (`candidates`).
BETWEEN_KEY_WORDS = _words("a an the and")


def _occurrences(words: list[Word], key: Key) -> list[tuple[int, int]]:
    """Where the key's tokens stand together and in order in `words` (its start and end), articles
    between them aside."""
    tokens = texts(words)
    found = []
    first, rest = key.words[0], key.words[1:]
    for start, token in enumerate(tokens):
        if token != first:
            continue
        at = start + 1
        for word in rest:
            while at < len(tokens) and tokens[at] != word and tokens[at] in BETWEEN_KEY_WORDS:
                at += 1
            if at == len(tokens) or tokens[at] != word:
                break
            at += 1
        else:
            found.append((start, at))
    return found


def _listed(words: list[Word], start: int, end: int, clause_end: int, others: list[Key]) -> bool:
    """Whether the key at words[start:end] is one of several candidates its clause lists: joined to
    a neighbour by `or`, `/` or `vs`, or an item of a comma list ("A, B, C" or "A, B and C"), and
    the neighbouring item is not a key too."""
    clause = words[start].clause
    after = words[end] if end < len(words) and words[end].clause == clause else None
    before = words[start - 1] if start and words[start - 1].clause == clause else None
    alternative = (after is not None and (after.text in ALTERNATIVES or "/" in after.gap)) or (
        before is not None and (before.text in ALTERNATIVES or "/" in words[start].gap)
    )
    comma_after = after is not None and "," in after.gap and after.text not in STOP_WORDS
    comma_before = before is not None and "," in words[start].gap
    rest = words[end + 1 : min(clause_end, end + 9)] if after is not None else []
    more_after = any("," in w.gap or w.text in LIST_WORDS for w in rest)
    and_after = after is not None and after.text in LIST_WORDS
    in_list = (comma_after and more_after) or (comma_before and (comma_after or and_after))
    if not (alternative or in_list):
        return False
    # A list of keys (every team the question asks for) is no list of rival candidates.
    neighbour = [w.text for w in words[end : end + 4] if w.clause == clause and w.text not in LIST_WORDS][:2]
    return not any(k.words and tuple(neighbour[: len(k.words)]) == k.words[: len(neighbour)] for k in others)


def _fuller_date(words: list[Word], start: int, end: int, key: Key, keys: Sequence[Key]) -> bool:
    """A year (or month-and-year) key inside a fuller date of the answer, when another key has
    the fuller form: the answer's day or month is then what decides it."""
    if key.date is None or key.date.day:
        return False
    near = texts(words[max(0, start - 3) : end + 2])
    month = any(w in MONTHS for w in near)
    fuller = (month and not key.date.month) or (
        key.date.month
        and any(_is_day(w) for w in texts(words[max(0, start - 2) : start]) + texts(words[end : end + 1]))
    )
    if not fuller:
        return False
    return any(k.date and (k.date.day or (k.date.month and not key.date.month)) for k in keys)


def objections(answer: str, keys: Sequence[Key], prompt: frozenset[str]) -> list[set[str]]:
    """For each key, the rules that object to passing the answer on it (empty: it passes)."""
    words = read(answer)
    tokens = texts(words)
    v1_present = tokens_v1(answer)
    declined = _has(tokens, DECLINES)
    clauses = _Clauses(words)
    key_years = {w for k in keys for w in k.words if is_year(w)}
    other_years = key_years and any(is_year(t) and t not in key_years for t in tokens)
    found: list[set[str]] = []
    for key in keys:
        rules: set[str] = set()
        if not key.content:
            rules.add("weak_key")
        if key.content and key.content <= prompt:
            rules.add("echo")
        if declined:
            rules.add("decline")
        if other_years:
            rules.add("years")
        starts = _occurrences(words, key) if key.words else []
        if not (key.v1 and key.v1 <= v1_present):
            rules.add("v1")
        if not starts:
            rules.add("contiguous")
            found.append(rules)
            continue
        others = [k for k in keys if k is not key]
        best: set[str] | None = None
        for start, end in starts:
            here = set(clauses.rules(words[start].clause))
            if _listed(words, start, end, clauses.end(words[start].clause), others):
                here.add("candidates")
            if _fuller_date(words, start, end, key, keys):
                here.add("date")
            if words[start].sentence:
                here.add("first_sentence")
            if best is None or len(here) < len(best):
                best = here
            if not best:
                break
        found.append(rules | (best or set()))
    return found


class _Clauses:
    """The clauses of an answer's words: where each ends, and what each negates or hedges, each
    found once however often a key occurs in it (an answer of one key repeated 40,000 times costs
    one pass over its words, not one per occurrence)."""

    def __init__(self, words: list[Word]) -> None:
        self.spans: dict[int, list[int]] = {}
        for i, word in enumerate(words):
            self.spans.setdefault(word.clause, [i, i + 1])[1] = i + 1
        self.words = words
        self.found: dict[int, frozenset[str]] = {}

    def end(self, clause: int) -> int:
        return self.spans[clause][1]

    def rules(self, clause: int) -> frozenset[str]:
        """`negation` and `hedge`, when the clause does."""
        found = self.found.get(clause)
        if found is None:
            first, end = self.spans[clause]
            tokens = texts(self.words[first:end])
            found = self.found[clause] = frozenset(
                rule
                for rule, says in (("negation", _negated(tokens)), ("hedge", _has(tokens, HEDGES)))
                if says
            )
        return found
