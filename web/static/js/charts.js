// Charts of a run, drawn with uPlot (vendored), each with a data-table
// alternative for screen readers and keyboard users.
import { t } from "./i18n.js";

// Okabe–Ito colours; the second series of a chart is also dashed, so the
// charts read without colour.
const colours = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];
const dashes = [[], [6, 4], [2, 3], [10, 3, 2, 3]];

const pct = (v) => 100 * v;

// The console's charts: what each plots, on which scale, in what unit.
export const chartDefs = [
  {
    id: "requests",
    scales: { y: { unit: "req/s" } },
    series: [
      { key: "requests_per_s", digits: 0 },
      { key: "admitted_per_s", digits: 0 },
    ],
  },
  {
    id: "latency",
    scales: { y: { unit: "ms" }, pct: { unit: "%", right: true } },
    series: [
      { key: "p99_ms", digits: 0 },
      { key: "error_rate", scale: "pct", map: pct, digits: 2 },
    ],
  },
  {
    id: "burn",
    scales: { y: { unit: "×" }, pct: { unit: "%", right: true } },
    series: [
      { key: "burn_1h", digits: 1 },
      { key: "burn_5m", digits: 1 },
      { key: "budget_remaining", scale: "pct", map: pct, digits: 1 },
    ],
  },
  {
    id: "cache",
    scales: { pct: { unit: "%", range: [0, 100] } },
    series: [
      { key: "cache_hit", scale: "pct", map: pct, digits: 1 },
      { key: "db_utilization", scale: "pct", map: pct, digits: 1 },
    ],
  },
  {
    id: "fleet",
    scales: { y: { unit: "", min0: true } },
    series: [
      { key: "serving", digits: 0 },
      { key: "booting", digits: 0 },
    ],
  },
  {
    id: "cost",
    scales: { y: { unit: "$/h", min0: true }, usd: { unit: "$", right: true, min0: true } },
    series: [
      { key: "fleet_cost_per_h", digits: 2 },
      { key: "cost_so_far", scale: "usd", digits: 2 },
    ],
  },
];

