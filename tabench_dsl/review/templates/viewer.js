"use strict";
// Every piece of record text reaches the page as a text node (el(), svg() and setText() below), never
// as markup to parse: answers, names and judge replies are untrusted. Each text goes through shown()
// first, so a bidi override or a control character in it is seen as an escape instead of acting.
// What the server defines once (cause texts, outcome colours, the chart's geometry, the filter keys)
// comes in the page as JSON (viewer/page.py): this script keeps no copy of it.
const CONSTANTS = JSON.parse(document.getElementById("constants").textContent);
const FILTERS = CONSTANTS.filters;
// `listed`: the number of the last list asked for; a page that comes back after a later one was
// asked for is dropped, so a slow answer to an old filter never replaces the list of a new one.
const state = { filters: {}, offset: 0, limit: 50, total: 0, meta: null, listed: 0 };
// The totals table pages and searches as the answers list does, one page from the server at a time
// (/api/systems): a run of 4,000 systems is not one table of 4,000 rows.
const systemsState = { q: "", offset: 0, limit: 50 };
const systemsForm = document.getElementById("systems-search");
const form = document.getElementById("filters");
const listBody = document.querySelector("#list tbody");
const fmt = (n) => Number(n).toLocaleString("en-US");
const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");

// What shown() makes visible, as tabench_dsl/core/display.py does for the terminal: C0 and C1 controls
// and DEL (tab and line break kept: answers are multi-line), a carriage return not ending a line,
// format characters (bidi controls, zero-width characters, tag characters), line and paragraph
// separators and lone surrogates.
const ACTING = /\r(?!\n)|[\0-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

function shown(text) {
  return String(text).replace(ACTING, (c) => {
    if (c === "\r") return "\\r";
    const code = c.codePointAt(0);
    return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0")
      : "<U+" + code.toString(16).toUpperCase().padStart(4, "0") + ">";
  });
}

function setText(node, text) {
  node.textContent = shown(text);
}

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.setAttribute("class", value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    // A tooltip is read by a person; other attributes (values, data-*) keep the text as it is.
    else node.setAttribute(key, value === true ? "" : key === "title" ? shown(value) : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(shown(child)));
  }
  return node;
}

function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

