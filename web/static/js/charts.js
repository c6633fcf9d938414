// Charts of a run, drawn with uPlot (vendored). Each has a legend that
// reads the current minute's values as text (no hovering needed) and a
// data table for screen readers and keyboard users. On a wide screen they
// sit in a grid, the scenario's two key charts first; on a phone they are
// tabs.
import { t } from "./i18n.js";

// Okabe–Ito colours; the series of a chart also differ by dash, so the
// charts read without colour.
export const colours = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"];
const dashes = [[], [6, 4], [2, 3], [10, 3, 2, 3]];

const pct = (v) => 100 * v;

// unitText is a unit as shown: "unit.…" names a catalogue message (words
// that change with the language, "req/s"), anything else is a symbol.
const unitText = (u) => (u && u.startsWith("unit.") ? t(u) : u);

// The console's charts: what each plots, on which scale, in what unit.
// Every scale starts at zero: requests, latency, burn, fleet and money
// have a meaningful zero, and a chart that starts elsewhere exaggerates.
export const chartDefs = [
  {
    id: "requests",
    scales: { y: { unit: "unit.req_s" } },
    series: [
      { key: "requests_per_s", digits: 0, unit: "unit.req_s" },
      { key: "admitted_per_s", digits: 0, unit: "unit.req_s" },
    ],
  },
  {
    id: "latency",
    scales: { y: { unit: "ms" }, pct: { unit: "%", right: true } },
    series: [
      { key: "p99_ms", digits: 0, unit: "ms" },
      { key: "error_rate", scale: "pct", map: pct, digits: 2, unit: "%" },
    ],
  },
  {
    id: "burn",
    scales: { y: { unit: "×" }, pct: { unit: "%", right: true } },
    series: [
      { key: "burn_1h", digits: 1, unit: "×" },
      { key: "burn_5m", digits: 1, unit: "×" },
      { key: "budget_remaining", scale: "pct", map: (v) => Math.max(0, pct(v)), digits: 1, unit: "%" },
    ],
  },
  {
    id: "cache",
    scales: { pct: { unit: "%", range: [0, 100] } },
    series: [
      { key: "cache_hit", scale: "pct", map: pct, digits: 1, unit: "%" },
      { key: "db_utilization", scale: "pct", map: pct, digits: 1, unit: "%" },
    ],
  },
  {
    id: "fleet",
    scales: { y: { unit: "" } },
    series: [
      { key: "serving", digits: 0, unit: "" },
      { key: "booting", digits: 0, unit: "" },
    ],
  },
  {
    id: "cost",
    scales: { y: { unit: "unit.usd_h" }, usd: { unit: "$", right: true } },
    series: [
      { key: "fleet_cost_per_h", digits: 2, unit: "unit.usd_h" },
      { key: "cost_so_far", scale: "usd", digits: 2, unit: "$" },
    ],
  },
];

// keyCharts are the two charts each scenario is played on.
export const keyCharts = {
  "bad-deploy": ["latency", "burn"],
  surge: ["requests", "fleet"],
  "cache-flush": ["cache", "latency"],
  mystery: ["requests", "latency"],
  steady: ["requests", "cost"],
};

function fmt(v, digits) {
  return v == null || Number.isNaN(v) ? "—" : v.toFixed(digits);
}

// fromZero is a scale from zero to a little above the largest value.
const fromZero = (u, min, max) => [0, max > 0 ? max * 1.1 : 1];

