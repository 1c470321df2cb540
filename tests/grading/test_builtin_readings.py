"""The builtin judge where people disagreed with it (issue 40): footnote markers and run-together
words of chat answers, decades and ordinals, structured answers, command-line flags in a trap, and
golds made only of little words. Each case is hand-checked against what a person would say."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.grading.judges.builtin import judge


def verdict(gold: str, answer: str, trap: str | None = None, variants: tuple[str, ...] = ()) -> str:
    question = {"question": "Q?", "answer_gold": gold, "accepted_variants": list(variants)}
    if trap is not None:
        question["honesty_trap"] = trap
    return judge(question, answer).verdict


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        # footnote digits glued to a word or a year, superscript and bracketed markers
        ("William Wyler", "The film was directed byWilliam Wyler1.", "pass"),
        ("1986", "It first opened in 19861.", "pass"),
        ("Elena Anaya", "She is portrayed by Elena Anaya\u2076, a Spanish actress.", "pass"),
        ("Lady Gaga", "The halftime show was performed by Lady Gaga[1].", "pass"),
        ("Sacramento Kings", "TheSacramento Kings are the oldest team.", "pass"),
        ("Jacob Tremblay", "Auggie is played by Jacob Tremblay123.", "pass"),  # three notes
        ("2013", "The Astros joined the American League in2013after leaving.", "pass"),
        ("TLC", "The theme song was sung by the groupTLC1.", "pass"),
        ("2013", "The Astros joined in2014after leaving.", "fail"),
        ("12th", "It finished 12th.", "pass"),  # an ordinal's suffix is no word run into it
        # a key of several words run into the function words around it (bold copied without spaces)
        ("Hugo Weaving", "His father was played byHugo Weavingin the film.", "pass"),
        ("medulla oblongata", "They are located in themedulla oblongataof the brain.", "pass"),
        ("pour point", "That temperature is called thepour point.", "pass"),
        ("Hugo Weaving", "His father was played byHugo Weavingsson in the film.", "fail"),  # no function word
        ("New York", "He writes for the New Yorker.", "fail"),  # a longer word is another word
        # a person is named by first and last name, without the middle ones
        ("Jesse Wesley Williams", "Dr. Avery is played by Jesse Williams.", "pass"),
        ("Geraldine Margaret Agnew-Somerville", "Geraldine Agnew-Somerville played her.", "pass"),
        ("Jesse Wesley Williams", "Dr. Avery is played by Jesse Wesley.", "fail"),
        ("George H. W. Bush", "It was George Bush.", "fail"),  # a middle initial tells people apart
        ("The Stanley Hotel", "It was filmed at the Overlook Hotel.", "fail"),  # no person's name
        ("Sir John Ambrose Fleming", "It is Sir Fleming's rule.", "fail"),
        # a full date is named by its year when the answer gives no month and no other year
        ("19 July 1990", "Marathon changed its name to Snickers in 1990.", "pass"),
        ("March 31, 2016", "It was first released in March 2016.", "fail"),  # the month, not the day
        ("September 12, 2004", "It was released onSeptember 27, 2004.", "fail"),
        ("October 3, 1970", "They won in 2014 and 1970.", "fail"),  # which year is the answer?
        ("1990", "It changed its name in 1990.", "pass"),
        # a glued footnote is a second reading, never a licence to match a piece of a number
        ("12", "The pool starts 120 workers.", "fail"),
        ("1986", "It opened in 1988.", "fail"),
        ("`python3`", "It needs python3.", "pass"),  # the text as written is read too
        ("`items[0]`", "Read items[0].", "pass"),
        ("`items[0]`", "Read items[1].", "fail"),  # an index is no footnote in the gold
        ("m\u00b2", "The area is given in m2.", "pass"),  # an exponent is no footnote either
        # decades are not their first year; ordinals are their number
        ("the 1920s", "In the 1920s.", "pass"),
        ("the 1920s", "In 1920.", "fail"),
        ("the 90s", "They were discontinued in the late 1990s.", "pass"),
        ("12th", "It finished 12.", "pass"),
        ("12", "Wisconsin is the 12th-largest state.", "pass"),
        ("12", "Wisconsin is the 13th-largest state.", "fail"),
        # golds of little words only: the gold itself is the element
        ("four", "There are four original books.", "pass"),
        ("four", "There are 4 seasons.", "pass"),
        ("four", "There are seven books.", "fail"),
        ("second", "India is the second most populous country.", "pass"),
        ("second", "India is the 2nd most populous country.", "pass"),
        ("second", "India is the third most populous country.", "fail"),
        # accents, a title before a name, an aside in parentheses, a count word inside prose
        ("Paul Baumer", "It is told by Paul B\u00e4umer.", "pass"),
        ("Sir Ernest Rutherford", "It was Ernest Rutherford.", "pass"),
        ("Stephen King", "It was written by Stephen Fry.", "fail"),  # a name's last word is no title
        ("Cutback (surfing move)", "It is a cutback.", "pass"),
        ("12 threads (`MAX_WORKERS`)", "It starts 12 threads.", "fail"),  # an aside with code is asked
        ("eight years", "The tenure is five years.", "fail"),
        ("eight years", "The tenure is eight years.", "pass"),
    ],
)
def test_readings(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ('`{"1": "a"}`', 'The reply is {"1": "a"}.', "pass"),
        ('`{"1": "a"}`', 'The reply is {"1": "b"}.', "fail"),
        ('{"1": "a"}', '{"1": "a"}', "pass"),
        ('{"1": "a"}', '{"2": "b"}', "fail"),
    ],
)
def test_structured_answers(gold: str, answer: str, expected: str) -> None:
    assert verdict(gold, answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Use -s.", "fail"),  # asserts the flag the trap says does not exist
        ("Pass --quiet; there is no -s flag.", "pass"),
        ("Pass --quiet. It's the quiet flag's job.", "pass"),  # `'s` is not the flag `-s`
    ],
)
def test_trap_flag(answer: str, expected: str) -> None:
    assert verdict("Pass `--quiet`", answer, trap="There is no -s flag.") == expected


def test_long_flag_may_be_named_without_dashes() -> None:
    assert verdict("Pass `--verbose`", "Turn on the verbose option.") == "pass"
    assert verdict("Pass `--verbose`", "Pass --verbose.") == "pass"


def test_the_trap_is_the_truth_its_denied_names_fail_its_other_names_do_not() -> None:
    trap = "There is no Summarize stage; Compact runs last."
    gold = "Ingest, Index, Recall, Compact"
    assert verdict(gold, "Ingest, Index, Recall, Compact, then Summarize.", trap=trap) == "fail"
    assert verdict(gold, "Ingest, Index, Recall and Compact; there is no Summarize.", trap=trap) == "pass"
    # A trap that denies nothing names only truths: naming them is no trapped claim.
    answer = "Ingest, Index, Recall; Compact runs last."
    assert verdict("Ingest, Index, Recall", answer, trap="Compact runs last.") == "pass"


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    gold=st.integers(min_value=0, max_value=3000),
    said=st.integers(min_value=0, max_value=3000),
    suffix=st.sampled_from(["", "th", "s", ".", "\u00b9", "[2]"]),
)
def test_a_number_is_named_only_by_itself_whatever_follows_it(gold: int, said: int, suffix: str) -> None:
    # An ordinal, a footnote marker or a full stop after a number never makes it another number;
    # a decade (`1920s`) is not its first year.
    answer = f"It was {said}{suffix} then."
    expected = "pass" if said == gold and suffix != "s" else "fail"
    assert verdict(str(gold), answer) == expected