function svg(tag, attrs, ...children) {
  return build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function badge(verdict, human) {
  if (human) return el("span", { class: "badge human " + human, title: "decided by a reviewer" }, "human " + human);
  return el("span", { class: "badge " + verdict }, verdict);
}

function outcomeCell(item) {
  const cell = el("td", { class: "outcome" }, badge(item.verdict, null));
  if (item.human) cell.append(" → ", badge(item.verdict, item.human));
  if (item.cause) cell.append(el("span", { class: "small" }, " " + item.cause));
  if (item.injection_suspect) {
    cell.append(el("span", { class: "small flag", title: "the answer looks like it addresses the judge" },
      " injection?"));
  }
  if (item.votes && item.votes.length) {
    cell.append(el("span", { class: "small", title: "each panel judge's vote" }, " [" + item.votes.join(" ") + "]"));
  }
  if (item.audit === "fail") {
    cell.append(el("span", { class: "small flag", title: "the T1 audit's judge failed this T1 pass" }, " audit: fail"));
  }
  if (item.warnings) cell.append(el("span", { class: "small flag", title: "see the answer's warnings" }, " ⚑"));
  if (state.meta && state.meta.compare) cell.append(comparedBadge(item.compared));
  return cell;
}

// -- header, totals and charts ------------------------------------------------------------------
function showMeta(meta) {
  state.meta = meta;
  setText(document.getElementById("source"),
    `${meta.results} · ${fmt(meta.records)} answers · decisions go to ${meta.decisions}` +
    ` as ${meta.reviewer}` + (meta.battery ? ` · battery ${meta.battery.name} (${meta.battery.scorer})` : ""));
  const warnings = document.getElementById("warnings");
  warnings.replaceChildren();
  if (meta.problem_count) {
    const box = el("div", { class: "warn" }, `${fmt(meta.problem_count)} line(s) of the results file are not records` +
      " and were skipped:");
    for (const p of meta.problems) box.append(el("div", { class: "small" }, p));
    warnings.append(box);
  }
  for (const s of meta.stale) {
    warnings.append(el("div", { class: "warn" },
      `Decision ignored: ${s.system} / ${s.question} (${s.verdict} by ${s.reviewer}): ${s.reason}.`));
  }
  if (!meta.battery) {
    warnings.append(el("div", { class: "warn" },
      "No battery given (--battery): answers show the prompt's sha256, not its text."));
  }
  fillSelect("cause", meta.causes);
  fillSelect("system", meta.systems);
  fillSelect("facet", meta.facets);
  fillSelect("tag", meta.tags);
  document.getElementById("compared-filter").hidden = !meta.compare;
  const ids = document.getElementById("question-ids");
  ids.replaceChildren(...meta.questions.slice(0, 5000).map((q) => el("option", { value: q })));
}

function fillSelect(name, values) {
  const select = form.elements[name];
  select.replaceChildren(el("option", { value: "" }, "any"), ...values.map((v) => el("option", { value: v }, v)));
}

function showTotals(totals) {
  const judges = totals.judge_names;
  setText(document.getElementById("judges"),
    judges.length ? "Judge: " + judges.join(", ") : "Graded by T1 only (no judge call).");
  setText(document.getElementById("usage"), totals.usage_text);
  const facets = Object.entries(totals.facets).map(([name, n]) => `${name} ${fmt(n)}`);
  setText(document.getElementById("facets"), "Facets observed: " + (facets.join(" · ") || "none"));
  showTags(totals.tags);
  showPairs(totals.comparisons);
  showCompared(totals.compared);
  showAudits(totals);
  showQueue(totals.awaiting);
  document.getElementById("agreement").replaceChildren(...totals.agreement_lines.map((line) => el("p", null, line)));
  document.getElementById("chart-systems").replaceChildren(drawChart(totals.charts.systems));
  document.getElementById("chart-questions").replaceChildren(drawChart(totals.charts.questions));
}

// The entry point to the adjudicate queue: the undecided adjudicate answers, listed in one click.
function showQueue(awaiting) {
  document.getElementById("awaiting").hidden = !awaiting;
  setText(document.getElementById("awaiting-queue"), `${fmt(awaiting)} awaiting a decision ›`);
}

document.getElementById("awaiting-queue").addEventListener("click", () => {
  writeForm({ verdict: "adjudicate", human: "undecided" });
  applyFilters();
  document.getElementById("answers").scrollIntoView();
});

// -- tags, pairs of systems and a second grading (`view --compare`) ---------------------------------
const points = (x) => (x === null || x === undefined ? "–" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1));
const pvalue = (p) => Number(p.toPrecision(4)).toString();

function showTags(tags) {
  document.getElementById("tags").hidden = !tags.length;
  document.querySelector("#tags-table tbody").replaceChildren(...tags.map((t) => {
    const cells = [t.answers, t.pass, t.fail, t.adjudicate, t.error].map((n) => el("td", null, fmt(n)));
    const interval = t.ci_low === null ? "–" : `${pct(t.ci_low)} – ${pct(t.ci_high)}`;
    const bySystem = t.systems.map((s) => `${s.system} ${pct(s.score)}`).join(" · ");
    return el("tr", { class: "tag-row", "data-tag": t.tag, onclick: () => {
      form.elements.tag.value = t.tag;
      applyFilters();
      document.getElementById("answers").scrollIntoView();
    } }, el("td", { class: "l" }, t.tag), ...cells, el("td", { class: "score" }, pct(t.score)),
    el("td", null, interval), el("td", { class: "l" }, bySystem));
  }));
}

function showPairs(comparisons) {
  const section = document.getElementById("pairs");
  section.hidden = !comparisons.pairs.length && !comparisons.skipped;
  setText(document.getElementById("pairs-method"), comparisons.skipped
    ? "Not compared: " + comparisons.skipped + "."
    : "On the questions both systems answered (" + comparisons.method + ").");
  document.querySelector("#pairs-table tbody").replaceChildren(...comparisons.pairs.map((p) => el("tr",
    { class: p.significant ? "significant" : null }, el("td", { class: "l" }, p.a), el("td", { class: "l" }, p.b),
    el("td", null, fmt(p.questions)), el("td", null, fmt(p.a_only)), el("td", null, fmt(p.b_only)),
    el("td", null, points(p.diff)),
    el("td", null, p.ci_low === null ? "–" : `${points(p.ci_low)} to ${points(p.ci_high)}`),
    el("td", null, pvalue(p.p_value)), el("td", null, pvalue(p.p_holm)),
    el("td", null, p.significant ? "yes *" : "no"))));
}

