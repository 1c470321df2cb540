"""The public human-labelled sets as a tabench battery and answers: the fidelity bench's input.

`load_set(name, folder)` reads one set (`nq301` or `evouna`) into `Item`s, one per labelled answer;
`write_battery(items, folder)` writes a battery (scorer `tabench-neutral-1.1`, one question per
question of the set, its golds as gold and accepted variants) and `answers.jsonl` beside it.

- NQ301 (Kamalloo et al. 2023): the people's verdict is `Acceptable?` of NQ301_human.tsv, with each
  annotator's; the golds are NQ301_BEM.tsv's (`|`-separated), joined on the question (a few answers
  are spelled differently in the two files; the golds are the question's).
  The set names no system: its answers are one system, `nq301`, and each answer of a question gets
  its own answering-system name (`nq301-a1`, ...) since tabench grades one answer per pair.
- EVOUNA (Wang et al. 2023), NQ.json and TQ.json: golds split on `/` into the gold and accepted
  variants; `improper` rows and answers whose verdict is null are left out.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

EVOUNA_SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")


@dataclass
class Item:
    """One labelled answer: its set, system, question and the people's verdict."""

    set: str
    system: str  # the system reported (nq301: one for the whole set)
    pair_system: str  # the answering-system name graded (unique per question)
    question: str  # the question id in the battery
    prompt: str
    gold: str
    accept: tuple[str, ...]
    answer: str
    human: bool
    #: Each annotator's verdict, by position (None: not labelled; NQ301's third annotator mostly
    #: labels only the answers the first two disagree on).
    annotators: list[bool | None] = field(default_factory=list)


def _yes(cell: str) -> bool | None:
    cell = cell.strip().lower()
    return True if cell == "yes" else False if cell == "no" else None


def load_nq301(folder: Path) -> list[Item]:
    """NQ301's labelled answers, golds joined from the BEM file."""
    csv.field_size_limit(sys.maxsize)
    golds: dict[str, list[str]] = {}
    with (folder / "NQ301_BEM.tsv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            keys = [g.strip() for g in row["Gold answers"].split("|") if g.strip()]
            golds[row["Question"].strip()] = keys  # one gold list per question
    items: list[Item] = []
    seen: dict[str, int] = defaultdict(int)
    ids: dict[str, str] = {}
    with (folder / "NQ301_human.tsv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            question, answer = row["Question"].strip(), row["Model answer"].strip()
            human = _yes(row["Acceptable?"])
            keys = golds.get(question)
            if human is None or not keys or not answer:
                continue
            qid = ids.setdefault(question, f"nq301-{len(ids) + 1}")
            seen[qid] += 1
            annotators = [_yes(row.get(f"annotator{i}") or "") for i in (1, 2, 3)]
            items.append(
                Item(
                    "nq301",
                    "nq301",
                    f"nq301-a{seen[qid]}",
                    qid,
                    question,
                    keys[0],
                    tuple(keys[1:]),
                    answer,
                    human,
                    annotators,
                )
            )
    return items


def load_evouna(folder: Path) -> list[Item]:
    """EVOUNA's labelled answers (NQ.json, TQ.json), improper rows and null verdicts left out."""
    items: list[Item] = []
    for part in ("NQ", "TQ"):
        path = folder / f"{part}.json"
        if not path.exists():
            continue
        for n, row in enumerate(json.loads(path.read_text(encoding="utf-8")), 1):
            if row.get("improper"):
                continue
            keys = [g.strip() for g in str(row.get("golden_answer") or "").split("/") if g.strip()]
            if not keys:
                continue
            qid = f"{part.lower()}-{n}"
            for system in EVOUNA_SYSTEMS:
                answer, human = row.get(f"answer_{system}"), row.get(f"judge_{system}")
                if not isinstance(human, bool) or not isinstance(answer, str) or not answer.strip():
                    continue
                items.append(
                    Item(
                        "evouna",
                        system,
                        system,
                        qid,
                        row["question"].strip(),
                        keys[0],
                        tuple(keys[1:]),
                        answer.strip(),
                        human,
                    )
                )
    return items


def load_set(name: str, data: Path) -> list[Item]:
    """The items of set `name` under `data` (which holds `nq301/` and `evouna-dev/`, or is one of them)."""
    if name == "nq301":
        folder = data / "nq301" if (data / "nq301").is_dir() else data
        return load_nq301(folder) if (folder / "NQ301_human.tsv").exists() else []
    for sub in sorted(data.glob("evouna*")):  # evouna-dev/, or the held-out half's folder
        if sub.is_dir():
            return load_evouna(sub)
    return load_evouna(data)


def _quoted(text: str) -> str:
    """`text` as a one-line DSL string (JSON escapes)."""
    return json.dumps(" ".join(text.split()), ensure_ascii=False)


def write_battery(items: list[Item], folder: Path, *, t1: str) -> Path:
    """Write the battery of `items` (manifest `t1:` as given) and its answers.jsonl under `folder`."""
    (folder / "questions").mkdir(parents=True, exist_ok=True)
    (folder / "battery.yaml").write_text(
        "name: fidelity\nscorer: tabench-neutral-1.1\npolicies: []\n"
        f"rubrics: [questions/*.rubric]\nt1: {t1}\n",
        encoding="utf-8",
    )
    lines: list[str] = []
    done: set[str] = set()
    for item in items:
        if item.question in done:
            continue
        done.add(item.question)
        lines.append(f"question {item.question} {{")
        lines.append(f"  prompt {_quoted(item.prompt)}")
        lines.append(f"  gold {_quoted(item.gold)}")
        seen = {" ".join(item.gold.split())}
        for variant in item.accept:
            flat = " ".join(variant.split())
            if flat not in seen:
                seen.add(flat)
                lines.append(f"  accept {_quoted(variant)}")
        lines.append("}")
    (folder / "questions" / "all.rubric").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with (folder / "answers.jsonl").open("w", encoding="utf-8") as f:
        for item in items:
            row = {"system": item.pair_system, "question": item.question, "answer": item.answer}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return folder
