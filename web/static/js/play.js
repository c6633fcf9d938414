// The play page: choose a scenario and a seed, then the game — the clock,
// the page alert, the dashboard, the levers and the charts — and share
// links that replay a run.
import { t } from "./i18n.js";
import { $, state, perf, clockOf, announce, showError, clearError } from "./state.js";
import { api } from "./api.js";
import { decodeRun } from "./share.js";
import { Charts } from "./charts.js";
import { hooks, ensureFrames, step, play, pause, updatePlayButton, invalidateFrom, runParams } from "./playback.js";
import { buildControls, syncControls } from "./controls.js";

let charts;

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
  const decoded = decodeRun(params, state.info);
  if (decoded.error) {
    showError(t("error.link", { message: decoded.error.message }));
    return false;
  }
  const actions = decoded.run.actions;
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

function setup() {
  charts = new Charts($("charts"), (m) => (state.scenario ? clockOf(m) : String(m)));
  buildScenarios();
  buildDashboard();
  buildControls();
  $("seed").value = String(randomSeed());
  hooks.show = show;
  hooks.finished = () => {
    announce(t("end.note"));
    location.hash = "#debrief";
  };

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
    if (location.hash !== "#play") location.hash = "#play";
    else render();
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
    render();
    $("setup-h").focus();
  });
  $("fork").addEventListener("click", fork);
}

// start opens a share link if the page was opened with one.
async function start(params) {
  if (params.has("scenario")) await replayFromLink(params);
}

function render() {
  const inGame = !!state.scenario;
  $("setup").hidden = inGame;
  $("game").hidden = !inGame;
  if (inGame) charts.charts.forEach((c) => c.resize());
}

function relabel() {
  buildScenarios();
  buildDashboard();
  buildControls();
  charts.relabel();
  if (state.scenario) {
    $("scenario-name").textContent = t(`scenario.${state.scenario.name}.title`);
    if (state.replayedTo) {
      $("replay-note").textContent = t("replay.note", { clock: clockOf(state.replayedTo - 1), minute: state.replayedTo - 1 });
    }
    if (state.shown >= 0) show(state.shown);
  }
  updatePlayButton();
}

export const page = { id: "play", section: "play-page", heading: "setup-h", setup, start, render, relabel };