function showCompared(compared) {
  document.getElementById("compared").hidden = !compared;
  if (!compared) return;
  document.getElementById("compared-lines").replaceChildren(
    el("div", null, "A: " + compared.a), el("div", null, "B: " + compared.b),
    ...compared.lines.map((line) => el("div", null, line)),
    el("button", { type: "button", onclick: () => {
      form.elements.compared.value = "flipped";
      applyFilters();
      document.getElementById("answers").scrollIntoView();
    } }, "List the flipped answers"));
}

function comparedBadge(compared) {
  if (!compared) return el("span", { class: "small" }, " B: not graded");
  const b = el("span", { class: "small" }, " B: ");
  b.append(badge(compared.verdict, compared.human));
  return b;
}

// -- charts: drawn here from the server's chart data, with the geometry and legend the report's
// SVG uses (viewer/charts.py)
const { label_width: LABEL_W, bar_width: BAR_W, row_height: ROW_H, top: TOP, label_limit: LABEL_LIMIT } =
  CONSTANTS.chart;

function drawChart(chart) {
  const width = LABEL_W + BAR_W + 50, height = TOP + ROW_H * Math.max(chart.bars.length, 1) + 8;
  const root = svg("svg", { class: "chart", role: "img", width, height, viewBox: `0 0 ${width} ${height}`,
                            "font-family": "system-ui, sans-serif", "font-size": 12 },
    svg("title", null, chart.title + (chart.note ? ` (${chart.note})` : "")),
    svg("text", { x: 0, y: 14, "font-size": 13, "font-weight": 600 }, chart.title));
  for (const { name, colour, x } of CONSTANTS.legend) {
    root.append(svg("rect", { x, y: 24, width: 12, height: 12, fill: colour }),
      svg("text", { x: x + 16, y: 34 }, name));
  }
  if (chart.note) root.append(svg("text", { x: width - 4, y: 14, "text-anchor": "end", fill: "#555" }, chart.note));
  if (!chart.bars.length) root.append(svg("text", { x: 0, y: TOP + 14, fill: "#555" }, "no answers"));
  chart.bars.forEach((bar, i) => {
    const y = TOP + i * ROW_H;
    const total = Object.values(bar.counts).reduce((a, b) => a + b, 0);
    const chars = [...bar.label];
    const short = chars.length <= LABEL_LIMIT ? bar.label : chars.slice(0, LABEL_LIMIT - 1).join("") + "…";
    const group = svg("g", { class: "bar", ["data-" + chart.kind]: bar.label },
      svg("text", { x: LABEL_W - 6, y: y + 14, "text-anchor": "end" }, svg("title", null, bar.label), short));
    let bx = LABEL_W;
    for (const [name, count] of Object.entries(bar.counts)) {
      if (!count) continue;
      const w = BAR_W * count / total;
      group.append(svg("rect", { x: bx.toFixed(1), y: y + 3, width: w.toFixed(1), height: ROW_H - 6,
                                 fill: CONSTANTS.colours[name] },
        svg("title", null, `${bar.label}: ${count} ${name} (${(100 * count / total).toFixed(1)}%)`)));
      bx += w;
    }
    if (bar.ci_low !== null && bar.ci_high !== null) {  // the score's 95% interval, on the bar's 0-100% scale
      const [x1, x2] = [LABEL_W + BAR_W * bar.ci_low, LABEL_W + BAR_W * bar.ci_high].map((x) => x.toFixed(1));
      const mid = y + Math.floor(ROW_H / 2);
      group.append(svg("g", { class: "whisker", stroke: "#111", "stroke-width": 1.5 },
        svg("title", null, `${bar.label}: score 95% interval ${(100 * bar.ci_low).toFixed(1)}% – ` +
          `${(100 * bar.ci_high).toFixed(1)}%`),
        svg("line", { x1, y1: mid, x2, y2: mid }), svg("line", { x1, y1: mid - 5, x2: x1, y2: mid + 5 }),
        svg("line", { x1: x2, y1: mid - 5, x2, y2: mid + 5 })));
    }
    group.append(svg("text", { x: LABEL_W + BAR_W + 6, y: y + 14 },
      bar.score === null ? "-" : `${(100 * bar.score).toFixed(0)}%`));
    root.append(group);
  });
  return root;
}

