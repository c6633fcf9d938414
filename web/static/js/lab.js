// The overload lab: the seed's five runs on the real bulkhead in virtual
// time (POST /api/overload/compare), and the live HTTP comparison on demand
// (POST, then GET /api/overload/live).
import { t } from "./i18n.js";

const $ = (id) => document.getElementById(id);

// Okabe–Ito, as on the game's charts.
// Concurrency, the signal, in black and thicker.
const colours = ["#0072b2", "#009e73", "#d55e00", "#cc79a7", "#e69f00", "#000000"];
const dashes = [[], [6, 4], [2, 3], [10, 3, 2, 3], [4, 4], []];

const series = [
  { key: "arrivals", scale: "y" },
  { key: "responses", scale: "y" },
  { key: "timeouts", scale: "y" },
  { key: "wasted", scale: "y" },
  { key: "rejected", scale: "y" },
  { key: "concurrency", scale: "c" },
];

let last = null; // the last compare answer, to redraw in another language
let lastLive = null; // the last live report, likewise
const statuses = {}; // element id → [key, params] of its message, likewise
let plots = [];
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

function pct(v) {
  return `${(100 * v).toFixed(1)} %`;
}

// setup fills the profile picker; called once with the scenarios' answer.
export function setupLab(profiles) {
  const sel = $("lab-profile");
  sel.replaceChildren();
  for (const p of profiles) {
    const o = document.createElement("option");
    o.value = p;
    o.textContent = p;
    sel.append(o);
  }
  sel.value = "worldcup";
  $("lab-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runCompare();
  });
  $("live-run").addEventListener("click", startLive);
}

// renderLab shows the lab view, computing the default run the first time.
export async function renderLab() {
  if (!last) await runCompare();
  else draw(last);
  pollLive(true);
}

async function runCompare() {
  const seed = Number($("lab-seed").value);
  if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) {
    say("lab-status", "setup.seed_error");
    return;
  }
  say("lab-status", "lab.computing");
  $("lab-run").disabled = true;
  try {
    last = await getJSON("/api/overload/compare", postJSON({ profile: $("lab-profile").value, seed }));
    draw(last);
    say("lab-status", "lab.done");
  } catch (err) {
    say("lab-status", "error.api", { message: err.message });
  } finally {
    $("lab-run").disabled = false;
  }
}

function draw(c) {
  $("lab-profile-desc").textContent = t(`lab.profile.${c.profile}`);
  const tbody = $("lab-summary").tBodies[0];
  tbody.replaceChildren();
  for (const r of c.runs) {
    const s = r.summary;
    const tr = tbody.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = runName(r.run);
    tr.append(th);
    const cells = [
      pct(s.goodput),
      s.rejected.toLocaleString("en"),
      s.timeouts.toLocaleString("en"),
      s.wasted.toLocaleString("en"),
      `${s.worst_response_x.toFixed(2)} ×`,
      s.peak_concurrency.toLocaleString("en"),
      s.peak ? pct(s.lowest_useful_minute) : "—",
      s.peak ? (s.recovery_s >= 0 ? `${s.recovery_s} s` : t("lab.never")) : "—",
    ];
    for (const v of cells) tr.insertCell().textContent = v;
  }

  // Every chart on the same scales, so that the runs compare at a glance.
  const ranges = { rate: 1, concurrency: 10 };
  for (const r of c.runs) {
    for (const p of r.series) {
      for (const s of series) {
        if (s.scale === "y") ranges.rate = Math.max(ranges.rate, p[s.key]);
      }
      ranges.concurrency = Math.max(ranges.concurrency, p.concurrency);
    }
  }
  ranges.long = c.runs.length > 0 && c.runs[0].series.at(-1).t >= 3600;

  for (const p of plots) p.destroy();
  plots = [];
  const root = $("lab-charts");
  root.replaceChildren();
  c.runs.forEach((r, i) => {
    const fig = document.createElement("figure");
    fig.className = "chart";
    const cap = document.createElement("figcaption");
    cap.id = `lab-cap-${i}`;
    cap.textContent = t("lab.chart", { run: runName(r.run), step: c.step });
    fig.setAttribute("aria-labelledby", cap.id);
    const canvas = document.createElement("div");
    canvas.setAttribute("aria-hidden", "true");
    const details = document.createElement("details");
    details.className = "data";
    const summary = document.createElement("summary");
    summary.textContent = t("chart.table");
    details.append(summary);
    details.addEventListener("toggle", () => {
      if (details.open && !details.querySelector("table")) details.append(dataTable(r, ranges.long));
    });
    fig.append(cap, canvas, details);
    root.append(fig);
    plots.push(plot(canvas, r, fig.clientWidth, ranges));
  });
}

