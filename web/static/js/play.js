// The play page: choose a scenario, a seed and a difficulty, then the
// game — the clock, the page alert, the dashboard (dashboard.js), the
// levers (controls.js), the charts — with share links that replay a run,
// a run that lives in the URL and in localStorage (a reload resumes it),
// and keyboard shortcuts.
import { t } from "./i18n.js";
import { $, state, perf, clockOf, announce, showError, clearError, deploysSeen, bestStars } from "./state.js";
import { api } from "./api.js";
import { decodeRun } from "./share.js";
import { Charts } from "./charts.js";
import { hooks, ensureFrames, step, play, pause, updatePlayButton, invalidateFrom, runParams } from "./playback.js";
import { buildControls, syncControls, typedValues, restoreTyped } from "./controls.js";
import { buildDashboard, showTiles, showPage, showHint, flashTitle, stopFlash } from "./dashboard.js";

let charts;

function show(minute) {
  const started = performance.now();
  const previous = state.shown;
  state.shown = minute;
  const f = state.frames[minute];
  showTiles(f);
  $("clock").textContent = f.clock;
  $("minute-of").textContent = t("clock.minute", { minute, total: state.scenario.minutes });
  const budget = $("budget");
  // A budget spent past its end is gone, not negative.
  budget.textContent = t("budget.left", { value: Math.max(0, 100 * f.budget_remaining).toFixed(1) });
  budget.classList.toggle("low", f.budget_remaining < 0.1);
  charts.update(state.frames.slice(0, minute + 1));
  const paging = showPage();
  if (paging && minute === previous + 1 && !state.watching) {
    if (state.playing && $("pause-on-page").checked) {
      pause();
      announce(t("page.paused"));
    }
    flashTitle(f.clock);
  }
  if (!f.paged) stopFlash();
  showHint();
  syncControls();
  updatePlayButton();
  if (!$("share-box").hidden) updateShareLink();
  $("fork-minute").max = String(minute);
  saveRun();
  const now = performance.now();
  perf.renders.push(now - started);
  perf.shownAt.push(now);
  if (perf.renders.length > 1000) {
    perf.renders.shift();
    perf.shownAt.shift();
  }
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
    // The best stars kept in this browser, per difficulty.
    const best = document.createElement("p");
    best.className = "help best";
    best.id = `best-${sc.name}`;
    const shown = (d) => {
      const n = bestStars(sc.name, d);
      return n < 0 ? t("setup.best.none") : "★".repeat(n) + "☆".repeat(3 - n);
    };
    best.textContent = t("setup.best", { training: shown("training"), realistic: shown("realistic") });
    input.setAttribute("aria-describedby", `${brief.id} ${best.id}`);
    card.append(input, label, brief, meta, best);
    root.append(card);
  }
}

function randomSeed() {
  return crypto.getRandomValues(new Uint32Array(1))[0];
}

// startGame opens a run at minute upTo−1. sharedTo, when not 0, marks
// someone else's run (from a share link) and the minutes its sharer had
// played: it is played back that far rather than played until forked.
export async function startGame(name, seed, noise, actions = [], upTo = 1, difficulty = state.difficulty, sharedTo = 0) {
  pause();
  stopFlash();
  state.scenario = state.info.scenarios.find((s) => s.name === name);
  state.seed = seed;
  state.noise = noise;
  state.actions = actions;
  state.difficulty = difficulty === "realistic" ? "realistic" : "training";
  state.frames = [];
  state.hints = new Map();
  state.shown = -1;
  state.over = false;
  state.watching = false;
  state.shared = sharedTo > 0;
  state.replayedTo = sharedTo;
  state.generation++;
  $("page-alert").hidden = true;
  $("share-box").hidden = true;
  $("share").setAttribute("aria-expanded", "false");
  $("replay").hidden = true;
  labelRun();
  buildDashboard();
  charts.order(name);
  $("setup").hidden = true;
  $("game").hidden = false;
  await ensureFrames(upTo);
  show(upTo - 1);
  if (state.shown >= state.scenario.minutes - 1 || state.frames[state.shown].budget_remaining <= 0) {
    state.over = true;
    syncControls();
    updatePlayButton();
  }
}

function labelRun() {
  if (!state.scenario) return;
  $("scenario-name").textContent = t(`scenario.${state.scenario.name}.title`);
  $("seed-shown").textContent = String(state.seed);
  $("difficulty-shown").textContent = t(`difficulty.${state.difficulty}`);
}

