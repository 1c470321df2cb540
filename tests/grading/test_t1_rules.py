"""T1 rule v2 (docs/language.md, T1 rules): each rule's hand-checked cases, passes and go-to-judge
alike, the issue's examples among them, and what holds of every answer (v2 passes only where v1
does; a key given as the whole answer passes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.t1_reading import read, texts
from tabench_dsl.core.tiers import V2Keys, rule_passes, t1_passes


def objected(answer: str, gold: str, *accept: str, prompt: str = "Which one?") -> set[str]:
    """The rules that stop rule v2 passing `answer` on its best key (empty: it passes)."""
    found = V2Keys(gold, accept, prompt).objections(answer)
    return min(found, key=len)


def v2(answer: str, gold: str, *accept: str, prompt: str = "Which one?") -> bool:
    return rule_passes("v2", answer, gold=gold, accept=accept, prompt=prompt)


# Each case: the answer, its keys, v1's verdict (the token subset), and the rules v2 objects with.
CASES = [
    # The issue's examples: v1 passes them all, v2 sends each to the judge.
    ("It was nominated for Leonardo DiCaprio, but did not win.", ["Leonardo DiCaprio"], {"negation"}),
    ("It is not a ValueError; it subclasses Exception directly.", ["ValueError"], {"negation"}),
    ("TypeError, ValueError, KeyError or RuntimeError.", ["ValueError"], {"candidates"}),
    ("Approximately 6.8%.", ["8 %"], {"contiguous"}),
    ("It happened on May 5, 1979.", ["3 March 1979", "1979"], {"date"}),
    ("It is a B type, like most.", ["A+"], {"weak_key"}),
    ("It is what it is.", ["IS"], {"weak_key"}),
    ("A matter of course.", ["Of"], {"weak_key"}),
    ("No idea, honestly: the records are gone.", ["No"], {"weak_key", "negation"}),
    # Scattered tokens, and a year that is not the key's.
    ("The index comes before the ingest.", ["ingest index"], {"contiguous"}),
    ("Vitamin C and a little A.", ["Vitamin A"], {"contiguous"}),  # an article never stands for a word
    ("Johannes Gutenberg, in 1440.", ["Johannes Gutenberg", "circa 1439"], {"years"}),
    # Hedges and declines.
    ("It might be Paris.", ["Paris"], {"hedge"}),
    ("I'm sorry, I cannot say for certain; Paris, perhaps.", ["Paris"], {"decline", "hedge"}),
    ("As an AI language model I have no access to that; Paris is the capital.", ["Paris"], {"decline"}),
    ("Paris rather than Lyon.", ["Paris"], {"negation"}),
    ("It isn't Paris.", ["Paris"], {"negation"}),
    # Named only in passing, after the answer's first sentence.
    ("France is a country in western Europe. Its capital is Paris.", ["Paris"], {"first_sentence"}),
    ("Paris was named in Vol. 2 of the atlas. Lyon was not.", ["Lyon"], {"first_sentence", "negation"}),
    # Passes: the key stands as the answer.
    ("ValueError('BoundedSemaphore released too many times').", ["ValueError"], set()),
    ("About 8% of them.", ["8 %"], set()),
    ("Some 8 per cent of them.", ["8 %"], set()),
    ("It cost US$1,499.00 to make.", ["1,499"], set()),
    ("In the 1920s.", ["the 1920s"], set()),
    ("In the 12th century.", ["12th"], set()),
    ("On May 5, 1979, in the afternoon.", ["1979"], set()),  # no key gives a fuller date
    ("Heading: the answer is Paris.", ["Paris"], set()),  # a colon ends no sentence
    ("The Atlanta Braves, San Francisco Giants", ["Atlanta Braves", "San Francisco Giants"], set()),
    ("Port Talbot, Wales.", ["Port Talbot"], set()),  # a place and its country are no candidates
    ("Don Shula, who won 328 games.", ["Don Shula"], set()),
    # a full stop after an abbreviation, an initial or a first list number ends no sentence
    ("The actor who plays Dr. Avery is Jesse Williams.", ["Jesse Williams"], set()),
    ("The first Junie B. Jones book is Junie B. Jones and the Smelly Bus.", ["Smelly Bus"], set()),
    ("1. Arizona", ["Arizona"], set()),
    ("A blob, a tree, a commit and a tag.", ["blob, tree, commit and tag"], set()),  # articles between
    ("Ingest, Index, Recall and Compact.", ["Ingest, Index, Recall, Compact"], set()),  # a list's `and`
    ("Bill and Hillary Clinton.", ["Bill Clinton"], {"contiguous"}),  # `and` never stands for a word
    ("Compact, Recall, Index, Ingest.", ["Ingest, Index, Recall, Compact"], {"contiguous"}),  # order
]


@pytest.mark.parametrize(("answer", "keys", "rules"), CASES)
def test_each_rule_on_hand_checked_answers(answer: str, keys: list[str], rules: set[str]) -> None:
    assert t1_passes(answer, keys)  # every case is one rule v1 passes
    assert objected(answer, *keys) == rules
    assert v2(answer, *keys) is (not rules)


def test_a_key_the_question_already_names_is_no_evidence() -> None:
    prompt = "Who has sold more albums, Kelly or Carrie?"
    assert objected("Carrie.", "Carrie", prompt=prompt) == {"echo"}
    # A key with a word the question does not have still passes.
    assert v2("Carrie Underwood.", "Carrie", "Carrie Underwood", prompt=prompt)


def test_numbers_read_as_numbers() -> None:
    assert texts(read("US$1,499.00; 6.8%, 12th, the 1920s, 8 per cent")) == [
        "us", "1499", "6.8", "%", "12", "the", "1920s", "8", "%",
    ]  # fmt: skip
    # A number glued to letters (a footnote mark) is a word, never the number.
    assert texts(read("Wyler1 in 19861")) == ["wyler1", "in", "19861"]
    assert not v2("It was released in 19861.", "1986")


def test_v2_only_narrows_v1() -> None:
    # v2 reads `1,499` and `1499` as one number, but passes only where v1's token subset holds.
    assert not t1_passes("It cost 1499 dollars.", ["1,499"])
    assert not v2("It cost 1499 dollars.", "1,499")


WORDS = ["paris", "lyon", "not", "or", "1979", "8", "6.8", "%", "the", "may", "5", ",", ".", "capital"]


@settings(derandomize=True, max_examples=300)
@given(
    answer=st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join),
    key=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
)
def test_v2_passes_only_where_v1_passes(answer: str, key: str) -> None:
    if v2(answer, key):
        assert t1_passes(answer, [key])


CONTENT = ["paris", "lyon", "ada", "lovelace", "1979", "8", "6.8", "%", "1,499", "12th", "1920s"]


@settings(derandomize=True, max_examples=200)
@given(key=st.lists(st.sampled_from(CONTENT), min_size=1, max_size=4).map(" ".join))
def test_a_key_given_as_the_whole_answer_passes(key: str) -> None:
    if set(texts(read(key))) <= {"%"}:
        return  # punctuation alone is a weak key
    assert v2(key, key, prompt="Which one?")
    assert v2(f"{key}.", key, prompt="Which one?")


def test_a_long_answer_of_one_key_repeated_is_read_once_per_clause() -> None:
    # 40,000 occurrences: each clause is read once, not once per occurrence (a quadratic reading
    # would take minutes here). The verdicts are the short answers' verdicts.
    assert v2("Paris " * 40_000, "Paris")
    assert not v2("It is not Paris; " * 20_000, "Paris")
    assert objected("Lyon. " * 20_000 + "Paris.", "Paris") == {"first_sentence"}
