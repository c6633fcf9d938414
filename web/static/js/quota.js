// The global quota lab: the chaos harness — the real region limiter and
// lease coordinator — in virtual time, from a seed, a tenant and the
// actions taken at chosen seconds (POST /api/quota/run). The server keeps
// nothing: every action re-asks for the whole run, whose seconds before
// the action are unchanged, and the page plays it on from the second
// shown. A share link carries the run and the second.
import { t } from "./i18n.js";
import { LiveChart } from "./charts.js";
import { peers } from "./quotapeers.js";

const $ = (id) => document.getElementById(id);
const REGIONS = ["eu", "us", "ap"];
// Okabe–Ito; the regions keep their colour on every chart.
const regionColour = { eu: "#0072b2", us: "#d55e00", ap: "#009e73" };
const grey = "#59636e";

const q = {
  req: null, // the run's tenant and traffic, as the API takes them
  actions: [], // the actions taken, as the API takes them
  resp: null, // the last answer
  shown: -1, // the last frame shown; −1 before the first
  playing: false,
  timer: 0,
  speed: 10,
  busy: false, // a request in flight: playback waits for it
  generation: 0, // bumps with each request; late answers are dropped
  closeup: -1, // the action the close-up follows; −1: the last one
  replayedAt: -1, // the second a share link opened at, −1 when none
  explained: null, // [key, params] of the explanation shown, to relabel
  status: null, // likewise for the status line
  announced: "", // the verdict last said to screen readers
};
// For the browser test: the state (set at setup, once app.js has made
// window.afloat) and what each chart draws.
q.plots = () => charts.concat(closeChart ? [closeChart] : []).map((c) => ({ id: c.def.id, data: c.plot.data }));

let charts = []; // LiveCharts of the whole run
let closeChart = null;
let observer = null;

// ---- formatting ----