// markers draws a dashed vertical line at each minute of marks().
function markers(marks) {
  return {
    hooks: {
      draw: [
        (u) => {
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "#59636e";
          ctx.lineWidth = 1.5 * devicePixelRatio;
          ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          for (const m of marks()) {
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
}

// Chart is one figure: a legend, a uPlot canvas and a data table.
class Chart {
  constructor(parent, def, clockOf, marks) {
    this.def = def;
    this.clockOf = clockOf;
    this.marks = marks;
    this.frames = [];
    this.fig = document.createElement("figure");
    this.fig.className = "chart";
    this.fig.id = `chart-${def.id}`;
    this.caption = document.createElement("figcaption");
    this.caption.id = `chart-${def.id}-cap`;
    this.fig.setAttribute("aria-labelledby", this.caption.id);
    this.legend = document.createElement("dl");
    this.legend.className = "legend";
    this.canvas = document.createElement("div");
    this.canvas.className = "chart-canvas";
    this.canvas.setAttribute("aria-hidden", "true"); // the legend and the table carry the data
    this.details = document.createElement("details");
    this.details.className = "data";
    this.summary = document.createElement("summary");
    this.wrap = document.createElement("div");
    this.wrap.className = "table-wrap";
    // A scrolling region must be reachable from the keyboard.
    this.wrap.tabIndex = 0;
    this.wrap.setAttribute("role", "region");
    this.table = document.createElement("table");
    this.thead = document.createElement("thead");
    this.tbody = document.createElement("tbody");
    this.table.append(this.thead, this.tbody);
    this.wrap.append(this.table);
    this.details.append(this.summary, this.wrap);
    this.details.addEventListener("toggle", () => this.renderTable());
    this.fig.append(this.caption, this.legend, this.canvas, this.details);
    // The panel holds the figure: a tab panel on a phone (a figure may
    // not take that role).
    this.panel = document.createElement("div");
    this.panel.className = "chart-panel";
    this.panel.id = `panel-${def.id}`;
    this.panel.append(this.fig);
    parent.append(this.panel);
    this.build();
  }

  seriesLabel(s) {
    return t(`chart.${this.def.id}.${s.key}`);
  }

  height() {
    if (window.innerWidth >= 1700 && window.innerHeight >= 1000) return 205;
    return window.innerWidth >= 1100 ? 150 : 170;
  }

  // build (re)creates the uPlot instance and the labels, for a new
  // language.
  build() {
    const def = this.def;
    const title = t(`chart.${def.id}.title`);
    this.caption.textContent = title;
    this.summary.textContent = t("chart.table_of", { chart: title });
    this.wrap.setAttribute("aria-label", t("chart.table_of", { chart: title }));
    if (this.plot) this.plot.destroy();
    const scales = { x: { time: false } };
    const axes = [
      {
        incrs: [1, 2, 5, 10, 15, 30, 60, 120, 240],
        values: (u, splits) => splits.map((m) => (Number.isInteger(m) ? this.clockOf(m) : "")),
      },
    ];
    for (const [name, sc] of Object.entries(def.scales)) {
      scales[name] = sc.range ? { auto: false, range: sc.range } : { auto: true, range: fromZero };
      axes.push({ scale: name, side: sc.right ? 1 : 3, label: unitText(sc.unit), grid: { show: !sc.right }, size: 52 });
    }
    const series = [{ label: t("chart.time") }];
    def.series.forEach((s, i) => {
      series.push({
        label: this.seriesLabel(s),
        scale: s.scale || "y",
        stroke: colours[i % colours.length],
        dash: dashes[i % dashes.length],
        width: 2,
        points: { show: false },
      });
    });
    const width = Math.max(260, this.fig.clientWidth - 18 || 520);
    this.plot = new uPlot(
      { width, height: this.height(), scales, axes, series, plugins: [markers(this.marks)], legend: { show: false } },
      this.data(),
      this.canvas,
    );
    this.legend.replaceChildren();
    this.values = def.series.map((s, i) => {
      const div = document.createElement("div");
      const dt = document.createElement("dt");
      const swatch = document.createElement("span");
      swatch.className = `swatch dash${i % dashes.length}`;
      swatch.style.borderTopColor = colours[i % colours.length];
      swatch.setAttribute("aria-hidden", "true");
      dt.append(swatch, this.seriesLabel(s));
      const dd = document.createElement("dd");
      div.append(dt, dd);
      this.legend.append(div);
      return dd;
    });
    this.renderLegend();
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
    this.renderLegend();
    this.renderTable();
  }

  // renderLegend shows the values of the last minute drawn.
  renderLegend() {
    const f = this.frames[this.frames.length - 1];
    this.def.series.forEach((s, i) => {
      const v = f ? (s.map ? s.map(f[s.key]) : f[s.key]) : null;
      this.values[i].textContent = `${fmt(v, s.digits)}${s.unit && v != null ? ` ${unitText(s.unit)}` : ""}`;
    });
  }

  resize() {
    const width = Math.max(260, this.fig.clientWidth - 18);
    if (this.fig.clientWidth > 0 && (width !== this.plot.width || this.height() !== this.plot.height)) {
      this.plot.setSize({ width, height: this.height() });
    }
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
    syncRows(this.tbody, this.frames, (f) => this.signature(f), (tr, f) => {
      rowHeader(tr, f.clock);
      for (const s of this.def.series) {
        tr.insertCell().textContent = fmt(s.map ? s.map(f[s.key]) : f[s.key], s.digits);
      }
    });
  }

  signature(f) {
    return `${f.minute}|${this.def.series.map((s) => f[s.key]).join("|")}`;
  }
}

// syncRows brings a data table's body up to date with items: rows whose
// signature still matches their item stay (a table of thousands of rows is
// not rebuilt on every minute), the first that differs and all after it
// are redrawn — a changed signature means the run changed from there.
function syncRows(tbody, items, signature, fill) {
  const rows = tbody.rows;
  let keep = Math.min(rows.length, items.length);
  for (let i = 0; i < keep; i++) {
    if (rows[i].dataset.sig !== signature(items[i])) {
      keep = i;
      break;
    }
  }
  while (rows.length > keep) tbody.deleteRow(rows.length - 1);
  for (let i = keep; i < items.length; i++) {
    const tr = tbody.insertRow();
    tr.dataset.sig = signature(items[i]);
    fill(tr, items[i]);
  }
}

// rowHeader starts a row with its header cell.
function rowHeader(tr, text) {
  const th = document.createElement("th");
  th.scope = "row";
  th.textContent = text;
  tr.append(th);
}

// narrow is the phone layout, where the charts are tabs.
const narrow = window.matchMedia("(max-width: 700px)");

// Charts holds the console's charts. marks() gives the minutes to mark
// with a dashed line (deploys).
export class Charts {
  constructor(parent, clockOf, marks = () => []) {
    this.parent = parent;
    this.clockOf = clockOf;
    this.tabs = document.createElement("div");
    this.tabs.className = "chart-tabs";
    parent.append(this.tabs);
    this.charts = chartDefs.map((def) => new Chart(parent, def, (m) => this.clockOf(m), marks));
    this.selected = this.charts[0].def.id;
    this.observer = new ResizeObserver(() => this.charts.forEach((c) => c.resize()));
    this.observer.observe(parent);
    narrow.addEventListener("change", () => this.layout());
    this.buildTabs();
  }

  // order puts the scenario's key charts first.
  order(scenario) {
    const key = keyCharts[scenario] || [];
    const rank = (c) => (key.includes(c.def.id) ? key.indexOf(c.def.id) : key.length + chartDefs.indexOf(c.def));
    this.charts.sort((a, b) => rank(a) - rank(b));
    for (const c of this.charts) this.parent.append(c.panel);
    this.selected = this.charts[0].def.id;
    this.buildTabs();
  }

  buildTabs() {
    this.tabs.replaceChildren();
    for (const c of this.charts) {
      const b = document.createElement("button");
      b.type = "button";
      b.id = `tab-${c.def.id}`;
      b.dataset.chart = c.def.id;
      b.textContent = t(`chart.${c.def.id}.title`);
      b.addEventListener("click", () => this.select(c.def.id, false));
      b.addEventListener("keydown", (e) => this.arrow(e));
      this.tabs.append(b);
    }
    this.layout();
  }

  // arrow moves between tabs with the arrow keys, Home and End.
  arrow(e) {
    const ids = this.charts.map((c) => c.def.id);
    let i = ids.indexOf(this.selected);
    if (e.key === "ArrowRight") i = (i + 1) % ids.length;
    else if (e.key === "ArrowLeft") i = (i + ids.length - 1) % ids.length;
    else if (e.key === "Home") i = 0;
    else if (e.key === "End") i = ids.length - 1;
    else return;
    e.preventDefault();
    this.select(ids[i], true);
  }

  select(id, focus) {
    this.selected = id;
    this.layout();
    if (focus) document.getElementById(`tab-${id}`).focus();
  }

  // layout makes the charts tabs on a phone and a grid elsewhere.
  layout() {
    const tabs = narrow.matches;
    this.tabs.hidden = !tabs;
    if (tabs) {
      this.tabs.setAttribute("role", "tablist");
      this.tabs.setAttribute("aria-label", t("charts.heading"));
    } else {
      this.tabs.removeAttribute("role");
      this.tabs.removeAttribute("aria-label");
    }
    for (const c of this.charts) {
      const b = document.getElementById(`tab-${c.def.id}`);
      const on = c.def.id === this.selected;
      if (tabs) {
        b.setAttribute("role", "tab");
        b.setAttribute("aria-selected", on ? "true" : "false");
        b.setAttribute("aria-controls", c.panel.id);
        b.tabIndex = on ? 0 : -1;
        c.panel.setAttribute("role", "tabpanel");
        c.panel.setAttribute("aria-labelledby", b.id);
        c.panel.hidden = !on;
      } else {
        c.panel.removeAttribute("role");
        c.panel.removeAttribute("aria-labelledby");
        c.panel.hidden = false;
      }
    }
    requestAnimationFrame(() => this.charts.forEach((c) => c.resize()));
  }

  update(frames) {
    for (const c of this.charts) c.update(frames);
  }

  relabel() {
    for (const c of this.charts) c.build();
    this.buildTabs();
  }
}

// timelineChart draws the debrief's chart for the scenario: series of the
// frames (as chartDefs series), with a dashed mark at each of the player's
// actions. It returns the legend's text for the caption.
export function timelineChart(el, frames, series, actionMinutes, clockOf) {
  el.replaceChildren();
  const xs = frames.map((f) => f.minute);
  const data = [xs, ...series.map((s) => frames.map((f) => (s.map ? s.map(f[s.key]) : f[s.key])))];
  const scales = { x: { time: false }, pct: { auto: false, range: [0, 100] }, y: { auto: true, range: fromZero } };
  const axes = [
    {
      incrs: [1, 2, 5, 10, 15, 30, 60, 120, 240],
      values: (u, splits) => splits.map((m) => (Number.isInteger(m) ? clockOf(m) : "")),
    },
  ];
  const used = [...new Set(series.map((s) => s.scale))];
  used.forEach((name, i) => axes.push({ scale: name, side: i === 0 ? 3 : 1, label: name === "pct" ? "%" : series.find((s) => s.scale === name).unit, grid: { show: i === 0 }, size: 50 }));
  return new uPlot(
    {
      width: Math.max(280, el.clientWidth || 720),
      height: 220,
      plugins: [markers(() => actionMinutes)],
      scales,
      axes,
      series: [
        { label: t("chart.time"), value: (u, v) => (v == null ? "—" : clockOf(v)) },
        ...series.map((s, i) => ({
          label: s.label,
          scale: s.scale,
          stroke: colours[i % colours.length],
          dash: dashes[i % dashes.length],
          width: 2,
          points: { show: false },
          paths: s.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
          value: (u, v) => fmt(v, s.digits),
        })),
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
//     bands: [{ label(), colour, on(row), lane: [i, n] }], state(row) → text for the table }
//
// A band with a lane shades the i-th of n strips across the plot's height
// instead of all of it, so that spans of several things (members cooling)
// can overlap in time and still be told apart.
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
    this.wrap.setAttribute("aria-label", t("chart.table_of", { chart: def.title() }));
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
                const h = b.lane ? u.bbox.height / b.lane[1] : u.bbox.height;
                const top = u.bbox.top + (b.lane ? b.lane[0] * h : 0);
                ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
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
    syncRows(this.tbody, this.rows, (r) => this.signature(r), (tr, r) => {
      rowHeader(tr, def.x.format(def.x.get(r)));
      for (const s of def.series) tr.insertCell().textContent = fmt(s.get(r), s.digits);
      if (def.state) tr.insertCell().textContent = def.state(r);
    });
  }

  signature(r) {
    const def = this.def;
    return [def.x.get(r), ...def.series.map((s) => s.get(r)), def.state ? def.state(r) : ""].join("|");
  }
}
