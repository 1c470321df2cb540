"""`tabench import`: real evals from openai/evals, promptfoo's examples and Inspect AI datasets
(tests/data/imports, see its NOTICE.md) become batteries that lint with no error, compile, are
laid out as `tabench fmt` writes them, and hold the sources' questions and golds."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.cli import main
from tabench_dsl.core.closed_match import MatchCheck, read_answer
from tabench_dsl.grading.answers import AnswerReader
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.formatting import format_text
from tabench_dsl.language.importers.checks import text_check
from tabench_dsl.language.lint import lint_battery
from tabench_dsl.language.render import compile_battery

DATA = Path(__file__).resolve().parent.parent / "data" / "imports"
REGISTRY = DATA / "openai_evals" / "evals" / "registry"
PROMPTFOO = DATA / "promptfoo"
INSPECT = DATA / "inspect"
HOSTED = DATA / "openai_hosted"
GRADERS = HOSTED / "graders"
OUTPUT_ITEMS = HOSTED / "output_items"


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str | Path, status: int = 0):
    out = tmp_path / "bench"
    assert main(["import", *(str(a) for a in argv), "--out", str(out)]) == status
    said = capsys.readouterr()
    errors = [p for p in lint_battery(out) if p.severity == "error"]
    assert errors == []
    for rubric in (out / "questions").glob("*.rubric"):
        text = rubric.read_text(encoding="utf-8")
        assert format_text(text, rubric) == text  # as `tabench fmt` writes it
    battery = load_battery(out)
    compile_battery(battery)
    return battery, said


def samples(path: Path) -> list[tuple[int, dict]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, json.loads(line)) for n, line in enumerate(lines, start=1) if line.strip()]


def test_openai_evals_registry_match_fuzzy_and_modelgraded(tmp_path: Path, capsys) -> None:
    evals = REGISTRY / "evals"
    battery, said = imported(
        tmp_path,
        capsys,
        "openai-evals",
        evals / "test-basic.yaml",
        evals / "logic.yaml",
        evals / "finance.yaml",
    )
    questions = {q.id: q for q in battery.questions}
    for name, data in (
        ("test-match", "test_match/samples.jsonl"),
        ("test-fuzzy-match", "test_fuzzy_match/samples.jsonl"),
        ("logic-fact", "logic/samples.jsonl"),
        ("finance", "finance/credit.jsonl"),
    ):
        for line, sample in samples(REGISTRY / "data" / data):
            question = questions.pop(f"{name}.{line}")
            ideal = sample["ideal"] if isinstance(sample["ideal"], list) else [sample["ideal"]]
            assert question.gold == ideal[0]
            assert list(question.accept) == [i for i in ideal[1:] if i != ideal[0]]
            assert sample["input"][-1]["content"] in question.prompt
    assert questions == {}  # test-includes reads test-fuzzy-match's samples: written once
    fact = next(q for q in battery.questions if q.id == "logic-fact.1")
    assert fact.scoring is not None and fact.scoring.startswith("Compare the factual content")
    assert next(q for q in battery.questions if q.id == "test-match.3").match == MatchCheck("number", "15")
    assert next(q for q in battery.questions if q.id == "finance.1").match == MatchCheck("number", "9.42")
    assert "its samples are those of eval test-fuzzy-match, written once" in said.out
    assert "lint: 0 errors" in said.out


def test_an_lfs_pointer_is_named_and_nothing_is_written(tmp_path: Path, capsys) -> None:
    yaml = DATA / "openai_evals_lfs" / "evals" / "registry" / "evals" / "test-basic.yaml"
    assert main(["import", "openai-evals", str(yaml), "--out", str(tmp_path / "bench")]) == 2
    err = capsys.readouterr().err
    assert "test_match/samples.jsonl:1: eval test-match:" in err and "git lfs pull" in err
    assert not (tmp_path / "bench").exists()


def test_openai_hosted_run_with_inline_items_takes_the_gold_the_criterion_references(
    tmp_path: Path, capsys
) -> None:
    # OpenAI's API reference examples (openai/openai-openapi): a run whose items are inline
    # (`file_content`) and whose template's messages hold `input_text` objects, and its eval.
    run_file = HOSTED / "run.json"
    battery, said = imported(tmp_path, capsys, "openai-evals", run_file, HOSTED / "eval.json")
    run = json.loads(run_file.read_text(encoding="utf-8"))
    items = [row["item"] for row in run["data_source"]["source"]["content"]]
    [system, _] = run["data_source"]["input_messages"]["template"]
    assert [q.gold for q in battery.questions] == [item["ground_truth"] for item in items]
    assert [q.id for q in battery.questions] == [f"run.{n}" for n in range(1, len(items) + 1)]
    for question, item in zip(battery.questions, items, strict=True):
        assert question.prompt == f"developer: {system['content']['text']}\n\nuser: {item['input']}"
    lines = run_file.read_text(encoding="utf-8").splitlines()
    origins = re.findall(
        r"^# from run\.json:(\d+)$", (tmp_path / "bench" / "questions" / "run.rubric").read_text(), re.M
    )
    assert [lines[int(n) - 1].strip() for n in origins] == ['"item": {'] * len(items)
    assert f"item.ground_truth (the criteria's reference) -> gold: {len(items)}" in said.out


def test_openai_hosted_graders_as_the_api_gives_them(tmp_path: Path, capsys) -> None:
    # A label_model grader with `input_text` content objects, the same grader as created with
    # text content, and a text_similarity grader, each a file of its own.
    for n, grader in enumerate(("label_model.json", "label_model_create.json")):
        out = tmp_path / str(n)
        out.mkdir()
        battery, said = imported(
            out,
            capsys,
            "openai-evals",
            HOSTED / "run.json",
            HOSTED / "eval.json",
            GRADERS / grader,
            GRADERS / "text_similarity.json",
        )
        text = json.loads((GRADERS / grader).read_text(encoding="utf-8"))
        system, user = (
            m["content"]["text"] if isinstance(m["content"], dict) else m["content"] for m in text["input"]
        )
        scoring = {q.scoring for q in battery.questions}
        assert scoring == {f"system: {system}\n\nuser: {user}\n\nPassing labels: positive"}
        assert "text_similarity's metric and threshold: the judge grades instead" in said.out


def test_openai_hosted_items_without_the_field_a_grader_references_are_named(tmp_path: Path, capsys) -> None:
    # The reference's string_check grader compares with `{{item.label}}`, which the run's items lack.
    out = tmp_path / "b"
    argv = ["import", "openai-evals", str(HOSTED / "run.json"), str(GRADERS / "string_check.json")]
    assert main([*argv, "--out", str(out)]) == 2  # every item skipped: nothing to write
    err = capsys.readouterr().err
    assert "run.json:24: no gold: the criteria reference label" in err and "Traceback" not in err


def test_openai_hosted_output_items_export_numbers_items_by_their_place_and_reads_each_once(
    tmp_path: Path, capsys
) -> None:
    # The dashboard's output-items export (promptfoo's fixtures of it): a row per item and run,
    # with `data_source_idx`. Its eval and run objects are not in the export: the criteria and
    # the template below are this test's, written as the API took them.
    def criterion(reference: str) -> Path:
        path = tmp_path / f"{reference}.json"
        grader = {"type": "string_check", "name": "Match output to human label", "operation": "eq"}
        grader |= {"input": "{{ sample.output_text }}", "reference": "{{ item." + reference + " }}"}
        path.write_text(json.dumps(grader), encoding="utf-8")
        return path

    items = OUTPUT_ITEMS / "openai-evals-items.jsonl"
    rows = [row for _, row in samples(items)]
    (tmp_path / "a").mkdir()
    battery, _ = imported(tmp_path / "a", capsys, "openai-evals", items, criterion("expected_answer"))
    assert [(q.id, q.prompt, q.gold) for q in battery.questions] == [
        (
            f"openai-evals-items.{row['data_source_idx'] + 1}",
            row["item"]["input"],
            row["item"]["expected_answer"],
        )
        for row in rows
    ]
    run = tmp_path / "run.json"
    template = [{"role": "user", "content": "{{item.ticket_text}}"}]
    run.write_text(json.dumps({"data_source": {"input_messages": {"template": template}}}), encoding="utf-8")
    (tmp_path / "b").mkdir()
    runs = OUTPUT_ITEMS / "openai-evals-multi-run-items.jsonl"  # one item, two runs
    battery, said = imported(tmp_path / "b", capsys, "openai-evals", runs, run, criterion("correct_label"))
    assert [(q.id, q.prompt, q.gold) for q in battery.questions] == [
        ("openai-evals-multi-run-items.1", "My monitor will not turn on", "Hardware")
    ]
    assert "a row of another run for an item already read -> the same question: 1" in said.out


def test_openai_hosted_output_items_from_the_api_give_the_prompt_the_model_was_sent(
    tmp_path: Path, capsys
) -> None:
    # The reference's output items of the same run: item 5 (0-based) with the messages it was sent.
    listed = HOSTED / "run-output-items.json"
    (tmp_path / "a").mkdir()
    battery, said = imported(tmp_path / "a", capsys, "openai-evals", listed, HOSTED / "eval.json")
    [output] = json.loads(listed.read_text(encoding="utf-8"))["data"]
    [question] = battery.questions
    n = output["datasource_item_id"] + 1
    assert (question.id, question.gold) == (
        f"run-output-items.{n}",
        output["datasource_item"]["ground_truth"],
    )
    assert "the sample's input messages -> prompt: 1" in said.out
    (tmp_path / "b").mkdir()
    run, _ = imported(tmp_path / "b", capsys, "openai-evals", HOSTED / "run.json", HOSTED / "eval.json")
    same = next(q for q in run.questions if q.id == f"run.{n}")  # the run's template, filled in
    assert (question.prompt, question.gold) == (same.prompt, same.gold)


def test_openai_hosted_run_whose_items_are_an_uploaded_file_says_so(tmp_path: Path, capsys) -> None:
    source = HOSTED / "jsonl_data_source.json"  # the API reference's `jsonl` data source
    assert (
        main(["import", "openai-evals", str(source), str(HOSTED / "eval.json"), "--out", str(tmp_path / "b")])
        == 2
    )
    err = capsys.readouterr().err
    assert "the run's items are in the uploaded file file-9GYS6xbkWgWhmE7VoLUWFg" in err
    assert "Traceback" not in err and not (tmp_path / "b").exists()


def test_a_promptfoo_results_file_brings_its_config_and_its_answers_name_the_same_questions(
    tmp_path: Path, capsys
) -> None:
    export = PROMPTFOO / "sample-export" / "sample-export.json"  # promptfoo's own fixture, whole
    battery, said = imported(tmp_path, capsys, "promptfoo", export)
    config = json.loads(export.read_text(encoding="utf-8"))["config"]
    [template] = config["prompts"]
    assert [(q.id, q.prompt) for q in battery.questions] == [
        (f"test-{n}", template.replace("{{riddle}}", t["vars"]["riddle"]))
        for n, t in enumerate(config["tests"], 1)
    ]
    assert [q.gold for q in battery.questions] == ["echo", config["tests"][1]["assert"][0]["value"]]
    assert "cost assert: no field of a question holds it (2 items)" in said.out
    ids = {q.id for q in battery.questions}
    answers = list(AnswerReader(export, ids, on_problem=lambda p: pytest.fail(p.render())))
    assert sorted({a.question for a in answers}) == sorted(ids) and len(answers) == 4


def test_promptfoo_config_with_code_asserts_named_and_skipped(tmp_path: Path, capsys) -> None:
    battery, said = imported(
        tmp_path, capsys, "promptfoo", PROMPTFOO / "simple-test" / "promptfooconfig.yaml", status=1
    )
    questions = {q.id: q for q in battery.questions}
    assert sorted(questions) == [f"test-{n}.prompt-{m}" for n in (1, 2, 5) for m in (1, 2)]
    assert questions["test-1.prompt-1"].prompt == "Rephrase this from English to Pirate: Yes"  # YAML 1.2
    assert questions["test-1.prompt-2"].prompt == "Pretend you're a pirate and speak these words: Yes"
    assert questions["test-1.prompt-1"].gold == "Yarr"
    assert (
        questions["test-1.prompt-1"].match is not None and questions["test-1.prompt-1"].match.kind == "regex"
    )
    assert questions["test-2.prompt-1"].gold == "grub"
    assert (questions["test-5.prompt-1"].gold, questions["test-5.prompt-1"].scoring) == (
        "arrr",  # the `$ref` to assertionTemplates
        "Is spoken like a pirate",
    )
    assert "promptfooconfig.yaml:21: no reference answer or rubric" in said.err  # is-json only
    assert "promptfooconfig.yaml:27: no reference answer or rubric" in said.err  # javascript, python
    assert "javascript assert: code or a file, never run" in said.out
    assert "python assert: code or a file, never run" in said.out


def test_promptfoo_tests_from_csv_and_inline_prompts(tmp_path: Path, capsys) -> None:
    battery, _ = imported(
        tmp_path,
        capsys,
        "promptfoo",
        PROMPTFOO / "getting-started" / "promptfooconfig.yaml",
        PROMPTFOO / "simple-csv" / "promptfooconfig.yaml",
    )
    by_file: dict[str, list] = {}
    for q in battery.questions:
        by_file.setdefault(q.pos.path.rsplit("/", 1)[-1], []).append(q)
    started = by_file["getting-started.rubric"]
    assert [(q.id, q.gold) for q in started[:2]] == [
        ("getting-started.test-1.prompt-1", "Bonjour le monde"),
        ("getting-started.test-1.prompt-2", "Bonjour le monde"),
    ]
    assert started[0].prompt == "Convert this English to French: Hello world"
    with open(PROMPTFOO / "simple-csv" / "tests.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    from_csv = by_file["simple-csv.rubric"]
    assert len(from_csv) == 2 * len(rows)
    for n, row in enumerate(rows, start=1):
        question = next(q for q in from_csv if q.id == f"simple-csv.test-{n}.prompt-2")
        assert question.gold == row["__expected"].removeprefix("icontains:")
        assert f'"{row["body"]}"' in question.prompt and row["style_config"] in question.prompt
    # A Nunjucks filter is not run: it stays as written.
    assert "{{ (style_config | load).tone }}" in from_csv[0].prompt


def test_inspect_datasets_jsonl_and_csv_with_choices(tmp_path: Path, capsys) -> None:
    battery, said = imported(
        tmp_path,
        capsys,
        "inspect",
        INSPECT / "security_guide.jsonl",
        INSPECT / "samples-mcq.jsonl",
        INSPECT / "samples.csv",
    )
    questions = {q.id: q for q in battery.questions}
    for n, (_, sample) in enumerate(samples(INSPECT / "security_guide.jsonl"), start=1):
        question = questions[str(n)]  # the id Inspect gives a sample without one
        assert (question.prompt, question.gold) == (sample["input"][0]["content"], sample["target"])
    mcq = next(q for q in battery.questions if "smallest" in q.prompt)
    assert mcq.prompt.endswith("\nA) 1\nB) 2\nC) 3\nD) 4\nE) 5\nF) 6\nG) 7\nH) 8\nI) 9\nJ) 10")
    assert mcq.gold == "A) 1"
    assert mcq.match == MatchCheck("choice", "A", among="ABCDEFGHIJ")
    hello = next(q for q in battery.questions if q.prompt == "Say 'Hello, World'")
    assert hello.gold == "Hello, World"
    assert "sandbox: metadata and sandbox fields are not part of a question" in said.out


def test_inspect_csv_choices_split_as_inspect_does(tmp_path: Path, capsys) -> None:
    battery, _ = imported(tmp_path, capsys, "inspect", INSPECT / "samples-mcq.csv")
    [question] = battery.questions
    assert question.id == "1" and question.match == MatchCheck("choice", "A", among="ABCDEFGHIJ")


def test_an_existing_non_empty_folder_or_a_link_is_refused(tmp_path: Path, capsys) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine", encoding="utf-8")
    source = str(INSPECT / "samples-mcq.jsonl")
    assert main(["import", "inspect", source, "--out", str(full)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert (full / "keep.txt").read_text(encoding="utf-8") == "mine"
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "link")
    assert main(["import", "inspect", source, "--out", str(tmp_path / "link")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list(target.iterdir()) == []


def test_file_references_outside_the_config_folder_are_never_read(tmp_path: Path, capsys) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    config = tmp_path / "cfg" / "promptfooconfig.yaml"
    config.parent.mkdir()
    config.write_text(
        "prompts: ['Say {{x}}', 'file://../secret.txt']\n"
        "tests:\n  - vars: {x: 'file://../secret.txt'}\n    assert: [{type: equals, value: hi}]\n"
        "  - vars: {x: hello}\n    assert: [{type: equals, value: '42'}]\n",
        encoding="utf-8",
    )
    battery, said = imported(tmp_path, capsys, "promptfoo", config, status=1)
    assert [(q.id, q.prompt) for q in battery.questions] == [("test-2", "Say hello")]
    assert battery.questions[0].match == MatchCheck("number", "42")
    assert "promptfooconfig.yaml:3: var 'x' is not text" in said.err
    assert "prompt file://../secret.txt: not a text or chat JSON file inside the config's folder" in said.out
    assert "TOP SECRET" not in said.out + said.err


def test_imported_checks_match_what_the_sources_compare(tmp_path: Path, capsys) -> None:
    battery, _ = imported(tmp_path, capsys, "openai-evals", HOSTED / "run.json", HOSTED / "eval.json")
    check = battery.questions[0].match  # string_check eq on "Technology": the whole answer
    assert check is not None and check.kind == "regex"
    assert [
        read_answer(check, a).matched for a in ("Technology", " Technology.\n", "Technology or World")
    ] == [
        True,
        True,
        False,
    ]
    (tmp_path / "registry").mkdir()
    registry, _ = imported(
        tmp_path / "registry", capsys, "openai-evals", REGISTRY / "evals" / "test-basic.yaml"
    )
    once = next(q for q in registry.questions if q.id == "test-match.1").match  # Match: a prefix
    assert once is not None and read_answer(once, "time, in a land far away").matched
    assert not read_answer(once, "a time").matched


async def test_an_imported_battery_grades_closed_answers_with_and_without_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import asyncio

    from tabench_dsl.store.results import iter_records

    monkeypatch.chdir(tmp_path)
    for name in ("TABENCH_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    evals = REGISTRY / "evals"
    assert main(["import", "openai-evals", str(evals / "finance.yaml"), "--out", "plain"]) == 0
    answers = [
        {"system": "s", "question": "finance.1", "answer": "She was charged 9.420 dollars."},
        {"system": "s", "question": "finance.2", "answer": "$0.70"},  # the gold is 0.07
        {"system": "s", "question": "finance.3", "answer": "I cannot work that out."},
    ]
    Path("answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    assert (
        await asyncio.to_thread(main, ["grade", "plain", "--answers", "answers.jsonl", "--out", "a.jsonl"])
        == 0
    )
    plain = {r.question: (r.tier, r.verdict) for r in iter_records(Path("a.jsonl"))}
    assert plain["finance.1"] == ("match", "pass")
    assert plain["finance.2"][0] == "t2" and plain["finance.3"][0] == "t2"  # to the (builtin) judge
    # The user makes the checks decide, as the source's strict comparison did.
    for rubric in Path("plain/questions").glob("*.rubric"):
        text = rubric.read_text(encoding="utf-8").replace(
            "  match number 0.07\n", "  match number 0.07 decides\n"
        )
        rubric.write_text(text, encoding="utf-8")
    assert (
        await asyncio.to_thread(main, ["grade", "plain", "--answers", "answers.jsonl", "--out", "b.jsonl"])
        == 0
    )
    strict = {r.question: (r.tier, r.verdict, r.match_read) for r in iter_records(Path("b.jsonl"))}
    assert strict["finance.2"] == ("match", "fail", "0.70")
    assert strict["finance.3"][0] == "t2"  # nothing read: the judge still decides
    capsys.readouterr()


@settings(derandomize=True, max_examples=300)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40))
def test_a_text_check_matches_its_own_text_literally(text: str) -> None:
    check = text_check([text], how="whole")
    if check is None:  # blank: no check written
        assert not text.strip(" \t\r\n\f\v")
        return
    assert read_answer(check, text).matched
    kept = text.strip(" \t\r\n\f\v")
    assert read_answer(check, f"  {kept}.\n").matched  # white space and a final full stop aside
    assert not read_answer(check, f"{kept} and more").matched


def test_hostile_sources_are_named_at_their_place_and_leave_nothing_behind(tmp_path: Path, capsys) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        '{"input": "q\\ud800", "target": "a"}\n{"input": "ok", "target": "b"}\nnot json\n[1]\n',
        encoding="utf-8",
    )
    battery, said = imported(tmp_path, capsys, "inspect", data, status=1)
    assert [(q.id, q.prompt, q.match) for q in battery.questions] == [("2", "ok", None)]
    assert "d.jsonl:1: a text holds half a character" in said.err
    assert "d.jsonl:3: not JSON" in said.err and "d.jsonl:4: not a JSON object" in said.err
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: [x\ntests: [\n", encoding="utf-8")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert f"{config}:2:6: promptfoo config is not valid YAML" in err and "Traceback" not in err
    assert not (tmp_path / "none").exists()


def test_inspect_fields_read_from_other_columns_as_field_spec_does(tmp_path: Path, capsys) -> None:
    source = INSPECT / "biology_qa.jsonl"
    out = tmp_path / "bench"
    argv = ["import", "inspect", str(source), "--out", str(out), "--field", "input=question"]
    assert main([*argv, "--field", "target=answer"]) == 0
    capsys.readouterr()
    battery = load_battery(out)
    assert [(q.id, q.prompt, q.gold) for q in battery.questions] == [
        (row["id"], row["question"], row["answer"]) for _, row in samples(source)
    ]
    assert main(["import", "promptfoo", str(source), "--out", str(tmp_path / "x"), "--field", "input=q"]) == 2
    assert "--field names a dataset's columns" in capsys.readouterr().err
    assert main(["import", "inspect", str(source), "--out", str(tmp_path / "y"), "--field", "prompt=q"]) == 2
    assert "a Sample field is one of input, target" in capsys.readouterr().err


def test_promptfoo_tests_named_by_a_glob_inside_the_config_folder(tmp_path: Path, capsys) -> None:
    config = tmp_path / "cfg" / "promptfooconfig.yaml"
    (config.parent / "tests").mkdir(parents=True)
    (tmp_path / "outside.yaml").write_text("- vars: {q: outside}\n  assert: [{type: equals, value: x}]\n")
    for n in (2, 1):
        (config.parent / "tests" / f"t{n}.yaml").write_text(
            f"- vars: {{q: file{n}}}\n  assert: [{{type: factuality, value: answer {n}}}]\n", encoding="utf-8"
        )
    config.write_text(
        "prompts: ['Q: {{q}}']\ntests: [file://tests/*.yaml, file://../*.yaml]\n", encoding="utf-8"
    )
    battery, said = imported(tmp_path, capsys, "promptfoo", config)
    assert [(q.id, q.prompt, q.gold) for q in battery.questions] == [
        ("test-1", "Q: file1", "answer 1"),
        ("test-2", "Q: file2", "answer 2"),
    ]
    assert "tests file://../*.yaml: not a CSV or YAML file inside the config's folder" in said.out


def test_a_label_model_grader_s_prompt_becomes_the_scoring_text(tmp_path: Path, capsys) -> None:
    # The shape of a hosted eval graded by a model (no string_check): the gold is the item field
    # the grader's messages name besides the prompt's.
    data = tmp_path / "items.jsonl"
    data.write_text('{"item": {"id": "n-7", "input": "Summarise: A B C", "reference": "A, B and C"}}\n')
    criteria = [
        {
            "type": "label_model",
            "name": "judge",
            "model": "o3-mini",
            "input": [
                {"role": "developer", "content": "Label the summary good or bad."},
                {"role": "user", "content": "Ref: {{item.reference}}\nSummary: {{sample.output_text}}"},
            ],
            "labels": ["good", "bad"],
            "passing_labels": ["good"],
        },
        {"type": "python", "name": "custom", "source": "def grade(sample, item): return 1"},
    ]
    (tmp_path / "eval.json").write_text(json.dumps({"testing_criteria": criteria}), encoding="utf-8")
    battery, said = imported(tmp_path, capsys, "openai-evals", data, tmp_path / "eval.json")
    [question] = battery.questions
    assert (question.id, question.prompt, question.gold) == ("n-7", "Summarise: A B C", "A, B and C")
    assert question.scoring == (
        "developer: Label the summary good or bad.\n\n"
        "user: Ref: {{item.reference}}\nSummary: {{sample.output_text}}\n\nPassing labels: good"
    )
    assert question.match is None
    assert "python criterion: runs code or a model of its own (left behind)" in said.out


def test_eval_picks_registry_evals_and_closedqa_criteria_become_scoring(tmp_path: Path, capsys) -> None:
    coqa = REGISTRY / "evals" / "coqa-ex.yaml"
    battery, _ = imported(tmp_path, capsys, "openai-evals", coqa, "--eval", "coqa-closedqa-correct")
    rows = samples(REGISTRY / "data" / "coqa" / "samples.jsonl")
    assert [q.id for q in battery.questions] == [f"coqa-closedqa-correct.{line}" for line, _ in rows]
    scoring = battery.questions[0].scoring
    assert scoring is not None and scoring.startswith("Does the submission meet the criterion?")
    assert scoring.endswith("Criteria:\n- correctness: Is the answer correct?")
    assert main(["import", "openai-evals", str(coqa), "--out", str(tmp_path / "x"), "--eval", "nope"]) == 2
    assert "--eval nope: no such eval in the files given" in capsys.readouterr().err


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8)
        | st.sampled_from(['"', '"""', "\n", "\n  ", "\t", " ", "#", "\\n"]),
        min_size=1,
        max_size=12,
    )
    .map("".join)
    .filter(str.strip)
)
def test_any_text_is_written_so_it_reads_back_as_itself(text: str) -> None:
    from tabench_dsl.language.importers.battery_text import rubric_text
    from tabench_dsl.language.importers.sources import ImportedQuestion
    from tabench_dsl.language.parse import parse_rubric
    from tabench_dsl.language.rubric import build_questions

    question = ImportedQuestion(id="q", prompt=text, gold=text, origin="x.jsonl:1", scoring=text)
    written = rubric_text([question], "t.rubric")  # formatted, and checked to read the same
    errors: list = []
    [read] = build_questions(parse_rubric(written, "t.rubric").questions, errors)
    assert errors == [] and (read.prompt, read.gold, read.scoring) == (text, text, text)