function clock(s) {
  const whole = Math.floor(s + 1e-9);
  const tenths = Math.round((s - whole) * 10);
  const base = `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
  return tenths ? `${base}.${tenths}` : base;
}

function num(v, digits = 0) {
  return Number(v).toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function frames() {
  return q.resp ? q.resp.frames : [];
}

function step() {
  return q.resp ? q.resp.step_s : 1;
}

// now is the second of the run shown: the end of the last frame shown.
function now() {
  return (q.shown + 1) * step();
}

function atEnd() {
  return !!q.resp && q.shown >= frames().length - 1;
}

function say(key, params) {
  q.status = key ? [key, params] : null;
  $("quota-status").textContent = key ? t(key, params) : "";
}

function explain(key, params) {
  q.explained = key ? [key, params] : null;
  $("quota-explain").textContent = key ? t(key, params) : "";
}

// ---- the form ----

// fields are the form's numbers: input id, request key, range, and the
// catalogue key of its name.
const fields = [
  { id: "quota-seed", key: "seed", min: 0, max: 4294967295, name: "setup.seed" },
  { id: "quota-rate", key: "rate", min: 10, max: 1000, name: "quota.rate" },
  { id: "quota-burst", key: "burst", min: 10, max: 100000, name: "quota.burst" },
  { id: "quota-emergency", key: "emergency", min: 1, max: 1000, name: "quota.emergency" },
  { id: "quota-lease", key: "lease_s", min: 2, max: 60, name: "quota.lease" },
  { id: "quota-minutes", key: "minutes", min: 1, max: 10, name: "quota.minutes" },
];

function invalid(input, key, params) {
  input.setAttribute("aria-invalid", "true");
  return key ? { input, key, params } : input;
}

// readInteger reads a whole number in range, or says which field is wrong.
function readInteger(id, min, max, name) {
  const input = $(id);
  input.removeAttribute("aria-invalid");
  const v = Number(input.value);
  if (input.value.trim() === "" || !Number.isInteger(v) || v < min || v > max) {
    return { error: invalid(input, "quota.invalid", { field: t(name), min: num(min), max: num(max) }) };
  }
  return { value: v };
}

// readTraffic reads three % of R inputs: each 0–300, at most 300 in all.
function readTraffic(prefix, legend) {
  const out = {};
  let total = 0;
  for (const r of REGIONS) {
    const got = readInteger(`${prefix}-${r}`, 0, 300, legend);
    if (got.error) {
      got.error.params.field = `${t(legend)}: ${r}`;
      return got;
    }
    out[r] = got.value;
    total += got.value;
  }
  if (total > 300) return { error: invalid($(`${prefix}-${REGIONS[0]}`), "quota.traffic_total", { total }) };
  return { value: out };
}

function readForm() {
  for (const el of document.querySelectorAll("#quota-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  const body = { mode: $("quota-mode").value };
  for (const f of fields) {
    if (f.key === "emergency" && body.mode !== "best-effort") continue;
    const got = readInteger(f.id, f.min, f.max, f.name);
    if (got.error) return { error: got.error };
    body[f.key] = got.value;
  }
  if (body.mode === "best-effort" && body.emergency > body.burst) {
    return { error: invalid($("quota-emergency"), "quota.invalid", { field: t("quota.emergency"), min: 1, max: num(Math.min(1000, body.burst)) }) };
  }
  const traffic = readTraffic("quota-traffic", "quota.traffic_start");
  if (traffic.error) return { error: traffic.error };
  body.traffic = traffic.value;
  return { body };
}

function showFormError(err) {
  const el = $("quota-form-error");
  if (!err) {
    el.hidden = true;
    return;
  }
  el.textContent = t(err.key, err.params);
  el.hidden = false;
  err.input.focus();
}

function modeHelp() {
  const best = $("quota-mode").value === "best-effort";
  $("quota-mode-help").textContent = t(best ? "quota.mode_help.best-effort" : "quota.mode_help.hard");
  $("quota-emergency").disabled = !best;
  $("quota-emergency-help").textContent = t(best ? "quota.range.emergency" : "quota.emergency_hard");
}

// fillForm shows a request in the form (a share link's, or the answer's).
function fillForm(req) {
  $("quota-seed").value = String(req.seed);
  $("quota-rate").value = String(req.rate);
  $("quota-burst").value = String(req.burst);
  $("quota-mode").value = req.mode;
  if (req.mode === "best-effort") $("quota-emergency").value = String(req.emergency);
  $("quota-lease").value = String(req.lease_s);
  $("quota-minutes").value = String(req.minutes);
  for (const r of REGIONS) $(`quota-traffic-${r}`).value = String(req.traffic[r] || 0);
  modeHelp();
}

// ---- the API ----

async function post(body) {
  for (let busy = 0; ; ) {
    const res = await fetch("/api/quota/run", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    // 503 + Retry-After: other runs are being computed; wait as told.
    if (res.status === 503 && res.headers.get("Retry-After") && ++busy <= 20) {
      await new Promise((done) => setTimeout(done, 1000 * Number(res.headers.get("Retry-After"))));
      continue;
    }
    if (!res.ok) {
      const err = new Error(answer.error || `HTTP ${res.status}`);
      err.field = answer.field;
      throw err;
    }
    return answer;
  }
}

// fetchRun asks for the run with the current actions and shows it from
// the second shown; it resolves to false if the server refused it.
async function fetchRun() {
  const generation = ++q.generation;
  const body = { ...q.req, actions: q.actions, closeup: closeupIndex() };
  q.busy = true;
  updateButtons();
  say("quota.computing");
  try {
    const resp = await post(body);
    if (generation !== q.generation) return false;
    q.resp = resp;
    say("quota.computed", { seed: resp.request.seed, seconds: clock(resp.seconds) });
    return true;
  } catch (err) {
    if (generation === q.generation) say("error.api", { message: err.message });
    throw err;
  } finally {
    if (generation === q.generation) {
      q.busy = false;
      updateButtons();
    }
  }
}

function closeupIndex() {
  if (q.actions.length === 0) return -1;
  return q.closeup >= 0 && q.closeup < q.actions.length ? q.closeup : q.actions.length - 1;
}

// ---- runs and actions ----

// newRun starts the form's run from 0:00 with no actions; focus moves to
// Play when the person asked for it.
async function newRun(focus = false) {
  const got = readForm();
  showFormError(got.error);
  if (got.error) return;
  pause();
  q.req = got.body;
  q.actions = [];
  q.shown = -1;
  q.closeup = -1;
  q.replayedAt = -1;
  $("quota-replay").hidden = true;
  explain(null);
  try {
    await fetchRun();
  } catch (err) {
    q.resp = null;
    // The server names the field at fault: mark its input.
    const input = inputOf(err.field);
    if (input) showFormError({ input: invalid(input), key: "error.api", params: { message: err.message } });
  }
  rebuildCharts();
  show(-1);
  if (q.resp && focus) $("quota-play").focus();
}

// inputOf is the form's input for a field the API names.
function inputOf(field) {
  if (!field) return null;
  const f = fields.find((x) => x.key === field);
  if (f) return $(f.id);
  const m = /^traffic\.(eu|us|ap)$/.exec(field);
  if (m) return $(`quota-traffic-${m[1]}`);
  return field === "traffic" ? $("quota-traffic-eu") : null;
}

function describe(a) {
  switch (a.action) {
    case "shift":
      return t("quota.did.shift", { eu: a.traffic.eu || 0, us: a.traffic.us || 0, ap: a.traffic.ap || 0 });
    case "partition":
      return t("quota.did.partition", { region: a.region });
    case "heal":
      return t("quota.did.heal", { region: a.region });
    case "crash":
      return t("quota.did.crash", { down: a.down_s });
    case "pause":
      return t("quota.did.pause", { down: a.down_s, wake: a.wake_s });
    case "skew":
      return t("quota.did.skew", { node: a.node === "coordinator" ? t("quota.node.coordinator") : a.node, drift: a.drift_ppm });
  }
  return a.action;
}

// cutNow and downUntil are what the actions so far leave: the regions cut
// off, and until when the coordinator is down or paused.
function cutNow() {
  const cut = new Set();
  for (const a of q.actions) {
    if (a.action === "partition") cut.add(a.region);
    if (a.action === "heal") cut.delete(a.region);
  }
  return cut;
}

function downUntil() {
  let until = 0;
  for (const a of q.actions) {
    if (a.action === "crash") until = a.at_s + a.down_s;
    if (a.action === "pause") until = a.at_s + Math.max(a.down_s, a.wake_s);
  }
  return until;
}

function actError(key, params) {
  const el = $("quota-act-error");
  if (!key) {
    el.hidden = true;
    return;
  }
  el.textContent = t(key, params);
  el.hidden = false;
}

// act adds an action at the second shown and plays on with it.
async function act(make) {
  if (!q.resp || q.busy) return;
  const at = now();
  if (at >= q.resp.seconds) {
    actError("quota.act_end");
    return;
  }
  const made = make(at);
  if (made.error) {
    actError(made.error[0], made.error[1]);
    return;
  }
  actError(null);
  const a = { at_s: at, ...made.action };
  q.actions.push(a);
  q.closeup = -1;
  try {
    await fetchRun();
  } catch (err) {
    q.actions.pop();
    actError("error.api", { message: err.message });
    return;
  }
  const mode = q.resp.request.mode;
  const params = {
    region: a.region || a.node || "",
    clock: clock(at),
    lease: q.resp.request.lease_s,
    e: q.resp.request.emergency,
    down: a.down_s || 0,
    wake: a.wake_s || 0,
  };
  explain(afterKey(a, mode), params);
  show(q.shown);
}

// afterKey is the explanation of what an action will do.
function afterKey(a, mode) {
  switch (a.action) {
    case "shift":
      return "quota.after.shift";
    case "partition":
      return mode === "hard" ? "quota.after.partition.hard" : "quota.after.partition.best";
    case "heal":
      return "quota.after.heal";
    case "crash":
      return "quota.after.crash";
    case "pause":
      return "quota.after.pause";
  }
  return a.node === "coordinator" ? "quota.after.skew_coordinator" : "quota.after.skew";
}

function shiftAction() {
  const got = readTraffic("quota-shift", "quota.shift");
  if (got.error) return { error: [got.error.key, got.error.params] };
  return { action: { action: "shift", traffic: got.value } };
}

function cutAction(heal) {
  const region = $("quota-cut-region").value;
  const cut = cutNow().has(region);
  if (heal && !cut) return { error: ["quota.not_cut", { region }] };
  if (!heal && cut) return { error: ["quota.already_cut", { region }] };
  return { action: { action: heal ? "heal" : "partition", region } };
}

function outageAction(pause, at) {
  const until = downUntil();
  if (at < until) return { error: ["quota.coordinator_busy", { clock: clock(until) }] };
  const down = readInteger("quota-down", 1, 120, "quota.down");
  if (down.error) return { error: [down.error.key, down.error.params] };
  if (!pause) return { action: { action: "crash", down_s: down.value } };
  const wake = readInteger("quota-wake", 1, 120, "quota.wake");
  if (wake.error) return { error: [wake.error.key, wake.error.params] };
  return { action: { action: "pause", down_s: down.value, wake_s: wake.value } };
}

function skewAction() {
  const drift = readInteger("quota-drift", -500, 500, "quota.drift");
  if (drift.error) return { error: [drift.error.key, drift.error.params] };
  return { action: { action: "skew", node: $("quota-skew-node").value, drift_ppm: drift.value } };
}

async function undo() {
  if (!q.actions.length || q.busy) return;
  const removed = q.actions.pop();
  q.closeup = -1;
  try {
    await fetchRun();
  } catch {
    q.actions.push(removed);
    return;
  }
  explain("quota.undone", { what: describe(removed), clock: clock(removed.at_s) });
  show(q.shown);
}

// ---- playback ----

function tick() {
  if (!q.playing) return;
  if (!q.busy) {
    if (atEnd()) {
      pause();
      return;
    }
    show(q.shown + 1);
  }
  q.timer = setTimeout(tick, 1000 / q.speed);
}

function play() {
  if (!q.resp || atEnd()) return;
  q.playing = true;
  updateButtons();
  clearTimeout(q.timer);
  q.timer = setTimeout(tick, 1000 / q.speed);
}

function pause() {
  q.playing = false;
  clearTimeout(q.timer);
  updateButtons();
}

function stepBy(n) {
  if (!q.resp) return;
  pause();
  show(Math.min(frames().length - 1, q.shown + n));
}

function updateButtons() {
  const ready = !!q.resp && !q.busy;
  $("quota-play").textContent = t(q.playing ? "clock.pause" : "clock.play");
  for (const id of ["quota-play", "quota-step", "quota-step10", "quota-end"]) $(id).disabled = !ready || (atEnd() && !q.playing);
  const canAct = ready && !atEnd();
  for (const id of ["quota-do-shift", "quota-do-partition", "quota-do-heal", "quota-do-crash", "quota-do-pause", "quota-do-skew"]) {
    $(id).disabled = !canAct;
  }
  $("quota-undo").disabled = !ready || q.actions.length === 0;
  $("quota-share").disabled = !q.resp;
  $("quota-run").disabled = q.busy;
}

// ---- drawing ----

function bandsOf(colour, on) {
  return [{ colour, on }];
}

function rebuildCharts() {
  for (const c of charts) c.destroy();
  charts = [];
  if (closeChart) closeChart.destroy();
  closeChart = null;
  if (!q.resp) return;
  const req = q.resp.request;
  const root = $("quota-charts");
  const x = { label: () => t("chart.time"), get: (f) => f.t + step(), format: clock };
  const best = req.mode === "best-effort";
  const ceiling = [
    { key: "excess", label: () => t("quota.series.excess"), colour: "#0072b2", digits: 0, get: (f) => f.excess },
    { key: "b", label: () => t("quota.series.b"), colour: "#000000", width: 1.5, digits: 0, get: () => req.burst },
  ];
  if (best) {
    ceiling.push({ key: "b3e", label: () => t("quota.series.b3e"), colour: "#cc79a7", dash: [6, 4], digits: 0, get: () => req.burst + 3 * req.emergency });
  }
  charts.push(
    new LiveChart(root, {
      id: "quota-tenant",
      title: () => t("quota.chart.tenant"),
      x,
      scales: { y: { unit: () => t("quota.unit.per_s"), min0: true } },
      series: [
        { key: "offered", label: () => t("quota.series.offered"), colour: grey, dash: [6, 4], digits: 0, get: (f) => f.offered },
        { key: "admitted", label: () => t("quota.series.admitted"), colour: "#0072b2", digits: 0, get: (f) => f.admitted },
        { key: "r", label: () => t("quota.series.r"), colour: "#000000", width: 1.5, digits: 0, get: () => req.rate },
      ],
      bands: bandsOf("rgba(89, 99, 110, 0.18)", (f) => f.down),
      state: (f) => (f.down ? t("quota.state.coordinator_down") : t("quota.state.coordinator_up", { epoch: f.epoch })),
    }),
    new LiveChart(root, {
      id: "quota-ceiling",
      title: () => t("quota.chart.ceiling"),
      x,
      scales: { y: { unit: () => t("quota.unit.tokens"), range: [0, Math.ceil(1.15 * (req.burst + (best ? 3 * req.emergency : 0)))] } },
      series: ceiling,
      state: (f) => (f.excess > req.burst + (best ? 3 * req.emergency : 0) + 1e-6 ? t("quota.state.over") : t("quota.state.under")),
    }),
  );
  REGIONS.forEach((r, i) => {
    charts.push(
      new LiveChart(root, {
        id: `quota-region-${r}`,
        title: () => t("quota.chart.region", { region: r }),
        x,
        scales: { y: { unit: () => t("quota.unit.per_s"), min0: true }, tok: { unit: () => t("quota.unit.tokens"), right: true, min0: true } },
        series: [
          { key: "demand", label: () => t("quota.series.demand"), colour: grey, dash: [6, 4], digits: 0, get: (f) => f.regions[i].demand },
          { key: "admitted", label: () => t("quota.series.admitted"), colour: "#0072b2", digits: 0, get: (f) => f.regions[i].admitted },
          { key: "rate", label: () => t("quota.series.rate"), colour: "#d55e00", digits: 1, stepped: true, get: (f) => f.regions[i].rate },
          { key: "burst", label: () => t("quota.series.burst"), scale: "tok", colour: "#cc79a7", dash: [2, 3], digits: 0, stepped: true, get: (f) => f.regions[i].burst },
          { key: "balance", label: () => t("quota.series.balance"), scale: "tok", colour: "#009e73", dash: [10, 3, 2, 3], digits: 0, get: (f) => f.regions[i].balance },
        ],
        bands: bandsOf("rgba(213, 94, 0, 0.16)", (f) => f.regions[i].cut),
        state: (f) => regionState(f.regions[i]),
      }),
    );
  });
  closeChart = new LiveChart($("quota-closeup-chart"), {
    id: "quota-closeup",
    title: () => closeupTitle(),
    x: { label: () => t("chart.time"), get: (f) => f.t + q.resp.closeup.step_s, format: clock },
    scales: { y: { unit: () => t("quota.unit.per_s"), min0: true } },
    series: REGIONS.flatMap((r, i) => [
      { key: `admitted-${r}`, label: () => t("quota.series.region_admitted", { region: r }), colour: regionColour[r], digits: 0, get: (f) => f.regions[i].admitted },
      { key: `rate-${r}`, label: () => t("quota.series.region_rate", { region: r }), colour: regionColour[r], dash: [6, 4], stepped: true, digits: 1, get: (f) => f.regions[i].rate },
    ]),
    height: 240,
    state: (f) => REGIONS.map((r, i) => `${r}: ${regionState(f.regions[i])}`).join("; "),
  });
  if (!observer) {
    observer = new ResizeObserver(() => {
      for (const c of charts) c.resize();
      if (closeChart) closeChart.resize();
    });
    observer.observe($("quota-charts"));
  }
}

function closeupTitle() {
  const c = q.resp && q.resp.closeup;
  if (!c) return t("quota.closeup_heading");
  const a = q.actions[c.action];
  return t("quota.chart.closeup", { what: a ? describe(a) : "", clock: clock(a ? a.at_s : c.from_s) });
}

function regionState(r) {
  const parts = [];
  if (r.cut) parts.push(t("quota.state.cut"));
  if (r.lease) parts.push(t("quota.state.leased"));
  else parts.push(t("quota.state.no_lease"));
  if (r.no_lease > 0) parts.push(t("quota.state.emergency"));
  return parts.join(" · ");
}

// show draws the run up to frame k.
function show(k) {
  q.shown = k;
  const fs = frames();
  const upTo = fs.slice(0, k + 1);
  $("quota-clock").textContent = clock(now());
  $("quota-of").textContent = q.resp ? t("quota.clock_of", { total: clock(q.resp.seconds) }) : "";
  $("quota-act-h").textContent = t("quota.act_heading", { clock: clock(now()) });
  $("quota-now-h").textContent = t("quota.now_heading", { clock: clock(now()) });
  for (const c of charts) c.update(upTo);
  showCloseup();
  showNow(k >= 0 ? fs[k] : null);
  showVerdict(upTo);
  showActions();
  if (!$("quota-share-box").hidden) $("quota-share-link").value = shareLink();
  updateButtons();
}

function showCloseup() {
  const sel = $("quota-closeup");
  const idx = closeupIndex();
  const opts = q.actions.map((a, i) => [String(i), `${clock(a.at_s)} — ${describe(a)}`]);
  if (sel.options.length !== opts.length || [...sel.options].some((o, i) => o.textContent !== opts[i][1])) {
    sel.replaceChildren(
      ...opts.map(([v, text]) => {
        const o = document.createElement("option");
        o.value = v;
        o.textContent = text;
        return o;
      }),
    );
  }
  sel.disabled = opts.length === 0;
  if (idx >= 0) sel.value = String(idx);
  const c = q.resp && q.resp.closeup;
  $("quota-closeup-empty").hidden = !!c;
  $("quota-closeup-chart").hidden = !c;
  if (!closeChart || !c) return;
  closeChart.caption.textContent = closeupTitle();
  const t0 = now();
  closeChart.update(c.frames.filter((f) => f.t + c.step_s <= t0 + 1e-9));
}

function showNow(f) {
  const tbody = $("quota-now").tBodies[0];
  tbody.replaceChildren();
  const rows = REGIONS.map((r, i) => [r, f ? f.regions[i] : null]);
  for (const [name, r] of rows) {
    const tr = tbody.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = name;
    tr.append(th);
    const cells = r
      ? [num(r.demand), num(r.admitted), num(r.refused), num(r.rate, 1), num(r.burst), num(r.balance), regionState(r)]
      : ["—", "—", "—", "—", "—", "—", "—"];
    for (const v of cells) tr.insertCell().textContent = v;
    tr.className = r && (r.cut || !r.lease) ? "warn" : "";
  }
  if (f) {
    const tr = tbody.insertRow();
    tr.className = "total";
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t("quota.tenant_row");
    tr.append(th);
    const sum = (key) => f.regions.reduce((a, r) => a + r[key], 0);
    for (const v of [num(sum("demand")), num(f.admitted), num(sum("refused")), num(sum("rate"), 1), num(sum("burst")), num(sum("balance"))]) {
      tr.insertCell().textContent = v;
    }
    tr.insertCell().textContent = t("quota.tenant_limits", { rate: num(q.resp.request.rate), burst: num(q.resp.request.burst) });
  }
  const coord = $("quota-coordinator");
  coord.textContent = !f ? "" : f.down ? t("quota.coordinator_down", { epoch: f.epoch }) : t("quota.coordinator_up", { epoch: f.epoch });
  coord.classList.toggle("warn", !!(f && f.down));
}

// showVerdict says whether the bound holds: so far, from the worst window
// of each frame; at the end, the checker's verdict on the whole run.
function showVerdict(upTo) {
  const el = $("quota-verdict");
  const detail = $("quota-verdict-detail");
  if (!q.resp) {
    el.textContent = "";
    detail.textContent = "";
    return;
  }
  const req = q.resp.request;
  const v = q.resp.verdict;
  const allowed = req.mode === "best-effort" ? 3 * req.emergency : 0;
  let held;
  if (atEnd()) {
    held = v.held;
    if (held) {
      const key = v.worst_excess <= 0 ? "quota.verdict.held" : "quota.verdict.held_allowance";
      el.textContent = t(key, { under: num(-v.worst_excess, 1), over: num(v.worst_excess, 1), allowed: num(allowed) });
      detail.textContent = t("quota.verdict.window", { from: clock(v.worst_from_s), to: clock(v.worst_to_s), peak_rate: num(v.peak_rate, 1), peak_burst: num(v.peak_burst, 1) });
    } else {
      el.textContent = t("quota.verdict.broken", { n: v.violations });
      detail.textContent = v.messages && v.messages.length ? v.messages[0] : "";
    }
  } else {
    const worst = upTo.reduce((m, f) => Math.max(m, f.excess), 0);
    held = worst <= req.burst + allowed + 1e-6;
    if (!held) el.textContent = t("quota.verdict.so_far_broken", { over: num(worst - req.burst, 1) });
    else if (worst > req.burst) el.textContent = t("quota.verdict.so_far_allowance", { over: num(worst - req.burst, 1), allowed: num(allowed) });
    else el.textContent = t("quota.verdict.so_far", { under: num(req.burst - worst, 1) });
    detail.textContent = t("quota.verdict.at_end");
  }
  el.classList.toggle("held", held);
  el.classList.toggle("broken", !held);
  // The verdict changes every second while the run plays; screen readers
  // hear it only when it turns (the bound broken) and at the end.
  const turn = `${atEnd() ? "end" : "so far"} ${held}`;
  if (turn !== q.announced) {
    q.announced = turn;
    $("quota-announce").textContent = atEnd() || !held ? el.textContent : "";
  }
}

function showActions() {
  const ol = $("quota-actions");
  ol.replaceChildren();
  for (const a of q.actions) {
    const li = document.createElement("li");
    li.textContent = `${clock(a.at_s)} — ${describe(a)}`;
    ol.append(li);
  }
  $("quota-no-actions").hidden = q.actions.length > 0;
}

// ---- share links ----

function shareLink() {
  const closeup = q.actions.length ? `&closeup=${closeupIndex()}` : "";
  return `${location.origin}/?${q.resp.share}&at=${now()}${closeup}#quota`;
}

