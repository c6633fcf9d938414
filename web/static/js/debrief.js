// The debrief page: the run summed up. While the game goes on, the score
// so far (GET /api/debrief); once it is over, the whole run with the coach
// (POST /api/debrief, "coach": true): the stars from par, the player's
// rank against each bot's thousand seeds, the what-ifs that would have
// saved the most, "play this seed again" and "watch par". What the
// realistic mode hid is revealed here.
import { t, tn } from "./i18n.js";
import { $, state, clockOf, controlSpec, apiError, keepStars } from "./state.js";
import { api, post } from "./api.js";
import { runParams, runBody } from "./playback.js";
import { displayScale, displayUnit } from "./controls.js";
import { timelineChart } from "./charts.js";
import { encodeRun } from "./share.js";
import { playAgain, newGame } from "./play.js";

let pending = null; // the coach request in flight, cancelled on leaving
let last = null; // the last answer, to redraw in another language

const num = (v, digits = 0) => v.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function render() {
  const has = !!state.scenario && state.shown >= 0;
  $("debrief-empty").hidden = has;
  $("debrief-body").hidden = !has;
  if (!has) return;
  if (pending) pending.abort();
  const whole = state.over;
  let body;
  try {
    if (whole) {
      pending = new AbortController();
      say("coach.computing");
      body = await post("/api/debrief", runBody({ coach: true }), pending.signal);
      say("");
    } else {
      body = await api("/api/debrief", runParams({ at: state.shown + 1 }));
    }
  } catch (err) {
    if (err.name === "AbortError") return;
    say("");
    apiError(err);
    return;
  } finally {
    pending = null;
  }
  last = { body, whole, frames: state.frames.slice(0, state.shown + 1) };
  draw();
}

function say(key) {
  $("coach-status").textContent = key ? t(key) : "";
}

function leave() {
  if (pending) pending.abort();
}

function draw() {
  if (!last) return;
  const { body, whole } = last;
  const d = body.debrief;
  const name = state.scenario.name;
  $("debrief-span").textContent = tn(whole ? "debrief.span" : "debrief.span_so_far", d.minutes, {
    scenario: t(`scenario.${name}.title`),
    seed: state.seed,
    from: d.from,
    to: d.to,
    minutes: d.minutes,
  });
  drawVerdict(body, whole);
  drawScore(body.score);
  drawWhatIfs(body.coach);
  drawFigures(d, name, whole);
  drawReveal(body, d, name, whole);
  drawTimeline(d, name, whole);
}

// hidden reports whether the debrief must keep what the dashboard hid: in
// the realistic mode until the run is over, the bad build and the cache's
// warmth stay secret, as they were on the dashboard.
function hidden(whole) {
  return state.difficulty === "realistic" && !whole;
}

// pct shows a share of the month's budget as a percentage, never below
// 0 %: a budget spent past its end is gone, not negative.
function pct(v, digits) {
  return Math.max(0, 100 * v).toFixed(digits);
}

function stars(n) {
  return "★".repeat(n) + "☆".repeat(3 - n);
}

// watchLink is the link that watches a run the server played to its end
// (par's, or a what-if's) on this seed, actions as the API gives them: a
// shared run whose sharer's minute is the scenario's last (at is the whole
// length), played from minute 0 at once (watch=1). A share link stops at
// its sharer's minute, and these once wrote at=1, a run stopped at minute
// 0 that played nothing (issue 46).
function watchLink(actions) {
  const run = { scenario: state.scenario.name, seed: state.seed, noise: state.noise, minutes: 0, actions: actions.map(fromAPI) };
  return `/?${encodeRun(run, state.info.controls)}&at=${state.scenario.minutes}&mode=${state.difficulty}&shared=1&watch=1`;
}

