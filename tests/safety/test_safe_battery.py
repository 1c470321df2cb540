"""A battery reads only its own folder, and hostile spec text gets a positioned error, never a
traceback.

Each case starts from a clean battery at `bat/` under the test's working folder (so paths in the
messages are short), with a file of secrets beside it that no output may ever show.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.cli import build_parser, main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.files import MAX_SPEC_BYTES

MANIFEST = """\
name: memos
scorer: tabench-1.1
policies: [memos.policy]
rubrics: [questions/*.rubric]
"""
POLICY = "S1: Answer from the memos only.\n"
RUBRIC = """\
question h02 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  exemplar correct "Ingest, Index, Recall, Compact." why "all four named"
}
"""
#: What the file beside the battery holds; it must never be shown.
SECRET = "OPENAI_API_KEY=sk-secret-never-shown\n"
OUTSIDE_HINT = (
    "hint: a battery reads only the files in its own folder; to let it read another folder, "
    "pass --allow-dir DIR on the command line"
)
SHIPPED = Path(__file__).resolve().parents[2] / "specs" / "tabench-1.1"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder: a clean battery at `bat/`, secrets at `.env` and `shared/secret.rubric`."""
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "bat/battery.yaml": MANIFEST,
            "bat/memos.policy": POLICY,
            "bat/questions/a.rubric": RUBRIC,
            ".env": SECRET,
            "shared/secret.rubric": SECRET,
            "shared/extra.policy": "S9: Be brief.\n",
        },
    )
    return tmp_path


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        file = root / name
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            file.write_bytes(content)
        else:
            file.write_text(content, encoding="utf-8")


def errors_of(battery: str = "bat", **options) -> str:
    with pytest.raises(SpecErrors) as raised:
        load_battery(battery, **options)
    return raised.value.render()


def lint_and_compile(argv_tail: list[str], capsys) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(status, stdout, stderr) of `lint bat ...` and of `compile bat ...`."""
    outcomes = []
    for command in ("lint", "compile"):
        status = main([command, "bat", *argv_tail])
        out, err = capsys.readouterr()
        outcomes.append((status, out, err))
    return outcomes[0], outcomes[1]


# -- A battery reads only its own folder ------------------------------------------------------------

OUTSIDE_CASES = {
    "policy above the folder": (
        "policies: [memos.policy, ../.env]",
        """\
        bat/battery.yaml:3:26: policy file '../.env' is outside the battery folder
            policies: [memos.policy, ../.env]
                                     ^
        """,
    ),
    "policy by absolute path": (
        "policies: [memos.policy, ROOT/.env]",
        """\
        bat/battery.yaml:3:26: policy file 'ROOT/.env' is outside the battery folder
            policies: [memos.policy, ROOT/.env]
                                     ^
        """,
    ),
    "rubric pattern above the folder": (
        "rubrics: [questions/*.rubric, ../shared/*.rubric]",
        """\
        bat/battery.yaml:4:31: rubric pattern '../shared/*.rubric' reaches outside the battery folder
            rubrics: [questions/*.rubric, ../shared/*.rubric]
                                          ^
        """,
    ),
    "rubric pattern over the whole disk": (
        "rubrics: [questions/*.rubric, /**/*.rubric]",
        """\
        bat/battery.yaml:4:31: rubric pattern '/**/*.rubric' reaches outside the battery folder
            rubrics: [questions/*.rubric, /**/*.rubric]
                                          ^
        """,
    ),
    "scorer folder outside": (
        "scorer: ../scorer",
        """\
        bat/battery.yaml:2:9: scorer folder '../scorer' is outside the battery folder
            scorer: ../scorer
                    ^
        """,
    ),
}


@pytest.mark.timeout(60)  # walking `/**` (as the glob once did) would take far longer
@pytest.mark.parametrize("case", OUTSIDE_CASES, ids=list(OUTSIDE_CASES))
def test_a_file_outside_the_battery_is_an_error_at_its_manifest_line(root: Path, capsys, case: str) -> None:
    line, expected = OUTSIDE_CASES[case]
    line = line.replace("ROOT", str(root))
    key = line.split(":")[0]
    manifest = "".join((line if old.startswith(key + ":") else old) + "\n" for old in MANIFEST.splitlines())
    shutil.copytree(SHIPPED, root / "scorer")
    write(root, {"bat/battery.yaml": manifest, "scorer/user.j2": SECRET})
    expected = textwrap.dedent(expected).replace("ROOT", str(root)) + OUTSIDE_HINT

    assert errors_of() == expected
    lint, compiled = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n1 error, 0 warnings\n", "")
    assert compiled == (2, "", expected + "\n")


