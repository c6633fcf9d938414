// The afloat console: the on-call simulator in the browser.
//
// The server is stateless: a run is (scenario, seed, noise, actions), and
// every frame shown comes from GET /api/run, which recomputes the run. The
// page keeps the frames it has fetched, plays them at the chosen speed and
// refetches from the minute a new action changes.
import * as i18n from "./i18n.js";
import { t } from "./i18n.js";
import { Charts, timelineChart } from "./charts.js";
import { setupLab, renderLab, relabelLab } from "./lab.js";
import { setupAssign, renderAssign, leaveAssign, relabelAssign } from "./assign.js";

const $ = (id) => document.getElementById(id);

// LOOKAHEAD is how many minutes past the next one a fetch asks for, so that
// play at 10× needs a request only every second or so.
const LOOKAHEAD = 10;

const state = {
  info: null, // GET /api/scenarios
  scenario: null, // the chosen scenario's info
  seed: 1,
  noise: true,
  actions: [], // {minute, control, value}; value undefined for buttons
  frames: [], // frames fetched, contiguous from minute 0
  shown: -1, // the minute on the dashboard
  playing: false,
  speed: 1,
  timer: 0,
  generation: 0, // bumps when the run changes; late answers are dropped
  fetching: null,
  stepping: false,
  replayedTo: 0, // minutes replayed from a share link, 0 when none
};
// For tests and the curious: the state, the catalogue keys found missing,
// and how long each minute took to draw (the last 1,000), with the main
// thread's long tasks, which docs/benchmarks.md reports at 10× speed.
const perf = { renders: [], shownAt: [], longTasks: 0 };
window.afloat = { state, missing: i18n.missing, perf, ready: false };
try {
  new PerformanceObserver((list) => (perf.longTasks += list.getEntries().length)).observe({ type: "longtask" });
} catch {
  // a browser without long-task timing: perf.longTasks stays 0
}

// ---------------------------------------------------------------- API

