// The overload lab: the seed's two games played period by period
// (GET /api/overload/game), its experiments on the real bulkhead in
// virtual time (POST /api/overload/compare), and the live HTTP comparison
// on demand (POST, then GET /api/overload/live). Every chart has a data
// table; every message is in the catalogues.
import { t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

// Okabe–Ito colours, with dashes so that the charts read without colour;
// first tries are the article's blue, and retries the same blue dotted
// (they arrive too); late answers are the answers' green, dotted; wasted
// work is the seed's dark grey, filled; concurrency, the signal nobody
// watched, is black and thicker.
const seriesDefs = [
  { key: "first_tries", colour: "#0072b2", dash: [] },
  { key: "retries", colour: "#0072b2", dash: [1, 3], width: 2 },
  { key: "responses", colour: "#009e73", dash: [6, 4] },
  { key: "late", colour: "#009e73", dash: [1, 3], width: 2 },
  { key: "timeouts", colour: "#e69f00", dash: [2, 3] },
  { key: "wasted", colour: "#4d4d4d", dash: [], fill: "rgba(77, 77, 77, 0.35)" },
  { key: "rejected", colour: "#d55e00", dash: [10, 3, 2, 3] },
  { key: "refused", colour: "#cc79a7", dash: [4, 4], database: true },
  { key: "other_errors", colour: "#56b4e9", dash: [8, 2], database: true },
  { key: "concurrency", colour: "#000000", dash: [], width: 2, scale: "c" },
];
const modeColours = ["#000000", "#0072b2", "#009e73", "#d55e00"];
const modeDashes = [[2, 3], [], [6, 4], [10, 3, 2, 3]];

// legendAtEnd makes a chart's legend show its last values while the
// cursor is off the chart — uPlot shows "—" there until a hover, which
// told a reader nothing (and a keyboard or touch reader never hovers).
const legendAtEnd = {
  ready: [(u) => u.setLegend({ idx: u.data[0].length - 1 })],
  setCursor: [(u) => {
    if (u.cursor.idx == null) u.setLegend({ idx: u.data[0].length - 1 });
  }],
};

const gamePeriods = 24; // the page plays this many periods of a game

let last = null; // the last comparison, to redraw in another language
let lastLive = null; // the last live state, likewise
let patience = {}; // each profile's range of the most patient client's wait, from /api/scenarios
let game = null; // the game being played
let gameShown = 0; // periods of it on the grid
let gameTimer = 0;
const statuses = {}; // element id → [key, params] of its message, likewise
let plots = []; // the comparison's charts
let livePlots = []; // the live comparison's
let polling = 0;

// postJSON sends a body to the API as JSON (the only kind of POST the
// console takes).
function postJSON(body) {
  return { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
}

async function getJSON(url, opts) {
  for (let busy = 0; ; ) {
    const res = await fetch(url, opts);
    const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    // 503 + Retry-After: the console is computing another comparison, or
    // is busy; wait as told, a few times, before giving up.
    if (res.status === 503 && res.headers.get("Retry-After") && ++busy <= 30) {
      await new Promise((done) => setTimeout(done, 1000 * Number(res.headers.get("Retry-After"))));
      continue;
    }
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    // 202: still computing; ask again after Retry-After (the server stops
    // a computation nobody asks about for a few seconds).
    if (res.status !== 202 || !body.computing) return body;
    await new Promise((done) => setTimeout(done, 1000 * Number(res.headers.get("Retry-After") || 1)));
  }
}

// clockOf writes a time of a run as h:mm for runs of an hour or more and
// as m:ss otherwise, the same way on every tick of an axis.
function clockOf(seconds, long) {
  const s = Math.round(seconds);
  if (long) return `${Math.floor(s / 3600)}:${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

// Axis steps in seconds: whole minutes and hours once the run is long.
const timeSteps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];

// say shows a status message and remembers it, so that a change of
// language can say it again; an empty key clears it.
function say(id, key, params) {
  statuses[id] = key ? [key, params] : null;
  $(id).textContent = key ? t(key, params) : "";
}

const num = (v) => Math.round(v).toLocaleString("en");
const pct = (v) => `${(100 * v).toFixed(1)} %`;
const pct0 = (v) => `${Math.round(100 * v)} %`;

// setupLab fills the profile picker and wires the controls; called once
// with the scenarios' answer.
export function setupLab(profiles, patienceRanges) {
  patience = patienceRanges;
  const sel = $("lab-profile");
  sel.replaceChildren();
  for (const p of profiles) {
    const o = document.createElement("option");
    o.value = p;
    sel.append(o);
  }
  sel.value = "worldcup";
  nameProfiles();
  sel.addEventListener("change", () => {
    // The limits and the clients are the profile's until the user sets them.
    for (const id of ["lab-inside", "lab-outside", "lab-retries", "lab-patience"]) $(id).value = "";
  });
  $("lab-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runCompare();
  });
  $("live-run").addEventListener("click", startLive);
  $("game-pick").addEventListener("change", () => loadGame());
  $("game-step").addEventListener("click", () => {
    stopPlaying();
    stepGame();
  });
  $("game-play").addEventListener("click", () => (gameTimer ? stopPlaying() : play()));
  $("game-reset").addEventListener("click", () => {
    stopPlaying();
    gameShown = 0;
    drawGame();
  });
}

function nameProfiles() {
  for (const o of $("lab-profile").options) o.textContent = t(`lab.profile_name.${o.value}`);
}

// renderLab shows the lab view: the game at its start and the default
// comparison, the first time; the live comparison's last state.
export async function renderLab() {
  if (!game) loadGame();
  else drawGame();
  if (!last) await runCompare();
  else drawCompare(last);
  pollLive(true);
}

// leaveLab stops what runs while the lab is shown: the game's animation
// and the live comparison's polling.
export function leaveLab() {
  stopPlaying();
  clearTimeout(polling);
}

// relabelLab redraws the lab in the current language.
export function relabelLab() {
  nameProfiles();
  $("game-play").textContent = t(gameTimer ? "lab.games.pause" : "lab.games.play");
  // Messages are said again even while the lab is hidden: renderLab
  // redraws the charts on the way back, but not what was said.
  for (const [id, msg] of Object.entries(statuses)) {
    if (msg) $(id).textContent = t(msg[0], msg[1]);
  }
  if ($("lab").hidden) return;
  if (game) drawGame();
  if (last) drawCompare(last);
  if (lastLive) drawLive(lastLive);
}

// ---- The games ----

// gameLoads counts loadGame's calls, so that only the latest one draws.
let gameLoads = 0;

// loadGame fetches the chosen game and shows it at its start. While it
// loads the grid is busy and its buttons are off: a step taken on the old
// game would be lost when the new one arrives.
async function loadGame() {
  stopPlaying();
  const mine = ++gameLoads;
  const buttons = ["game-step", "game-play", "game-reset"].map((id) => $(id));
  $("game-grid").setAttribute("aria-busy", "true");
  for (const b of buttons) b.disabled = true;
  let g = null;
  try {
    g = await getJSON(`/api/overload/game?game=${encodeURIComponent($("game-pick").value)}&periods=${gamePeriods}`);
  } catch (err) {
    if (mine === gameLoads) say("game-status", "error.api", { message: err.message });
  }
  if (mine !== gameLoads) return; // a later choice is loading
  $("game-grid").removeAttribute("aria-busy");
  for (const b of buttons) b.disabled = false;
  if (!g) return;
  game = g;
  gameShown = 0;
  drawGame(); // after the buttons: it turns step off at the game's end
}

function stepGame() {
  if (!game || gameShown >= game.periods.length) return;
  gameShown++;
  drawGame();
}

function play() {
  if (!game) return;
  if (gameShown >= game.periods.length) gameShown = 0;
  gameTimer = setInterval(() => {
    if ($("lab").hidden || gameShown >= game.periods.length) return stopPlaying();
    stepGame();
  }, 1000);
  $("game-play").textContent = t("lab.games.pause");
}

function stopPlaying() {
  clearInterval(gameTimer);
  gameTimer = 0;
  $("game-play").textContent = t("lab.games.play");
}

// cellText is what a cell of the grid says: the work left at the period's
// end, or what happened to the request.
function cellText(c) {
  if (c.state === "work") return c.left.toFixed(2);
  return t(`lab.cell.${c.state}`);
}

function drawGame() {
  const g = game;
  $("game-rules").textContent = t(`lab.games.rules.${g.name}`);
  $("game-caption").textContent = t("lab.games.caption", { game: t(`lab.game.${g.name}`), period: gameShown });
  const table = $("game-grid");
  const head = document.createElement("tr");
  const corner = document.createElement("th");
  corner.scope = "col";
  corner.textContent = t("lab.games.request");
  head.append(corner);
  for (let p = 1; p <= gameShown; p++) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = t("lab.games.period_short", { period: p });
    head.append(th);
  }
  const took = document.createElement("th");
  took.scope = "col";
  took.textContent = t("lab.games.took");
  head.append(took);
  table.tHead.replaceChildren(head);

  const body = table.tBodies[0];
  body.replaceChildren();
  g.requests.forEach((r, i) => {
    if (r.arrived > gameShown) return;
    const tr = body.insertRow();
    tr.dataset.request = i + 1;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t("lab.games.request_n", { n: i + 1 });
    tr.append(th);
    for (let p = 1; p <= gameShown; p++) {
      const td = tr.insertCell();
      td.dataset.period = p;
      const c = r.cells[p - r.arrived];
      if (p < r.arrived || !c) continue;
      td.className = c.state + (p === gameShown ? " now" : "");
      td.textContent = cellText(c);
    }
    const seen = r.cells[Math.min(r.cells.length, gameShown - r.arrived + 1) - 1];
    tr.insertCell().textContent = seen && seen.state === "done" ? String(r.took) : "";
  });

  const foot = table.tFoot || table.createTFoot();
  foot.replaceChildren();
  for (const [key, field] of [["lab.games.inside", "inside"], ["lab.games.waiting", "waiting"], ["lab.games.in_system", "in_system"]]) {
    if (field === "waiting" && !g.inside) continue;
    const tr = foot.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t(key);
    tr.append(th);
    for (let p = 1; p <= gameShown; p++) tr.insertCell().textContent = String(g.periods[p - 1][field]);
    tr.insertCell();
  }

  $("game-step").disabled = gameShown >= g.periods.length;
  if (gameShown === 0) say("game-status", "lab.games.start");
  else narrate(g, gameShown);
}

// narrate says what happened in a period, in words.
function narrate(g, p) {
  const col = g.periods[p - 1];
  const parts = [t(g.inside ? "lab.games.period_bouncer" : "lab.games.period", { period: p, inside: col.inside, waiting: col.waiting })];
  g.requests.forEach((r, i) => {
    const c = r.cells[p - r.arrived];
    if (!c) return;
    if (c.state === "done") parts.push(t("lab.games.leaves", { n: i + 1, took: r.took }));
    if (c.state === "away") parts.push(t("lab.games.away", { n: i + 1 }));
  });
  statuses["game-status"] = null;
  $("game-status").textContent = parts.join(" ");
}

// ---- The experiment ----

// params reads the form; null (with a message) if a field is out of range.
function params() {
  const body = { profile: $("lab-profile").value };
  const fields = [
    ["seed", "lab-seed", 0, 4294967295],
    ["inside", "lab-inside", 1, 65535],
    ["outside", "lab-outside", 1, 65535],
    ["retries", "lab-retries", 0, 10],
  ];
  const range = patience[body.profile];
  if (range) fields.push(["max_patience_s", "lab-patience", range.min, range.max]);
  for (const [name, id, lo, hi] of fields) {
    const raw = $(id).value.trim();
    if (raw === "") continue; // the default
    const v = Number(raw);
    if (!Number.isInteger(v) || v < lo || v > hi) {
      say("lab-status", "lab.field_error", { field: $(id).labels[0].textContent, lo, hi });
      $(id).focus();
      return null;
    }
    body[name] = v;
  }
  body.alpha = Number($("lab-slowdown").value);
  return body;
}

async function runCompare() {
  const body = params();
  if (!body) return;
  say("lab-status", "lab.computing");
  $("lab-run").disabled = true;
  try {
    last = await getJSON("/api/overload/compare", postJSON(body));
    // Show what ran: the defaults the server filled in.
    $("lab-inside").value = last.inside;
    $("lab-outside").value = last.outside;
    $("lab-retries").value = last.retries;
    $("lab-patience").value = last.max_patience_s;
    drawCompare(last);
    say("lab-status", "lab.done");
  } catch (err) {
    say("lab-status", "error.api", { message: err.message });
  } finally {
    $("lab-run").disabled = false;
  }
}

function runName(r) {
  switch (r.kind) {
    case "none":
      return t("lab.run.none");
    case "adaptive":
      return t("lab.run.adaptive", { inside: r.inside });
    case "threads":
      return t("lab.run.threads", { n: r.threads });
  }
  return `${r.inside}/${r.outside}`;
}

const isDatabase = (c) => c.conns > 0;

// summaryColumns are the summary table's columns for a comparison.
function summaryColumns(c) {
  const s = (f) => (r) => f(r.summary);
  if (isDatabase(c)) {
    return [
      ["lab.col.goodput", s((x) => pct(x.goodput))],
      ["lab.col.refused", s((x) => num(x.rejected))],
      ["lab.col.no_connection", s((x) => num(x.refused))],
      ["lab.col.other_errors", s((x) => pct(x.other_error_rate))],
      ["lab.col.other_worst", s((x) => pct0(x.other_worst_second))],
      ["lab.col.worst", s((x) => `${x.worst_response_x.toFixed(2)} ×`)],
      ["lab.col.peak_connections", s((x) => num(x.peak_concurrency))],
    ];
  }
  return [
    ["lab.col.goodput", s((x) => pct(x.goodput))],
    ["lab.col.refused", s((x) => num(x.rejected))],
    ["lab.col.timeouts", s((x) => num(x.timeouts))],
    ["lab.col.retries", s((x) => num(x.retries))],
    ["lab.col.wasted", s((x) => pct(x.wasted_share))],
    ["lab.col.worst", s((x) => `${x.worst_response_x.toFixed(2)} ×`)],
    ["lab.col.peak", s((x) => num(x.peak_concurrency))],
    ["lab.col.after", s((x) => (x.peak ? pct0(x.useful_after_peak) : "—"))],
    ["lab.col.recovery", s((x) => (x.peak ? (x.recovery_s >= 0 ? `${x.recovery_s} s` : t("lab.never")) : "—"))],
  ];
}

// patienceText says how long the clients wait: all alike, or spread from
// the profile's timeout to the most patient's wait, in whole minutes when
// it is some.
function patienceText(c) {
  const max = c.max_patience_s;
  if (!(max > c.timeout_s)) return t("lab.patience.fixed", { timeout: c.timeout_s });
  if (max >= 120 && max % 60 === 0) return t("lab.patience.spread", { min: c.timeout_s, max: max / 60 });
  return t("lab.patience.spread_s", { min: c.timeout_s, max });
}

function drawCompare(c) {
  const long = c.duration_s >= 3600;
  $("lab-profile-intro").textContent = t(`lab.intro.${c.profile}`);
  $("lab-profile-desc").textContent = t("lab.params", {
    inside: c.inside,
    outside: c.outside,
    slowdown: slowdownText(c.alpha),
    retries: c.retries,
    patience: patienceText(c),
    seed: c.seed,
  });
  $("lab-lesson").textContent = t(`lab.lesson.${c.profile}`);
  $("lab-conclusion").textContent = conclusion(c, long);

  $("lab-summary-cap").textContent = t("lab.summary_caption", { n: c.runs.length });
  const cols = summaryColumns(c);
  const head = document.createElement("tr");
  for (const key of ["lab.col.run", ...cols.map((col) => col[0])]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = t(key);
    head.append(th);
  }
  $("lab-summary").tHead.replaceChildren(head);
  const tbody = $("lab-summary").tBodies[0];
  tbody.replaceChildren();
  for (const r of c.runs) {
    const tr = tbody.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = runName(r);
    tr.append(th);
    for (const [, f] of cols) tr.insertCell().textContent = f(r);
  }

  drawHypothesis(c);

  for (const p of plots) p.destroy();
  plots = [];
  drawRuns(c, long);
  drawLittle(c, long);
}

// slowdownText names a server's slowdown above its knee.
const slowdownText = (alpha) => t(alpha > 0 ? "lab.slowdown.nonlinear_is" : "lab.slowdown.linear_is", { alpha });

// drawHypothesis shows, for a profile whose clients try again (the World
// Cup), afloat's hypothesis for the death the article shows, and beside it
// the runs that test it: the day without a limit as compared, then without
// retries on the linear server and on the non-linear one.
function drawHypothesis(c) {
  const box = $("lab-hypothesis");
  const variants = c.variants || [];
  box.hidden = variants.length === 0;
  if (box.hidden) return;
  const nonLinear = variants.find((v) => v.alpha > 0);
  $("lab-hypothesis-text").textContent = t("lab.hypothesis.text", { alpha: nonLinear ? nonLinear.alpha : 0.5 });
  const head = document.createElement("tr");
  for (const key of ["lab.col.run", "lab.col.after", "lab.col.wasted_after", "lab.col.peak", "lab.col.recovery"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = t(key);
    head.append(th);
  }
  $("lab-hypothesis-table").tHead.replaceChildren(head);
  const rows = [
    [t("lab.hypothesis.row.compared", { retries: c.retries, slowdown: slowdownText(c.alpha) }), c.runs[0].summary],
    ...variants.map((v) => [t(v.alpha > 0 ? "lab.hypothesis.row.nonlinear" : "lab.hypothesis.row.linear", { alpha: v.alpha }), v.summary]),
  ];
  const tbody = $("lab-hypothesis-table").tBodies[0];
  tbody.replaceChildren();
  for (const [name, x] of rows) {
    const tr = tbody.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = name;
    tr.append(th);
    for (const v of [pct0(x.useful_after_peak), pct0(x.wasted_after_peak), num(x.peak_concurrency), x.recovery_s >= 0 ? `${x.recovery_s} s` : t("lab.never")]) {
      tr.insertCell().textContent = v;
    }
  }
}

// conclusion is the comparison in one line, from its figures.
function conclusion(c, long) {
  const none = c.runs[0].summary;
  if (isDatabase(c)) {
    const fixed = c.runs[c.runs.length - 1].summary;
    return t("lab.conclusion.database", {
      conns: c.conns,
      refused: num(none.refused),
      other: pct0(none.other_worst_second),
      threads: c.threads,
      bulkhead: runName(c.runs[c.runs.length - 1]),
      fixed: pct0(fixed.other_worst_second),
    });
  }
  const first = c.runs[1].summary;
  if (!none.peak) {
    return t("lab.conclusion.flat", { none: pct(none.goodput), run: runName(c.runs[1]), goodput: pct(first.goodput), worst: first.worst_response_x.toFixed(2) });
  }
  return t(none.recovery_s >= 0 ? "lab.conclusion.recovers" : "lab.conclusion.dies", {
    useful: pct0(none.useful_after_peak),
    wasted: pct0(none.wasted_after_peak),
    peak: num(none.peak_concurrency),
    at: clockOf(none.peak_at_s, long),
    load: clockOf(none.load_peak_at_s, long),
    recovery: none.recovery_s,
    run: runName(c.runs[1]),
    worst: first.worst_response_x.toFixed(2),
    goodput: pct(first.goodput),
  });
}

// figure makes a chart's figure: caption, canvas, and a data table behind
// a disclosure, built when opened.
function figure(root, id, caption, table) {
  const fig = document.createElement("figure");
  fig.className = "chart";
  fig.id = id;
  const cap = document.createElement("figcaption");
  cap.id = `${id}-cap`;
  cap.textContent = caption;
  fig.setAttribute("aria-labelledby", cap.id);
  const canvas = document.createElement("div");
  canvas.setAttribute("aria-hidden", "true");
  const details = document.createElement("details");
  details.className = "data";
  const summary = document.createElement("summary");
  summary.textContent = t("chart.table");
  details.append(summary);
  details.addEventListener("toggle", () => {
    if (details.open && !details.querySelector("table")) details.append(dataTable(table(), caption));
  });
  fig.append(cap, canvas, details);
  root.append(fig);
  return canvas;
}

// dataTable is a chart's figures as a table, in a scroll region a
// keyboard can reach.
function dataTable({ head, rows }, label) {
  const table = document.createElement("table");
  const tr = table.createTHead().insertRow();
  for (const h of head) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    tr.append(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const r = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = row[0];
    r.append(th);
    for (const v of row.slice(1)) r.insertCell().textContent = v;
  }
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", t("lab.table_of", { chart: label }));
  wrap.append(table);
  return wrap;
}

function drawRuns(c, long) {
  const defs = seriesDefs.filter((s) => !s.database || isDatabase(c));
  // Every chart on the same scales, so that the runs compare at a glance.
  let rate = 1;
  let conc = 10;
  for (const r of c.runs) {
    for (const p of r.series) {
      for (const s of defs) if (s.scale !== "c") rate = Math.max(rate, p[s.key]);
      conc = Math.max(conc, p.concurrency);
    }
  }
  const root = $("lab-charts");
  root.replaceChildren();
  c.runs.forEach((r, i) => {
    const caption = t(isDatabase(c) ? "lab.chart.database" : "lab.chart", { run: runName(r), step: c.step });
    const table = () => ({
      head: [t("lab.axis.time"), ...defs.map((s) => t(`lab.series.${s.key}`))],
      rows: r.series.map((p) => [clockOf(p.t, long), ...defs.map((s) => p[s.key].toFixed(s.scale === "c" ? 0 : 1))]),
    });
    const el = figure(root, `lab-chart-${i}`, caption, table);
    const xs = r.series.map((p) => p.t);
    const cols = defs.map((s) => r.series.map((p) => (s.scale === "c" ? Math.max(1, p[s.key]) : p[s.key])));
    plots.push(
      new uPlot(
        {
          width: Math.max(300, (el.parentElement.clientWidth || 600) - 20),
          height: 230,
          scales: {
            x: { time: false },
            y: { range: [0, Math.ceil(rate * 1.05)] },
            c: { distr: 3, log: 10, range: [1, 10 ** Math.ceil(Math.log10(conc))] },
          },
          axes: [
            { incrs: timeSteps, values: (u, splits) => splits.map((v) => clockOf(v, long)) },
            { scale: "y", label: t("lab.axis.rate"), size: 56 },
            { scale: "c", side: 1, label: t(isDatabase(c) ? "lab.axis.connections" : "lab.axis.concurrency"), grid: { show: false }, size: 60 },
          ],
          series: [
            { label: t("lab.axis.time"), value: (u, v) => (v == null ? "—" : clockOf(v, long)) },
            ...defs.map((s) => ({
              label: t(`lab.series.${s.key}`),
              scale: s.scale || "y",
              stroke: s.colour,
              fill: s.fill,
              dash: s.dash,
              width: s.width || 1.5,
              points: { show: false },
              value: (u, v) => (v == null ? "—" : v.toFixed(s.scale === "c" ? 0 : 1)),
            })),
          ],
          hooks: legendAtEnd,
        },
        [xs, ...cols],
        el,
      ),
    );
  });
}

// cumulative returns the requests that arrived and that left, summed to
// the end of each point of a run's series, and the point's end time.
function cumulative(r, c) {
  const ends = [];
  const arrived = [];
  const left = [];
  let a = 0;
  let d = 0;
  r.series.forEach((p, i) => {
    const end = i + 1 < r.series.length ? r.series[i + 1].t : c.duration_s;
    const n = end - p.t;
    a += (p.arrivals + p.other_arrivals) * n;
    d += p.departures * n;
    ends.push(end);
    arrived.push(Math.round(a));
    left.push(Math.round(d));
  });
  return { ends, arrived, left };
}

// drawLittle draws Little's law for the unprotected run and the first
// protected one: requests arrived and left, summed over the run. At a
// moment (the end of the largest peak, or the most crowded point) the
// vertical gap between the curves is the requests inside, the horizontal
// one the time the last of them spends inside.
function drawLittle(c, long) {
  const root = $("lab-little");
  root.replaceChildren();
  const picks = isDatabase(c) ? [0, c.runs.length - 1] : [0, 1];
  const none = cumulative(c.runs[0], c);
  let at = none.ends.findIndex((e) => e > c.peak_end_s);
  if (!(c.peak_end_s > 0) || at < 0) {
    at = 0;
    none.arrived.forEach((v, i) => {
      if (v - none.left[i] > none.arrived[at] - none.left[at]) at = i;
    });
  }
  for (const i of picks) {
    const r = c.runs[i];
    const cum = cumulative(r, c);
    const inside = cum.arrived[at] - cum.left[at];
    const out = cum.left.findIndex((v) => v >= cum.arrived[at]);
    const gap = out >= 0 ? cum.ends[out] - cum.ends[at] : -1;
    const caption = t("lab.little.chart", { run: runName(r) });
    const note = t(gap >= 0 ? "lab.little.gaps" : "lab.little.gaps_never", {
      time: clockOf(cum.ends[at], long),
      inside: num(inside),
      leave: gap >= 0 ? clockOf(cum.ends[out], long) : "",
      wait: gap >= 0 ? clockOf(gap, gap >= 3600) : "",
    });
    const table = () => ({
      head: [t("lab.axis.time"), t("lab.little.arrived"), t("lab.little.left"), t("lab.little.inside")],
      rows: cum.ends.map((e, k) => [clockOf(e, long), num(cum.arrived[k]), num(cum.left[k]), num(cum.arrived[k] - cum.left[k])]),
    });
    const el = figure(root, `lab-little-${i}`, caption, table);
    const p = document.createElement("p");
    p.className = "help little-note";
    p.textContent = note;
    el.after(p);
    const draw = (u) => {
      const ctx = u.ctx;
      const x0 = u.valToPos(cum.ends[at], "x", true);
      const yA = u.valToPos(cum.arrived[at], "y", true);
      const yD = u.valToPos(cum.left[at], "y", true);
      ctx.save();
      ctx.lineWidth = 3 * devicePixelRatio;
      ctx.strokeStyle = "#d55e00";
      ctx.beginPath();
      ctx.moveTo(x0, yA);
      ctx.lineTo(x0, yD);
      ctx.stroke();
      if (gap >= 0) {
        ctx.strokeStyle = "#cc79a7";
        ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
        ctx.beginPath();
        ctx.moveTo(x0, yA);
        ctx.lineTo(u.valToPos(cum.ends[out], "x", true), yA);
        ctx.stroke();
      }
      ctx.restore();
    };
    plots.push(
      new uPlot(
        {
          width: Math.max(300, (el.parentElement.clientWidth || 600) - 20),
          height: 230,
          scales: { x: { time: false }, y: { range: [0, Math.max(10, cum.arrived.at(-1)) * 1.05] } },
          axes: [
            { incrs: timeSteps, values: (u, splits) => splits.map((v) => clockOf(v, long)) },
            { scale: "y", label: t("lab.little.axis"), size: 70, values: (u, splits) => splits.map((v) => num(v)) },
          ],
          series: [
            { label: t("lab.axis.time"), value: (u, v) => (v == null ? "—" : clockOf(v, long)) },
            { label: t("lab.little.arrived"), stroke: "#0072b2", width: 2, points: { show: false }, value: (u, v) => (v == null ? "—" : num(v)) },
            { label: t("lab.little.left"), stroke: "#009e73", dash: [6, 4], width: 2, points: { show: false }, value: (u, v) => (v == null ? "—" : num(v)) },
          ],
          hooks: { ...legendAtEnd, draw: [draw] },
        },
        [cum.ends, cum.arrived, cum.left],
        el,
      ),
    );
  }
}

// ---- The live comparison ----

async function startLive() {
  try {
    await getJSON("/api/overload/live", postJSON({}));
  } catch (err) {
    say("live-status", "error.api", { message: err.message });
  }
  pollLive(false);
}

// pollLive follows a live comparison until it ends; once shows the last one.
async function pollLive(once) {
  clearTimeout(polling);
  let st;
  try {
    st = await getJSON("/api/overload/live");
  } catch (err) {
    say("live-status", "error.api", { message: err.message });
    return;
  }
  $("live-run").disabled = st.running;
  if (st.running) {
    const step = st.step;
    if (!step) say("live-status", "lab.live.starting");
    else if (step.what === "running") say("live-status", "lab.live.step.running", { mode: modeName(step.mode) });
    else say("live-status", "lab.live.step.calibrating", { mode: modeName(step.mode), attempt: step.attempt, attempts: step.attempts });
    if (!$("lab").hidden) polling = setTimeout(() => pollLive(false), 1000);
    return;
  }
  if (st.error) say("live-status", "error.api", { message: st.error });
  else if (st.report) say("live-status", st.report.reliable ? "lab.live.done" : "lab.live.too_busy");
  else if (once) say("live-status", "");
  if (st.report) {
    lastLive = st.report;
    drawLive(st.report);
  }
}

function ms(ns) {
  return `${(ns / 1e6).toFixed(1)} ms`;
}

// modeName is a protection's name, in the user's language.
const modeName = (mode) => t(`lab.live.mode.${mode}`);

// phaseName names a phase of the live comparison by its load: "3×
// capacity", and "0.5× after 3×" for a calm phase after an overload.
function phaseName(phases, i) {
  const p = phases[i];
  const before = i > 0 ? phases[i - 1] : null;
  if (before && before.load > 1 && p.load <= 1) return t("lab.live.phase_after", { load: p.load, before: before.load });
  return t("lab.live.phase", { load: p.load });
}

// checkText says, in plain words, what a check that failed measured and
// what it expected: shares as percentages, ratios as times.
function checkText(m, c, phases) {
  const i = c.phase ? phases.findIndex((p) => p.name === c.phase) : -1;
  const where = i >= 0 ? t("lab.check.where.phase", { phase: phaseName(phases, i) }) : t("lab.check.where.calibration");
  const ratio = c.name === "p50_vs_work" || c.name === "drift";
  const f = (v) => (ratio ? v.toFixed(2) : pct0(v));
  return t("lab.check.line", { mode: modeName(m.mode), check: t(`lab.check.${c.name}`, { value: f(c.value), min: f(c.min), max: f(c.max), where }) });
}

function drawLive(rep) {
  for (const p of livePlots) p.destroy();
  livePlots = [];
  const cal = $("live-calibration");
  cal.replaceChildren();
  for (const m of rep.modes) {
    const li = document.createElement("li");
    li.textContent = t("lab.live.calibration", {
      mode: modeName(m.mode),
      capacity: Math.round(m.calibration.capacity),
      work: ms(rep.work_ns),
      p50: ms(m.calibration.no_load_p50_ns),
      p99: ms(m.calibration.no_load_p99_ns),
      core: m.calibration.cpu_share >= 0 ? pct0(m.calibration.cpu_share) : "—",
      times: m.attempts.length === 1 ? t("lab.live.measured_once") : t("lab.live.measured_n", { n: m.attempts.length }),
      verdict: t(m.reliable ? "lab.live.passed" : "lab.live.failed"),
    });
    cal.append(li);
  }
  const warn = $("live-warning");
  const charts = $("live-charts");
  charts.replaceChildren();
  if (!rep.reliable) {
    // No figures: they would mean nothing. Say so, and which checks failed.
    warn.hidden = false;
    warn.replaceChildren();
    const p = document.createElement("p");
    p.textContent = t(rep.stopped_early ? "lab.live.stopped_early" : "lab.live.unreliable");
    const ul = document.createElement("ul");
    for (const m of rep.modes) {
      if (m.reliable || !m.attempts.length) continue;
      const last = m.attempts.at(-1);
      for (const c of last.checks) {
        if (c.ok) continue;
        const li = document.createElement("li");
        li.textContent = checkText(m, c, last.phases || []);
        ul.append(li);
      }
    }
    const todo = document.createElement("p");
    todo.textContent = t("lab.live.what_to_do");
    warn.append(p, ul, todo);
    $("live-conclusion").textContent = "";
    $("live-table-wrap").hidden = true;
    return;
  }
  warn.hidden = true;
  const c = rep.conclusion;
  $("live-conclusion").textContent = c
    ? t(c.none_goodput >= 0 ? "lab.live.conclusion" : "lab.live.conclusion_no_none", {
        load: c.load,
        best: modeName(c.best),
        goodput: pct0(c.goodput),
        ratio: c.p99_ratio.toFixed(1),
        none: c.none_goodput >= 0 ? pct0(c.none_goodput) : "",
      })
    : "";
  liveCharts(rep, charts);
  liveTable(rep);
}

// liveCharts draws goodput and the p99 ratio against the load of each
// phase, a line per protection.
function liveCharts(rep, root) {
  const phases = rep.modes[0].phases.map((p, i, all) => phaseName(all, i));
  const xs = phases.map((_, i) => i);
  const ratio = (m, p) => (p.p99_ns > 0 && m.calibration.no_load_p99_ns > 0 ? p.p99_ns / m.calibration.no_load_p99_ns : null);
  for (const [id, key, value, digits] of [
    ["live-goodput", "lab.live.chart.goodput", (m, p) => 100 * p.goodput, 0],
    ["live-p99", "lab.live.chart.p99", ratio, 2],
  ]) {
    const caption = t(key);
    const table = () => ({
      head: [t("lab.live.col.phase"), ...rep.modes.map((m) => modeName(m.mode))],
      rows: phases.map((name, i) => [name, ...rep.modes.map((m) => (value(m, m.phases[i]) == null ? "—" : value(m, m.phases[i]).toFixed(digits)))]),
    });
    const el = figure(root, id, caption, table);
    livePlots.push(
      new uPlot(
        {
          width: Math.max(300, (el.parentElement.clientWidth || 600) - 20),
          height: 230,
          scales: { x: { time: false, range: [-0.3, phases.length - 0.7] }, y: { range: (u, lo, hi) => [0, Math.max(hi * 1.1, digits ? 2.5 : 100)] } },
          axes: [
            { splits: () => xs, values: (u, splits) => splits.map((v) => phases[v] ?? "") },
            { label: t(key + ".axis"), size: 56 },
          ],
          series: [
            { label: t("lab.live.col.phase"), value: (u, v) => (v == null ? "—" : phases[v]) },
            ...rep.modes.map((m, i) => ({
              label: modeName(m.mode),
              stroke: modeColours[i % modeColours.length],
              dash: modeDashes[i % modeDashes.length],
              width: 2,
              points: { show: true, size: 6 },
              value: (u, v) => (v == null ? "—" : v.toFixed(digits)),
            })),
          ],
          hooks: legendAtEnd,
        },
        [xs, ...rep.modes.map((m) => m.phases.map((p) => value(m, p)))],
        el,
      ),
    );
  }
}

function liveTable(rep) {
  $("live-table-wrap").hidden = false;
  const tbody = $("live-table").tBodies[0];
  tbody.replaceChildren();
  for (const m of rep.modes) {
    m.phases.forEach((p, i) => {
      const tr = tbody.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = modeName(m.mode);
      tr.append(th);
      const rec = m.recovery_ns && p.name in m.recovery_ns ? (m.recovery_ns[p.name] >= 0 ? ms(m.recovery_ns[p.name]) : t("lab.never")) : "";
      const ratio = p.p99_ns > 0 ? `${(p.p99_ns / m.calibration.no_load_p99_ns).toFixed(2)} ×` : "—";
      const core = p.cpu_share >= 0 ? pct0(p.cpu_share) : "—";
      for (const v of [phaseName(m.phases, i), pct0(p.goodput), p.p50_ns ? ms(p.p50_ns) : "—", p.p99_ns ? ms(p.p99_ns) : "—", ratio, p.rejected, p.timeouts, core, rec]) {
        tr.insertCell().textContent = v;
      }
    });
  }
}

// The page, for the registry (pages.js).
export const page = {
  id: "lab",
  heading: "lab-h",
  setup: ({ info }) => setupLab(info.lab_profiles, info.lab_patience),
  render: renderLab,
  relabel: relabelLab,
};