// decodeLink reads a share link's query into a request and actions; the
// server checks what it is given, and names the field if it is wrong.
function decodeLink(params) {
  const n = (k, d) => (params.has(k) ? Number(params.get(k)) : d);
  const traffic = (s) => {
    const parts = (s || "").split(":").map(Number);
    return Object.fromEntries(REGIONS.map((r, i) => [r, parts[i] || 0]));
  };
  const req = {
    seed: n("seed", 1),
    rate: n("rate", 500),
    burst: n("burst", 6000),
    mode: params.get("mode") || "hard",
    lease_s: n("lease", 10),
    minutes: n("minutes", 5),
    traffic: params.has("traffic") ? traffic(params.get("traffic")) : { eu: 72, us: 36, ap: 12 },
  };
  if (req.mode === "best-effort") req.emergency = n("emergency", 100);
  const actions = [];
  for (const item of (params.get("actions") || "").split(",").filter(Boolean)) {
    const [at, action, ...rest] = item.split(":");
    const a = { at_s: Number(at), action };
    if (action === "shift") a.traffic = traffic(rest.join(":"));
    else if (action === "partition" || action === "heal") a.region = rest[0];
    else if (action === "crash") a.down_s = Number(rest[0]);
    else if (action === "pause") {
      a.down_s = Number(rest[0]);
      a.wake_s = Number(rest[1]);
    } else if (action === "skew") {
      a.node = rest[0];
      a.drift_ppm = Number(rest[1]);
    }
    actions.push(a);
  }
  return { req, actions, at: n("at", 0), closeup: n("closeup", -1) };
}

