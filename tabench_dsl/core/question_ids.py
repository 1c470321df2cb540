"""Question ids made from a source's own names: stable across imports of the same source, valid
as rubric ids, unique in the battery (`tabench import`; `grade --answers` of a hosted Evals export
names its questions by the same rule, `evals_output_items`)."""

from __future__ import annotations

import re

#: A character a question id cannot hold (docs/language.md section 4.2).
_NOT_ID = re.compile(r"[^A-Za-z0-9_.-]+")
#: The longest id made; a longer source id is cut (and kept unique).
MAX_ID_CHARS = 120


def id_base(name: str) -> str:
    """`name` as a question id: every run of characters an id cannot hold as `-`, cut to
    `MAX_ID_CHARS`, starting with a letter or digit."""
    base = _NOT_ID.sub("-", name).strip("-.")[:MAX_ID_CHARS] or "q"
    return base if base[0].isalnum() else "q" + base


class QuestionIds:
    """Hands out ids: the source's name with every run of other characters as `-`, and `.2`,
    `.3` ... after a name already given (two items with the same id in one source)."""

    def __init__(self) -> None:
        self._given: set[str] = set()

    def make(self, name: str) -> str:
        base = id_base(name)
        made, n = base, 1
        while made in self._given:
            n += 1
            made = f"{base}.{n}"
        self._given.add(made)
        return made