def test_a_symlink_out_of_the_battery_is_refused_and_never_shown(root: Path, capsys) -> None:
    (root / "bat/rules.policy").symlink_to(root / ".env")
    (root / "bat/questions/z.rubric").symlink_to(root / "shared/secret.rubric")
    write(root, {"bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[memos.policy, rules.policy]")})
    expected = (
        textwrap.dedent("""\
        bat/battery.yaml:3:26: policy file 'rules.policy' is outside the battery folder
            policies: [memos.policy, rules.policy]
                                     ^
        """)
        + OUTSIDE_HINT
        + "\n"
        + textwrap.dedent("""\
        bat/battery.yaml:4:11: rubric pattern 'questions/*.rubric' matches 'questions/z.rubric', outside the \
battery folder
            rubrics: [questions/*.rubric]
                      ^
        """)
        + OUTSIDE_HINT
    )
    assert errors_of() == expected
    lint, compiled = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n2 errors, 0 warnings\n", "")
    assert compiled == (2, "", expected + "\n")
    assert "sk-secret" not in lint[1] + compiled[2]


def test_a_symlink_inside_the_battery_is_followed(root: Path) -> None:
    (root / "bat/questions/b.rubric").symlink_to(root / "bat/questions/a.rubric")
    (root / "bat/questions/loop").symlink_to(root / "bat/questions")  # `**` does not walk into links
    write(root, {"bat/battery.yaml": MANIFEST.replace("questions/*.rubric", "questions/**/a.rubric")})
    assert [q.id for q in load_battery("bat").questions] == ["h02"]


def test_allow_dir_lets_the_battery_read_that_folder_only(root: Path, capsys) -> None:
    write(
        root,
        {
            "bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[memos.policy, ../shared/extra.policy]"),
            "shared/secret.rubric": RUBRIC.replace("h02", "h03"),
        },
    )
    battery = load_battery("bat", allow_dirs=["shared"])
    assert [rule.text for rule in battery.policies] == ["S1: Answer from the memos only.", "S9: Be brief."]

    assert main(["compile", "bat", "--allow-dir", "shared"]) == 0
    assert "S9: Be brief." in capsys.readouterr().out
    assert main(["lint", "bat", "--allow-dir", "shared"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"

    # Another folder stays closed, and the message says the allowed ones were looked at.
    write(root, {"bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[../shared/extra.policy, ../.env]")})
    assert (
        errors_of(allow_dirs=["shared"])
        == textwrap.dedent("""\
        bat/battery.yaml:3:36: policy file '../.env' is outside the battery folder and the allowed folders
            policies: [../shared/extra.policy, ../.env]
                                               ^
        """)
        + OUTSIDE_HINT
    )


def test_allow_dir_must_name_a_folder(root: Path, capsys) -> None:
    assert main(["lint", "bat", "--allow-dir", "nowhere"]) == 2
    assert capsys.readouterr().err == "tabench: error: --allow-dir nowhere: no such folder\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["compile", "bat"],
        ["lint", "bat"],
        ["grade", "bat", "--answers", "a.jsonl"],
        ["calibrate", "bat"],
        ["view", "r.jsonl", "--battery", "bat"],
        ["report", "r.jsonl", "--html", "r.html", "--battery", "bat"],
        ["adjudicate", "r.jsonl", "--battery", "bat"],
    ],
)
def test_every_command_that_loads_a_battery_takes_allow_dir(argv: list[str]) -> None:
    full = [*argv, "--allow-dir", "one", "--allow-dir", "two"]
    assert build_parser(full).parse_args(full).allow_dirs == [Path("one"), Path("two")]


def test_report_compiles_its_battery_with_the_allowed_folders(root: Path, capsys) -> None:
    from support.make_results import small_results, write_results

    write_results(root / "run.jsonl", small_results())
    write(root, {"bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[../shared/extra.policy]")})
    argv = ["report", "run.jsonl", "--html", "run.html", "--battery", "bat"]
    assert main(argv) == 2
    assert "policy file '../shared/extra.policy' is outside the battery folder" in capsys.readouterr().err
    assert main([*argv, "--allow-dir", "shared"]) == 0
    assert "S9: Be brief." in (root / "run.html").read_text(encoding="utf-8")


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_without_blocking(root: Path, capsys) -> None:
    os.mkfifo(root / "bat/rules.policy")
    write(root, {"bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[memos.policy, rules.policy]")})
    expected = textwrap.dedent("""\
        bat/battery.yaml:3:26: policy file 'rules.policy' is not a regular file
            policies: [memos.policy, rules.policy]
                                     ^""")
    assert errors_of() == expected
    lint, compiled = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n1 error, 0 warnings\n", "")
    assert compiled == (2, "", expected + "\n")