async function refreshTotals() {
  const [totals] = await Promise.all([api("/api/totals"), loadSystems()]);
  showTotals(totals);
}

async function loadSystems() {
  const params = new URLSearchParams({ q: systemsState.q, offset: systemsState.offset, limit: systemsState.limit });
  const page = await api("/api/systems?" + params);
  const body = document.querySelector("#totals-table tbody");
  body.replaceChildren(...page.items.map(systemRow));
  if (!page.items.length) {
    body.append(el("tr", null, el("td", { colspan: 16, class: "l muted" }, "No system matches this search.")));
  }
  const last = Math.min(page.offset + page.items.length, page.total);
  const text = page.total ? `${fmt(page.offset + 1)}–${fmt(last)} of ${fmt(page.total)} systems` : "0 systems";
  for (const c of document.querySelectorAll("#totals .pager .count")) setText(c, text);
  for (const b of document.querySelectorAll("#totals .pager .prev")) b.disabled = page.offset === 0;
  for (const b of document.querySelectorAll("#totals .pager .next")) b.disabled = last >= page.total;
}

function systemRow(s) {
  const human = s.human_pass + s.human_fail;
  const interval = s.ci_low === null ? "–" : `${pct(s.ci_low)} – ${pct(s.ci_high)}`;
  const cells = [s.answers, s.pass, s.fail, s.adjudicate, s.error].map((n) => el("td", null, fmt(n)));
  return el("tr", { "data-system": s.system }, el("td", { class: "l" }, s.system), ...cells,
    el("td", null, human ? `${s.human_pass} pass / ${s.human_fail} fail` : "–"),
    el("td", { class: "score" }, pct(s.score)), el("td", null, interval), el("td", null, fmt(s.t1_passes)),
    el("td", null, fmt(s.judge_calls)), el("td", null, fmt(s.stern_retries)), el("td", null, fmt(s.tokens.prompt)),
    el("td", null, fmt(s.tokens.cached_prompt)), el("td", null, fmt(s.tokens.completion)), el("td", null, s.cost_text));
}

// -- the list -------------------------------------------------------------------------------------
function readForm() {
  const filters = {};
  for (const name of FILTERS) {
    const value = form.elements[name].value.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

function writeForm(filters) {
  for (const name of FILTERS) form.elements[name].value = filters[name] || "";
}

async function loadList() {
  const params = new URLSearchParams({ ...state.filters, offset: state.offset, limit: state.limit });
  const shown = new URLSearchParams(state.filters);
  if (state.offset) shown.set("offset", state.offset);
  history.replaceState(null, "", shown.toString() ? "?" + shown : location.pathname);
  for (const c of document.querySelectorAll("#answers .pager .count")) setText(c, "Loading…");
  const asked = ++state.listed;
  const page = await api("/api/records?" + params);
  if (asked !== state.listed) return;  // a later list was asked for meanwhile: it shows, not this one
  state.total = page.total;
  listBody.replaceChildren(...page.items.map(rowFor));
  listBody.dataset.filters = shown.toString();  // what the rows shown were chosen by
  if (!page.items.length) {
    listBody.append(el("tr", null, el("td", { colspan: 5, class: "muted" }, "No answer matches these filters.")));
  }
  const last = Math.min(page.offset + page.items.length, page.total);
  const text = page.total ? `${fmt(page.offset + 1)}–${fmt(last)} of ${fmt(page.total)}` : "0 answers";
  for (const c of document.querySelectorAll("#answers .pager .count")) setText(c, text);
  for (const b of document.querySelectorAll("#answers .pager .prev")) b.disabled = page.offset === 0;
  for (const b of document.querySelectorAll("#answers .pager .next")) b.disabled = last >= page.total;
}

function rowFor(item) {
  const row = el("tr", { class: "row", "data-system": item.system, "data-question": item.question,
                         tabindex: 0 },
    el("td", null, item.system), el("td", null, item.question), outcomeCell(item),
    el("td", null, item.tier), el("td", { class: "answer", title: item.answer }, item.answer));
  const toggle = () => toggleDetail(row, item);
  row.addEventListener("click", toggle);
  row.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(); });
  return row;
}