// saveRun keeps the run in the URL and in localStorage, so that a reload
// (or the next visit) resumes it.
function saveRun() {
  if (!state.scenario || state.shown < 0 || state.drill) return; // a followed drill's URL stays /?drill=1
  const extra = { at: state.shown + 1, mode: state.difficulty };
  // A shared run keeps the link it came from: at stays the sharer's
  // minute, not the one shown (else a reload 10 minutes into a watch
  // would stop the run at minute 9), and a watch stays one (a reload
  // watches it again).
  if (state.shared) Object.assign(extra, { at: state.replayedTo, shared: 1 }, state.watching ? { watch: 1 } : {});
  const query = runParams(extra);
  const url = `/?${query}${location.hash}`;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(null, "", url);
  if (state.shared) return; // someone else's run stays theirs
  try {
    localStorage.setItem("afloat.run", query);
  } catch {
    // no storage: the URL alone keeps the run
  }
}

function forgetRun() {
  try {
    localStorage.removeItem("afloat.run");
  } catch {
    // nothing kept
  }
}

// openRun opens a run from a query: one's own run (resumed where it was),
// or a shared one (shared=1), played back from minute 0 when watch=1.
async function openRun(params) {
  const decoded = decodeRun(params, state.info);
  if (decoded.error) {
    showError(t("error.link", { message: `${decoded.error.field}: ${decoded.error.message}` }));
    return false;
  }
  const run = decoded.run;
  if (run.minutes) {
    showError(t("error.link", { message: "minutes: the console plays a scenario at its own length" }));
    return false;
  }
  const length = state.info.scenarios.find((s) => s.name === run.scenario).minutes;
  let at = Number(params.get("at") || 1);
  if (!Number.isInteger(at) || at < 1 || at > length) at = 1;
  const shared = params.get("shared") === "1";
  const watch = shared && params.get("watch") === "1";
  // A watch stopped at minute 0 would show nothing but the minute it opens
  // at: a watch link at 1 — as the debrief wrote "watch par" and "watch
  // it" before they carried the run's length (issue 46) — watches the
  // whole run.
  if (watch && at === 1) at = length;
  try {
    await startGame(run.scenario, run.seed, run.noise, run.actions, watch ? 1 : at, params.get("mode"), shared ? at : 0);
  } catch {
    return false;
  }
  if (shared) {
    showReplay();
    updatePlayButton();
    if (watch) startWatching();
  }
  return true;
}

function showReplay() {
  if (state.drill) return; // no watching, taking over or forking the team's run
  const at = state.replayedTo;
  // A run shared whole (a watch link's, or one shared at its end) is
  // said to be whole: a watch opens it at minute 0, not at its last.
  const whole = at >= state.scenario.minutes;
  $("replay-note").textContent = t(whole ? "replay.note_whole" : "replay.note", { clock: clockOf(at - 1), minute: at - 1 });
  $("fork-minute").value = String(state.shown);
  $("replay").hidden = false;
}

// startWatching plays the shared run back from minute 0, its levers locked.
async function startWatching() {
  pause();
  showReplay(); // the note as the link opened, not a previous watch's end
  state.watching = true;
  state.over = false;
  if (state.shown !== 0) {
    await ensureFrames(1);
    show(0);
  }
  syncControls();
  play();
  announce(t("replay.watching"));
}

// followDrill shows the drill this console follows (GET /api/drill; the
// console's --drill): the run so far — the scenario, the seed and the
// levers the team pulled — as a shared run stopped at the minute under
// way, its levers locked, a minute more each time the drill moves on, for
// a facilitator to project. A lever pulled changes only minutes to come,
// so the run is opened anew; a minute more is a frame more. It asks every
// second until the drill ends (docs/drill.md, "Project the drill").
let drillView = null;
let drillTimer = 0;

async function followDrill() {
  state.drill = true;
  let run = "";
  const poll = async () => {
    drillTimer = 0;
    if (!state.drill) return;
    let v;
    try {
      v = await api("/api/drill", "");
    } catch (err) {
      if (!state.drill) return;
      showError(t("drill.error", { message: err.message }));
      drillTimer = setTimeout(poll, 3000);
      return;
    }
    if (!state.drill) return;
    const upTo = Math.min(v.minute + 1, v.minutes);
    try {
      if (v.run !== run || !state.scenario) {
        const decoded = decodeRun(new URLSearchParams(v.run), state.info);
        if (decoded.error) throw new Error(`${decoded.error.field}: ${decoded.error.message}`);
        const r = decoded.run;
        await startGame(r.scenario, r.seed, r.noise, r.actions, upTo, "realistic", upTo);
        run = v.run;
      } else if (upTo - 1 > state.shown) {
        state.replayedTo = upTo;
        await ensureFrames(upTo);
        show(upTo - 1);
      }
      if (v.ended) {
        state.over = true;
        syncControls();
        updatePlayButton();
      }
      clearError();
    } catch (err) {
      showError(t("drill.error", { message: err.message }));
      drillTimer = setTimeout(poll, 3000);
      return;
    }
    drillView = v;
    showDrill();
    if (!v.ended) drillTimer = setTimeout(poll, 1000);
  };
  await poll();
}

