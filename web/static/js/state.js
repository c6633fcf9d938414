// The game's state, shared by the modules of the play, debrief and model
// pages, and the small helpers every page uses.
import { t } from "./i18n.js";

export const $ = (id) => document.getElementById(id);

export const state = {
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
  difficulty: "training", // or "realistic": what the dashboard shows
  hints: new Map(), // minute seen → the runbook's advice after it (training)
  watching: false, // playing a shared run back: the levers are the run's
  shared: false, // opened from a share link: the run is someone else's until forked
  drill: false, // following a running drill (/?drill=1): the run is the team's, read-only
  over: false, // the run has ended (its last minute, or the budget gone)
  away: false, // the game page is not shown: the run is paused and does not step
};

// realistic reports whether the dashboard shows only what an on-call
// engineer would see.
export function realistic() {
  return state.difficulty === "realistic";
}

// deploysSeen lists the deploy markers on the dashboard by minute: the
// scenario's scheduled ones, and those the frames mark (a mystery's seed
// draws its deploy).
export function deploysSeen() {
  if (!state.scenario) return [];
  const marked = (state.frames || []).filter((f) => f && f.deploy && f.minute <= state.shown).map((f) => f.minute);
  const all = new Set([...(state.scenario.deploys || []).filter((m) => m <= state.shown), ...marked]);
  return [...all].sort((a, b) => a - b);
}

// bestStars is the player's best grade on a scenario at a difficulty, kept
// in the browser (localStorage), or -1 when none is kept.
export function bestStars(scenario, difficulty) {
  try {
    const v = localStorage.getItem(`afloat.best.${scenario}.${difficulty}`);
    return v === null ? -1 : Number(v);
  } catch {
    return -1;
  }
}

// keepStars records a finished run's grade if it beats the best kept.
export function keepStars(scenario, difficulty, stars) {
  if (stars <= bestStars(scenario, difficulty)) return;
  try {
    localStorage.setItem(`afloat.best.${scenario}.${difficulty}`, String(stars));
  } catch {
    // no storage: nothing kept
  }
}

// For tests and the curious: the state, the catalogue keys found missing,
// and how long each minute took to draw (the last 1,000), with the main
// thread's long tasks, which docs/benchmarks.md reports at 10× speed.
export const perf = { renders: [], shownAt: [], longTasks: 0 };

export function controlSpec(id) {
  return state.info.controls.find((c) => c.control === id);
}

// clockOf is the time of day of a minute of the current scenario.
export function clockOf(minute) {
  const [h, m] = state.scenario.start.split(":").map(Number);
  const total = (((h * 60 + m + Math.round(minute)) % 1440) + 1440) % 1440;
  return `${String(Math.floor(total / 60)).padStart(2, "0")}:${String(total % 60).padStart(2, "0")}`;
}

// announce says something to screen readers (a polite live region).
export function announce(text) {
  $("status").textContent = text;
}

export function showError(text) {
  const el = $("error");
  el.textContent = text;
  el.hidden = false;
}

export function clearError() {
  $("error").hidden = true;
}

export function apiError(err) {
  showError(t("error.api", { message: err.message }));
}
