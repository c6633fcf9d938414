// The global quota lab's comparison: afloat's global quota, Gubernator
// (GLOBAL and its default mode), envoyproxy/ratelimit (one Redis shared by
// the regions, one per region) and a naive split under the same traffic
// shift and partition, and each service's decisions a second at p99 ≤ 1
// ms, measured in wall-clock time by bench/quotapeers (a Go module of its
// own, so that neither peer enters afloat's build) and shipped as
// /static/data/quota-peers.json. The page only draws what was measured.
import { t } from "./i18n.js";
import { LiveChart } from "./charts.js";

const $ = (id) => document.getElementById(id);
const grey = "#59636e";
// Each system keeps its colour and dash on every chart (Okabe–Ito).
const look = {
  afloat: { colour: "#0072b2", dash: [] },
  gubernator_global: { colour: "#d55e00", dash: [6, 4] },
  gubernator_global_rate: { colour: "#cc79a7", dash: [10, 3, 2, 3] },
  gubernator_default: { colour: "#e69f00", dash: [12, 4] },
  ratelimit_shared: { colour: "#56b4e9", dash: [4, 2] },
  ratelimit_per_region: { colour: "#000000", dash: [1, 2] },
  naive: { colour: "#009e73", dash: [2, 3] },
};

const p = {
  data: null, // the measured run
  error: false,
  loading: null,
  charts: [],
};
// For the browser test: the run and what each chart draws.
p.plots = () => p.charts.map((c) => ({ id: c.def.id, data: c.plot.data }));

function clock(s) {
  return `${Math.floor(s / 60)}:${String(Math.round(s) % 60).padStart(2, "0")}`;
}

function fixed(v, digits) {
  return Number(v).toFixed(digits);
}

// signed is a whole number of tokens with its sign: "+12" over the bound,
// "-4182" under it, "0" (never "-0") on it.
function signed(v) {
  const w = Math.round(v) || 0;
  return (w > 0 ? "+" : "") + String(w);
}

// cells are the summary table's columns after the system's name: the
// catalogue key of the heading and the text of the cell. The browser test
// reads the same rounding.
export function cells(s) {
  const u = s.utilization;
  return [
    ["quota.peers.col.worst", signed(s.worst_window)],
    ["quota.peers.col.verdict", t(s.worst_window <= 0 ? "quota.peers.held" : "quota.peers.exceeded")],
    ["quota.peers.col.util_before", fixed(100 * u.before, 0)],
    ["quota.peers.col.util_shift", fixed(100 * u.shift, 0)],
    ["quota.peers.col.util_partition", fixed(100 * u.partition, 0)],
    ["quota.peers.col.util_healed", fixed(100 * u.healed, 0)],
    ["quota.peers.col.hot90", s.hot90_s == null ? t("quota.peers.never") : fixed(s.hot90_s, 2)],
    ["quota.peers.col.p50", fixed(s.latency_us.p50, 1)],
    ["quota.peers.col.p99", fixed(s.latency_us.p99, 1)],
  ];
}

// tpCells are the throughput table's columns after the service's name,
// as the browser test reads them.
export function tpCells(s) {
  return [
    ["quota.peers.tp.col.rate", s.decisions_per_s > 0 ? fixed(s.decisions_per_s, 0) : t("quota.peers.tp.none")],
    ["quota.peers.tp.col.p99", s.decisions_per_s > 0 ? fixed(s.p99_ms, 3) : "–"],
  ];
}

function renderThroughput() {
  const tp = p.data.throughput;
  $("quota-peers-tp-wrap").hidden = !tp;
  if (!tp) return;
  $("quota-peers-tp-run").textContent = t("quota.peers.tp.run", {
    reps: tp.reps,
    step: tp.step_s,
    service: tp.service_cpu,
    generator: tp.generator_cpu,
    load: tp.load_before.split(" ")[0],
  });
  const head = document.createElement("tr");
  for (const key of ["quota.peers.col.system", ...tpCells(tp.systems[0]).map((c) => c[0])]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = t(key);
    head.append(th);
  }
  $("quota-peers-tp").tHead.replaceChildren(head);
  const body = $("quota-peers-tp").tBodies[0];
  body.replaceChildren();
  for (const sys of tp.systems) {
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t(`quota.peers.tp.sys.${sys.id}`);
    tr.append(th);
    for (const [, text] of tpCells(sys)) tr.insertCell().textContent = text;
  }
}

function phase(sec) {
  const s = p.data.schedule;
  if (sec <= s.shift_s) return t("quota.peers.state.before");
  if (sec <= s.partition_s) return t("quota.peers.state.shifted", { region: s.hot });
  if (sec <= s.heal_s) return t("quota.peers.state.cut", { region: s.cut });
  return t("quota.peers.state.healed");
}

