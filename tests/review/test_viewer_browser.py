"""The viewer and the static report in a real browser: headless Debian Chromium driven by Selenium.

Starts `tabench view` on port 0 in a subprocess, filters to the adjudicate answers, opens one, decides
it, and checks the decisions file on disk and the totals the page shows; opens a static report and
uses its filters. Skipped when chromium or
chromedriver is missing, unless the environment variable CI is set (then it fails).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from support.make_results import HOSTILE_ANSWER, make_record, small_results, write_battery, write_results

from tabench_dsl.core.records import CAUSE_TEXTS
from tabench_dsl.review.report import render_report
from tabench_dsl.review.viewer.charts import COLOURS
from tabench_dsl.review.viewer.run import compile_battery_at, load_run

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _need_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if not missing:
        return
    message = f"missing {', '.join(missing)} (apt-get install -y chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator:
    _need_browser()
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1400,1600",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _serve(results: Path, battery: Path | None = None, options: tuple[str, ...] = ()) -> Iterator[str]:
    """`tabench view RESULTS [OPTIONS]` in a subprocess; yields its URL."""
    extra = [*(["--battery", str(battery)] if battery is not None else []), *options]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tabench_dsl",
            "view",
            str(results),
            "--port",
            "0",
            "--no-browser",
            "--reviewer",
            "ana",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # the viewer prints its URL once it listens
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, f"no URL in {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`tabench view` on a small run with its battery; yields (URL, results path)."""
    battery = write_battery(tmp_path / "battery")
    compiled = compile_battery_at(battery)
    records = [
        msgspec.structs.replace(r, prompt_sha256=compiled.questions[r.question].sha256)
        for r in small_results()
    ]
    results = write_results(tmp_path / "run.jsonl", records)
    for url in _serve(results, battery):
        yield url, results


#: The filters the answers list shown was chosen by, as the page marks it once the rows are in.
LISTED_BY = "return document.querySelector('#list tbody').dataset.filters || ''"


