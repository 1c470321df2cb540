"""`tabench breaking OLD NEW`: each kind of change, the exit status, --json, and --git revisions."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from support.battery_files import write_battery

from tabench_dsl.cli import main

MANIFEST = """\
    name: memos
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: ["*.rubric"]
"""

OLD = """\
    question same {
      prompt "Who wrote the memo?"
      gold "Ada"
    }
    question gone {
      prompt "What was dropped?"
      gold "Nothing"
    }
    question moved {
      prompt "Which stage comes first?"
      gold "Ingest"
    }
    question reworded {
      prompt "Which stages?"
      gold "Four"
    }
    question regolded {
      prompt "How many stages?"
      gold "4"
    }
    question retrapped {
      prompt "Is there a Summarize stage?"
      gold "No"
    }
    question t1-switched {
      prompt "Which stage is last?"
      gold "Compact"
    }
    question tidied {
      prompt "Who reads the memo?"
      gold "Everyone"
    }
"""

NEW = """\
    question same {
      prompt "Who wrote the memo?"
      gold "Ada"
    }
    question moved-2 {
      prompt "Which stage comes first?"
      gold "Ingest"
    }
    question reworded {
      prompt "Which stages make up the pipeline?"
      gold "Four"
    }
    question regolded {
      prompt "How many stages?"
      gold "Four"
    }
    question retrapped {
      prompt "Is there a Summarize stage?"
      gold "No"
      trap "There is no Summarize stage."
    }
    question t1-switched {
      prompt "Which stage is last?"
      gold "Compact"
      t1 off
    }
    question tidied {
        prompt   "Who reads the memo?"   # a comment
        gold "Everyone"
        tags "easy"
    }
    question fresh {
      prompt "What is new?"
      gold "This"
    }
"""


def _battery(root: Path, name: str, rubric: str, policy: str = "S1: Answer from the memos only.\n") -> Path:
    folder = write_battery(
        root / name, {"battery.yaml": MANIFEST, "memos.policy": policy, "q.rubric": rubric}
    )
    return folder


def test_every_kind_of_change(tmp_path: Path, capsys) -> None:
    old, new = _battery(tmp_path, "old", OLD), _battery(tmp_path, "new", NEW)
    assert main(["breaking", str(old), str(new)]) == 1
    assert capsys.readouterr().out == (
        "removed   gone\n"
        "renamed   moved -> moved-2\n"
        "key       regolded\n"
        "key       retrapped\n"
        "key       t1-switched\n"
        "prompt    reworded\n"
        "added     fresh\n"
        "cosmetic  tidied\n"
        "breaking: old results of 5 question(s) are no longer comparable "
        "(removed 1, renamed 1, key 3, prompt 1, added 1, cosmetic 1)\n"
    )


def test_json(tmp_path: Path, capsys) -> None:
    old, new = _battery(tmp_path, "old", OLD), _battery(tmp_path, "new", NEW)
    assert main(["breaking", str(old), str(new), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["format_version"] == 1 and document["breaking"] is True
    by_kind = {(c["change"], c["old_id"], c["new_id"], c["breaking"]) for c in document["changes"]}
    assert ("renamed", "moved", "moved-2", False) in by_kind
    assert ("removed", "gone", None, True) in by_kind
    assert ("added", None, "fresh", False) in by_kind
    renamed = next(c for c in document["changes"] if c["change"] == "renamed")
    assert renamed["old_sha256"] == renamed["new_sha256"] and len(renamed["old_sha256"]) == 64
    prompt = next(c for c in document["changes"] if c["change"] == "prompt")
    assert prompt["old_sha256"] != prompt["new_sha256"]


def test_cosmetic_and_added_only_is_not_breaking(tmp_path: Path, capsys) -> None:
    rubric = 'question a {\n  prompt "p"\n  gold "g"\n}\n'
    old = _battery(tmp_path, "old", rubric)
    new = _battery(
        tmp_path,
        "new",
        rubric.replace('  gold "g"', '    gold   "g"  # same')
        + 'question b {\n  prompt "q"\n  gold "h"\n}\n',
    )
    assert main(["breaking", str(old), str(new)]) == 0
    assert capsys.readouterr().out == (
        "added     b\ncosmetic  a\nnot breaking: every old result is still comparable (added 1, cosmetic 1)\n"
    )
    assert main(["breaking", str(old), str(old)]) == 0
    assert capsys.readouterr().out == "not breaking: every old result is still comparable (no change)\n"


def test_a_policy_change_changes_every_prompt(tmp_path: Path, capsys) -> None:
    rubric = 'question a {\n  prompt "p"\n  gold "g"\n}\n'
    old = _battery(tmp_path, "old", rubric)
    new = _battery(tmp_path, "new", rubric, policy="S1: Answer from the memos only.\nS2: Be strict.\n")
    assert main(["breaking", str(old), str(new)]) == 1
    assert capsys.readouterr().out.startswith("prompt    a\nbreaking: ")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")
def test_two_git_revisions(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    battery = _battery(repo, "bench", OLD)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "old")
    (battery / "q.rubric").write_text((battery / "q.rubric").read_text().replace('gold "4"', 'gold "Four"'))
    _git(repo, "commit", "-q", "-am", "new")
    assert main(["breaking", "--git", str(battery), "HEAD~1", "HEAD"]) == 1
    assert capsys.readouterr().out.startswith("key       regolded\nbreaking: ")
    assert main(["breaking", "--git", str(battery), "HEAD", "HEAD"]) == 0
    capsys.readouterr()
    assert main(["breaking", "--git", str(battery), "HEAD", "nope"]) == 2
    assert "git ls-tree:" in capsys.readouterr().err
    assert main(["breaking", "--git", str(battery), "HEAD", "--", "--output=/tmp/x"]) == 2
    assert "not a git revision: '--output=/tmp/x'" in capsys.readouterr().err


def test_a_new_t1_rule_changes_the_verdicts_of_every_question_t1_may_pass(tmp_path: Path, capsys) -> None:
    rubric = (
        'question a {\n  prompt "p"\n  gold "g"\n}\nquestion b {\n  prompt "q"\n  gold "h"\n  t1 off\n}\n'
    )
    old = _battery(tmp_path, "old", rubric)
    new = _battery(tmp_path, "new", rubric)
    (old / "battery.yaml").write_text(MANIFEST.replace("    ", "") + "t1: {rule: v1}\n", encoding="utf-8")
    # `new` names no rule: the default, v2. Question b has T1 off: the rule changes nothing there.
    assert main(["breaking", str(old), str(new)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "key       a"
    (new / "battery.yaml").write_text(MANIFEST.replace("    ", "") + "t1: {rule: v1}\n", encoding="utf-8")
    assert main(["breaking", str(old), str(new)]) == 0