async function toggleDetail(row, item) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains("detail-row")) {
    next.remove();
    row.classList.remove("open");
    return;
  }
  row.classList.add("open");
  const cell = el("td", { colspan: 5 }, el("div", { class: "detail" }, "Loading…"));
  row.after(el("tr", { class: "detail-row" }, cell));
  const path = "/api/record/" + encodeURIComponent(item.system) + "/" + encodeURIComponent(item.question);
  try {
    const detail = await api(path);
    cell.replaceChildren(renderDetail(detail, row));
  } catch (err) {
    cell.replaceChildren(el("div", { class: "detail warn" }, "Could not load this answer: " + err.message));
  }
}

// -- one answer in full ---------------------------------------------------------------------------
function renderDetail(detail, row) {
  const r = detail.record;
  const box = el("div", { class: "detail" });
  const facts = el("dl", { class: "kv" },
    el("dt", null, "outcome"), el("dd", null, badge(r.verdict, null),
      r.cause ? ` ${r.cause}: ${CONSTANTS.causes[r.cause] || ""}` : "",
      r.tier === "t1" ? " – T1 token-subset pass, no judge call" : ""),
    el("dt", null, "judge"), el("dd", null, detail.judge_name),
    el("dt", null, "facets"), el("dd", null, Object.keys(r.facets).filter((k) => r.facets[k]).join(", ") || "none"));
  if (r.tolerated.length) facts.append(el("dt", null, "tolerated"), el("dd", null, r.tolerated.join(", ")));
  if (r.warnings.length) facts.append(el("dt", null, "warnings"), el("dd", null, r.warnings.join("; ")));
  if (r.injection_suspect) facts.append(el("dt", null, "injection"), el("dd", null, "the answer looks like it addresses the judge"));
  if (r.tags.length) facts.append(el("dt", null, "tags"), el("dd", null, r.tags.join(", ")));
  if (state.meta && state.meta.compare) {
    const c = detail.compared;
    facts.append(el("dt", null, "B"), el("dd", null, c ? badge(c.verdict, c.human) : "not graded in " +
      state.meta.compare, c ? ` ${c.judge_name}: ${c.reason}` : ""));
  }
  box.append(el("h3", null, `${r.system} · ${r.question}`), facts);
  if (r.verdict === "adjudicate") box.append(decidePanel(r, row, detail.key));
  box.append(el("h3", null, "Answer"), el("pre", { class: "answer-text" }, detail.final_answer));
  if (detail.reasoning) {  // graded on its final answer: the reasoning cut from it, folded
    box.append(el("details", { class: "reasoning" }, el("summary", { class: "small" }, detail.reasoning.line),
      el("pre", null, detail.reasoning.text || "(empty)")));
  }
  box.append(el("h3", null, "Judge's reason"), el("pre", null, r.reason || "(none)"));
  if (detail.votes.length) box.append(votesBlock("Judges of the panel", detail.votes));
  if (detail.audit) {
    const a = detail.audit;
    box.append(el("h3", null, "T1 audit"),
      el("p", null, `${a.judge_name} says `, badge(a.verdict, null),
        a.verdict === "fail" ? " – the judge disagrees with the T1 pass, which stands" : "",
        a.cause ? ` (${a.cause})` : ""),
      el("pre", null, a.reason || "(none)"));
    if (a.votes.length) box.append(votesBlock("Judges of the panel, auditing", a.votes));
  }
  if (!detail.votes.length) box.append(attemptsBlock(r.attempts));
  box.append(promptsBlock(detail.prompts));
  return box;
}

// Each panel judge's vote on one answer: its outcome and reason, then its own attempts.
function votesBlock(title, votes) {
  const block = el("div", { class: "votes" }, el("h3", null, `${title} (${votes.length})`));
  for (const v of votes) {
    block.append(el("div", { class: "vote" },
      el("p", null, el("strong", null, v.judge_name), " ", badge(v.verdict, null),
        v.cause ? ` ${v.cause}` : ""),
      el("pre", null, v.reason || "(none)"), attemptsBlock(v.attempts)));
  }
  return block;
}