function drawVerdict(body, whole) {
  const s = body.score;
  const c = body.coach;
  const grade = $("grade");
  grade.replaceChildren();
  if (c) {
    const span = document.createElement("span");
    span.className = "stars";
    span.setAttribute("aria-hidden", "true");
    span.textContent = stars(c.grade.stars);
    grade.append(span, t(`grade.${c.grade.stars}`));
    grade.dataset.stars = String(c.grade.stars);
    // Someone else's run watched to its end (par's, a what-if's) earns
    // the player nothing.
    if (whole && !state.shared) keepStars(state.scenario.name, state.difficulty, c.grade.stars);
    $("score-line").textContent = t("score.line", {
      points: num(s.points, 1),
      par: num(c.grade.par, 1),
      over: `${c.grade.over_par >= 0 ? "+" : "−"}${num(Math.abs(c.grade.over_par), 1)}`,
      runbook: num(c.grade.runbook, 1),
    }) + (c.par.bot === "runbook" ? ` ${t("score.par_runbook")}` : "") +
      // A mystery morning is one of many kinds: beside par and the
      // runbook, what leaving it alone cost on this seed, not how other
      // seeds' mornings went (the percentiles, hidden below).
      (state.scenario.name === "mystery" ? ` ${t("score.nothing_seed", { points: num(c.nothing.score.points, 1) })}` : "") +
      (c.hindsight ? ` ${t("score.hindsight", { points: num(c.hindsight.score.points, 1) })}` : "");
    const watch = $("watch-par");
    watch.href = watchLink(c.par.actions);
    watch.hidden = false;
  } else {
    grade.textContent = whole ? "" : t("grade.so_far");
    delete grade.dataset.stars;
    $("score-line").textContent = t("score.line_so_far", { points: num(s.points, 1) });
    $("watch-par").hidden = true;
  }
  $("failed-note").hidden = !s.failed;
  if (s.failed) {
    $("failed-note").textContent = t("score.failed", { clock: clockOf(s.failed_minute) });
  }
  // The percentiles rank a score among the scenario's 1,000 seeds: on a
  // mystery, among other mornings (a quiet one against a flush), which
  // says nothing about this one.
  const p = state.scenario.name === "mystery" ? null : body.percentiles;
  $("percentiles").hidden = !p;
  if (p) {
    $("percentiles").textContent = t("score.percentiles", {
      nothing: Math.round(p.nothing),
      runbook: Math.round(p.runbook),
      expert: Math.round(p.expert),
    });
  }
}

// fromAPI turns an action of the API (value false/true for a switch, none
// for a button) into the page's.
function fromAPI(a) {
  return a.value === undefined ? { minute: a.minute, control: a.control } : { minute: a.minute, control: a.control, value: a.value };
}

function drawScore(s) {
  const rows = [
    ["budget", `${num(Math.max(0, 100 * s.budget_spent), 2)} %`, s.budget_points],
    ["errors", num(s.errors), s.error_points],
    ["shed", num(s.shed), s.shed_points],
    ["degraded", num(s.degraded), s.degraded_points],
    ["stale", num(s.stale), s.stale_points],
    ["money", `${num(s.cost, 2)} $`, s.money_points],
    ["fragile", num(s.fragile), s.fragile_points],
  ];
  const tbody = $("score-table").tBodies[0];
  tbody.replaceChildren();
  for (const [id, amount, points] of rows) {
    const tr = tbody.insertRow();
    tr.dataset.part = id;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t(`score.part.${id}`);
    tr.append(th);
    tr.insertCell().textContent = amount;
    tr.insertCell().textContent = num(points, 1);
  }
  const tr = tbody.insertRow();
  tr.dataset.part = "total";
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = t("score.part.total");
  tr.append(th, document.createElement("td"));
  tr.insertCell().textContent = num(s.points, 1);
}

// describeAction says an action in words: "Roll back", "Fleet floor set
// to 20".
function describeAction(a) {
  const label = t(`control.${a.control}.label`);
  const spec = controlSpec(a.control);
  if (spec.kind === "press") return t("debrief.pressed", { label });
  if (spec.kind === "bool") return t("debrief.switched", { label, value: t(a.value ? "value.on" : "value.off") });
  const scale = displayScale[a.control] || 1;
  return t("debrief.set", { label, value: `${+(a.value * scale).toFixed(4)} ${displayUnit[a.control] || ""}`.trim() });
}

// whyOf says the moment a what-if chose; "earlier" and "later" by how many
// minutes ("a minute earlier", "3 minutes earlier").
function whyOf(w) {
  if ((w.why === "earlier" || w.why === "later") && w.to >= 0) return tn(`coach.why.${w.why}`, Math.abs(w.to - w.action.minute));
  return t(`coach.why.${w.why}`);
}