def test_a_device_is_refused(root: Path) -> None:
    (root / "bat/null.policy").symlink_to("/dev/null")
    write(root, {"bat/battery.yaml": MANIFEST.replace("[memos.policy]", "[memos.policy, null.policy]")})
    assert errors_of(allow_dirs=["/dev"]).startswith(
        "bat/battery.yaml:3:26: policy file 'null.policy' is not a regular file\n"
    )


def test_a_file_over_the_size_limit_is_refused(root: Path) -> None:
    write(root, {"bat/questions/big.rubric": b"#" * (MAX_SPEC_BYTES + 1) + b"\n"})
    assert errors_of() == textwrap.dedent("""\
        bat/battery.yaml:4:11: rubric file 'questions/big.rubric' is larger than 8 MiB
            rubrics: [questions/*.rubric]
                      ^""")


# -- Hostile spec text: a positioned error, never a traceback ---------------------------------------


def test_a_byte_order_mark_is_not_text(root: Path, capsys) -> None:
    shutil.copytree(SHIPPED, root / "bat/scorer")
    bom = b"\xef\xbb\xbf"
    write(
        root,
        {
            "bat/battery.yaml": bom + MANIFEST.replace("tabench-1.1", "scorer").encode(),
            "bat/memos.policy": bom + b"# House rules\n" + POLICY.encode(),
            "bat/questions/a.rubric": bom + RUBRIC.encode(),
            "bat/scorer/scorer.yaml": bom + (SHIPPED / "scorer.yaml").read_bytes(),
            "bat/scorer/system.j2": bom + (SHIPPED / "system.j2").read_bytes(),
        },
    )
    battery = load_battery("bat")
    assert [rule.text for rule in battery.policies] == ["S1: Answer from the memos only."]
    assert battery.scorer.settings.name == "tabench-1.1"
    assert main(["lint", "bat"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"
    assert main(["compile", "bat"]) == 0
    assert capsys.readouterr().out.startswith("You are scoring ONE benchmark question")


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "bat/questions/a.rubric",
            RUBRIC.replace("Recall", "Rec\xe9all").encode("latin-1"),
            """\
        bat/questions/a.rubric:3:40: rubric file is not UTF-8 text (invalid continuation byte)
              gold "Four stages: Ingest, Index, Rec\\xe9all, Compact"
                                                   ^
        hint: save the file as UTF-8""",
        ),
        (
            "bat/memos.policy",
            b"\xef\xbb\xbfS1: ok\nS2: caf\xe9\n",
            """\
        bat/memos.policy:2:8: policy file is not UTF-8 text (invalid continuation byte)
            S2: caf\\xe9
                   ^
        hint: save the file as UTF-8""",
        ),
        (
            "bat/battery.yaml",
            MANIFEST.encode() + b"# \xff\xfe\n",
            """\
        bat/battery.yaml:5:3: manifest is not UTF-8 text (invalid start byte)
            # \\xff\\xfe
              ^
        hint: save the file as UTF-8""",
        ),
    ],
)
def test_bytes_that_are_not_utf8_are_an_error_at_their_line(
    root: Path, capsys, name: str, content: bytes, expected: str
) -> None:
    write(root, {name: content})
    expected = textwrap.dedent(expected)
    assert errors_of() == expected
    lint, compiled = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n1 error, 0 warnings\n", "")
    assert compiled == (2, "", expected + "\n")


def test_a_lone_surrogate_escape_is_an_error_in_lint_compile_and_grade(root: Path, capsys) -> None:
    write(
        root,
        {
            "bat/questions/a.rubric": RUBRIC.replace('Compact"\n  exemplar', 'Compact \\ud800"\n  exemplar'),
            "answers.jsonl": '{"system": "s", "question": "h02", "answer": "Ingest"}\n',
        },
    )
    expected = textwrap.dedent("""\
        bat/questions/a.rubric:3:53: lone surrogate escape '\\ud800' in string
              gold "Four stages: Ingest, Index, Recall, Compact \\ud800"
                                                                ^
        hint: a \\uD800-\\uDFFF escape is half of a character: write its pair after it (\\ud83d\\ude00), \
or the character itself""")
    assert errors_of() == expected
    lint, compiled = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n1 error, 0 warnings\n", "")
    assert compiled == (2, "", expected + "\n")
    assert main(["grade", "bat", "--answers", "answers.jsonl", "--judge", "builtin", "--no-cache"]) == 2
    assert capsys.readouterr() == ("", expected + "\n")


