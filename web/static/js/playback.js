// Playback: the frames of the run, fetched from the stateless API a few
// minutes ahead, played at the chosen speed or stepped a minute at a time.
// The server keeps no state: a run is (scenario, seed, noise, actions), and
// every frame shown comes from GET /api/run, which recomputes the run. The
// page keeps the frames it has fetched, plays them and refetches from the
// minute a new action changes. In training the same answer carries the
// runbook's advice after each minute (hints).
import { t } from "./i18n.js";
import { $, state, clearError, showError } from "./state.js";
import { api } from "./api.js";
import { encodeRun } from "./share.js";

// LOOKAHEAD is how many minutes past the next one a fetch asks for, so that
// play at 10× needs a request only every second or so.
const LOOKAHEAD = 10;

// hooks are set by the play page: show draws a minute, finished ends the
// game, beforeAct makes a shared run one's own before a lever moves.
// sharedEnd stops a shared run at its sharer's minute.
export const hooks = { show: () => {}, finished: () => {}, beforeAct: () => {}, sharedEnd: () => {} };

// currentRun is the run being played, as the share codec takes it.
export function currentRun() {
  return { scenario: state.scenario.name, seed: state.seed, noise: state.noise, minutes: 0, actions: state.actions };
}

// runParams is the query of the run being played, with extra parameters
// after it.
export function runParams(extra = {}) {
  const more = new URLSearchParams(extra).toString();
  return encodeRun(currentRun(), state.info.controls) + (more ? `&${more}` : "");
}

// runBody is the run as a JSON body (the POST form of the API).
export function runBody(extra = {}) {
  return { scenario: state.scenario.name, seed: state.seed, noise: state.noise, actions: state.actions, ...extra };
}

// ensureFrames makes sure frames 0 … upTo−1 are here, fetching a few more.
export async function ensureFrames(upTo) {
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
    const extra = { from, to };
    if (state.difficulty === "training") extra.hints = 1;
    state.fetching = api("/api/run", runParams(extra));
    try {
      const body = await state.fetching;
      if (generation === state.generation && state.frames.length === from) {
        state.frames.push(...body.frames);
        for (const h of body.hints || []) state.hints.set(h.after, h);
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

// lastMinute is the last minute the run may show: a shared run stops at
// the minute its sharer had reached (what came after was never played)
// until it is taken over; any other run at the scenario's end.
export function lastMinute() {
  const end = state.scenario.minutes - 1;
  return state.shared && state.replayedTo > 0 ? Math.min(end, state.replayedTo - 1) : end;
}

// atEnd reports whether the minute shown is the run's last, or the budget
// ran out in it: the game is over.
function atEnd() {
  const f = state.frames[state.shown];
  return state.shown >= state.scenario.minutes - 1 || (f && f.budget_remaining <= 0);
}

export async function step() {
  if (!state.scenario || state.stepping || state.over || state.away) return;
  if (state.shown >= lastMinute()) {
    hooks.sharedEnd();
    return;
  }
  state.stepping = true;
  try {
    const next = state.shown + 1;
    await ensureFrames(next + 1);
    // An action may have dropped frames while this one was fetched.
    while (state.frames.length <= next) await ensureFrames(next + 1);
    // Left the game page while the minute was fetched: the run stays
    // where the other pages found it.
    if (state.away) return;
    hooks.show(next);
  } finally {
    state.stepping = false;
  }
  if (atEnd()) finish();
  else if (state.shown >= lastMinute()) hooks.sharedEnd();
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

export function play() {
  if (state.playing || state.over) return;
  state.playing = true;
  updatePlayButton();
  loop();
}

export function pause() {
  state.playing = false;
  clearTimeout(state.timer);
  updatePlayButton();
}

export function updatePlayButton() {
  const b = $("play");
  b.textContent = t(state.playing ? "clock.pause" : "clock.play");
  b.setAttribute("aria-pressed", state.playing ? "true" : "false");
  // At a shared run's last minute there is nothing more to play: taking it
  // over plays on.
  const stop = state.over || (!!state.scenario && state.shown >= 0 && state.shown >= lastMinute());
  b.disabled = stop;
  $("step").disabled = stop;
}

function finish() {
  pause();
  state.over = true;
  updatePlayButton();
  hooks.finished();
}

// invalidateFrom drops the frames (and hints) an action changes.
export function invalidateFrom(minute) {
  state.generation++;
  if (state.frames.length > minute) state.frames.length = minute;
  for (const m of state.hints.keys()) if (m >= minute) state.hints.delete(m);
}