function drawWhatIfs(c) {
  const list = $("what-ifs");
  list.replaceChildren();
  $("coach-h").hidden = !c;
  list.hidden = !c;
  if (!c) return;
  if (c.what_ifs.length === 0) {
    const li = document.createElement("li");
    li.textContent = t("coach.none");
    list.append(li);
    return;
  }
  // No what-if keeps more of the budget than the run had to lose: at most
  // what it started with, whatever the server sends.
  const start = last.body.debrief.budget_start;
  for (const w of c.what_ifs) {
    const li = document.createElement("li");
    li.dataset.kind = w.kind;
    const kept = Math.min(Math.max(0, w.budget_gain), start);
    const vars = {
      action: describeAction(fromAPI(w.action)),
      from: clockOf(w.action.minute),
      clock: w.clock || "",
      why: whyOf(w),
      points: num(w.gain, 1),
      budget: num(100 * kept, 1),
    };
    const withBudget = kept >= 0.0005 ? "_budget" : "";
    li.append(t(`coach.${w.kind}${withBudget}`, vars));
    // What on screen called for the move.
    if (w.sign && w.sign.kind !== "briefing") {
      const value = w.sign.kind === "requests" ? num(w.sign.value, 0) : num(100 * w.sign.value, 0);
      li.append(` (${t(`coach.sign.${w.sign.kind}`, { clock: w.sign.clock, value })})`);
    }
    const a = document.createElement("a");
    a.href = watchLink(w.actions);
    a.target = "_blank";
    // "Watch it", and for screen readers which: the visible words begin
    // the link's name.
    const which = document.createElement("span");
    which.className = "sr-only";
    which.textContent = ` (${t("coach.watch_label", { n: list.children.length + 1 })})`;
    a.append(t("coach.watch"), which);
    li.append(" ", a);
    list.append(li);
  }
}

// The figures that fit the scenario: no bad build where there is none,
// nor in the realistic mode before the end.
function figuresOf(d, name, whole) {
  const pages = d.pages.map((p) => `${clockOf(p.from)}–${clockOf(p.to)}`).join(", ") || t("debrief.none");
  const all = [
    ["budget_left", t("debrief.value.budget", { left: pct(d.budget_left, 1), start: pct(d.budget_start, 0) })],
    ["worst_burn_1h", t("debrief.value.burn", { burn: d.worst_burn_1h.toFixed(1), clock: clockOf(d.worst_burn_1h_minute) })],
    ["worst_burn", t("debrief.value.burn", { burn: d.worst_burn.toFixed(1), clock: clockOf(d.worst_burn_minute) })],
    ["minutes_over_slo", tn("debrief.value.minutes", d.minutes_over_slo)],
    ["minutes_p99_over_1s", tn("debrief.value.minutes", d.minutes_p99_over_1s)],
    ["paged", tn("debrief.value.paged", d.paged_minutes, { pages })],
    ["total_cost", `${d.total_cost.toFixed(2)} $`],
    ["mean_age", t("debrief.value.age", { age: d.mean_age_s.toFixed(1), answers: Math.round(d.cached_answers).toLocaleString("en") })],
    ["shed", tn("debrief.value.shed", Math.round(d.shed_requests), { n: Math.round(d.shed_requests).toLocaleString("en"), share: (100 * d.shed_share).toFixed(1) })],
    ["no_recommendations", tn("debrief.value.minutes", d.minutes_without_recommendations)],
    ["bad_build", tn("debrief.value.minutes", d.bad_build_minutes)],
  ];
  return all.filter(([id]) => id !== "bad_build" || (name === "bad-deploy" && !hidden(whole)));
}

function drawFigures(d, name, whole) {
  const dl = $("debrief-figures");
  dl.replaceChildren();
  for (const [id, text] of figuresOf(d, name, whole)) {
    const div = document.createElement("div");
    div.dataset.figure = id;
    const dt = document.createElement("dt");
    dt.textContent = t(`debrief.${id}`);
    const dd = document.createElement("dd");
    dd.textContent = text;
    div.append(dt, dd);
    dl.append(div);
  }
}

// drawReveal tells what the scenario kept secret once the run is over:
// the surge's size and time, and in the realistic mode what the dashboard
// hid. Before the end it tells nothing: the game goes on.
function drawReveal(body, d, name, whole) {
  const parts = [];
  // The surge's figures; on a mystery morning, after the sentence that
  // names the surge as one of its incidents.
  const surge = whole && body.surge
    ? t("debrief.surge", { clock: clockOf(body.surge.start_minute), peak: body.surge.peak.toFixed(1), ramp: body.surge.ramp_minutes.toFixed(0), plateau: body.surge.plateau_minutes.toFixed(0) })
    : "";
  if (surge && !body.incidents) parts.push(surge);
  if (whole && state.difficulty === "realistic" && name === "bad-deploy") {
    const first = last.frames.find((f) => f.bad_build_share > 0);
    if (first) parts.push(tn("debrief.reveal.bad_build", d.bad_build_minutes, { clock: first.clock }));
  }
  if (whole && state.difficulty === "realistic" && name === "cache-flush") {
    parts.push(t("debrief.reveal.warm"));
  }
  if (whole && body.incidents) {
    // One sentence an incident — numbered when there are two — and the
    // surge's figures after the sentence that names it.
    const n = body.incidents.length;
    if (n === 0) parts.push(t("debrief.incident.none"));
    body.incidents.forEach((i, k) => {
      const s = i.shown;
      const value = s.kind === "requests" ? num(s.value, 0) : num(100 * s.value, 0);
      const vars = { incident: t(`incident.${i.incident}`), clock: s.clock, minute: s.minute, sign: t(`coach.sign.${s.kind}`, { clock: s.clock, value }), n: k + 1, count: n };
      parts.push(t(n > 1 ? "debrief.incident.nth" : "debrief.incident", vars));
      if (i.incident === "surge" && surge) parts.push(surge);
    });
    // A healthy deploy is the morning's decoy: the lesson is that its
    // marker alone called for nothing.
    const m = body.morning;
    if (m && m.deploy_minute >= 0 && !(m.build_errors > 0)) {
      parts.push(t("debrief.healthy_deploy", { clock: clockOf(m.deploy_minute) }));
    }
  }
  $("debrief-reveal").hidden = parts.length === 0;
  $("debrief-reveal").textContent = parts.join(" ");
}

