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
and the ordinals first..twentieth as digits (`four` == `4`, `second` == `2nd` == `2`, `12th` ==
`12`). Numbers are otherwise exact: `12` never matches `120`, and a decade is not its first year
(`the 1920s` != `1920`; `90s` == `1990s`). A command-line flag keeps its dash (`-s` is not the `s`
of "it's"). A gold of little words only ("four", "second") is its own element, and a
count word in a gold ("eight years") is one as a digit is. Accents are dropped (`Bäumer` ==
`Baumer`); a title before a name is not asked for (`Sir Ernest Rutherford` is named by "Ernest
Rutherford"), nor is an aside in parentheses that holds no code (`Cutback (surfing move)`).

Chat answers carry footnote markers (superscripts, `[1]`, digits glued on: `Wyler1`, `19861`) and
run-together words (`byWilliam`): an answer is also read without them (`unglued`), and a name is
named when either reading names it. A key of several words run into the function words around it
(`byHugo Weavingin`, bold text copied without its spaces) is parted from them (`parted`). An
element that itself spans a clause break (`{"1": "a"}`) is matched across the answer's clauses.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import msgspec

from ...core.numbers import NUMBER_WORDS, ORDINAL_WORDS, SUFFIX, numeral, ungrouped_text


def _wordlist(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Words that deny what follows them in the same clause ("not X", "no X", "never X", "isn't X").
NEGATORS: frozenset[str] = frozenset(_wordlist("not no non never neither nor none without"))

#: Words after a negator that cancel it ("not only X but also Y" asserts X).
NEGATION_CANCELLERS: frozenset[str] = frozenset(_wordlist("only just merely"))

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
#: path or call, an identifier with an underscore or a `()` suffix, a command-line flag (`-s`,
#: `--verbose`), a number (with an ordinal or decade suffix: `12th`, `1920s`), a capitalised word.
ELEMENT = re.compile(
    r"`(?P<tick>[^`]+)`"
    r"|(?<!\w)\"(?P<dq>[^\"\n]+)\""
    r"|(?<!\w)'(?P<sq>[^'\n]+)'(?!\w)"
    r"|(?P<code>/?[A-Za-z_][\w-]*(?:[./][\w-]+)+(?:\(\))?|[A-Za-z_]\w*\(\)|\w*_\w*)"
    r"|(?P<flag>(?<![\w-])--?[A-Za-z][\w-]*)"
    rf"|(?P<num>(?<![\w.])\d+(?:\.\d+)*(?:{SUFFIX})?(?![\w.]\w))"
    r"|(?P<cap>\b[A-Z][\w]*)"
    r"|(?P<count>\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
    r"|sixteen|seventeen|eighteen|nineteen|twenty)\b)"
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
    word = NUMBER_WORDS.get(word) or ORDINAL_WORDS.get(word) or word
    if not word.isalpha():
        return _number(word)
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


def _number(token: str) -> str:
    """A token with digits as the judge reads it (`numbers.numeral`: decimals as written, a
    two-digit decade as the full one): `12th` -> `12`, `90s` -> `1990s`; `1920s` != `1920`."""
    return numeral(token, value=False, short_decades=True) or token


#: Footnote markers a chat answer carries: superscript digits and bracketed numbers (`[1]`, `[^2^]`).
FOOTNOTE_MARK = re.compile(r"[\u00b9\u00b2\u00b3\u2070-\u2079]+|\[\^?\d{1,2}\^?\]")

#: Footnote digits glued to the end of a word or a year (`Wyler1`, `19861`, `Tremblay123`).
GLUED_FOOTNOTE = re.compile(r"(?<=[^\W\d_]{3})[1-9]\d{0,2}\b|\b(?<![\d.,])(1\d{3}|20\d\d)[1-9]\d?\b")

#: Words run together: a lowercase letter into a capital (`byWilliam`, `TheSacramento`, `groupTLC`),
#: a lowercase word into a number (`in2013`), a number into a word of three or more letters
#: (`2013after`; `12th`, `1990s` and `54Mbps` stay whole).
RUN_TOGETHER = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[a-z]{2})(?=\d)|(?<=\d)(?=[a-z]{3})")


def unglued(text: str) -> str:
    """`text` without footnote markers (superscripts, `[1]`, digits glued to its words and years)
    and with run-together words parted: a second reading of a chat answer, tried beside the text as
    written (where `python3`, `m²` and `items[0]` stay as they are)."""
    text = GLUED_FOOTNOTE.sub(lambda m: m.group(1) or "", FOOTNOTE_MARK.sub("", text))
    return RUN_TOGETHER.sub(" ", text)


#: Function words a chat answer runs into a bolded name when it drops the bold's spaces
#: ("byHugo Weavingin", "themedulla oblongataof").
GLUE_WORDS: frozenset[str] = frozenset(
    _wordlist("a an the by of in on at to for from and or is was are were as with called")
)
_GLUE = "|".join(sorted(GLUE_WORDS, key=len, reverse=True))


def parted(text: str, keys: Iterable[str]) -> str:
    """`text` with each key of two or more words (a gold or a variant) parted from a function word
    run into it on either side (`thepour pointof` -> `the pour point of`): a third reading of a
    chat answer. A key run into any other letters stays as it is (`the environmental` does not
    name `the environment`)."""
    for key in keys:
        parts = key.split()
        if len(parts) < 2 or not any(c.isalpha() for c in key):
            continue
        phrase = r"\s+".join(re.escape(part) for part in parts)
        pattern = rf"(?i)(?<![^\W\d_])({_GLUE})?({phrase})({_GLUE})?(?![^\W\d_])"
        text = re.sub(pattern, lambda m: " ".join(g for g in m.groups() if g) if m[1] or m[3] else m[0], text)
    return text


#: A full name of three or four words: capitalised words, the middle ones spelled out (not initials).
FULL_NAME = re.compile(r"([A-Z][a-z]+)((?: [A-Z][a-z]{2,}){1,2}) ([A-Z][a-z]+(?:-[A-Z][a-z]+)?)")


def short_name(key: str) -> str | None:
    """The first and last word of a full name with middle names (`Jesse Wesley Williams` ->
    `Jesse Williams`), the way a person is usually named; None for any other key. A middle
    initial is kept in the key (`George H. W. Bush` is not `George Bush`), and a name that opens
    with an article or a title is no person's (`The Stanley Hotel`, `Sir John Ambrose Fleming`)."""
    match = FULL_NAME.fullmatch(" ".join(key.split()))
    if match is None or match[1].casefold() in SENTENCE_WORDS | TITLES:
        return None
    return f"{match[1]} {match[3]}"


def _prepare(text: str) -> str:
    """NFKC, casefold, accents dropped, contractions spelled out, thousands separators and `()`
    suffixes dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))  # ä == a
    text = text.replace("\u2019", "'").replace("can't", "can not").replace("won't", "will not")
    text = text.replace("n't", " not").replace("cannot", "can not")
    text = ungrouped_text(text)
    text = re.sub(r"__(\w+?)__", r"dunder\1", text)  # `__slots__` is not the word "slots"
    text = re.sub(r"(?<![\w-])(--?)(?=[a-z])", lambda m: "dash" * len(m.group(1)), text)  # `-s` flag
    return text.replace("()", "").replace("`", "")


def words(text: str) -> list[str]:
    """The stemmed word tokens of `text` (see the module docstring)."""
    return [_stem(w) for w in WORD.findall(_prepare(text))]


def clauses(text: str) -> list[list[str]]:
    """`text` as clauses, each a list of unstemmed word tokens; when `unglued` reads it otherwise,
    the clauses of that reading follow (a name is named when either reading names it)."""
    readings = dict.fromkeys((text, unglued(text)))
    return [WORD.findall(part) for reading in readings for part in CLAUSE_BREAK.split(_prepare(reading))]


def _element(text: str) -> Element | None:
    full = "".join(words(text))
    if not full:
        return None
    forms = [full]
    stripped = text.strip("/").removesuffix("()")
    if re.fullmatch(r"--?[A-Za-z][\w-]{2,}", stripped):  # `--verbose` may be called "verbose"; `-s` not "s"
        forms.append("".join(words(stripped.lstrip("-"))))
    elif "/" in stripped:
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


#: Titles before a name ("Sir Ernest Rutherford", "King Belshazzar"): the name is the element.
TITLES: frozenset[str] = frozenset(
    _wordlist("sir dame lord lady king queen prince princess saint st dr mr mrs ms president general captain")
)


def _is_title(match: re.Match[str]) -> bool:
    word = match.group("cap")
    return (
        word is not None
        and word.casefold().rstrip(".") in TITLES
        and bool(re.match(r"\.? [A-Z]", match.string[match.end() :]))
    )


def elements_of(text: str) -> list[Element]:
    """The elements named in `text`, in order, without duplicates."""
    found: dict[str, Element] = {}
    for match in ELEMENT.finditer(text):
        if _is_sentence_word(match) or _is_title(match):
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
    if CLAUSE_BREAK.search(element.text):  # `{"1": "a"}` spans a clause break, as its answer will
        text_clauses = [[word for clause in text_clauses for word in clause]]
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
    if sep and len(head.split()) <= 4 and re.fullmatch(r"[\w ]+", head):  # not `{"1": "a"}`
        return head, list_items(body)
    return "", list_items(gold)


def _list_item_element(item: str) -> Element | None:
    # A short lowercase list item ("ingest", "the compact step") names a thing as much as `Compact`.
    item = re.sub(r"^(?:the|a|an)\s+", "", item.strip(), flags=re.IGNORECASE)
    bag = tuple(dict.fromkeys(content_words(item)))
    if not bag or len(bag) > 3 or elements_of(item):
        return None
    return Element(text=item.strip(), forms=("".join(bag),), bag=bag)


#: An aside in parentheses after a word ("Cutback (surfing move)", "Bryophyta (disambiguation)"):
#: it qualifies the gold and is not asked of an answer, unless it holds code.
ASIDE = re.compile(r"\s+\([^()`]+\)")


def gold_key(gold: str) -> GoldKey:
    """Read `gold` as a `GoldKey` (see the module docstring for what an element is)."""
    gold = ASIDE.sub("", gold).strip() or gold
    head, items = _count_header(gold)
    found = elements_of(gold)
    if head:  # a count that the list spells out ("Four stages: ...") is named by listing
        counts = {e.forms[0] for e in elements_of(head) if e.forms[0].isdigit()}
        found = [e for e in found if not (e.forms[0] in counts and int(e.forms[0]) == len(items))]
    if len(items) >= 2 and all(len(item.split()) <= 4 for item in items):  # a list, not prose
        extra = [el for item in items if (el := _list_item_element(item)) is not None]
        known = {e.forms[0] for e in found}
        found += [e for e in extra if e.forms[0] not in known]
    fallback = () if found else tuple(dict.fromkeys(content_words(gold)))
    if not found and not fallback and (whole := _element(gold)) is not None:
        found = [whole]  # only little words ("four", "second"): the gold as written is the element
    denied = tuple(e for e in found if denied_in(e, gold))
    required = tuple(e for e in found if e not in denied)
    return GoldKey(required=required, denied=denied, fallback=fallback)