def test_an_escaped_surrogate_pair_is_one_character(root: Path) -> None:
    write(
        root,
        {
            "bat/questions/a.rubric": RUBRIC.replace(
                'Compact"\n  exemplar', 'Compact \\ud83d\\ude00 \\\\ud800"\n  exemplar'
            )
        },
    )
    (question,) = load_battery("bat").questions
    assert question.gold == "Four stages: Ingest, Index, Recall, Compact \U0001f600 \\ud800"


@pytest.mark.parametrize("depth", [500, 5000])
def test_a_deeply_nested_manifest_is_an_error_not_a_recursion(root: Path, capsys, depth: int) -> None:
    write(root, {"bat/battery.yaml": MANIFEST + "t1: " + "[" * depth + "]" * depth + "\n"})
    lint, compiled = lint_and_compile([], capsys)
    first = compiled[2].splitlines()[0]
    assert first == "bat/battery.yaml:5:68: YAML nested deeper than 64 levels"  # the top mapping is one
    assert lint[0] == compiled[0] == 2 and lint[1].endswith("\n1 error, 0 warnings\n")


def test_a_deeply_nested_scorer_settings_file_is_an_error(root: Path) -> None:
    shutil.copytree(SHIPPED, root / "bat/scorer")
    with open(root / "bat/scorer/scorer.yaml", "a", encoding="utf-8") as f:
        f.write("extra: " + "[" * 600 + "]" * 600 + "\n")
    lines = len((SHIPPED / "scorer.yaml").read_text(encoding="utf-8").splitlines())
    write(root, {"bat/battery.yaml": MANIFEST.replace("tabench-1.1", "scorer")})
    error = errors_of().splitlines()[0]
    assert error == f"bat/scorer/scorer.yaml:{lines + 1}:71: YAML nested deeper than 64 levels"


def test_a_lone_surrogate_in_scorer_settings_is_an_error_at_its_place(root: Path) -> None:
    shutil.copytree(SHIPPED, root / "bat/scorer")
    with open(root / "bat/scorer/scorer.yaml", "a", encoding="utf-8") as f:
        f.write('extra: "a \\udc00"\n')
    lines = len((SHIPPED / "scorer.yaml").read_text(encoding="utf-8").splitlines())
    write(root, {"bat/battery.yaml": MANIFEST.replace("tabench-1.1", "scorer")})
    expected = f"bat/scorer/scorer.yaml:{lines + 1}:8: lone surrogate escape in YAML text"
    assert errors_of().splitlines()[0] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'name: "memos\\ud800"\n',
            """\
        bat/battery.yaml:1:7: lone surrogate escape in YAML text
            name: "memos\\ud800"
                  ^
        hint: a \\uD800-\\uDFFF escape is half of a character; write the character itself""",
        ),
        (
            "name: &a [*a]\n",
            """\
        bat/battery.yaml:1:11: alias '*a' inside the collection it names
            name: &a [*a]
                      ^
        hint: a value cannot contain itself""",
        ),
    ],
)
def test_yaml_a_manifest_cannot_hold_is_an_error_at_its_place(
    root: Path, capsys, text: str, expected: str
) -> None:
    write(root, {"bat/battery.yaml": text + MANIFEST.split("\n", 1)[1]})
    expected = textwrap.dedent(expected)
    assert errors_of() == expected
    lint, _ = lint_and_compile([], capsys)
    assert lint == (2, expected + "\n1 error, 0 warnings\n", "")


# -- lint: a judge URL only the manifest names -----------------------------------------------------


def test_lint_warns_of_a_judge_url_the_manifest_names(root: Path, capsys) -> None:
    write(root, {"bat/battery.yaml": MANIFEST + "judge:\n  model: m\n  backend: https://judge.example/v1\n"})
    assert main(["lint", "bat"]) == 0
    assert capsys.readouterr().out == textwrap.dedent("""\
        bat/battery.yaml:7:12: warning: judge backend 'https://judge.example/v1' is a URL: it gets no API \
key unless you pass it with --judge [W106]
              backend: https://judge.example/v1
                       ^
        hint: a battery cannot send your API key to a server it names; to trust this one, name it yourself: \
--judge URL
        0 errors, 1 warning
        """)


def test_lint_does_not_warn_of_a_named_provider(root: Path, capsys) -> None:
    write(root, {"bat/battery.yaml": MANIFEST + "judge: {model: m, backend: openai}\n"})
    assert main(["lint", "bat"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"