async function openLink(params) {
  const link = decodeLink(params);
  q.req = link.req;
  q.actions = link.actions;
  // The close-up the link names, else the last action already shown.
  q.closeup = Number.isInteger(link.closeup) && link.closeup >= 0 && link.closeup < q.actions.length
    ? link.closeup
    : q.actions.reduce((last, a, i) => (a.at_s <= link.at ? i : last), -1);
  if (q.closeup < 0 && q.actions.length) q.closeup = 0;
  try {
    await fetchRun();
  } catch {
    q.resp = null;
    return;
  }
  fillForm(q.resp.request);
  const at = Number.isInteger(link.at) ? Math.max(0, Math.min(link.at, q.resp.seconds)) : 0;
  q.replayedAt = at;
  q.shown = Math.round(at / step()) - 1;
  $("quota-replay").hidden = false;
  replayNote();
}

function replayNote() {
  $("quota-replay-note").textContent = t("quota.replay_note", { clock: clock(q.replayedAt), n: q.actions.length, seed: q.resp.request.seed });
}

// ---- the page ----

function setup() {
  window.afloat.quota = q;
  peers.setup();
  $("quota-form").addEventListener("submit", (e) => {
    e.preventDefault();
    newRun(true);
  });
  $("quota-mode").addEventListener("change", modeHelp);
  $("quota-play").addEventListener("click", () => (q.playing ? pause() : play()));
  $("quota-step").addEventListener("click", () => stepBy(1));
  $("quota-step10").addEventListener("click", () => stepBy(10));
  $("quota-end").addEventListener("click", () => stepBy(frames().length));
  $("quota-speed").addEventListener("change", () => (q.speed = Number($("quota-speed").value)));
  $("quota-do-shift").addEventListener("click", () => act(() => shiftAction()));
  $("quota-do-partition").addEventListener("click", () => act(() => cutAction(false)));
  $("quota-do-heal").addEventListener("click", () => act(() => cutAction(true)));
  $("quota-do-crash").addEventListener("click", () => act((at) => outageAction(false, at)));
  $("quota-do-pause").addEventListener("click", () => act((at) => outageAction(true, at)));
  $("quota-do-skew").addEventListener("click", () => act(() => skewAction()));
  $("quota-undo").addEventListener("click", undo);
  $("quota-closeup").addEventListener("change", async () => {
    q.closeup = Number($("quota-closeup").value);
    try {
      await fetchRun();
    } catch {
      return;
    }
    rebuildCloseup();
  });
  $("quota-share").addEventListener("click", () => {
    const box = $("quota-share-box");
    box.hidden = !box.hidden;
    $("quota-share-link").value = shareLink();
    if (!box.hidden) $("quota-share-link").select();
  });
  $("quota-copy-link").addEventListener("click", async () => {
    $("quota-share-link").select();
    try {
      await navigator.clipboard.writeText($("quota-share-link").value);
      say("share.copied");
    } catch {
      say("share.select");
    }
  });
  modeHelp();
  updateButtons();
}

function rebuildCloseup() {
  if (closeChart) closeChart.build();
  show(q.shown);
}

async function start(params) {
  if (params.get("lab") === "quota") await openLink(params);
}

async function render() {
  peers.render(); // the measured comparison: independent of the run
  if (!q.resp && !q.busy && !q.req) {
    await newRun();
    return;
  }
  if (q.resp && charts.length === 0) rebuildCharts();
  for (const c of charts) c.resize();
  if (q.resp) show(q.shown);
}

function relabel() {
  peers.relabel();
  modeHelp();
  if (q.resp) {
    for (const c of charts) c.build();
    if (closeChart) closeChart.build();
    show(q.shown);
    if (q.replayedAt >= 0) replayNote();
  }
  if (q.status) $("quota-status").textContent = t(q.status[0], q.status[1]);
  if (q.explained) $("quota-explain").textContent = t(q.explained[0], q.explained[1]);
  updateButtons();
}

export const page = { id: "quota", heading: "quota-h", setup, start, render, relabel, leave: pause };