// The timeline chart of each scenario: what its incident is about.
const timelineSeries = {
  "bad-deploy": [
    { key: "bad_build_share", label: "debrief.series.bad_build", scale: "pct", map: (v) => 100 * v, digits: 0 },
    { key: "paged", label: "debrief.series.paged", scale: "pct", map: (v) => (v ? 100 : 0), digits: 0, stepped: true },
    { key: "burn_1h", label: "debrief.series.burn_1h", scale: "y", unit: "×", digits: 1 },
  ],
  "cache-flush": [
    { key: "cache_hit", label: "debrief.series.cache_hit", scale: "pct", map: (v) => 100 * v, digits: 0 },
    { key: "cache_warm", label: "debrief.series.cache_warm", scale: "pct", map: (v) => 100 * v, digits: 0 },
    { key: "db_utilization", label: "debrief.series.db", scale: "pct", map: (v) => 100 * v, digits: 0 },
    { key: "paged", label: "debrief.series.paged", scale: "pct", map: (v) => (v ? 100 : 0), digits: 0, stepped: true },
  ],
  surge: [
    { key: "requests_per_s", label: "debrief.series.requests", scale: "y", unit: "unit.req_s", digits: 0 },
    { key: "paged", label: "debrief.series.paged", scale: "pct", map: (v) => (v ? 100 : 0), digits: 0, stepped: true },
  ],
  steady: [
    { key: "fleet_cost_per_h", label: "debrief.series.fleet_cost", scale: "y", unit: "unit.usd_h", digits: 2 },
    { key: "paged", label: "debrief.series.paged", scale: "pct", map: (v) => (v ? 100 : 0), digits: 0, stepped: true },
  ],
};

function describeMoment(m) {
  const context = state.scenario.name === "bad-deploy" && !hidden(last.whole)
    ? t("debrief.context", { bad: Math.round(100 * m.bad_build_share), burn: m.burn_1h.toFixed(1) })
    : t("debrief.context_burn", { burn: m.burn_1h.toFixed(1) });
  if (m.kind === "page") return `${t("debrief.kind.page")} (${context})`;
  if (m.kind === "page_end") return t("debrief.kind.page_end");
  return `${describeAction(m.action)} (${context}${m.paged ? `, ${t("debrief.while_paged")}` : ""})`;
}

function drawTimeline(d, name, whole) {
  const list = $("timeline");
  list.replaceChildren();
  for (const m of d.timeline) {
    const li = document.createElement("li");
    li.className = `kind-${m.kind}`;
    li.textContent = `${m.clock} — ${describeMoment(m)}`;
    list.append(li);
  }
  if (d.timeline.length === 0) {
    const li = document.createElement("li");
    li.textContent = t("debrief.quiet");
    list.append(li);
  }
  // Before the end of a realistic run, the chart keeps the dashboard's
  // secrets: no bad build, no warmth of the cache.
  const secret = hidden(whole) ? ["bad_build_share", "cache_warm"] : [];
  const series = (timelineSeries[name] || timelineSeries.steady)
    .filter((s) => !secret.includes(s.key))
    .map((s) => ({ ...s, label: t(s.label), ...(s.unit?.startsWith("unit.") ? { unit: t(s.unit) } : {}) }));
  $("timeline-cap").textContent = t("debrief.timeline_caption", { series: series.map((s) => s.label).join(", ") });
  // Only the minutes played: a run lost before its end stops there.
  timelineChart($("timeline-chart"), last.frames, series, d.timeline.filter((m) => m.kind === "action").map((m) => m.minute), clockOf);
}

function setup() {
  $("again").addEventListener("click", () => playAgain());
  $("debrief-new").addEventListener("click", newGame);
}

export const page = { id: "debrief", heading: "debrief-h", setup, render, relabel: draw, leave };