// showDrill says which drill the page follows and where it is.
function showDrill() {
  const v = drillView;
  $("drill").hidden = !state.drill || !v;
  if ($("drill").hidden) return;
  const vars = { url: v.url, minute: Math.min(v.minute, v.minutes - 1), minutes: v.minutes, clock: v.clock, speed: v.speed };
  $("drill-note").textContent = t(v.ended ? "drill.ended" : "drill.following", vars);
  const pm = $("drill-postmortem");
  pm.hidden = !v.ended;
  pm.href = `${v.url}/postmortem`;
}

// stopFollowing leaves the drill: the page plays one's own runs again.
function stopFollowing() {
  if (!state.drill) return;
  state.drill = false;
  drillView = null;
  clearTimeout(drillTimer);
  $("drill").hidden = true;
  history.replaceState(null, "", `/${location.hash}`);
}

// fork makes the shared run one's own from minute k: what came after is
// dropped.
function fork(k) {
  if (!Number.isInteger(k) || k < 0 || k > state.shown) {
    showError(t("replay.fork_error", { max: state.shown }));
    return;
  }
  pause();
  state.actions = state.actions.filter((a) => a.minute <= k);
  invalidateFrom(k + 1);
  state.watching = false;
  state.shared = false;
  state.over = false;
  state.replayedTo = 0;
  $("replay").hidden = true;
  clearError(); // a fork refused before (a minute out of range) is answered
  show(k);
  announce(t("replay.forked", { clock: clockOf(k) }));
}

function shareLink() {
  const p = runParams({ at: state.shown + 1, mode: state.difficulty, shared: 1 });
  return `${location.origin}/?${p}`;
}

function updateShareLink() {
  $("share-link").value = shareLink();
}

export function newGame() {
  stopFollowing();
  pause();
  stopFlash();
  state.scenario = null;
  state.frames = [];
  state.shown = -1;
  state.over = false;
  state.watching = false;
  state.shared = false;
  $("replay").hidden = true;
  forgetRun();
  showResume();
  // From no hash to #play: the router shows the setup, wherever we were.
  history.replaceState(null, "", "/");
  location.hash = "#play";
  render();
  $("setup-h").setAttribute("tabindex", "-1");
  $("setup-h").focus();
}

// playAgain starts the same seed afresh.
export async function playAgain() {
  stopFollowing();
  const { name } = state.scenario;
  await startGame(name, state.seed, state.noise, [], 1, state.difficulty);
  if (location.hash !== "#play") location.hash = "#play";
  $("play").focus();
}

// showResume offers the run kept in localStorage, if any.
function showResume() {
  let saved = null;
  try {
    saved = localStorage.getItem("afloat.run");
  } catch {
    // no storage
  }
  const box = $("resume");
  box.hidden = true;
  if (!saved || state.scenario) return;
  const params = new URLSearchParams(saved);
  const decoded = decodeRun(params, state.info);
  if (decoded.error) return;
  const sc = state.info.scenarios.find((s) => s.name === decoded.run.scenario);
  const at = Number(params.get("at")) || 1;
  const [h, m] = sc.start.split(":").map(Number);
  const total = (h * 60 + m + at - 1) % 1440;
  const clock = `${String(Math.floor(total / 60)).padStart(2, "0")}:${String(total % 60).padStart(2, "0")}`;
  $("resume-note").textContent = t("setup.resume_note", {
    scenario: t(`scenario.${sc.name}.title`),
    seed: decoded.run.seed,
    clock,
  });
  box.hidden = false;
  box.dataset.query = saved;
}

// shortcut plays the keyboard: space plays or pauses, n steps, ? opens
// the help. Keys typed into a field are the field's; a focused button,
// link or check box keeps space for itself.
function shortcut(e) {
  if (e.ctrlKey || e.metaKey || e.altKey || $("help-dialog").open) return;
  const el = e.target;
  const tag = el.tagName;
  const pressable = tag === "BUTTON" || tag === "A" || tag === "SUMMARY" || (tag === "INPUT" && ["checkbox", "radio"].includes(el.type));
  if ((tag === "INPUT" && !pressable) || tag === "SELECT" || tag === "TEXTAREA" || el.isContentEditable) return;
  if (e.key === "?") {
    e.preventDefault();
    openHelp();
    return;
  }
  if ($("game").hidden || $("play-page").hidden || !state.scenario) return;
  if (e.key === " " && !pressable) {
    e.preventDefault();
    stopFlash();
    if (state.playing) pause();
    else play();
  } else if (e.key === "n" || e.key === "N") {
    e.preventDefault();
    pause();
    step().catch(() => {});
  }
}