async function api(path, params) {
  const res = await fetch(`${path}?${params}`, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

function controlSpec(id) {
  return state.info.controls.find((c) => c.control === id);
}

// encodeActions writes actions as the share-link form minute:control[:value].
function encodeActions(actions) {
  return actions
    .map((a) => {
      const kind = controlSpec(a.control).kind;
      if (kind === "press") return `${a.minute}:${a.control}`;
      if (kind === "bool") return `${a.minute}:${a.control}:${a.value ? "true" : "false"}`;
      return `${a.minute}:${a.control}:${a.value}`;
    })
    .join(",");
}

function runParams(extra = {}) {
  const p = new URLSearchParams();
  p.set("scenario", state.scenario.name);
  p.set("seed", String(state.seed));
  p.set("noise", state.noise ? "1" : "0");
  if (state.actions.length) p.set("actions", encodeActions(state.actions));
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  return p;
}

// ensureFrames makes sure frames 0 … upTo−1 are here, fetching a few more.
async function ensureFrames(upTo) {
  const length = state.scenario.minutes;
  upTo = Math.min(upTo, length);
  while (state.frames.length < upTo) {
    if (state.fetching) {
      await state.fetching.catch(() => {});
      continue;
    }
    const generation = state.generation;
    const from = state.frames.length;
    const to = Math.min(length, Math.max(upTo, state.shown + 2 + LOOKAHEAD));
    state.fetching = api("/api/run", runParams({ from, to }));
    try {
      const body = await state.fetching;
      if (generation === state.generation && state.frames.length === from) {
        state.frames.push(...body.frames);
      }
      clearError();
    } catch (err) {
      showError(t("error.api", { message: err.message }));
      throw err;
    } finally {
      state.fetching = null;
    }
  }
}

// ---------------------------------------------------------------- clock

function clockOf(minute) {
  const [h, m] = state.scenario.start.split(":").map(Number);
  const total = (((h * 60 + m + Math.round(minute)) % 1440) + 1440) % 1440;
  return `${String(Math.floor(total / 60)).padStart(2, "0")}:${String(total % 60).padStart(2, "0")}`;
}

async function step() {
  if (!state.scenario || state.stepping || state.shown >= state.scenario.minutes - 1) return;
  state.stepping = true;
  try {
    const next = state.shown + 1;
    await ensureFrames(next + 1);
    // An action may have dropped frames while this one was fetched.
    while (state.frames.length <= next) await ensureFrames(next + 1);
    show(next);
  } finally {
    state.stepping = false;
  }
  if (state.shown >= state.scenario.minutes - 1) finish();
}

async function loop() {
  if (!state.playing) return;
  const started = performance.now();
  try {
    await step();
  } catch {
    pause();
    return;
  }
  if (!state.playing) return;
  const delay = Math.max(0, 1000 / state.speed - (performance.now() - started));
  state.timer = setTimeout(loop, delay);
}

function play() {
  if (state.playing || state.shown >= state.scenario.minutes - 1) return;
  state.playing = true;
  state.replayedTo = 0;
  $("replay").hidden = true;
  updatePlayButton();
  loop();
}

function pause() {
  state.playing = false;
  clearTimeout(state.timer);
  updatePlayButton();
}

function updatePlayButton() {
  const b = $("play");
  b.textContent = t(state.playing ? "clock.pause" : "clock.play");
  b.setAttribute("aria-pressed", state.playing ? "true" : "false");
  const over = state.scenario && state.shown >= state.scenario.minutes - 1;
  b.disabled = over;
  $("step").disabled = over;
}

function finish() {
  pause();
  announce(t("end.note"));
  location.hash = "#debrief";
}

// ---------------------------------------------------------------- actions

// act queues a move for the next minute: the dashboard shows minute m, so
// the player's answer to it takes effect at the start of m+1.
function act(control, value) {
  const minute = state.shown + 1;
  if (minute >= state.scenario.minutes) return;
  state.actions = state.actions.filter((a) => !(a.minute === minute && a.control === control));
  state.actions.push(value === undefined ? { minute, control } : { minute, control, value });
  state.actions.sort((a, b) => a.minute - b.minute);
  invalidateFrom(minute);
  announce(t("control.queued", { label: t(`control.${control}.label`), clock: clockOf(minute) }));
  syncControls();
}

// invalidateFrom drops the frames an action changes.
function invalidateFrom(minute) {
  state.generation++;
  if (state.frames.length > minute) state.frames.length = minute;
}

function pending(control) {
  return state.actions.find((a) => a.control === control && a.minute > state.shown);
}

// ---------------------------------------------------------------- rendering

const metrics = [
  { id: "burn_1h", text: (f) => `${f.burn_1h.toFixed(1)} ×`, warn: (f) => f.burn_1h >= 14.4 },
  { id: "requests", text: (f) => `${Math.round(f.requests_per_s)} req/s` },
  { id: "serving", text: (f) => `${f.serving}` },
  { id: "booting", text: (f) => `${f.booting}` },
  { id: "cache_hit", text: (f) => `${Math.round(100 * f.cache_hit)} %` },
  { id: "db_utilization", text: (f) => `${Math.round(100 * f.db_utilization)} %`, warn: (f) => f.db_utilization >= 0.9 },
  { id: "shed", text: (f) => `${Math.round(100 * f.shed_share)} %` },
  { id: "fleet_cost", text: (f) => `${f.fleet_cost_per_h.toFixed(2)} $/h` },
  { id: "cost_so_far", text: (f) => `${f.cost_so_far.toFixed(2)} $` },
  { id: "mean_age", text: (f) => `${+f.mean_age_s.toFixed(1)} s` },
  { id: "bad_build", text: (f) => `${Math.round(100 * f.bad_build_share)} %`, warn: (f) => f.bad_build_share > 0 },
  { id: "recommendations", text: (f) => `${Math.round(100 * f.recommendations_available)} %` },
];

function buildDashboard() {
  const dl = $("dashboard");
  dl.replaceChildren();
  for (const m of metrics) {
    const div = document.createElement("div");
    div.className = "tile";
    div.dataset.metric = m.id;
    const dt = document.createElement("dt");
    dt.textContent = t(`metric.${m.id}`);
    const dd = document.createElement("dd");
    dd.id = `metric-${m.id}`;
    dd.textContent = "—";
    div.append(dt, dd);
    dl.append(div);
  }
}

function show(minute) {
  const started = performance.now();
  state.shown = minute;
  const f = state.frames[minute];
  for (const m of metrics) {
    const dd = $(`metric-${m.id}`);
    dd.textContent = m.text(f);
    dd.parentElement.classList.toggle("warn", !!(m.warn && m.warn(f)));
  }
  $("clock").textContent = f.clock;
  $("minute-of").textContent = t("clock.minute", { minute, total: state.scenario.minutes });
  const budget = $("budget");
  budget.textContent = t("budget.left", { value: (100 * f.budget_remaining).toFixed(1) });
  budget.classList.toggle("low", f.budget_remaining < 0.1);
  charts.update(state.frames.slice(0, minute + 1));
  showPage();
  syncControls();
  updatePlayButton();
  if (!$("share-box").hidden) updateShareLink();
  $("fork-minute").max = String(minute);
  const now = performance.now();
  perf.renders.push(now - started);
  perf.shownAt.push(now);
  if (perf.renders.length > 1000) {
    perf.renders.shift();
    perf.shownAt.shift();
  }
}

// showPage raises the page banner while the burn-rate rule holds and says
// when it stopped; the banner is a live region, so screen readers announce
// both. It depends only on the frames, so a replayed run shows the same.
function showPage() {
  const el = $("page-alert");
  const frames = state.frames;
  const now = state.shown;
  let text = "";
  if (frames[now].paged) {
    let start = now;
    while (start > 0 && frames[start - 1].paged) start--;
    const s = frames[start];
    text = t("page.alert", { clock: s.clock, burn1h: s.burn_1h.toFixed(1), burn5m: s.burn_5m.toFixed(1) });
    el.classList.remove("resolved");
  } else {
    let end = now;
    while (end > 0 && !(frames[end - 1].paged && !frames[end].paged)) end--;
    if (end > 0) {
      text = t("page.resolved", { clock: frames[end].clock });
      el.classList.add("resolved");
    }
  }
  if (el.textContent !== text) el.textContent = text;
  el.hidden = text === "";
}

// Controls are shown in the units people think in: percentages for the
// target and shedding, seconds for the TTL.
const displayScale = { target_utilization: 100, shed_low_priority: 100 };
const displayUnit = { fleet_floor: "", target_utilization: "%", cache_ttl_s: "s", shed_low_priority: "%" };

function buildControls() {
  const root = $("controls");
  root.replaceChildren();
  for (const spec of state.info.controls) {
    const id = spec.control;
    const box = document.createElement("div");
    box.className = "control";
    box.dataset.control = id;
    const head = document.createElement("div");
    head.className = "head";
    const help = document.createElement("p");
    help.className = "help";
    help.id = `help-${id}`;
    help.textContent = t(`control.${id}.help`);
    const note = document.createElement("span");
    note.className = "pending";
    note.id = `pending-${id}`;
    const errorLine = document.createElement("p");
    errorLine.className = "field-error";
    errorLine.id = `error-${id}`;
    errorLine.setAttribute("role", "status");

    if (spec.kind === "press") {
      const button = document.createElement("button");
      button.type = "button";
      button.id = `control-${id}`;
      button.textContent = t(`control.${id}.press`);
      button.setAttribute("aria-describedby", help.id);
      button.addEventListener("click", () => act(id));
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = t(`control.${id}.label`);
      const running = document.createElement("span");
      running.className = "running";
      running.id = `running-${id}`;
      head.append(button, running, note);
      box.append(head, help);
    } else if (spec.kind === "bool") {
      const input = document.createElement("input");
      input.type = "checkbox";
      input.id = `control-${id}`;
      input.setAttribute("aria-describedby", help.id);
      input.addEventListener("change", () => act(id, input.checked));
      const label = document.createElement("label");
      label.htmlFor = input.id;
      label.textContent = t(`control.${id}.label`);
      head.append(input, label, note);
      box.append(head, help);
    } else {
      const scale = displayScale[id] || 1;
      const label = document.createElement("label");
      label.htmlFor = `control-${id}`;
      label.textContent = t(`control.${id}.label`);
      const input = document.createElement("input");
      input.type = "number";
      input.id = `control-${id}`;
      input.min = String(spec.min * scale);
      input.max = String(spec.max * scale);
      input.step = spec.kind === "integer" ? "1" : "any";
      input.setAttribute("aria-describedby", `${help.id} ${errorLine.id}`);
      const unit = document.createElement("span");
      unit.className = "unit";
      unit.textContent = displayUnit[id] || "";
      input.addEventListener("change", () => {
        const shown = Number(input.value);
        const value = shown / scale;
        const ok =
          input.value.trim() !== "" &&
          Number.isFinite(shown) &&
          value >= spec.min - 1e-12 &&
          value <= spec.max + 1e-12 &&
          (spec.kind !== "integer" || Number.isInteger(shown));
        if (!ok) {
          errorLine.textContent = t("control.error.range", {
            label: t(`control.${id}.label`),
            min: spec.min * scale,
            max: spec.max * scale,
          });
          input.setAttribute("aria-invalid", "true");
          return;
        }
        errorLine.textContent = "";
        input.removeAttribute("aria-invalid");
        act(id, Math.min(spec.max, Math.max(spec.min, value)));
      });
      head.append(label, input, unit, note);
      box.append(head, help, errorLine);
    }
    root.append(box);
  }
}

// syncControls shows each lever's position: the pending value if the
// player has just moved it, else the minute's.
function syncControls() {
  const f = state.frames[state.shown];
  if (!f) return;
  for (const spec of state.info.controls) {
    const id = spec.control;
    const el = $(`control-${id}`);
    const p = pending(id);
    $(`pending-${id}`).textContent = p ? t("pending", { clock: clockOf(p.minute) }) : "";
    if (spec.kind === "press") {
      const left = id === "warmup" ? f.warmup_minutes_left : f.rollback_minutes_left;
      $(`running-${id}`).textContent = left > 0 ? t(`control.${id}.running`, { minutes: left }) : "";
      el.disabled = id === "warmup" && left > 0 && !p;
      continue;
    }
    if (document.activeElement === el) continue;
    const value = p ? p.value : f[id];
    if (spec.kind === "bool") el.checked = !!value;
    else el.value = String(+(value * (displayScale[id] || 1)).toFixed(4));
  }
}

function announce(text) {
  $("status").textContent = text;
}

function showError(text) {
  const el = $("error");
  el.textContent = text;
  el.hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

// ---------------------------------------------------------------- setup

function buildScenarios() {
  const root = $("scenarios");
  const chosen = document.querySelector('input[name="scenario"]:checked')?.value || "bad-deploy";
  root.replaceChildren();
  for (const sc of state.info.scenarios) {
    const card = document.createElement("div");
    card.className = "scenario-card";
    const input = document.createElement("input");
    input.type = "radio";
    input.name = "scenario";
    input.value = sc.name;
    input.id = `scenario-${sc.name}`;
    input.checked = sc.name === chosen;
    const label = document.createElement("label");
    label.htmlFor = input.id;
    label.textContent = ` ${t(`scenario.${sc.name}.title`)}`;
    const brief = document.createElement("p");
    brief.id = `brief-${sc.name}`;
    brief.textContent = t(`scenario.${sc.name}.briefing`);
    const meta = document.createElement("p");
    meta.className = "help";
    meta.textContent = t("setup.meta", {
      minutes: sc.minutes,
      start: sc.start,
      boot: sc.boot_delay_minutes,
      budget: Math.round(100 * sc.budget_remaining),
    });
    input.setAttribute("aria-describedby", `${brief.id}`);
    card.append(input, label, brief, meta);
    root.append(card);
  }
}

function randomSeed() {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

async function startGame(name, seed, noise, actions = [], upTo = 1) {
  pause();
  state.scenario = state.info.scenarios.find((s) => s.name === name);
  state.seed = seed;
  state.noise = noise;
  state.actions = actions;
  state.frames = [];
  state.shown = -1;
  state.generation++;
  $("page-alert").hidden = true;
  $("share-box").hidden = true;
  $("scenario-name").textContent = t(`scenario.${name}.title`);
  $("seed-shown").textContent = String(seed);
  $("setup").hidden = true;
  $("game").hidden = false;
  await ensureFrames(upTo);
  show(upTo - 1);
}

// replayFromLink opens a shared run: it replays it to where it was shared
// and waits; Play continues it, Fork drops what came after a minute.
async function replayFromLink(params) {
  const name = params.get("scenario");
  if (!state.info.scenarios.some((s) => s.name === name)) {
    showError(t("error.api", { message: `scenario "${name}"` }));
    return false;
  }
  // The server checks the link; decode the actions it accepted.
  const probe = new URLSearchParams(params);
  probe.delete("at");
  probe.delete("lang");
  probe.set("from", "0");
  probe.set("to", "1");
  let body;
  try {
    body = await api("/api/run", probe);
  } catch (err) {
    showError(t("error.link", { message: err.message }));
    return false;
  }
  const actions = decodeActions(params.get("actions") || "");
  const length = state.info.scenarios.find((s) => s.name === name).minutes;
  let at = Number(params.get("at") || 1);
  if (!Number.isInteger(at) || at < 1 || at > length) at = 1;
  await startGame(name, body.seed, body.noise, actions, at);
  state.replayedTo = at;
  $("replay-note").textContent = t("replay.note", { clock: clockOf(at - 1), minute: at - 1 });
  $("fork-minute").value = String(at - 1);
  $("replay").hidden = false;
  return true;
}

function decodeActions(text) {
  if (!text) return [];
  return text.split(",").map((item) => {
    const [m, control, v] = item.split(":");
    const a = { minute: Number(m), control };
    const kind = controlSpec(control)?.kind;
    if (kind === "bool") a.value = v === "true";
    else if (kind !== "press") a.value = Number(v);
    return a;
  });
}

function fork() {
  const k = Number($("fork-minute").value);
  if (!Number.isInteger(k) || k < 0 || k > state.shown) {
    showError(t("replay.fork_error", { max: state.shown }));
    return;
  }
  pause();
  state.actions = state.actions.filter((a) => a.minute <= k);
  invalidateFrom(k + 1);
  state.replayedTo = 0;
  $("replay").hidden = true;
  show(k);
  announce(t("replay.forked", { clock: clockOf(k) }));
}

function shareLink() {
  const p = runParams({ at: state.shown + 1 });
  return `${location.origin}/?${p}`;
}

function updateShareLink() {
  $("share-link").value = shareLink();
}

// ---------------------------------------------------------------- debrief

async function renderDebrief() {
  const has = state.scenario && state.shown >= 0;
  $("debrief-empty").hidden = has;
  $("debrief-body").hidden = !has;
  if (!has) return;
  let body;
  try {
    body = await api("/api/debrief", runParams({ at: state.shown + 1 }));
  } catch (err) {
    showError(t("error.api", { message: err.message }));
    return;
  }
  const d = body.debrief;
  $("debrief-span").textContent = t("debrief.span", {
    scenario: t(`scenario.${state.scenario.name}.title`),
    seed: state.seed,
    from: d.from,
    to: d.to,
    minutes: d.minutes,
  });
  const pages = d.pages.map((p) => `${clockOf(p.from)}–${clockOf(p.to)}`).join(", ") || t("debrief.none");
  const figures = [
    ["budget_left", t("debrief.value.budget", { left: (100 * d.budget_left).toFixed(1), start: (100 * d.budget_start).toFixed(0) })],
    ["worst_burn_1h", t("debrief.value.burn", { burn: d.worst_burn_1h.toFixed(1), clock: clockOf(d.worst_burn_1h_minute) })],
    ["worst_burn", t("debrief.value.burn", { burn: d.worst_burn.toFixed(1), clock: clockOf(d.worst_burn_minute) })],
    ["minutes_over_slo", t("debrief.value.minutes", { n: d.minutes_over_slo })],
    ["minutes_p99_over_1s", t("debrief.value.minutes", { n: d.minutes_p99_over_1s })],
    ["paged", t("debrief.value.paged", { n: d.paged_minutes, pages })],
    ["total_cost", `${d.total_cost.toFixed(2)} $`],
    ["mean_age", t("debrief.value.age", { age: d.mean_age_s.toFixed(1), answers: Math.round(d.cached_answers).toLocaleString("en") })],
    ["shed", t("debrief.value.shed", { n: Math.round(d.shed_requests).toLocaleString("en"), share: (100 * d.shed_share).toFixed(1) })],
    ["no_recommendations", t("debrief.value.minutes", { n: d.minutes_without_recommendations })],
    ["bad_build", t("debrief.value.minutes", { n: d.bad_build_minutes })],
  ];
  const dl = $("debrief-figures");
  dl.replaceChildren();
  for (const [id, text] of figures) {
    const div = document.createElement("div");
    div.dataset.figure = id;
    const dt = document.createElement("dt");
    dt.textContent = t(`debrief.${id}`);
    const dd = document.createElement("dd");
    dd.textContent = text;
    div.append(dt, dd);
    dl.append(div);
  }
  const surge = $("debrief-surge");
  surge.hidden = !body.surge;
  if (body.surge) {
    const s = body.surge;
    surge.textContent = t("debrief.surge", {
      clock: clockOf(s.start_minute),
      peak: s.peak.toFixed(1),
      ramp: s.ramp_minutes.toFixed(0),
      plateau: s.plateau_minutes.toFixed(0),
    });
  }
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
  const frames = state.frames.slice(0, state.shown + 1);
  timelineChart($("timeline-chart"), frames, d.timeline.filter((m) => m.kind === "action").map((m) => m.minute), clockOf);
}

function describeMoment(m) {
  const context = t("debrief.context", { bad: Math.round(100 * m.bad_build_share), burn: m.burn_1h.toFixed(1) });
  if (m.kind === "page") return `${t("debrief.kind.page")} (${context})`;
  if (m.kind === "page_end") return t("debrief.kind.page_end");
  const a = m.action;
  const label = t(`control.${a.control}.label`);
  const spec = controlSpec(a.control);
  let what;
  if (spec.kind === "press") what = t("debrief.pressed", { label });
  else if (spec.kind === "bool") what = t("debrief.switched", { label, value: t(a.value ? "value.on" : "value.off") });
  else {
    const scale = displayScale[a.control] || 1;
    what = t("debrief.set", { label, value: `${+(a.value * scale).toFixed(4)} ${displayUnit[a.control] || ""}`.trim() });
  }
  return `${what} (${context}${m.paged ? `, ${t("debrief.while_paged")}` : ""})`;
}

// ---------------------------------------------------------------- model

async function renderModel() {
  // Without a game, explain the opening minute of the steady scenario.
  const params = state.scenario
    ? runParams({ minute: Math.max(0, state.shown) })
    : new URLSearchParams({ scenario: "steady", noise: "0", minute: "0" });
  let body;
  try {
    body = await api("/api/explain", params);
  } catch (err) {
    showError(t("error.api", { message: err.message }));
    return;
  }
  const name = state.scenario ? state.scenario.name : "steady";
  $("model-minute").textContent = t("model.minute", {
    minute: body.minute,
    clock: body.clock,
    scenario: t(`scenario.${name}.title`),
  });
  const list = $("formulas");
  list.replaceChildren();
  for (const f of body.formulas) {
    const li = document.createElement("li");
    li.dataset.formula = f.id;
    const title = document.createElement("div");
    title.className = "title";
    title.textContent = t(`formula.${f.id}`);
    const formula = document.createElement("code");
    formula.textContent = f.formula;
    const values = document.createElement("code");
    values.className = "values";
    values.textContent = f.values;
    const refs = document.createElement("div");
    refs.className = "refs";
    refs.textContent = `${t("model.source")} ${f.sources.map((n) => `[${n}]`).join("")}`;
    li.append(title, formula, values, refs);
    list.append(li);
  }
  const tbody = $("constants");
  tbody.replaceChildren();
  for (const c of state.info.constants) {
    const tr = tbody.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = t(`constant.${c.id}`);
    tr.append(th);
    tr.insertCell().textContent = `${+c.value.toFixed(4)}${c.unit ? ` ${c.unit}` : ""}`;
  }
  const sources = $("sources");
  sources.replaceChildren();
  for (const s of state.info.sources) {
    const li = document.createElement("li");
    li.value = s.n;
    li.textContent = t(`source.${s.n}`);
    sources.append(li);
  }
}

// ---------------------------------------------------------------- views

function route() {
  const view = (location.hash || "#play").slice(1);
  const known = ["play", "debrief", "model", "lab", "assign"].includes(view) ? view : "play";
  const inGame = !!state.scenario;
  $("setup").hidden = !(known === "play" && !inGame);
  $("game").hidden = !(known === "play" && inGame);
  $("debrief").hidden = known !== "debrief";
  $("model").hidden = known !== "model";
  $("lab").hidden = known !== "lab";
  $("assign").hidden = known !== "assign";
  if (known !== "assign") leaveAssign();
  for (const v of ["play", "debrief", "model", "lab", "assign"]) {
    const a = $(`nav-${v}`);
    if (v === known) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (known === "debrief") return renderDebrief();
  if (known === "model") return renderModel();
  if (known === "lab") return renderLab();
  if (known === "assign") return renderAssign();
  if (inGame) charts.charts.forEach((c) => c.resize());
  return Promise.resolve();
}

async function setLanguage(lang) {
  await i18n.load(lang);
  try {
    localStorage.setItem("afloat.lang", lang);
  } catch {
    // storage may be off; the choice then lasts for this page only
  }
  $("lang").value = i18n.lang();
  i18n.apply();
  buildScenarios();
  buildDashboard();
  buildControls();
  charts.relabel();
  relabelLab();
  relabelAssign();
  if (state.scenario) {
    $("scenario-name").textContent = t(`scenario.${state.scenario.name}.title`);
    if (state.replayedTo) {
      $("replay-note").textContent = t("replay.note", { clock: clockOf(state.replayedTo - 1), minute: state.replayedTo - 1 });
    }
    if (state.shown >= 0) show(state.shown);
  }
  updatePlayButton();
  await route();
}

let charts;

async function main() {
  const params = new URLSearchParams(location.search);
  let lang = params.get("lang");
  try {
    lang = lang || localStorage.getItem("afloat.lang");
  } catch {
    // no storage: English unless the link says otherwise
  }
  await i18n.load(lang || "en");
  $("lang").value = i18n.lang();
  try {
    state.info = await api("/api/scenarios", "");
  } catch (err) {
    showError(t("error.network"));
    throw err;
  }
  charts = new Charts($("charts"), (m) => (state.scenario ? clockOf(m) : String(m)));
  i18n.apply();
  buildScenarios();
  buildDashboard();
  buildControls();
  setupLab(state.info.lab_profiles);
  setupAssign();
  $("seed").value = String(randomSeed());

  $("new-seed").addEventListener("click", () => ($("seed").value = String(randomSeed())));
  $("setup-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const seed = Number($("seed").value);
    if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) {
      showError(t("setup.seed_error"));
      $("seed").focus();
      return;
    }
    clearError();
    const name = document.querySelector('input[name="scenario"]:checked').value;
    await startGame(name, seed, $("noise").checked);
    location.hash = "#play";
    route();
    $("play").focus();
  });
  $("play").addEventListener("click", () => (state.playing ? pause() : play()));
  $("step").addEventListener("click", () => {
    pause();
    step().catch(() => {});
  });
  $("speed").addEventListener("change", () => (state.speed = Number($("speed").value)));
  $("share").addEventListener("click", () => {
    const box = $("share-box");
    box.hidden = !box.hidden;
    updateShareLink();
    if (!box.hidden) $("share-link").select();
  });
  $("copy-link").addEventListener("click", async () => {
    $("share-link").select();
    try {
      await navigator.clipboard.writeText($("share-link").value);
      announce(t("share.copied"));
    } catch {
      announce(t("share.select"));
    }
  });
  $("new-game").addEventListener("click", () => {
    pause();
    state.scenario = null;
    state.frames = [];
    state.shown = -1;
    $("replay").hidden = true;
    history.replaceState(null, "", "/#play");
    route();
    $("setup-h").focus();
  });
  $("fork").addEventListener("click", fork);
  $("lang").addEventListener("change", () => setLanguage($("lang").value));
  window.addEventListener("hashchange", () => {
    route();
    const view = (location.hash || "#play").slice(1);
    const heading = { debrief: "debrief-h", model: "model-h", lab: "lab-h", assign: "assign-h" }[view];
    if (heading) {
      $(heading).setAttribute("tabindex", "-1");
      $(heading).focus();
    }
  });

  if (params.has("scenario")) await replayFromLink(params);
  await route();
  window.afloat.ready = true;
}

main();