function attemptsBlock(attempts) {
  const box = el("div", { class: "attempts" });
  box.append(el("h3", null, `Judge attempts (${attempts.length})`));
  if (!attempts.length) box.append(el("p", { class: "muted" }, "None: T1 decided without a judge call."));
  attempts.forEach((a, i) => {
    const bits = [`${i + 1}. ${a.kind}`, `${Math.round(a.latency_ms)} ms`,
      `${fmt(a.tokens.prompt + a.tokens.completion)} tokens`];
    if (a.cache_hit) bits.push("cache hit");
    if (a.transport_retries) bits.push(`${a.transport_retries} transport retries`);
    if (a.error) bits.push("error: " + a.error);
    box.append(el("div", { class: "attempt" }, el("div", { class: "small" }, bits.join(" · ")),
      el("pre", { class: "raw" }, a.raw === null ? "(no reply)" : a.raw)));
  });
  return box;
}

function promptsBlock(p) {
  const block = el("div", { class: "prompts" }, el("h3", null, "Compiled prompt"));
  if (p.drift) block.append(el("div", { class: "warn" }, p.drift));
  block.append(el("div", { class: "small" }, "recorded sha256 " + p.recorded_sha256));
  if (p.battery_sha256 && p.battery_sha256 !== p.recorded_sha256) {
    block.append(el("div", { class: "small" }, "battery's sha256 " + p.battery_sha256));
  }
  for (const [name, text] of [["SYSTEM", p.system], ["USER", p.user], ["STERN retry", p.stern]]) {
    if (text === null || text === undefined) continue;
    block.append(el("details", null, el("summary", null, `${name} (${fmt(text.length)} characters)`),
      el("pre", null, text)));
  }
  return block;
}

// What the answer is judged against, from the prompt it was graded with (or today's battery's).
const KEY_SOURCES = {
  graded: "from the prompt this answer was graded with",
  battery: "from today's battery: its prompt differs from the one this answer was graded with",
  gold: "the gold only: the scorer's prompt has no question block",
};

function keyBlock(key) {
  if (!key) return el("p", { class: "key muted" }, "No battery given (--battery): the gold, accepted variants, " +
    "trap and scoring text are not known.");
  const list = el("dl", { class: "kv key" }, el("dt", null, "gold"), el("dd", { class: "gold" }, key.gold));
  for (const variant of key.accept) list.append(el("dt", null, "accepted"), el("dd", { class: "accept" }, variant));
  if (key.trap !== null) list.append(el("dt", { title: "the truth a trapped answer denies" }, "trap"), el("dd", { class: "trap" }, key.trap));
  if (key.scoring !== null) list.append(el("dt", null, "scoring"), el("dd", { class: "scoring" }, key.scoring));
  list.append(el("dt", null, ""), el("dd", { class: "small source" }, KEY_SOURCES[key.source] || key.source));
  return list;
}

function decidePanel(r, row, key) {
  const status = el("span", { class: "small status" });
  const note = el("input", { type: "text", name: "note", placeholder: "note (optional)", maxlength: 2000 });
  const panel = el("div", { class: "decide" }, keyBlock(key), el("strong", null, "Your decision: "),
    el("button", { type: "button", class: "pass", onclick: () => send("pass") }, "Pass"),
    el("button", { type: "button", class: "fail", onclick: () => send("fail") }, "Fail"), note, " ", status);
  const show = (d) => { setText(status, d ? `Decided ${d.verdict} by ${d.reviewer} at ${d.time}` +
    (d.note ? ` – “${d.note}”` : "") : "Undecided: the judge could not settle this answer."); };
  show(r.decision);
  async function send(verdict) {
    for (const b of panel.querySelectorAll("button")) b.disabled = true;
    setText(status, "Saving…");
    try {
      const done = await api("/api/decision", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ system: r.system, question: r.question, verdict, note: note.value,
                               prompt_sha256: r.prompt_sha256 }) });
      show(done.decision);
      row.replaceChild(outcomeCell(done.record), row.querySelector("td.outcome"));
      const following = row.nextElementSibling && row.nextElementSibling.nextElementSibling;
      if (following && following.classList.contains("row")) {
        status.append(" ", el("button", { type: "button", class: "next-answer", onclick: () => {
          row.click();  // close this one
          following.click();
          following.scrollIntoView({ block: "start" });
        } }, "Next answer ›"));
      }
      await refreshTotals();
    } catch (err) {
      setText(status, "Not saved: " + err.message);
    } finally {
      for (const b of panel.querySelectorAll("button")) b.disabled = false;
    }
  }
  return panel;
}

