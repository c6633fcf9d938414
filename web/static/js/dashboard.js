// The dashboard: its figures (warnings said in words, not only
// coloured), the page banner that pauses the game and flashes the tab's
// title, and the training mode's hints.
import { t } from "./i18n.js";
import { $, state, clockOf, realistic, deploysSeen } from "./state.js";
import { pending } from "./controls.js";

// The dashboard's figures: the spec's twelve, and the error rate and p99
// the objective is about (the burn rate alone answers only after an hour's
// window). Units come from the catalogue. warn marks a figure that calls for
// attention (said in words too, not only by colour); the realistic view
// shows the last deploy instead of the bad build's share, which an on-call
// engineer cannot see.
const metrics = [
  { id: "burn_1h", text: (f) => `${f.burn_1h.toFixed(1)} ×`, warn: (f) => f.burn_1h >= 14.4 },
  { id: "error_rate", text: (f) => `${(100 * f.error_rate).toFixed(2)} %`, warn: (f) => f.error_rate > 0.001 },
  { id: "p99", text: (f) => `${Math.round(f.p99_ms)} ms`, warn: (f) => f.p99_ms > 1000 },
  { id: "requests", text: (f) => `${Math.round(f.requests_per_s)} ${t("unit.req_s")}` },
  { id: "serving", text: (f) => `${f.serving}` },
  { id: "booting", text: (f) => `${f.booting}` },
  // What the autoscaler tracks against its target: the serving workers'
  // utilization, so a player can see why it scales (or does not).
  { id: "utilization", text: (f) => `${Math.round(100 * f.utilization)} %` },
  { id: "cache_hit", text: (f) => `${Math.round(100 * f.cache_hit)} %`, warn: (f) => f.cache_hit < 0.5 },
  { id: "db_utilization", text: (f) => `${Math.round(100 * f.db_utilization)} %`, warn: (f) => f.db_utilization >= 0.9 },
  { id: "shed", text: (f) => `${Math.round(100 * f.shed_share)} %` },
  { id: "fleet_cost", text: (f) => `${f.fleet_cost_per_h.toFixed(2)} ${t("unit.usd_h")}` },
  { id: "cost_so_far", text: (f) => `${f.cost_so_far.toFixed(2)} $` },
  { id: "mean_age", text: (f) => `${+f.mean_age_s.toFixed(1)} s` },
  { id: "bad_build", text: (f) => `${Math.round(100 * f.bad_build_share)} %`, warn: (f) => f.bad_build_share > 0, training: true },
  { id: "deploy", text: () => lastDeploy(), realistic: true },
  { id: "recommendations", text: (f) => `${Math.round(100 * f.recommendations_available)} %` },
];

// keyTiles are the figures a phone shows without asking for all.
const keyTiles = {
  "bad-deploy": ["burn_1h", "requests", "serving", "bad_build", "deploy", "fleet_cost", "cost_so_far"],
  surge: ["burn_1h", "requests", "serving", "booting", "shed", "fleet_cost"],
  "cache-flush": ["burn_1h", "cache_hit", "db_utilization", "requests", "recommendations", "shed"],
  mystery: ["burn_1h", "error_rate", "requests", "serving", "cache_hit", "db_utilization", "deploy"],
  steady: ["burn_1h", "requests", "serving", "cache_hit", "fleet_cost", "cost_so_far"],
};

function lastDeploy() {
  const seen = deploysSeen();
  return seen.length ? clockOf(seen[seen.length - 1]) : t("metric.none");
}

// shownMetrics: on call (mystery) whether a build is bad is for the player
// to find out, so even training shows the deploy marker, not the share.
export function shownMetrics() {
  const blind = realistic() || state.scenario?.name === "mystery";
  return metrics.filter((m) => (blind ? !m.training : !m.realistic));
}

export function buildDashboard() {
  const dl = $("dashboard");
  dl.replaceChildren();
  const key = keyTiles[state.scenario?.name] || keyTiles.steady;
  for (const m of shownMetrics()) {
    const div = document.createElement("div");
    div.className = key.includes(m.id) ? "tile" : "tile extra";
    div.dataset.metric = m.id;
    const dt = document.createElement("dt");
    dt.textContent = t(`metric.${m.id}`);
    const flag = document.createElement("span");
    flag.className = "flag";
    flag.id = `flag-${m.id}`;
    flag.hidden = true;
    flag.textContent = t("metric.warning");
    dt.append(flag);
    const dd = document.createElement("dd");
    dd.id = `metric-${m.id}`;
    dd.textContent = "—";
    div.append(dt, dd);
    dl.append(div);
  }
}

// The page: it pauses the game (a setting, on by default) and flashes the
// tab's title until the player looks.
const title = { base: "", timer: 0 };

export function flashTitle(clock) {
  stopFlash();
  title.base = document.title;
  const alarm = t("page.title", { clock });
  let on = false;
  title.timer = setInterval(() => {
    on = !on;
    document.title = on ? alarm : title.base;
  }, 700);
  document.title = alarm;
}

export function stopFlash() {
  if (!title.timer) return;
  clearInterval(title.timer);
  title.timer = 0;
  document.title = title.base;
}

// showPage raises the page banner while the burn-rate rule holds and says
// when it stopped, or that the month's budget is gone (game over); the
// banner is a live region, so screen readers announce it. It depends only
// on the frames, so a replayed run shows the same. It reports whether a
// page started at the minute shown.
export function showPage() {
  const el = $("page-alert");
  const frames = state.frames;
  const now = state.shown;
  let text = "";
  let started = false;
  el.classList.remove("resolved", "over");
  if (frames[now].budget_remaining <= 0) {
    text = t("over.budget", { clock: frames[now].clock });
    el.classList.add("over");
  } else if (frames[now].paged) {
    let start = now;
    while (start > 0 && frames[start - 1].paged) start--;
    const s = frames[start];
    started = start === now;
    text = t("page.alert", { clock: s.clock, burn1h: s.burn_1h.toFixed(1), burn5m: s.burn_5m.toFixed(1) });
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
  return started;
}

// showHint gives the runbook's advice in training: what its next step
// says after the minute on the dashboard, unless the player has queued it.
export function showHint() {
  const el = $("hint");
  const h = !realistic() && !state.watching && !state.over ? state.hints.get(state.shown) : undefined;
  if (!h) {
    el.hidden = true;
    return;
  }
  const queued = h.actions.every((a) => {
    const p = pending(a.control);
    return p && p.minute === state.shown + 1 && (a.value === undefined || p.value === undefined || +p.value === +a.value);
  });
  const text = `${t("hint.prefix")} ${t(h.step)}${queued ? ` ${t("hint.queued")}` : ""}`;
  if (el.textContent !== text) el.textContent = text;
  el.hidden = false;
}


// showTiles shows a minute's figures.
export function showTiles(f) {
  for (const m of shownMetrics()) {
    const dd = $(`metric-${m.id}`);
    dd.textContent = m.text(f);
    const warn = !!(m.warn && m.warn(f));
    dd.parentElement.classList.toggle("warn", warn);
    $(`flag-${m.id}`).hidden = !warn;
  }
}