def _wait(driver, condition, timeout: float = 10.0):
    """Wait until `condition` holds; an element the page redrew meanwhile (stale) is looked for again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    waiting = WebDriverWait(
        driver, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
    )
    return waiting.until(condition)


def _cells(driver, system: str) -> list[str]:
    """The texts of a system's row of the totals table, read in one script run: the page redraws
    the table when new totals come (after a decision), and a row found in one call and read in
    the next may be gone by then (a stale element)."""
    from selenium.common.exceptions import NoSuchElementException

    cells = driver.execute_script(
        "const row = document.querySelector(arguments[0]);"
        "return row === null ? null : Array.from(row.querySelectorAll('td'), td => td.innerText.trim());",
        f'#totals-table tr[data-system="{system}"]',
    )
    if cells is None:
        raise NoSuchElementException(f"no row of the totals table for {system}")  # `_wait` waits on
    return cells


def test_filter_decide_and_see_the_totals_change(browser, viewer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, results = viewer
    browser.get(url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    # system, answers, pass, fail, adjudicate, error, human, score, ...
    assert _cells(browser, "agent-a")[:8] == ["agent-a", "4", "2", "1", "1", "0", "–", "50.0%"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-systems svg g.bar")) == 2
    facets = browser.find_element(By.ID, "facets").text
    assert facets == "Facets observed: erroneous_assertion 2 · missing_minor 1"

    Select(browser.find_element(By.NAME, "verdict")).select_by_value("adjudicate")
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–2 of 2")
    assert "verdict=adjudicate" in browser.current_url
    rows = browser.find_elements(By.CSS_SELECTOR, "#list tr.row")
    assert [r.get_attribute("data-question") for r in rows] == ["h04", "h02"]

    rows[0].click()
    panel = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail .decide"))
    # The hostile answer is text on the page, never markup.
    answer = browser.find_element(By.CSS_SELECTOR, ".detail pre.answer-text").text
    assert answer == HOSTILE_ANSWER
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.find_elements(By.CSS_SELECTOR, "#list img, #list script") == []
    raws = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".detail pre.raw")]
    assert len(raws) == 2 and "matches the gold" in raws[0]
    prompts = browser.find_element(By.CSS_SELECTOR, ".detail .prompts")
    assert "SYSTEM (" in prompts.text and not prompts.find_elements(By.CSS_SELECTOR, ".warn")

    panel.find_element(By.NAME, "note").send_keys("equivalent wording <ok>")
    panel.find_element(By.CSS_SELECTOR, "button.pass").click()
    status = panel.find_element(By.CSS_SELECTOR, ".status")
    _wait(browser, lambda d: status.text.startswith("Decided pass by ana"))

    lines = results.with_name("run.decisions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    decision = msgspec.json.decode(lines[0])
    assert (
        decision["system"],
        decision["question"],
        decision["verdict"],
        decision["reviewer"],
        decision["note"],
    ) == ("agent-a", "h04", "pass", "ana", "equivalent wording <ok>")

    _wait(browser, lambda d: _cells(d, "agent-a")[2] == "3")
    assert _cells(browser, "agent-a")[:8] == ["agent-a", "4", "3", "1", "0", "0", "1 pass / 0 fail", "75.0%"]
    assert _cells(browser, "agent-b")[4] == "1"  # the other adjudicate answer is still undecided
    outcome = '#list tr.row[data-question="h04"] td.outcome'  # the list is redrawn after a decision
    _wait(browser, lambda d: "human pass" in d.find_element(By.CSS_SELECTOR, outcome).text)

    # "Next answer" closes this one and opens the next adjudicate answer.
    panel.find_element(By.CSS_SELECTOR, "button.next-answer").click()
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail h3").text == "agent-b · h02")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")) == 1

    # A fresh load (the same URL, filters kept) shows the decision from disk-backed state.
    browser.get(browser.current_url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert Select(browser.find_element(By.NAME, "verdict")).first_selected_option.text == "adjudicate"
    assert _cells(browser, "agent-a")[6] == "1 pass / 0 fail"


def test_the_page_shows_the_servers_cause_texts_and_colours(browser, viewer) -> None:
    from selenium.webdriver.common.by import By

    url, _ = viewer
    browser.get(url + "?verdict=adjudicate")
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    legend = browser.find_elements(By.CSS_SELECTOR, "#chart-systems svg > rect")
    assert [r.get_attribute("fill") for r in legend] == list(COLOURS.values())
    browser.find_element(By.CSS_SELECTOR, '#list tr.row[data-question="h04"]').click()
    outcome = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail dl.kv dd"))
    assert outcome.text == "adjudicate contradiction: " + CAUSE_TEXTS["contradiction"]


def test_static_report_filters_and_stays_inert(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    results = write_results(tmp_path / "run.jsonl", small_results())
    out = tmp_path / "report.html"
    out.write_text(render_report(load_run(results)), encoding="utf-8")
    browser.get(out.as_uri())
    shown = browser.find_element(By.ID, "shown")
    assert shown.text == "8 shown"
    Select(browser.find_element(By.NAME, "verdict")).select_by_value("fail")
    assert shown.text == "2 shown"
    visible = [d for d in browser.find_elements(By.CSS_SELECTOR, "details.answer") if d.is_displayed()]
    assert [d.get_attribute("data-verdict") for d in visible] == ["fail", "fail"]
    Select(browser.find_element(By.NAME, "system")).select_by_value("agent-a")
    assert shown.text == "1 shown"
    assert browser.execute_script("return window.__pwned === undefined")
    first = browser.find_element(By.CSS_SELECTOR, 'details.answer[data-system="agent-a"] summary')
    assert HOSTILE_ANSWER[:20] not in first.text  # agent-a's fail is h03, not the hostile h04


#: A system name that reorders what follows it, and one that carries a terminal escape and markup.
BIDI_SYSTEM = "agent\u202etxt.exe"
ESC_SYSTEM = "<b>agent</b>\x1b[2J"


def test_the_viewer_shows_bidi_and_control_characters_as_escapes(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    results = write_results(
        tmp_path / "run.jsonl",
        [
            make_record(
                BIDI_SYSTEM, "h01", "adjudicate", answer="ok \u202eevil\u2066 bell\x07 \x9b2J\nline two"
            ),
            make_record(ESC_SYSTEM, "h02", "fail"),
        ],
    )
    for url in _serve(results):
        browser.get(url)
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        names = [
            row.get_attribute("data-system")
            for row in browser.find_elements(By.CSS_SELECTOR, "#totals-table tbody tr")
        ]
        assert names == [ESC_SYSTEM, BIDI_SYSTEM]  # the data keeps the text as it is
        cells = [
            row.find_element(By.TAG_NAME, "td").text
            for row in browser.find_elements(By.CSS_SELECTOR, "#totals-table tbody tr")
        ]
        assert cells == ["<b>agent</b>\\x1b[2J", "agent<U+202E>txt.exe"]
        labels = browser.execute_script(
            "return [...document.querySelectorAll('#chart-systems g.bar > text:first-child')]"
            ".map((t) => t.lastChild.textContent)"
        )
        assert labels == ["<b>agent</b>\\x1b[2J", "agent<U+202E>txt.exe"]
        assert browser.find_elements(By.CSS_SELECTOR, "#chart-systems b, #totals-table b") == []

        # A chart bar still filters on the name as it is.
        browser.find_elements(By.CSS_SELECTOR, "#chart-systems g.bar")[1].click()
        _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–1 of 1")
        row = browser.find_element(By.CSS_SELECTOR, "#list tr.row")
        assert row.get_attribute("data-system") == BIDI_SYSTEM
        row.click()
        answer = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail pre.answer-text"))
        assert answer.text == "ok <U+202E>evil<U+2066> bell\\x07 \\x9b2J\nline two"
        title = browser.find_element(By.CSS_SELECTOR, ".detail h3").text
        assert title == "agent<U+202E>txt.exe · h01"
        source = browser.find_element(By.ID, "source").text
        assert "\u202e" not in source and "\x1b" not in browser.find_element(By.TAG_NAME, "body").text


def test_the_totals_table_pages_and_searches_like_the_answers_list(browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    records = [make_record(f"agent-{i:03d}", "h01", "fail" if i % 7 == 0 else "pass") for i in range(120)]
    results = write_results(tmp_path / "many.jsonl", records)

    def names(d) -> list[str]:
        return [
            r.get_attribute("data-system") for r in d.find_elements(By.CSS_SELECTOR, "#totals-table tbody tr")
        ]

    def count(d) -> str:
        return d.find_element(By.CSS_SELECTOR, "#totals .pager .count").text

    for url in _serve(results):
        browser.get(url)
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        assert names(browser) == [f"agent-{i:03d}" for i in range(50)]
        assert count(browser) == "1–50 of 120 systems"
        prev, after = (
            browser.find_elements(By.CSS_SELECTOR, f"#totals .pager .{k}")[0] for k in ("prev", "next")
        )
        assert not prev.is_enabled() and after.is_enabled()
        # The answers list keeps its own pager.
        assert browser.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–50 of 120"

        after.click()
        _wait(browser, lambda d: count(d) == "51–100 of 120 systems")
        assert names(browser)[0] == "agent-050" and prev.is_enabled()
        after.click()
        _wait(browser, lambda d: count(d) == "101–120 of 120 systems")
        assert len(names(browser)) == 20 and not after.is_enabled()
        assert _cells(browser, "agent-105")[:4] == ["agent-105", "1", "0", "1"]  # 105 is a multiple of 7

        search = browser.find_element(By.CSS_SELECTOR, "#systems-search input[name=q]")
        search.send_keys("AGENT-01")
        _wait(browser, lambda d: count(d) == "1–10 of 10 systems")
        assert names(browser) == [f"agent-{i:03d}" for i in range(10, 20)]
        assert not after.is_enabled()
        search.clear()
        search.send_keys("nobody")
        _wait(browser, lambda d: count(d) == "0 systems")
        assert (
            browser.find_element(By.CSS_SELECTOR, "#totals-table tbody").text
            == "No system matches this search."
        )
        # Searching the table leaves the answers list as it was.
        assert browser.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–50 of 120"


def test_a_second_grading_tags_and_pairs_on_the_page(browser, tmp_path: Path) -> None:
    """`view A --compare B --tag t`: the pairs of systems, the tag table and what changed from A to
    B are on the page; one click lists the flipped answers, each line showing B's verdict."""
    from selenium.webdriver.common.by import By

    tagged = [msgspec.structs.replace(r, tags=["t"]) for r in small_results()]
    first = write_results(tmp_path / "a.jsonl", tagged)
    # B: every standing answer of agent-b graded pass.
    second = write_results(
        tmp_path / "b.jsonl",
        [msgspec.structs.replace(make_record(r.system, r.question, "pass"), tags=["t"]) for r in tagged],
    )
    for url in _serve(first, options=("--compare", str(second), "--tag", "t")):
        browser.get(url)
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        pairs = browser.find_elements(By.CSS_SELECTOR, "#pairs-table tbody tr")
        assert [[td.text for td in row.find_elements(By.TAG_NAME, "td")][:2] for row in pairs] == [
            ["agent-a", "agent-b"]
        ]
        tags = browser.find_element(By.CSS_SELECTOR, "#tags-table tbody tr").text
        assert tags.startswith("t 8")
        lines = browser.find_element(By.ID, "compared-lines").text
        assert "B: " + str(second) in lines and "flipped:" in lines
        browser.find_element(By.CSS_SELECTOR, "#compared-lines button").click()
        _wait(browser, lambda d: "compared=flipped" in d.current_url)
        # The address changes when the list is asked for; the rows are replaced when it comes.
        _wait(browser, lambda d: "compared=flipped" in d.execute_script(LISTED_BY))
        rows = browser.find_elements(By.CSS_SELECTOR, "#list tr.row")
        assert rows and all("B: pass" in row.find_element(By.CSS_SELECTOR, "td.outcome").text for row in rows)