function openHelp() {
  const d = $("help-dialog");
  if (!d.open) d.showModal();
}

function setup() {
  charts = new Charts($("charts"), (m) => (state.scenario ? clockOf(m) : String(m)), deploysSeen);
  buildScenarios();
  buildDashboard();
  buildControls();
  $("seed").value = String(randomSeed());
  try {
    $("pause-on-page").checked = localStorage.getItem("afloat.pauseOnPage") !== "0";
  } catch {
    // the default: on
  }
  hooks.show = show;
  // Moving a lever in a shared run takes it over from the minute shown.
  hooks.beforeAct = () => {
    if (state.shared && !state.drill) fork(state.shown);
  };
  // A shared run played back to its sharer's minute stops there: the
  // levers are one's own from here (moving one takes the run over).
  hooks.sharedEnd = () => {
    pause();
    if (!state.watching) return;
    state.watching = false;
    syncControls();
    // Said on the page, not only to screen readers: Play and Step are
    // disabled now, and the note says why.
    const ended = t("replay.ended", { clock: clockOf(state.shown) });
    $("replay-note").textContent = ended;
    announce(ended);
  };
  hooks.finished = () => {
    stopFlash();
    state.watching = false;
    syncControls();
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
    stopFollowing();
    const name = document.querySelector('input[name="scenario"]:checked').value;
    const difficulty = document.querySelector('input[name="difficulty"]:checked').value;
    await startGame(name, seed, $("noise").checked, [], 1, difficulty);
    if (location.hash !== "#play") location.hash = "#play";
    else render();
    $("play").focus();
  });
  $("resume-run").addEventListener("click", async () => {
    const query = $("resume").dataset.query;
    stopFollowing();
    if (query && (await openRun(new URLSearchParams(query)))) {
      render();
      $("play").focus();
    }
  });
  $("play").addEventListener("click", () => {
    stopFlash();
    if (state.playing) pause();
    else play();
  });
  $("step").addEventListener("click", () => {
    pause();
    step().catch(() => {});
  });
  $("speed").addEventListener("change", () => (state.speed = Number($("speed").value)));
  $("pause-on-page").addEventListener("change", () => {
    try {
      localStorage.setItem("afloat.pauseOnPage", $("pause-on-page").checked ? "1" : "0");
    } catch {
      // the setting lasts for this page
    }
  });
  $("share").addEventListener("click", () => {
    const box = $("share-box");
    box.hidden = !box.hidden;
    $("share").setAttribute("aria-expanded", box.hidden ? "false" : "true");
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
  $("new-game").addEventListener("click", newGame);
  $("watch").addEventListener("click", startWatching);
  $("take-over").addEventListener("click", () => fork(state.shown));
  $("fork").addEventListener("click", () => fork(Number($("fork-minute").value)));
  $("more-tiles").addEventListener("click", () => {
    const all = $("dashboard").classList.toggle("all");
    $("more-tiles").setAttribute("aria-expanded", all ? "true" : "false");
    $("more-tiles").textContent = t(all ? "dashboard.fewer" : "dashboard.more");
  });
  $("help").addEventListener("click", openHelp);
  document.addEventListener("keydown", shortcut);
  document.addEventListener("pointerdown", stopFlash);
}

// start opens the run the page's query carries (a reload, or a share
// link), or offers the one kept from the last visit.
async function start(params) {
  if (params.get("drill") === "1") await followDrill();
  else if (params.has("scenario")) await openRun(params);
  else showResume();
}

// leave pauses the run: it goes on only while the game is in view, so the
// debrief and the model page explain the minute the player left at.
function leave() {
  state.away = true;
  pause();
  stopFlash();
}

function render() {
  state.away = false;
  const inGame = !!state.scenario;
  $("setup").hidden = inGame;
  $("game").hidden = !inGame;
  if (!inGame) buildScenarios(); // the best stars of the run just finished
  if (inGame) charts.charts.forEach((c) => c.resize());
}

function relabel() {
  const typed = typedValues();
  buildScenarios();
  buildDashboard();
  buildControls();
  charts.relabel();
  showResume();
  $("more-tiles").textContent = t($("dashboard").classList.contains("all") ? "dashboard.fewer" : "dashboard.more");
  if (state.scenario) {
    labelRun();
    if (state.replayedTo) showReplay();
    showDrill();
    if (state.shown >= 0) show(state.shown);
  }
  restoreTyped(typed);
  updatePlayButton();
}

export const page = { id: "play", section: "play-page", heading: "setup-h", setup, start, render, relabel, leave };