function fmt(v, digits) {
  return v == null || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

// Chart is one figure: a uPlot canvas and its data table.
class Chart {
  constructor(parent, def, clockOf) {
    this.def = def;
    this.clockOf = clockOf;
    this.frames = [];
    this.fig = document.createElement("figure");
    this.fig.className = "chart";
    this.fig.id = `chart-${def.id}`;
    this.caption = document.createElement("figcaption");
    this.caption.id = `chart-${def.id}-cap`;
    this.fig.setAttribute("aria-labelledby", this.caption.id);
    this.canvas = document.createElement("div");
    this.canvas.className = "chart-canvas";
    this.canvas.setAttribute("aria-hidden", "true"); // the table below carries the data
    this.details = document.createElement("details");
    this.details.className = "data";
    this.summary = document.createElement("summary");
    this.wrap = document.createElement("div");
    this.wrap.className = "table-wrap";
    this.table = document.createElement("table");
    this.thead = document.createElement("thead");
    this.tbody = document.createElement("tbody");
    this.table.append(this.thead, this.tbody);
    this.wrap.append(this.table);
    this.details.append(this.summary, this.wrap);
    this.details.addEventListener("toggle", () => this.renderTable());
    this.fig.append(this.caption, this.canvas, this.details);
    parent.append(this.fig);
    this.build();
  }

  seriesLabel(s) {
    return t(`chart.${this.def.id}.${s.key}`);
  }

  // build (re)creates the uPlot instance, for a new language.
  build() {
    const def = this.def;
    this.caption.textContent = t(`chart.${def.id}.title`);
    this.summary.textContent = t("chart.table");
    if (this.plot) this.plot.destroy();
    const scales = { x: { time: false } };
    const axes = [
      {
        incrs: [1, 2, 5, 10, 15, 30, 60, 120, 240],
        values: (u, splits) => splits.map((m) => (Number.isInteger(m) ? this.clockOf(m) : "")),
      },
    ];
    for (const [name, sc] of Object.entries(def.scales)) {
      scales[name] = { auto: true };
      if (sc.range) scales[name] = { auto: false, range: sc.range };
      else if (sc.min0) scales[name].range = (u, min, max) => [0, Math.max(1, max * 1.1)];
      axes.push({
        scale: name,
        side: sc.right ? 1 : 3,
        label: sc.unit,
        grid: { show: !sc.right },
        size: 56,
      });
    }
    const series = [{ label: t("chart.time"), value: (u, v) => (v == null ? "—" : this.clockOf(v)) }];
    def.series.forEach((s, i) => {
      series.push({
        label: this.seriesLabel(s),
        scale: s.scale || "y",
        stroke: colours[i % colours.length],
        dash: dashes[i % dashes.length],
        width: 2,
        points: { show: false },
        value: (u, v) => fmt(v, s.digits),
      });
    });
    const width = Math.max(280, this.fig.clientWidth - 20 || 560);
    this.plot = new uPlot({ width, height: 210, scales, axes, series, legend: { live: true } }, this.data(), this.canvas);
    this.renderTable(true);
  }

  data() {
    const xs = this.frames.map((f) => f.minute);
    const cols = this.def.series.map((s) => this.frames.map((f) => (s.map ? s.map(f[s.key]) : f[s.key])));
    return [xs, ...cols];
  }

  update(frames) {
    this.frames = frames;
    this.plot.setData(this.data());
    this.renderTable();
  }

  resize() {
    const width = Math.max(280, this.fig.clientWidth - 20);
    if (width !== this.plot.width) this.plot.setSize({ width, height: 210 });
  }

  // renderTable fills the data table while it is open; rows are appended as
  // minutes pass and rebuilt when the run changes under them.
  renderTable(relabel = false) {
    if (relabel || !this.thead.firstChild) {
      const tr = document.createElement("tr");
      for (const label of [t("chart.time"), ...this.def.series.map((s) => this.seriesLabel(s))]) {
        const th = document.createElement("th");
        th.scope = "col";
        th.textContent = label;
        tr.append(th);
      }
      this.thead.replaceChildren(tr);
    }
    if (!this.details.open) return;
    const rows = this.tbody.rows;
    let keep = Math.min(rows.length, this.frames.length);
    // A row whose minute no longer matches the frame means the run changed.
    for (let i = 0; i < keep; i++) {
      if (rows[i].dataset.sig !== this.signature(this.frames[i])) {
        keep = i;
        break;
      }
    }
    while (rows.length > keep) this.tbody.deleteRow(rows.length - 1);
    for (let i = keep; i < this.frames.length; i++) {
      const f = this.frames[i];
      const tr = this.tbody.insertRow();
      tr.dataset.sig = this.signature(f);
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = f.clock;
      tr.append(th);
      for (const s of this.def.series) {
        tr.insertCell().textContent = fmt(s.map ? s.map(f[s.key]) : f[s.key], s.digits);
      }
    }
  }

  signature(f) {
    return `${f.minute}|${this.def.series.map((s) => f[s.key]).join("|")}`;
  }
}

// Charts holds the console's charts.
export class Charts {
  constructor(parent, clockOf) {
    this.parent = parent;
    this.clockOf = clockOf;
    this.charts = chartDefs.map((def) => new Chart(parent, def, (m) => this.clockOf(m)));
    this.observer = new ResizeObserver(() => this.charts.forEach((c) => c.resize()));
    this.observer.observe(parent);
  }

  update(frames) {
    for (const c of this.charts) c.update(frames);
  }

  relabel() {
    for (const c of this.charts) c.build();
  }
}

// timelineChart draws the debrief's timeline: the bad-build share, the page
// and the hour's burn rate, with a vertical mark at each action.
export function timelineChart(el, frames, actionMinutes, clockOf) {
  el.replaceChildren();
  const xs = frames.map((f) => f.minute);
  const data = [
    xs,
    frames.map((f) => 100 * f.bad_build_share),
    frames.map((f) => (f.paged ? 100 : 0)),
    frames.map((f) => f.burn_1h),
  ];
  const marks = {
    hooks: {
      draw: [
        (u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = colours[3];
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          for (const m of actionMinutes) {
            const x = u.valToPos(m, "x", true);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
  return new uPlot(
    {
      width: Math.max(280, el.clientWidth || 720),
      height: 220,
      plugins: [marks],
      scales: { x: { time: false }, pct: { auto: false, range: [0, 100] }, y: { auto: true } },
      axes: [
        {
          incrs: [1, 2, 5, 10, 15, 30, 60, 120, 240],
          values: (u, splits) => splits.map((m) => (Number.isInteger(m) ? clockOf(m) : "")),
        },
        { scale: "pct", label: "%", size: 50 },
        { scale: "y", side: 1, label: "×", grid: { show: false }, size: 50 },
      ],
      series: [
        { label: t("chart.time"), value: (u, v) => (v == null ? "—" : clockOf(v)) },
        { label: t("debrief.series.bad_build"), scale: "pct", stroke: colours[1], width: 2, points: { show: false }, value: (u, v) => fmt(v, 0) },
        {
          label: t("debrief.series.paged"),
          scale: "pct",
          stroke: colours[4],
          dash: dashes[1],
          width: 2,
          points: { show: false },
          paths: uPlot.paths.stepped({ align: 1 }),
          value: (u, v) => fmt(v, 0),
        },
        { label: t("debrief.series.burn_1h"), scale: "y", stroke: colours[0], dash: dashes[2], width: 2, points: { show: false }, value: (u, v) => fmt(v, 1) },
      ],
    },
    data,
    el,
  );
}

// LiveChart is a chart of rows that grow as a run plays: any x, any
// series, each on a named scale, with its data table (in a scroll region
// reachable from the keyboard) and optional shaded spans (a partition, an
// outage) that the table states in words too. def:
//
//   { id, title(), x: { label(), format(v), get(row) }, scales: { name: { unit(), right, min0, range } },
//     series: [{ key, label(), scale, digits, colour, dash, width, get(row) }],
//     bands: [{ label(), colour, on(row) }], state(row) → text for the table }
export class LiveChart {
  constructor(parent, def) {
    this.def = def;
    this.rows = [];
    this.fig = document.createElement("figure");
    this.fig.className = "chart";
    this.fig.id = `chart-${def.id}`;
    this.caption = document.createElement("figcaption");
    this.caption.id = `chart-${def.id}-cap`;
    this.fig.setAttribute("aria-labelledby", this.caption.id);
    this.canvas = document.createElement("div");
    this.canvas.className = "chart-canvas";
    this.canvas.setAttribute("aria-hidden", "true");
    this.details = document.createElement("details");
    this.details.className = "data";
    this.summary = document.createElement("summary");
    this.wrap = document.createElement("div");
    this.wrap.className = "table-wrap";
    this.wrap.tabIndex = 0; // a scroll region: reachable and scrollable by keyboard
    this.wrap.setAttribute("role", "region");
    this.table = document.createElement("table");
    this.thead = document.createElement("thead");
    this.tbody = document.createElement("tbody");
    this.table.append(this.thead, this.tbody);
    this.wrap.append(this.table);
    this.details.append(this.summary, this.wrap);
    this.details.addEventListener("toggle", () => this.renderTable());
    this.fig.append(this.caption, this.canvas, this.details);
    parent.append(this.fig);
    this.build();
  }

  // build (re)creates the plot, for a new language or new scales.
  build() {
    const def = this.def;
    this.caption.textContent = def.title();
    this.summary.textContent = t("chart.table");
    this.wrap.setAttribute("aria-label", t("chart.table_of", { title: def.title() }));
    if (this.plot) this.plot.destroy();
    const scales = { x: { time: false } };
    const axes = [{ values: (u, splits) => splits.map((v) => def.x.format(v)) }];
    for (const [name, sc] of Object.entries(def.scales)) {
      scales[name] = { auto: true };
      if (sc.range) scales[name] = { auto: false, range: sc.range };
      else if (sc.min0) scales[name].range = (u, min, max) => [0, Math.max(1, max * 1.1)];
      const label = typeof sc.unit === "function" ? sc.unit() : sc.unit;
      axes.push({ scale: name, side: sc.right ? 1 : 3, label, grid: { show: !sc.right }, size: 64 });
    }
    const series = [{ label: def.x.label(), value: (u, v) => (v == null ? "—" : def.x.format(v)) }];
    def.series.forEach((s, i) => {
      series.push({
        label: s.label(),
        scale: s.scale || "y",
        stroke: s.colour || colours[i % colours.length],
        dash: s.dash || [],
        width: s.width || 2,
        points: { show: false },
        paths: s.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
        value: (u, v) => fmt(v, s.digits),
      });
    });
    const bands = def.bands || [];
    const shade = {
      hooks: {
        drawClear: [
          (u) => {
            const ctx = u.ctx;
            const xs = u.data[0];
            ctx.save();
            for (const b of bands) {
              ctx.fillStyle = b.colour;
              for (let i = 0; i < this.rows.length; i++) {
                if (!b.on(this.rows[i])) continue;
                const x0 = u.valToPos(xs[i], "x", true);
                const x1 = i + 1 < xs.length ? u.valToPos(xs[i + 1], "x", true) : x0 + 2 * devicePixelRatio;
                ctx.fillRect(x0, u.bbox.top, Math.max(1, x1 - x0), u.bbox.height);
              }
            }
            ctx.restore();
          },
        ],
      },
    };
    const width = Math.max(280, this.fig.clientWidth - 20 || 560);
    this.plot = new uPlot(
      { width, height: def.height || 220, scales, axes, series, plugins: [shade], legend: { live: true } },
      this.data(),
      this.canvas,
    );
    this.renderTable(true);
  }

  data() {
    return [this.rows.map((r) => this.def.x.get(r)), ...this.def.series.map((s) => this.rows.map((r) => s.get(r)))];
  }

  // update shows rows (all of them: the chart keeps no history of its own).
  update(rows) {
    this.rows = rows;
    this.plot.setData(this.data());
    this.renderTable();
  }

  resize() {
    const width = Math.max(280, this.fig.clientWidth - 20);
    if (width !== this.plot.width) this.plot.setSize({ width, height: this.def.height || 220 });
  }

  destroy() {
    this.plot.destroy();
    this.fig.remove();
  }

  // renderTable fills the table while it is open: rows appended as the run
  // plays, rebuilt from the first row that changed.
  renderTable(relabel = false) {
    const def = this.def;
    if (relabel || !this.thead.firstChild) {
      const tr = document.createElement("tr");
      const labels = [def.x.label(), ...def.series.map((s) => s.label())];
      if (def.state) labels.push(t("chart.state"));
      for (const label of labels) {
        const th = document.createElement("th");
        th.scope = "col";
        th.textContent = label;
        tr.append(th);
      }
      this.thead.replaceChildren(tr);
      if (relabel) this.tbody.replaceChildren();
    }
    if (!this.details.open) return;
    const rows = this.tbody.rows;
    let keep = Math.min(rows.length, this.rows.length);
    for (let i = 0; i < keep; i++) {
      if (rows[i].dataset.sig !== this.signature(this.rows[i])) {
        keep = i;
        break;
      }
    }
    while (rows.length > keep) this.tbody.deleteRow(rows.length - 1);
    for (let i = keep; i < this.rows.length; i++) {
      const r = this.rows[i];
      const tr = this.tbody.insertRow();
      tr.dataset.sig = this.signature(r);
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = def.x.format(def.x.get(r));
      tr.append(th);
      for (const s of def.series) tr.insertCell().textContent = fmt(s.get(r), s.digits);
      if (def.state) tr.insertCell().textContent = def.state(r);
    }
  }

  signature(r) {
    const def = this.def;
    return [def.x.get(r), ...def.series.map((s) => s.get(r)), def.state ? def.state(r) : ""].join("|");
  }
}