def test_an_answer_with_reasoning_shows_its_final_answer_and_unfolds_the_rest(
    browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    from tabench_dsl.core.reasoning import ReasoningInfo

    thought = "The gold says SQLite <b>but</b> I recall Postgres"
    record = make_record("qwen3", "h01", "fail", answer=f"<think>{thought}</think>\n\nIn Postgres.")
    record = msgspec.structs.replace(
        record, reasoning=ReasoningInfo(final="In Postgres.", blocks=1, characters=len(thought))
    )
    results = write_results(tmp_path / "run.jsonl", [record])
    for url in _serve(results):
        browser.get(url)
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        browser.find_element(By.CSS_SELECTOR, '#list tr.row[data-question="h01"]').click()
        answer = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail pre.answer-text"))
        assert answer.text == "In Postgres."
        folded = browser.find_element(By.CSS_SELECTOR, ".detail details.reasoning")
        assert folded.get_attribute("open") is None
        summary = folded.find_element(By.TAG_NAME, "summary")
        assert summary.text == f"reasoning cut before grading: 1 block, {len(thought)} characters"
        summary.click()
        assert folded.find_element(By.TAG_NAME, "pre").text == thought


def test_a_blind_audit_in_the_page_then_its_disagreement_links_to_the_answer(browser, viewer) -> None:
    from selenium.webdriver.common.by import By

    url, results = viewer
    browser.get(url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
    assert browser.find_element(By.ID, "audits").get_attribute("hidden") is not None  # no audit yet
    form = browser.find_element(By.ID, "audit-start")
    count = form.find_element(By.NAME, "n")
    count.clear()
    count.send_keys("1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    box = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#audit-item .decide"))
    # Blind: every other section is hidden, and the item names neither system nor verdict.
    shown = [
        s.get_attribute("id")
        for s in browser.find_elements(By.CSS_SELECTOR, "main > section")
        if s.is_displayed()
    ]
    assert shown == ["audit-mode"]
    item = browser.find_element(By.ID, "audit-item").text
    assert "agent-" not in item and "Gold" in item
    # One answer of five decided, by largest remainder: one of agent-a's two passes (a stratum of 2
    # of 5). Failing it disagrees with the judge, and the reveal says so.
    box.find_element(By.NAME, "note").send_keys("not what the gold says")
    box.find_element(By.CSS_SELECTOR, "button.fail").click()
    reveal = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#audit-item .reveal"))
    assert reveal.text.startswith("Recorded fail. System agent-a; ") and "you disagree." in reveal.text
    [line] = results.with_name("run.decisions.jsonl").read_text(encoding="utf-8").splitlines()
    audit = msgspec.json.decode(line)
    assert (audit["kind"], audit["verdict"], audit["note"]) == ("audit", "fail", "not what the gold says")

    browser.find_element(By.CSS_SELECTOR, "#audit-item button.next-audit").click()
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#audit-item .audit-done"))
    _wait(browser, lambda d: d.find_element(By.ID, "audits").is_displayed())
    assert browser.find_element(By.ID, "answers").is_displayed()
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#audits-table tbody tr")]
    assert [r.split()[0] for r in rows] == ["agent-a", "all", "tier"]
    link = browser.find_element(By.CSS_SELECTOR, "#audit-disagreements button.link")
    assert link.text == f"agent-a · {audit['question']}"
    link.click()
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–1 of 1")
    row = browser.find_element(By.CSS_SELECTOR, "#list tr.row")
    assert (row.get_attribute("data-system"), row.get_attribute("data-question")) == (
        "agent-a",
        audit["question"],
    )


QUEUE_RUBRIC = """\
question sea {
  prompt "Into which sea does the Nile flow?"
  gold "The Mediterranean Sea"
  accept "the Mediterranean"
  trap "The Nile does not flow into the Red Sea."
  scoring "Naming the delta without the sea is partial, not full credit."
}
question rhine {
  prompt "Roughly how long is the Rhine?"
  gold "About 1,230 km"
}
"""


def test_the_queue_entry_the_key_in_the_decision_panel_whiskers_and_t1_precision(
    browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    from tabench_dsl.core.records import Audit
    from tabench_dsl.review.viewer.charts import GEOMETRY

    battery = tmp_path / "rivers"
    battery.mkdir()
    (battery / "battery.yaml").write_text(
        "name: rivers\nscorer: tabench-neutral-1.1\nrubrics: [rivers.rubric]\n", encoding="utf-8"
    )
    (battery / "rivers.rubric").write_text(QUEUE_RUBRIC, encoding="utf-8")
    compiled = compile_battery_at(battery)
    sha = {q: compiled.questions[q].sha256 for q in ("sea", "rhine")}
    audited = make_record("sys-b", "rhine", "t1", prompt_sha256=sha["rhine"], battery="rivers")
    audited = msgspec.structs.replace(audited, audit=Audit("fail", "too long", audited.judge))  # type: ignore[arg-type]
    records = [
        make_record("sys-a", "sea", "adjudicate", prompt_sha256=sha["sea"], battery="rivers"),
        make_record("sys-b", "sea", "adjudicate", prompt_sha256=sha["sea"], battery="rivers"),
        make_record("sys-a", "rhine", "pass", prompt_sha256=sha["rhine"], battery="rivers"),
        audited,
    ]
    results = write_results(tmp_path / "run.jsonl", records)
    for url in _serve(results, battery):
        browser.get(url)
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        queue = browser.find_element(By.ID, "awaiting-queue")
        assert queue.is_displayed() and queue.text == "2 awaiting a decision ›"
        agreement = browser.find_element(By.ID, "agreement").text
        assert agreement == (
            "T1 precision against the judge: agreed 0 of 1, 0.0% (95% CI 0.0%-79.3%); "
            "1 audited, 0 undecided by the judge"
        )

        # Each bar has its whisker: the score's interval on the bar's 0-100% scale.
        totals = {
            s["system"]: s
            for s in browser.execute_script("return fetch('/api/totals').then((r) => r.json())")["systems"]
        }
        whiskers = browser.find_elements(By.CSS_SELECTOR, "#chart-systems g.bar g.whisker")
        assert len(whiskers) == 2
        first = whiskers[0].find_element(By.TAG_NAME, "line")
        low = totals["sys-a"]["ci_low"]
        assert float(first.get_attribute("x1")) == pytest.approx(
            GEOMETRY.label_width + GEOMETRY.bar_width * low, abs=0.1
        )

        queue.click()  # the entry point lists the undecided adjudicate answers
        _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#answers .pager .count").text == "1–2 of 2")
        assert "verdict=adjudicate" in browser.current_url and "human=undecided" in browser.current_url
        browser.find_elements(By.CSS_SELECTOR, "#list tr.row")[0].click()
        panel = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".detail .decide"))
        key = {dd.get_attribute("class"): dd.text for dd in panel.find_elements(By.CSS_SELECTOR, ".key dd")}
        assert key == {
            "gold": "The Mediterranean Sea",
            "accept": "the Mediterranean",
            "trap": "The Nile does not flow into the Red Sea.",
            "scoring": "Naming the delta without the sea is partial, not full credit.",
            "small source": "from the prompt this answer was graded with",
        }
        panel.find_element(By.CSS_SELECTOR, "button.fail").click()
        _wait(browser, lambda d: d.find_element(By.ID, "awaiting-queue").text == "1 awaiting a decision ›")