function runName(run) {
  return run === "no limit" ? t("lab.run.none") : run === "adaptive" ? t("lab.run.adaptive") : run;
}

function plot(el, r, width, ranges) {
  const long = ranges.long;
  const xs = r.series.map((p) => p.t);
  const cols = series.map((s) =>
    r.series.map((p) => (s.key === "concurrency" ? Math.max(1, p[s.key]) : p[s.key])),
  );
  return new uPlot(
    {
      width: Math.max(300, (width || 600) - 20),
      height: 230,
      scales: {
        x: { time: false },
        y: { range: [0, Math.ceil(ranges.rate * 1.05)] },
        c: { distr: 3, log: 10, range: [1, 10 ** Math.ceil(Math.log10(ranges.concurrency))] },
      },
      axes: [
        { incrs: timeSteps, values: (u, splits) => splits.map((v) => clockOf(v, long)) },
        { scale: "y", label: t("lab.axis.rate"), size: 56 },
        { scale: "c", side: 1, label: t("lab.axis.concurrency"), grid: { show: false }, size: 60 },
      ],
      series: [
        { label: t("lab.axis.time"), value: (u, v) => (v == null ? "—" : clockOf(v, long)) },
        ...series.map((s, i) => ({
          label: t(`lab.series.${s.key}`),
          scale: s.scale,
          stroke: colours[i],
          dash: dashes[i],
          width: s.key === "concurrency" ? 2 : 1.5,
          points: { show: false },
          value: (u, v) => (v == null ? "—" : v.toFixed(s.key === "concurrency" ? 0 : 1)),
        })),
      ],
    },
    [xs, ...cols],
    el,
  );
}

function dataTable(r, long) {
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const label of [t("lab.axis.time"), ...series.map((s) => t(`lab.series.${s.key}`))]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = label;
    head.append(th);
  }
  const body = table.createTBody();
  for (const p of r.series) {
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = clockOf(p.t, long);
    tr.append(th);
    for (const s of series) tr.insertCell().textContent = p[s.key].toFixed(s.key === "concurrency" ? 0 : 1);
  }
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  wrap.append(table);
  return wrap;
}

// relabelLab redraws the lab in the current language.
export function relabelLab() {
  if (last && !$("lab").hidden) draw(last);
  if (lastLive) liveTable(lastLive);
  for (const [id, msg] of Object.entries(statuses)) {
    if (msg) $(id).textContent = t(msg[0], msg[1]);
  }
}

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
    say("live-status", "lab.live.running", { progress: st.progress });
    if (!$("lab").hidden) polling = setTimeout(() => pollLive(false), 1000);
    return;
  }
  if (st.error) say("live-status", "error.api", { message: st.error });
  else if (st.report) say("live-status", "lab.live.done");
  if (st.report) liveTable(st.report);
  else if (once) say("live-status", "");
}

function ms(ns) {
  return `${(ns / 1e6).toFixed(1)} ms`;
}

function liveTable(rep) {
  lastLive = rep;
  $("live-server").textContent = t("lab.live.server", {
    capacity: Math.round(rep.capacity),
    work: ms(rep.work_ns),
    p50: ms(rep.no_load_p50_ns),
    p99: ms(rep.no_load_p99_ns),
    deadline: ms(rep.deadline_ns),
  });
  const table = $("live-table");
  table.hidden = false;
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  for (const m of rep.modes) {
    for (const p of m.phases) {
      const tr = tbody.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = m.mode;
      tr.append(th);
      const rec = m.recovery_ns && p.name in m.recovery_ns ? (m.recovery_ns[p.name] >= 0 ? ms(m.recovery_ns[p.name]) : t("lab.never")) : "";
      for (const v of [p.name, pct(p.goodput), p.p50_ns ? ms(p.p50_ns) : "—", p.p99_ns ? ms(p.p99_ns) : "—", p.rejected, p.timeouts, rec]) {
        tr.insertCell().textContent = v;
      }
    }
  }
}

// The page, for the registry (pages.js).
export const page = {
  id: "lab",
  heading: "lab-h",
  setup: ({ info }) => setupLab(info.lab_profiles),
  render: renderLab,
  relabel: relabelLab,
};