// -- blind audits: the judge against them, each disagreement a link to its answer, and audit mode --
const share = (p) => (p.value === null ? "–" : `${pct(p.value)} (${pct(p.ci_low)} – ${pct(p.ci_high)})`);

function showAudits(totals) {
  const overall = totals.all.audit;
  document.getElementById("audits").hidden = !overall;
  if (!overall) return;
  const validated = (v) => (v ? `${pct(v.estimate)} (${pct(v.ci_low)} – ${pct(v.ci_high)})` : "–");
  const halve = (v) => (v && v.more_audits_to_halve !== null ? "+" + fmt(v.more_audits_to_halve) : "–");
  const rows = totals.systems.filter((s) => s.audit).map((s) => [s.system, s.audit, s.score, s.validated_score]);
  rows.push(["all", overall, null, totals.all.validated_score]);
  for (const [tier, found] of Object.entries(overall.tiers)) rows.push(["tier " + tier, found, null, null]);
  document.querySelector("#audits-table tbody").replaceChildren(...rows.map(([name, a, score, v]) => el("tr", null,
    el("td", { class: "l" }, name), el("td", null, fmt(a.n)), el("td", null, share(a.agreement)),
    el("td", null, a.kappa === null ? "–" : a.kappa.toFixed(3)), el("td", null, share(a.sensitivity)),
    el("td", null, share(a.specificity)), el("td", null, score === null ? "–" : pct(score)),
    el("td", null, validated(v)), el("td", null, halve(v)))));
  const misses = overall.disagreements;
  document.getElementById("audit-disagreements").replaceChildren(
    misses.length ? el("p", { class: "muted" }, "Where the person and the judge disagree:") : null,
    ...misses.map((d) => el("div", { class: "disagreement" },
      el("button", { type: "button", class: "link", onclick: () => showAnswer(d.system, d.question) },
        `${d.system} · ${d.question}`),
      ` judge ${d.judge_verdict}, ${d.reviewer} ${d.human_verdict}` + (d.note ? ` – “${d.note}”` : ""))));
}

function showAnswer(system, question) {
  writeForm({ system, question });
  applyFilters();
  document.getElementById("answers").scrollIntoView();
}

const auditForm = document.getElementById("audit-start");
const auditBox = document.getElementById("audit-item");

// While a person audits, every other section is hidden: the list, totals and charts would give away
// which system wrote an answer and what the judge made of it.
function blind(on) {
  for (const section of document.querySelectorAll("main > section")) {
    if (section.id === "audit-mode") continue;
    if (on) { section.dataset.shown = section.hidden ? "" : "1"; section.hidden = true; }
    else section.hidden = section.dataset.shown !== "1";
  }
  auditForm.hidden = on;
}

async function startAudit() {
  const n = encodeURIComponent(auditForm.elements.n.value);
  const seed = encodeURIComponent(auditForm.elements.seed.value || "0");
  const drawn = await api(`/api/audit?n=${n}&seed=${seed}`);
  if (!drawn.items.length) {
    auditBox.replaceChildren(el("p", { class: "muted" }, "Nothing to audit: every answer the judge decided is audited."));
    return;
  }
  blind(true);
  showAuditItem(drawn.items, 0, { audited: 0, agreed: 0 });
}

