"""The static report: one self-contained HTML page of a run, to share or keep as a CI artifact.

Same totals and charts as the viewer, then the answers themselves, the ones that need a reader
first (adjudicate, error, fail, then pass). CSS and SVG are inline and nothing is fetched; a few
lines of inline script add filters, and the page reads the same without them. Every piece of text
from the results or the battery is shown as text (`display.shown`: a bidi override or a control
character is seen as an escape instead of acting) and goes through `html.escape`. A very large run
is cut to `max_answers` answers, and the page says so.

Every report carries `REPORT_MARKER` in its head: `report --html` overwrites an existing file only
when it finds the marker there (`is_report_file`), so it never writes over a file it did not write.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from ..core.display import shown
from ..core.records import CAUSE_TEXTS, Record
from .totals import Totals, compute_totals, judge_caption, percent
from .viewer.charts import outcome_bars
from .viewer.run import Run, prompts_for

#: Answers shown in full by default; the rest are counted, not shown.
MAX_ANSWERS = 1000
#: Rows of the per-question table shown at most.
MAX_QUESTION_ROWS = 500
#: Written in the head of every report, right after the charset: how tabench knows a page is its own.
REPORT_MARKER = '<meta name="generator" content="tabench report">'
#: How far into a file `is_report_file` looks for the marker.
_MARKER_WITHIN = 1024
_ORDER = {"adjudicate": 0, "error": 1, "fail": 2, "pass": 3}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1300px;padding:16px 24px;color:#1d2126}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px}
.muted{color:#5a6270;margin:4px 0}.warn{background:#fff4d6;border:1px solid #e8c65a;border-radius:4px;
padding:6px 10px;margin:6px 0}table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;
border-bottom:1px solid #d8dbe0;text-align:right;white-space:nowrap}th{background:#f0f2f5}
th.l,td.l{text-align:left}.scroll{overflow-x:auto}.charts{display:flex;flex-wrap:wrap;gap:24px}
.badge{display:inline-block;padding:0 7px;border-radius:9px;color:#fff;font-size:12px;font-weight:600}
.pass{background:#1b7837}.fail{background:#c2372b}.adjudicate{background:#e0a100;color:#222}
.error{background:#7f7f7f}.human{outline:2px solid #1d2126;outline-offset:1px}
details.answer{border:1px solid #d8dbe0;border-radius:5px;margin:6px 0;padding:4px 10px;background:#fff}
details.answer>summary{cursor:pointer}details.answer[open]{background:#fbfcfe}
.preview{color:#5a6270}
pre{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #d8dbe0;
border-radius:4px;padding:6px 9px;margin:3px 0;font:12.5px/1.45 ui-monospace,Menlo,Consolas,monospace;
max-height:320px;overflow:auto}h4{margin:10px 0 2px;font-size:13px}.small{font-size:12px;color:#5a6270}
#filters{display:none;gap:12px;margin:6px 0}#questions{width:auto;min-width:50%}
"""
_SCRIPT = """
(function(){var f=document.getElementById('filters');f.style.display='flex';
function apply(){var v=f.elements.verdict.value,s=f.elements.system.value,n=0;
document.querySelectorAll('details.answer').forEach(function(d){
var ok=(!v||d.dataset.verdict===v)&&(!s||d.dataset.system===s);d.hidden=!ok;if(ok)n++;});
document.getElementById('shown').textContent=n+' shown';}
f.addEventListener('change',apply);apply();})();
"""


def _text(text: str, *, lines: bool = False) -> str:
    """Text from a results file or a battery, as HTML: shown as text, then escaped."""
    return escape(shown(text, lines=lines))


