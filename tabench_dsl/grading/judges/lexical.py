"""The string rules of the builtin lexical judge: gold elements, normalisation, matching, negation.

A gold answer is read as a list of *elements*, the things an answer must name: identifiers and
code (`Lark.open`, `__slots__`, `asyncio/tasks.py`, `gather()`), quoted strings, numbers and
capitalised names (`Earley`, `LALR`, `TypeError`). Lowercase prose is not an element, except that a
short item of a comma/"and" list is one (so `ingest, index, recall and compact` lists four).
A gold is a list when each of its items is at most four words long; prose with commas is not.

An element matches an answer when its normalised tokens, joined, equal the joined tokens of a run
of answer tokens inside one clause, and no negator governs that run. Normalisation casefolds, drops
backticks, quotes and a `()` suffix, treats `-`, `_`, `.`, `/` and space alike (`built-in` ==
`builtin`, `lalr_parser` == `lalr-parser`; a dunder keeps its underscores), strips a plural or
verb ending (`-s`, `-es`, `-ed`, `-ing`, a final `e`), and reads the number words zero..twenty
as digits (`four` == `4`). Numbers are otherwise exact: `12` never matches `120`.
"""

from __future__ import annotations

import re
import unicodedata

import msgspec


def _wordlist(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Words that deny what follows them in the same clause ("not X", "no X", "never X", "isn't X").
NEGATORS: frozenset[str] = frozenset(_wordlist("not no non never neither nor none without"))

#: Words after a negator that cancel it ("not only X but also Y" asserts X).
NEGATION_CANCELLERS: frozenset[str] = frozenset(_wordlist("only just merely"))

#: Number words read as digits, both in the gold and in answers.
NUMBER_WORDS: dict[str, str] = {
    word: str(value)
    for value, word in enumerate(
        _wordlist(
            """zero one two three four five six seven eight nine ten eleven twelve thirteen
            fourteen fifteen sixteen seventeen eighteen nineteen twenty"""
        )
    )
}

#: Capitalised words that are only capitalised because they open a sentence or list item:
#: closed-class words and the verbs golds commonly start with. They are never elements.
SENTENCE_WORDS: frozenset[str] = frozenset(
    _wordlist(
        """i you we a an the it its this that these those there they their both each every all any some yes
        no only in on at by for with from to of when where while if because since as after before
        and or but not also then so is are was were be has have had does do did can may must should
        will would uses use returns return calls call raises raise creates create stores store runs
        run reads read writes write holds hold keeps keep takes take gives give makes make passes
        pass sets set gets get checks check builds build defines define wraps wrap one two three
        four five six seven eight nine ten eleven twelve first second third last"""
    )
)

#: Little words that never count as content when a gold has no elements.
STOPWORDS: frozenset[str] = SENTENCE_WORDS | frozenset(
    _wordlist("i you we he she him her them our your my me us what which who how why than into out up")
)

#: One element candidate, in priority order: backticked code, a quoted string, a dotted/slashed
#: path or call, an identifier with an underscore or a `()` suffix, a number, a capitalised word.
ELEMENT = re.compile(
    r"`(?P<tick>[^`]+)`"
    r"|(?<!\w)\"(?P<dq>[^\"\n]+)\""
    r"|(?<!\w)'(?P<sq>[^'\n]+)'(?!\w)"
    r"|(?P<code>/?[A-Za-z_][\w-]*(?:[./][\w-]+)+(?:\(\))?|[A-Za-z_]\w*\(\)|\w*_\w*)"
    r"|(?P<num>(?<![\w.])\d+(?:\.\d+)*(?![\w.]\w))"
    r"|(?P<cap>\b[A-Z][\w]*)"
)

#: A word token of normalised text: a dotted number stays whole (`3.11`), words split on the rest.
WORD = re.compile(r"\d+(?:\.\d+)+|[^\W_]+")

#: Where a clause ends, for matching and negation scope: sentence and list punctuation followed by
#: white space or the end, line breaks, and "but"/"however".
CLAUSE_BREAK = re.compile(r"[.;:,!?](?=\s|$)|\n|\bbut\b|\bhowever\b", re.IGNORECASE)

#: A list item separator inside the gold: commas, semicolons, "and", "plus" ("or" names alternatives).
LIST_SEPARATOR = re.compile(r"\s*(?:[,;]|\band\b|\bplus\b)\s*")


class Element(msgspec.Struct, frozen=True):
    """A thing an answer must name: its text as the gold wrote it and the normalised forms that
    count as naming it (the full form first; a path's file name or a dotted name's last part after)."""

    text: str
    forms: tuple[str, ...]
    #: For a lowercase list item: its content words, all to be found in one clause, in any order.
    bag: tuple[str, ...] = ()


def _stem(word: str) -> str:
    """A light stemmer, the same on both sides: `acquire`, `acquires`, `acquired` and `acquiring`
    all read `acquir`; number words read as digits; words with digits stay as they are."""
    word = NUMBER_WORDS.get(word, word)
    if not word.isalpha():
        return word
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    else:
        if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
            word = word[:-2]
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _prepare(text: str) -> str:
    """NFKC, casefold, contractions spelled out, thousands separators and `()` suffixes dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("\u2019", "'").replace("can't", "can not").replace("won't", "will not")
    text = text.replace("n't", " not").replace("cannot", "can not")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"__(\w+?)__", r"dunder\1", text)  # `__slots__` is not the word "slots"
    return text.replace("()", "").replace("`", "")


def words(text: str) -> list[str]:
    """The stemmed word tokens of `text` (see the module docstring)."""
    return [_stem(w) for w in WORD.findall(_prepare(text))]


def clauses(text: str) -> list[list[str]]:
    """`text` as clauses, each a list of unstemmed word tokens."""
    return [WORD.findall(part) for part in CLAUSE_BREAK.split(_prepare(text))]


def _element(text: str) -> Element | None:
    full = "".join(words(text))
    if not full:
        return None
    forms = [full]
    stripped = text.strip("/").removesuffix("()")
    if "/" in stripped:
        forms.append("".join(words(stripped.rsplit("/", 1)[1])))
    elif "." in stripped and not re.fullmatch(r"[\d.]+", stripped):
        last = stripped.rsplit(".", 1)[1]
        if re.search(r"[A-Z_]", last):  # `msgspec.Struct` may be called `Struct`, not `x.run` `run`
            forms.append("".join(words(last)))
    return Element(text=text, forms=tuple(dict.fromkeys(forms)))


def _is_sentence_word(match: re.Match[str]) -> bool:
    word = match.group("cap")
    if word is None or word.casefold() not in SENTENCE_WORDS:
        return False
    if word.casefold() in NUMBER_WORDS:  # "Four" is a number; "One of ..." is not
        return match.string.startswith(" of", match.end())
    return not re.search(r"[A-Z\d_]", word[1:])


def elements_of(text: str) -> list[Element]:
    """The elements named in `text`, in order, without duplicates."""
    found: dict[str, Element] = {}
    for match in ELEMENT.finditer(text):
        if _is_sentence_word(match):
            continue
        kind = match.lastgroup or ""
        raw = match.group(kind)
        if kind == "cap" and raw.casefold() in NUMBER_WORDS:
            raw = NUMBER_WORDS[raw.casefold()]
        element = _element(raw)
        if element is not None and element.forms[0] not in ("eg", "ie", "etc"):
            found.setdefault(element.forms[0], element)
    return list(found.values())


def list_items(text: str) -> list[str]:
    """The items of a comma/semicolon/"and" list (a single item when `text` is no list)."""
    return [item for item in LIST_SEPARATOR.split(text.strip().rstrip(".")) if item.strip()]


def content_words(text: str) -> list[str]:
    """The stemmed words of `text` that are not stop words, for golds that name no element."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


def _runs(clause: list[str], start: int) -> list[tuple[int, str]]:
    # Joined stemmed tokens of every run starting at `start` (up to 8 tokens long).
    out, joined = [], ""
    for end in range(start, min(start + 8, len(clause))):
        joined += _stem(clause[end])
        out.append((end, joined))
    return out


#: After a name, words that deny the name itself ("X does not exist", "X is not a stage"); a denied
#: property ("X is not re-entrant") leaves X asserted.
DENIAL_AFTER = re.compile(r"^(?:is|are|was|were|does|do) not (?:exist|a|an|real|present|defined|part)$")


def _negated(clause: list[str], start: int, end: int) -> bool:
    before = clause[max(0, start - 3) : start]
    for i, word in enumerate(before):
        if word in NEGATORS:
            after = before[i + 1] if i + 1 < len(before) else clause[start]
            if after not in NEGATION_CANCELLERS:
                return True
    return bool(DENIAL_AFTER.match(" ".join(clause[end + 1 : end + 4])))


def occurrences(element: Element, text_clauses: list[list[str]]) -> list[bool]:
    """One entry per place `element` is named in the clauses: True where it is asserted (not negated)."""
    found = []
    for clause in text_clauses:
        if element.bag:
            found += _bag_occurrence(element.bag, clause)
            continue
        for start in range(len(clause)):
            for end, joined in _runs(clause, start):
                if joined in element.forms:
                    found.append(not _negated(clause, start, end))
                    break
                if not any(form.startswith(joined) for form in element.forms):
                    break
    return found


def _bag_occurrence(bag: tuple[str, ...], clause: list[str]) -> list[bool]:
    stems = [_stem(w) for w in clause]
    if not all(w in stems for w in bag):
        return []
    first = min(stems.index(w) for w in bag)
    last = max(stems.index(w) for w in bag)
    return [not _negated(clause, first, last)]


def asserts(element: Element, text_clauses: list[list[str]]) -> bool:
    """True when `element` is named at least once without a negator governing it."""
    return any(occurrences(element, text_clauses))


def denied_in(element: Element, text: str) -> bool:
    """True when `text` names `element` only under negation (the gold says "there is no X")."""
    found = occurrences(element, clauses(text))
    return bool(found) and not any(found)


class GoldKey(msgspec.Struct, frozen=True):
    """What a gold (or an accepted variant) asks of an answer.

    `required`: the elements to name; `denied`: elements the gold names only under negation ("there
    is no Summarize stage"), which an answer must not assert; `fallback`: the gold's content words,
    used only when it names no element at all.
    """

    required: tuple[Element, ...]
    denied: tuple[Element, ...] = ()
    fallback: tuple[str, ...] = ()


def _count_header(gold: str) -> tuple[str, list[str]]:
    # "Four stages: A, B, C, D" -> ("Four stages", [A, B, C, D]); no header -> ("", items).
    head, sep, body = gold.partition(": ")
    if sep and len(head.split()) <= 4:
        return head, list_items(body)
    return "", list_items(gold)


def _list_item_element(item: str) -> Element | None:
    # A short lowercase list item ("ingest", "the compact step") names a thing as much as `Compact`.
    item = re.sub(r"^(?:the|a|an)\s+", "", item.strip(), flags=re.IGNORECASE)
    bag = tuple(dict.fromkeys(content_words(item)))
    if not bag or len(bag) > 3 or elements_of(item):
        return None
    return Element(text=item.strip(), forms=("".join(bag),), bag=bag)


def gold_key(gold: str) -> GoldKey:
    """Read `gold` as a `GoldKey` (see the module docstring for what an element is)."""
    head, items = _count_header(gold)
    found = elements_of(gold)
    if head:  # a count that the list spells out ("Four stages: ...") is named by listing
        counts = {e.forms[0] for e in elements_of(head) if e.forms[0].isdigit()}
        found = [e for e in found if not (e.forms[0] in counts and int(e.forms[0]) == len(items))]
    if len(items) >= 2 and all(len(item.split()) <= 4 for item in items):  # a list, not prose
        extra = [el for item in items if (el := _list_item_element(item)) is not None]
        known = {e.forms[0] for e in found}
        found += [e for e in extra if e.forms[0] not in known]
    denied = tuple(e for e in found if denied_in(e, gold))
    required = tuple(e for e in found if e not in denied)
    fallback = () if found else tuple(dict.fromkeys(content_words(gold)))
    return GoldKey(required=required, denied=denied, fallback=fallback)