function showAuditItem(items, i, tally) {
  if (i >= items.length) { endAudit(tally); return; }
  const item = items[i];
  const next = () => showAuditItem(items, i + 1, tally);
  const note = el("input", { type: "text", name: "note", placeholder: "note (optional)", maxlength: 2000 });
  const status = el("div", { class: "small status" });
  const buttons = el("div", { class: "decide" }, el("strong", null, "Your verdict: "),
    el("button", { type: "button", class: "pass", onclick: () => send("pass") }, "Pass"),
    el("button", { type: "button", class: "fail", onclick: () => send("fail") }, "Fail"),
    el("button", { type: "button", class: "skip", onclick: next }, "Skip"), note, " ",
    el("button", { type: "button", class: "stop", onclick: () => endAudit(tally) }, "Stop"));
  auditBox.replaceChildren(el("h3", null, `Answer ${i + 1} of ${items.length} · question ${item.question}`),
    item.gold === null ? null : el("div", null, el("strong", null, "Gold"), el("pre", null, item.gold)),
    el("div", null, el("strong", null, "Answer"), el("pre", { class: "audit-answer" }, item.answer)), buttons, status);
  async function send(verdict) {
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    try {
      const r = await api("/api/audit", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token: item.token, verdict, note: note.value }) });
      tally.audited += 1;
      tally.agreed += r.agreed ? 1 : 0;
      status.replaceChildren(el("p", { class: "reveal " + (r.agreed ? "agree" : "disagree") },
        `Recorded ${verdict}. System ${r.system}; ${r.judge_name} said ${r.judge_verdict}: ` +
        (r.agreed ? "you agree." : "you disagree.")), r.tier === "t2" ? el("pre", null, r.reason) : null,
        el("button", { type: "button", class: "next-audit", onclick: next }, i + 1 < items.length ? "Next answer ›" : "Finish"));
    } catch (err) {
      setText(status, "Not saved: " + err.message);
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
    }
  }
}

function endAudit(tally) {
  blind(false);
  auditBox.replaceChildren(el("p", { class: "muted audit-done" },
    `${fmt(tally.audited)} audited, ${fmt(tally.agreed)} agreeing with the judge.`));
  refreshTotals().catch(showError);
}

auditForm.addEventListener("submit", (e) => { e.preventDefault(); startAudit().catch(showError); });

// -- wiring ---------------------------------------------------------------------------------------
function applyFilters() {
  state.filters = readForm();
  state.offset = 0;
  loadList().catch(showError);
}

function showError(err) {
  document.getElementById("warnings").append(el("div", { class: "warn" }, "Error: " + err.message));
}

let typing = null;
form.addEventListener("change", applyFilters);
form.addEventListener("input", (e) => {
  if (e.target.tagName !== "INPUT") return;
  clearTimeout(typing);
  typing = setTimeout(applyFilters, 300);
});
form.addEventListener("submit", (e) => { e.preventDefault(); applyFilters(); });
document.getElementById("reset").addEventListener("click", () => { writeForm({}); applyFilters(); });
for (const b of document.querySelectorAll("#answers .pager .prev")) {
  b.addEventListener("click", () => { state.offset = Math.max(0, state.offset - state.limit); loadList().catch(showError); });
}
for (const b of document.querySelectorAll("#answers .pager .next")) {
  b.addEventListener("click", () => { state.offset += state.limit; loadList().catch(showError); });
}
let searching = null;
function searchSystems() {
  systemsState.q = systemsForm.elements.q.value.trim();
  systemsState.offset = 0;
  loadSystems().catch(showError);
}
systemsForm.addEventListener("input", () => { clearTimeout(searching); searching = setTimeout(searchSystems, 300); });
systemsForm.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(searching); searchSystems(); });
for (const b of document.querySelectorAll("#totals .pager .prev")) {
  b.addEventListener("click", () => {
    systemsState.offset = Math.max(0, systemsState.offset - systemsState.limit);
    loadSystems().catch(showError);
  });
}
for (const b of document.querySelectorAll("#totals .pager .next")) {
  b.addEventListener("click", () => { systemsState.offset += systemsState.limit; loadSystems().catch(showError); });
}
document.getElementById("charts").addEventListener("click", (e) => {
  const bar = e.target.closest && e.target.closest("g.bar");
  if (!bar) return;
  if (bar.dataset.system !== undefined) form.elements.system.value = bar.dataset.system;
  if (bar.dataset.question !== undefined) form.elements.question.value = bar.dataset.question;
  applyFilters();
  document.getElementById("answers").scrollIntoView();
});

(async function start() {
  const query = new URLSearchParams(location.search);
  for (const name of FILTERS) if (query.get(name)) state.filters[name] = query.get(name);
  state.offset = Math.max(0, parseInt(query.get("offset") || "0", 10) || 0);
  const [meta, totals] = await Promise.all([api("/api/meta"), api("/api/totals"), loadSystems()]);
  showMeta(meta);
  writeForm(state.filters);
  showTotals(totals);
  await loadList();
  document.body.dataset.ready = "1";
})().catch(showError);
