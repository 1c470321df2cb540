"""Round 3, the editor: a manifest's go-to-definition names no file outside the battery (for
`policies:` and `scorer:` as for `rubrics:`), an editor's buffer is held to lint's 8 MiB, and the
language server converts a document's positions from one split of it, not one split per diagnostic."""

from __future__ import annotations

from pathlib import Path

from pygls.workspace import TextDocument

from tabench_dsl.language.editing import problems_of_open_files
from tabench_dsl.language.files import MAX_SPEC_BYTES, too_large
from tabench_dsl.language.manifest_links import linked_files
from tabench_dsl.language.problems import Problem
from tabench_dsl.lsp.documents import DocumentLines, diagnostic


def _manifest(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "battery.yaml"
    manifest.write_text(text)
    return manifest


def _at(text: str, word: str) -> tuple[int, int]:
    """The 1-based line and column of the first `word` in `text`."""
    for number, line in enumerate(text.splitlines(), 1):
        if word in line:
            return number, line.index(word) + 1
    raise AssertionError(word)


def test_go_to_definition_never_leaves_the_battery(tmp_path: Path) -> None:
    secret = tmp_path / "home" / "secret.policy"
    secret.parent.mkdir()
    secret.write_text("S1: mine\n")
    (tmp_path / "home" / "evil").mkdir()
    (tmp_path / "home" / "evil" / "scorer.yaml").write_text("name: evil\n")
    battery = tmp_path / "home" / "bench"
    text = "name: x\nscorer: ../evil\npolicies: [../secret.policy, linked.policy, own.policy]\n"
    manifest = _manifest(battery, text)
    (battery / "linked.policy").symlink_to(secret)  # a link out is followed to where it leads: out
    (battery / "own.policy").write_text("S1: ours\n")
    for word in ("../secret.policy", "linked.policy", "../evil"):
        assert linked_files(manifest, text, *_at(text, word)) == [], word
    assert linked_files(manifest, text, *_at(text, "own.policy")) == [battery / "own.policy"]


def test_a_shipped_scorer_is_still_a_definition(tmp_path: Path) -> None:
    text = "name: x\nscorer: tabench-1.1\n"
    manifest = _manifest(tmp_path / "b", text)
    (found,) = linked_files(manifest, text, *_at(text, "tabench-1.1"))
    assert found.name == "scorer.yaml" and found.parent.name == "tabench-1.1"


def test_an_editor_buffer_over_8_mib_is_refused_like_a_file(tmp_path: Path) -> None:
    manifest = _manifest(
        tmp_path / "b", "name: x\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n"
    )
    (manifest.parent / "p.policy").write_text("S1: Judge.\n")
    rubric = manifest.parent / "q.rubric"
    rubric.write_text('question a {\n  prompt "p"\n  gold "g"\n}\n')
    huge = 'question a {\n  prompt "p"\n  gold "g"\n}\n' + "#" * MAX_SPEC_BYTES
    assert too_large(huge) and not too_large("é" * (MAX_SPEC_BYTES // 2))
    found = problems_of_open_files(str(rubric), huge, {})
    messages = [p.message for problems in found.values() for p in problems]
    assert any("larger than 8 MiB" in m for m in messages), messages
    alone = tmp_path / "loose.rubric"  # outside any battery: checked alone, and held to the limit too
    assert "larger than 8 MiB" in problems_of_open_files(str(alone), huge, {})[str(alone)][0].message


class _CountedDocument(TextDocument):
    """A pygls document that counts how often its whole text is split into lines."""

    splits = 0

    @property
    def lines(self):
        type(self).splits += 1
        return super().lines


def test_every_diagnostic_of_a_document_comes_from_one_split_of_it() -> None:
    text = "".join(f'question q{n} {{\n  prompt "é {n}"\n  gold "g"\n}}\n' for n in range(2000))
    doc = _CountedDocument("file:///b/q.rubric", text)
    problems = [
        Problem(
            path="/b/q.rubric",
            line=4 * n + 2,
            column=3,
            end_line=4 * n + 2,
            end_column=9,
            code="W101",
            severity="warning",
            message=f"m{n}",
            hint=None,
            source_line=None,
        )
        for n in range(2000)
    ]
    lines = DocumentLines(doc)
    shown = [diagnostic(lines, p) for p in problems]
    assert _CountedDocument.splits == 1
    assert (shown[1999].range.start.line, shown[1999].range.start.character) == (4 * 1999 + 1, 2)
    # UTF-16 columns: "é" is one unit, as the client counts.
    assert lines.position(4 * 5 + 2, 13).character == 12