def is_report_file(path: str | Path) -> bool:
    """True when `path` is an HTML report tabench wrote (its head carries `REPORT_MARKER`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_MARKER_WITHIN)
    except OSError:
        return False
    return head.lower().startswith(b"<!doctype html>") and REPORT_MARKER.encode() in head


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _percent(value: float | None) -> str:
    return percent(value, missing="–")


def _badge(verdict: str, human: str | None = None) -> str:
    if human:
        return f'<span class="badge {human} human">human {human}</span>'
    return f'<span class="badge {escape(verdict)}">{escape(verdict)}</span>'


def _preview(text: str, limit: int = 110) -> str:
    text = " ".join(text.split())
    return _text(text if len(text) <= limit else text[: limit - 1] + "…")


def _totals_table(totals: Totals) -> str:
    head = ("system", "answers", "pass", "fail", "adjudicate", "error", "human", "score", "95% interval",
            "T1", "judge calls", "stern retries", "tokens")
    rows = ["<tr>" + "".join(f'<th class="{"l" if h == "system" else ""}">{h}</th>' for h in head) + "</tr>"]
    for s in totals.systems:
        human = f"{s.human_pass} pass / {s.human_fail} fail" if s.human_pass + s.human_fail else "–"
        ci = "–" if s.ci_low is None else f"{_percent(s.ci_low)} – {_percent(s.ci_high)}"
        cells = [s.answers, s.passed, s.fail, s.adjudicate, s.error, human, _percent(s.score), ci,
                 s.t1_passes, s.judge_calls, s.stern_retries, s.tokens]
        rows.append(f'<tr><td class="l">{_text(s.system)}</td>'
                    + "".join(f"<td>{escape(f'{c:,}' if isinstance(c, int) else c)}</td>" for c in cells)
                    + "</tr>")
    return f'<div class="scroll"><table id="totals">{"".join(rows)}</table></div>'


def _question_table(totals: Totals) -> str:
    listed = totals.questions[:MAX_QUESTION_ROWS]
    rows = ['<tr><th class="l">question</th><th>answers</th><th>pass</th><th>fail</th><th>adjudicate</th>'
            "<th>error</th><th>score</th></tr>"]
    for q in listed:
        rows.append(f'<tr><td class="l">{_text(q.question)}</td><td>{q.answers:,}</td><td>{q.passed:,}</td>'
                    f"<td>{q.fail:,}</td><td>{q.adjudicate:,}</td><td>{q.error:,}</td><td>{_percent(q.score)}</td></tr>")
    note = ""
    if len(totals.questions) > len(listed):
        note = f'<p class="muted">First {len(listed):,} of {len(totals.questions):,} questions.</p>'
    return f'<div class="scroll"><table id="questions">{"".join(rows)}</table></div>{note}'


def _answer(record: Record, run: Run) -> str:
    human = record.decision.verdict if record.decision else None
    outcome = _badge(record.verdict) + (" → " + _badge(record.verdict, human) if human else "")
    parts = [
        f'<details class="answer" data-verdict="{escape(record.verdict)}" '
        f'data-system="{escape(record.system)}">'
        f"<summary>{outcome} <b>{_text(record.system)}</b> · {_text(record.question)} "
        f'<span class="small">{escape(record.tier)}</span> <span class="preview">{_preview(record.answer)}'
        "</span></summary>"
    ]
    if record.cause:
        cause_text = CAUSE_TEXTS.get(record.cause, "")
        parts.append(f'<p class="small">{escape(record.cause)}: {escape(cause_text)}</p>')
    if record.decision is not None:
        d = record.decision
        note = f" – {_text(d.note, lines=True)}" if d.note else ""
        parts.append(f'<p class="small">Decided {d.verdict} by {_text(d.reviewer)} at {_text(d.time)}'
                     f"{note}</p>")
    facets = ", ".join(name for name, seen in record.facets.items() if seen)
    if facets:
        parts.append(f'<p class="small">facets: {_text(facets)}</p>')
    if record.warnings:
        parts.append(f'<p class="small">warnings: {_text("; ".join(record.warnings))}</p>')
    parts.append(f"<h4>Answer</h4><pre>{_text(record.answer, lines=True)}</pre>")
    parts.append(f"<h4>Reason</h4><pre>{_text(record.reason or '(none)', lines=True)}</pre>")
    if not record.attempts:
        parts.append('<p class="small">T1 token-subset pass: no judge call.</p>')
    for i, a in enumerate(record.attempts, start=1):
        bits = [f"{i}. {a.kind}", f"{a.latency_ms:.0f} ms", f"{a.tokens.total:,} tokens"]
        if a.cache_hit:
            bits.append("cache hit")
        if a.transport_retries:
            bits.append(f"{a.transport_retries} transport retries")
        if a.error:
            bits.append(f"error: {a.error}")
        raw = "(no reply)" if a.raw is None else a.raw
        parts.append(f'<h4>{_text(" · ".join(bits))}</h4><pre>{_text(raw, lines=True)}</pre>')
    prompts = prompts_for(record, run.compiled)
    link = (f' <a href="#prompt-{escape(record.question)}">SYSTEM prompt</a>'
            if prompts.system is not None else "")
    drift = f'<div class="warn">{_text(prompts.drift)}</div>' if prompts.drift and run.compiled else ""
    parts.append(f'<p class="small">prompt sha256 {_text(record.prompt_sha256)}{link}</p>{drift}</details>')
    return "".join(parts)


def _prompts(run: Run, questions: list[str]) -> str:
    compiled = run.compiled
    if compiled is None:
        return ""
    user = _text(compiled.user.fill("{answer}"), lines=True)
    out = [f"<h2>Prompts</h2><p class=\"muted\">Battery {_text(compiled.name)}, scorer "
           f"{_text(compiled.scorer)}. USER is <code>{user}</code>.</p>"]
    for qid in questions:
        q = compiled.questions.get(qid)
        if q is not None:
            out.append(f'<details id="prompt-{escape(qid)}"><summary>{_text(qid)} SYSTEM '
                       f'({len(q.system):,} characters, sha256 {q.sha256[:12]}…)</summary>'
                       f"<pre>{_text(q.system, lines=True)}</pre></details>")
    return "".join(out)


def _reading_order(record: Record) -> tuple[int, str, str]:
    verdict = record.decision.verdict if record.decision else record.verdict
    return (_ORDER.get(verdict, 9), record.system, record.question)


def _fair_cut(ordered: list[Record], limit: int) -> list[Record]:
    """`limit` records in reading order, chosen verdict by verdict and round-robin over the systems,
    so a cut report shows every system's undecided and failed answers, not the first system's only."""
    buckets: dict[tuple[int, str], list[Record]] = {}
    for record in ordered:
        buckets.setdefault(_reading_order(record)[:2], []).append(record)
    chosen: list[Record] = []
    for rank in sorted({key[0] for key in buckets}):
        queues = [buckets[key] for key in sorted(buckets) if key[0] == rank]
        for i in range(max(len(q) for q in queues)):
            for queue in queues:
                if i < len(queue):
                    chosen.append(queue[i])
                    if len(chosen) == limit:
                        return sorted(chosen, key=_reading_order)
    return sorted(chosen, key=_reading_order)


def render_report(run: Run, *, max_answers: int = MAX_ANSWERS, now: datetime | None = None) -> str:
    """The whole report page for `run` as HTML text."""
    totals = compute_totals(run.records)
    ordered = sorted(run.records, key=_reading_order)
    listed = ordered if len(ordered) <= max_answers else _fair_cut(ordered, max_answers)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    warnings = [f'<div class="warn">{_text(p)}</div>' for p in run.problems[:20]]
    if len(run.problems) > 20:
        warnings.append(f'<div class="warn">… and {len(run.problems) - 20:,} more bad lines skipped.</div>')
    warnings += [f'<div class="warn">Decision ignored: {_text(s.decision.system)} / '
                 f"{_text(s.decision.question)}: {_text(s.reason)}.</div>" for s in run.stale]
    if run.compiled is None:
        warnings.append('<div class="warn">No battery given (--battery): prompts appear as their sha256 only.'
                        "</div>")
    if len(listed) < len(ordered):
        cut = (f'<p class="warn">Showing {len(listed):,} of {len(ordered):,} answers: adjudicate, error '
               "and fail first, then pass, taken evenly from every system. <code>tabench view</code> "
               "browses them all.</p>")
    else:
        cut = f'<p class="muted">All {len(ordered):,} answers, adjudicate, error and fail first.</p>'
    systems = "".join(f'<option value="{escape(s.system)}">{_text(s.system)}</option>'
                      for s in totals.systems)
    body = [
        f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{REPORT_MARKER}"
        # Answers are untrusted text: even if one escaped its escaping, nothing else could run or load.
        f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        f'style-src {_csp_hash(_CSS)}; script-src {_csp_hash(_SCRIPT)}">'
        f"<title>tabench report: {_text(run.results_path.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>tabench report</h1><p class=\"muted\">{_text(str(run.results_path))} · "
        f"{totals.records:,} answers"
        f" · {_text(judge_caption(totals))} · generated {stamp}</p>",
        *warnings,
        "<h2>Totals per system</h2>", _totals_table(totals),
        '<p class="muted">Facets observed: '
        + (_text(" · ".join(f"{k} {v:,}" for k, v in totals.facets.items())) or "none") + "</p>",
        '<p class="muted">score = pass / (pass + fail + adjudicate) with its 95% Wilson interval; errors are '
        "not counted; a human decision counts as its verdict.</p>",
        '<h2>Outcomes</h2><div class="charts">',
        outcome_bars(totals.systems, title="Outcomes per system", kind="system"),
        outcome_bars(totals.questions, title="Outcomes per question", kind="question"), "</div>",
        "<h2>Per question</h2>", _question_table(totals),
        "<h2>Answers</h2>", cut,
        '<form id="filters"><label>verdict <select name="verdict"><option value="">any</option>'
        + "".join(f'<option value="{v}">{v}</option>' for v in _ORDER) +
        f'</select></label><label>system <select name="system"><option value="">any</option>{systems}'
        '</select></label><span id="shown" class="muted"></span></form>',
        *(_answer(r, run) for r in listed),
        _prompts(run, sorted({r.question for r in listed})),
        f"<script>{_SCRIPT}</script></body></html>",
    ]
    return "\n".join(body)


def write_report(run: Run, out_path: str, *, max_answers: int = MAX_ANSWERS) -> int:
    """Write the report to `out_path`; return how many answers it shows in full."""
    html = render_report(run, max_answers=max_answers)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(html)
    return min(len(run.records), max_answers)