function renderText() {
  const d = p.data;
  const s = d.schedule;
  $("quota-peers-run").textContent = t("quota.peers.run", {
    date: d.date.slice(0, 16).replace("T", " "),
    cpus: d.cpus,
    load: d.load_before.split(" ")[0],
    go: d.go,
    gubernator: d.gubernator,
    ratelimit: d.ratelimit,
  });
  $("quota-peers-command").textContent = d.command;
  $("quota-peers-schedule").textContent = t("quota.peers.schedule", {
    rate: d.tenant.rate,
    burst: d.tenant.burst,
    total: Math.round(Object.values(s.before).reduce((a, b) => a + b, 0)),
    duration: s.duration_s,
    hot: s.hot,
    shift: s.shift_s,
    cut: s.cut,
    owner: s.owner,
    partition: s.partition_s,
    heal: s.heal_s,
    lease: d.lease_s,
  });
  const head = document.createElement("tr");
  const names = ["quota.peers.col.system", ...cells(d.systems[0]).map((c) => c[0])];
  for (const key of names) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = t(key);
    head.append(th);
  }
  $("quota-peers-table").tHead.replaceChildren(head);
  const body = $("quota-peers-table").tBodies[0];
  body.replaceChildren();
  for (const sys of d.systems) {
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t(`quota.peers.sys.${sys.id}`);
    tr.append(th);
    for (const [, text] of cells(sys)) tr.insertCell().textContent = text;
  }
  renderThroughput();
}

function buildCharts() {
  for (const c of p.charts) c.destroy();
  p.charts = [];
  const d = p.data;
  const root = $("quota-peers-charts");
  const rows = d.seconds.map((sec, i) => ({ i, sec }));
  const x = { label: () => t("chart.time"), get: (r) => r.sec, format: clock };
  const s = d.schedule;
  const bands = [{ colour: "rgba(213, 94, 0, 0.16)", on: (r) => r.sec > s.partition_s && r.sec <= s.heal_s }];
  const perSystem = (key) =>
    d.systems.map((sys) => ({
      key: `${sys.id}-${key}`,
      label: () => t(`quota.peers.sys.${sys.id}`),
      colour: (look[sys.id] || look.afloat).colour,
      dash: (look[sys.id] || look.afloat).dash,
      digits: 0,
      get: (r) => sys[key][r.i],
    }));
  const perS = { y: { unit: () => t("quota.unit.per_s"), min0: true } };
  p.charts.push(
    new LiveChart(root, {
      id: "quota-peers-rate",
      title: () => t("quota.peers.chart.rate"),
      x,
      scales: perS,
      series: [
        { key: "offered", label: () => t("quota.series.offered"), colour: grey, dash: [1, 3], width: 1.5, digits: 0, get: (r) => d.offered[r.i] },
        { key: "r", label: () => t("quota.series.r"), colour: "#000000", width: 1.5, digits: 0, get: () => d.tenant.rate },
        ...perSystem("per_second"),
      ],
      bands,
      state: (r) => phase(r.sec),
    }),
    new LiveChart(root, {
      id: "quota-peers-hot",
      title: () => t("quota.peers.chart.hot", { region: s.hot }),
      x,
      scales: perS,
      series: [
        { key: "r", label: () => t("quota.series.r"), colour: "#000000", width: 1.5, digits: 0, get: () => d.tenant.rate },
        ...perSystem("hot_per_second"),
      ],
      bands,
      state: (r) => phase(r.sec),
    }),
    new LiveChart(root, {
      id: "quota-peers-excess",
      title: () => t("quota.peers.chart.excess"),
      x,
      scales: { y: { unit: () => t("quota.unit.tokens"), min0: true } },
      series: [
        { key: "b", label: () => t("quota.series.b"), colour: "#000000", width: 1.5, digits: 0, get: () => d.tenant.burst },
        ...perSystem("excess"),
      ],
      bands,
      state: (r) => phase(r.sec),
    }),
  );
  for (const c of p.charts) c.update(rows);
}

async function load() {
  const res = await fetch("/static/data/quota-peers.json", { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`quota-peers.json: HTTP ${res.status}`);
  p.data = await res.json();
}

// render draws the comparison once the page is shown, fetching the run
// the first time.
async function render() {
  if (!p.data) {
    if (!p.loading) {
      p.loading = load().catch(() => {
        p.error = true;
      });
    }
    await p.loading;
    if (p.error) {
      $("quota-peers-error").hidden = false;
      $("quota-peers-error").textContent = t("quota.peers.error");
      return;
    }
  }
  if (p.charts.length === 0) {
    renderText();
    buildCharts();
  }
  for (const c of p.charts) c.resize();
}

function relabel() {
  if (p.error) $("quota-peers-error").textContent = t("quota.peers.error");
  if (!p.data || p.charts.length === 0) return;
  renderText();
  for (const c of p.charts) c.build();
}

function setup() {
  window.afloat.quotaPeers = p;
}

export const peers = { setup, render, relabel };
