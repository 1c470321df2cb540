"""The Azure OpenAI judge against a scripted Azure resource (tests/support/azure_server.py): the
classic deployment path with `api-version` and the `api-key` header, the v1 path, where the key may
go, the dry run's identity, and batches through Azure's Batch API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.azure_server import start_azure_server
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import UsageError
from tabench_dsl.grading.judges.azure import DEFAULT_API_VERSION
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.identity import judge_identity
from tabench_dsl.store.results import iter_records

KEY = "azure-canary-Kq81Zx0Pw3"


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TABENCH_BATCH_POLL", "0.01")
    return work


@pytest.fixture
async def azure(monkeypatch: pytest.MonkeyPatch):
    server = await start_azure_server([PASS], key=KEY)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.endpoint)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    yield server
    await server.close()


def answers(folder: Path, n: int = 1) -> Path:
    path = folder / "answers.jsonl"
    lines = [json.dumps({"system": f"s{i}", "question": "h03", "answer": "azure"}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def grade(work: Path, judge: str, *extra: str) -> int:
    argv = [
        "grade",
        str(write_battery(work)),
        "--answers",
        str(answers(work)),
        "--judge",
        judge,
        "--no-cache",
    ]
    return await asyncio.to_thread(main, [*argv, *extra])


async def test_classic_deployment_path(work: Path, azure, capsys) -> None:
    assert await grade(work, "azure:judge-d") == 0
    call = azure.calls[0]
    assert call["path"] == "/openai/deployments/judge-d/chat/completions"
    assert call["query"] == {"api-version": DEFAULT_API_VERSION}
    assert call["headers"]["api-key"] == KEY and "Authorization" not in call["headers"]
    assert call["body"]["model"] == "judge-d"
    record = next(iter_records(work / "results.jsonl"))
    assert record.verdict == "pass" and record.judge.backend == "azure"
    assert record.judge.endpoint == f"{azure.endpoint}/openai/deployments/judge-d"
    assert KEY not in (work / "results.jsonl").read_text()


async def test_api_version_from_the_environment(work: Path, azure, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-04-01-preview")
    assert await grade(work, "azure:judge-d") == 0
    assert azure.calls[0]["query"] == {"api-version": "2025-04-01-preview"}


async def test_v1_path(work: Path, azure) -> None:
    assert await grade(work, "azure:v1:judge-d") == 0
    call = azure.calls[0]
    assert call["path"] == "/openai/v1/chat/completions" and call["query"] == {}
    assert call["body"]["model"] == "judge-d" and call["headers"]["api-key"] == KEY


async def test_an_unknown_deployment_says_so_without_the_key(work: Path, azure, capsys) -> None:
    assert await grade(work, "azure:nope") == 2  # a 404 stops the run: no answer could be graded
    err = capsys.readouterr().err
    assert "404" in err and "The API deployment for this resource does not exist" in err
    assert KEY not in err


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"AZURE_OPENAI_ENDPOINT": ""}, "needs AZURE_OPENAI_ENDPOINT"),
        ({"AZURE_OPENAI_ENDPOINT": "http://example.org"}, "AZURE_OPENAI_ENDPOINT must be an https URL"),
        (
            {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": ""},
            "needs AZURE_OPENAI_API_KEY",
        ),
        ({"AZURE_OPENAI_ENDPOINT": "https://k@r.openai.azure.com"}, "put the key in AZURE_OPENAI_API_KEY"),
        ({"OPENAI_API_VERSION": "2024-10-21&x=1"}, "is not an api-version"),
    ],
)
def test_configuration_mistakes_are_usage_errors(env: dict[str, str], said: str) -> None:
    full = {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": KEY, **env}
    with pytest.raises(UsageError, match=said.replace(".", r"\.")) as caught:
        make_judge("azure:judge-d", env=full, session=object())  # type: ignore[arg-type]
    assert KEY not in str(caught.value)


def test_a_bad_deployment_name_is_refused() -> None:
    env = {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com", "AZURE_OPENAI_API_KEY": KEY}
    with pytest.raises(UsageError, match="is not a deployment name"):
        make_judge("azure:a/../b", env=env, session=object())  # type: ignore[arg-type]


async def test_the_dry_run_names_the_judge_as_it_is_built(http_session) -> None:
    env = {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/", "AZURE_OPENAI_API_KEY": KEY}
    for name in ("azure:judge-d", "azure:v1:judge-d"):
        judge = make_judge(name, env=env, session=http_session)
        identity = judge_identity(name, env={"AZURE_OPENAI_ENDPOINT": env["AZURE_OPENAI_ENDPOINT"]})
        assert identity.info == judge.info and identity.params == judge.params
        assert identity.request_shape == judge.request_shape
        assert KEY not in repr(judge)


async def test_no_other_key_goes_to_azure(work: Path, azure, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-canary-0123456789")
    assert await grade(work, "azure:judge-d") == 0
    assert all("sk-openai-canary" not in json.dumps(c["headers"]) for c in azure.calls)


@pytest.mark.parametrize("judge", ["azure:judge-d", "azure:v1:judge-d"])
async def test_batch_through_azures_batch_api(work: Path, azure, judge: str) -> None:
    assert await grade(work, judge, "--batch") == 0
    paths = [(c["method"], c["path"], c["query"]) for c in azure.calls]
    root, query = ("/openai/v1", {}) if ":v1:" in judge else ("/openai", {"api-version": DEFAULT_API_VERSION})
    assert paths[:2] == [("POST", f"{root}/files", query), ("POST", f"{root}/batches", query)]
    assert ("GET", f"{root}/batches/batch_1", query) in paths
    assert ("GET", f"{root}/files/file-2/content", query) in paths
    assert all(c["headers"]["api-key"] == KEY for c in azure.calls)
    assert [r.verdict for r in iter_records(work / "results.jsonl")] == ["pass"]
    ledger = (work / "results.batches.jsonl").read_text()
    assert '"service":"azure"' in ledger and KEY not in ledger


def test_a_reopened_azure_batch_gets_the_key_only_from_the_named_resource() -> None:
    from tabench_dsl.grading.judges.azure import reopen_target

    env = {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/", "AZURE_OPENAI_API_KEY": KEY}
    target, key = reopen_target("https://r.openai.azure.com/openai/deployments/d", "d", env)
    assert (target.batch_base, target.api_version, key) == (
        "https://r.openai.azure.com/openai",
        DEFAULT_API_VERSION,
        KEY,
    )
    target, key = reopen_target("https://r.openai.azure.com/openai/v1", "d", env)
    assert (target.batch_base, target.api_version, key) == ("https://r.openai.azure.com/openai/v1", None, KEY)
    assert reopen_target("https://evil.example/openai/v1", "d", env)[1] is None
    assert (
        reopen_target("https://r.openai.azure.com/openai/v1", "d", {"AZURE_OPENAI_API_KEY": KEY})[1] is None
    )
