// Playback: the frames of the run, fetched from the stateless API a few
// minutes ahead, played at the chosen speed or stepped a minute at a time.
// The server keeps no state: a run is (scenario, seed, noise, actions), and
// every frame shown comes from GET /api/run, which recomputes the run. The
// page keeps the frames it has fetched, plays them and refetches from the
// minute a new action changes.
import { t } from "./i18n.js";
import { $, state, clearError, showError } from "./state.js";
import { api } from "./api.js";
import { encodeRun } from "./share.js";

// LOOKAHEAD is how many minutes past the next one a fetch asks for, so that
// play at 10× needs a request only every second or so.
const LOOKAHEAD = 10;

// hooks are set by the play page: show draws a minute, finished ends the
// game.
export const hooks = { show: () => {}, finished: () => {} };

// runParams is the query of the run being played, with extra parameters
// after it.
export function runParams(extra = {}) {
  const run = { scenario: state.scenario.name, seed: state.seed, noise: state.noise, minutes: 0, actions: state.actions };
  const more = new URLSearchParams(extra).toString();
  return encodeRun(run, state.info.controls) + (more ? `&${more}` : "");
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

export async function step() {
  if (!state.scenario || state.stepping || state.shown >= state.scenario.minutes - 1) return;
  state.stepping = true;
  try {
    const next = state.shown + 1;
    await ensureFrames(next + 1);
    // An action may have dropped frames while this one was fetched.
    while (state.frames.length <= next) await ensureFrames(next + 1);
    hooks.show(next);
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

export function play() {
  if (state.playing || state.shown >= state.scenario.minutes - 1) return;
  state.playing = true;
  state.replayedTo = 0;
  $("replay").hidden = true;
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
  const over = state.scenario && state.shown >= state.scenario.minutes - 1;
  b.disabled = over;
  $("step").disabled = over;
}

function finish() {
  pause();
  hooks.finished();
}

// invalidateFrom drops the frames an action changes.
export function invalidateFrom(minute) {
  state.generation++;
  if (state.frames.length > minute) state.frames.length = minute;
}
