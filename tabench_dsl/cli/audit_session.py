"""`tabench adjudicate RESULTS --audit N [--seed S]`: a blind audit of answers the judge decided.

N answers the judge (or T1) decided are drawn reproducibly, stratified by system and verdict
(`review.audit.draw_audit_sample`), and shown one at a time with the question and its gold answer
only: not the system that wrote the answer, nor the judge's verdict or reason, so the person's
verdict is their own. Once they have decided, the system and the judge's verdict are revealed.
Each audit is appended to RESULTS.decisions.jsonl as a decision with `"kind": "audit"` and the
reviewer's name; it never changes the standing verdict. An answer the reviewer audited already is not
drawn again; one other people audited is, so two reviewers given one seed audit the same answers
and totals can measure them against each other (`review.reviewers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..core.display import shown

if TYPE_CHECKING:
    from ..core.records import Record
    from ..review.viewer.run import Run

#: What a reviewer may type, and what it means.
AUDIT_KEYS = {"p": "pass", "pass": "pass", "f": "fail", "fail": "fail", "s": "skip", "skip": "skip"}
AUDIT_KEYS |= {"q": "quit", "quit": "quit"}


def indented(text: str, indent: str = "    ") -> str:
    """A multi-line text indented, every line shown as text."""
    if not text:
        return indent + "(empty)"
    return "\n".join(indent + line for line in shown(text, lines=True).split("\n"))


def ask_line(prompt: str, stdin: TextIO, out: TextIO) -> str | None:
    """One line typed after `prompt`, stripped; None at the end of input."""
    print(prompt, end="", file=out, flush=True)
    line = stdin.readline()
    if not line:
        print(file=out)
        return None
    return line.strip()


def show_blind(record: Record, number: int, count: int, gold: str | None, out: TextIO) -> None:
    """The answer as the person audits it: the question and gold, never the system or the verdict."""
    print(f"\n=== audit [{number}/{count}] · question {shown(record.question)} ===", file=out)
    if gold is not None:
        print(f"Gold:\n{indented(gold)}", file=out)
    print(f"Answer:\n{indented(record.answer)}", file=out)


def reveal(record: Record, verdict: str, out: TextIO) -> None:
    """After the person decided: who wrote the answer and what the judge (or T1) made of it."""
    by = "T1 (token subset)" if record.tier == "t1" else f"the judge ({shown(record.judge.describe())})"
    agreed = "you agree" if verdict == record.verdict else "you DISAGREE"
    print(
        f"  recorded: {verdict}. System {shown(record.system)}; {by} said {record.verdict}: {agreed}.",
        file=out,
    )
    if record.tier == "t2":
        print(f"  Judge's reason:\n{indented(record.reason, '      ')}", file=out)


#: Asked after p or f at a terminal, when no note followed the key on its line.
NOTE_PROMPT = "Note (optional, Enter for none) > "


def decision_line(line: str, keys: dict[str, str]) -> tuple[str | None, str]:
    """A typed line as (the choice its first word names, or None; the note after that word)."""
    key, _, note = line.strip().partition(" ")
    return keys.get(key.lower()), note.strip()


def note_after(inline: str, stdin: TextIO, out: TextIO) -> str:
    """The note of a decision just made: the text after its key on the line; else, at a terminal,
    one line asked for. From a pipe no line more is read, so every piped line is a decision (a
    note line after each would take the next decision for a note)."""
    if inline or not stdin.isatty():
        return inline
    return ask_line(NOTE_PROMPT, stdin, out) or ""


def choose(stdin: TextIO, out: TextIO) -> tuple[str, str]:
    """The person's verdict (pass, fail, skip or quit; the end of input quits) and its note."""
    while True:
        line = ask_line(
            "Your verdict: [p]ass  [f]ail  [s]kip  [q]uit (a note may follow: f wrong year) > ", stdin, out
        )
        if line is None:
            return "quit", ""
        choice, note = decision_line(line, AUDIT_KEYS)
        if choice is not None:
            return choice, note
        if line:  # an empty line asks again
            print(f"  {shown(line)!r}: type p, f, s or q", file=out)


def run_audit(
    run_data: Run,
    count: int,
    *,
    seed: int,
    reviewer: str,
    stdin: TextIO,
    out: TextIO,
    by: str = "stratified",
) -> int:
    """Draw `count` answers (`by` stratified or uncertainty) and audit them one at a time; each
    audit is appended as it is made."""
    from ..review.decisions import make_decision
    from ..store.decisions import append_decision, load_decisions

    done = {
        (d.system, d.question)
        for d in load_decisions(run_data.decisions_path)
        if d.is_audit and d.reviewer == reviewer
    }
    queue, chances, how = _draw(run_data, count, seed=seed, done=done, by=by)
    if not queue:
        print(
            f"Nothing to audit: no answer decided by the judge or T1 is left unaudited in "
            f"{shown(str(run_data.results_path))}.",
            file=out,
        )
        return 0
    print(
        f"{len(queue)} answer(s) to audit (seed {seed}, {how}); audits go to "
        f"{shown(str(run_data.decisions_path))} as {shown(reviewer)}. The system and the judge's verdict "
        "are shown once you have decided.",
        file=out,
    )
    audited = skipped = 0
    for number, record in enumerate(queue, start=1):
        question = run_data.compiled.questions.get(record.question) if run_data.compiled else None
        show_blind(record, number, len(queue), None if question is None else question.gold, out)
        choice, inline = choose(stdin, out)
        if choice == "quit":
            break
        if choice == "skip":
            skipped += 1
            continue
        note = note_after(inline, stdin, out)
        decision = make_decision(
            record,
            choice,
            reviewer=reviewer,
            note=note,
            audit=True,
            inclusion_probability=chances.get(record.key),
        )
        append_decision(run_data.decisions_path, decision)
        audited += 1
        reveal(record, choice, out)
    print(f"\n{audited} audited, {skipped} skipped, {len(queue) - audited - skipped} not shown.", file=out)
    return 0


def _draw(
    run_data: Run, count: int, *, seed: int, done: set[tuple[str, str]], by: str
) -> tuple[list[Record], dict[tuple[str, str], float], str]:
    """The answers to audit, each one's inclusion probability (uncertainty draw only), and how
    they were drawn, in words."""
    if by != "uncertainty":
        from ..review.audit import draw_audit_sample

        return (
            draw_audit_sample(run_data.records, count, seed=seed, done=done),
            {},
            "stratified by system and verdict",
        )
    from ..review.uncertain_draw import uncertainty_draw

    compiled = run_data.compiled

    def gold_of(question: str) -> str | None:
        found = compiled.questions.get(question) if compiled else None
        return None if found is None else found.gold

    drawn = uncertainty_draw(run_data.records, count, seed=seed, done=done, gold_of=gold_of)
    unsure = sum(1 for _, _, signs in drawn if signs)
    how = f"drawn by uncertainty: {unsure} with a sign the judge was unsure"
    return [record for record, _, _ in drawn], {record.key: p for record, p, _ in drawn}, how
