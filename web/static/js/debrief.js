// The debrief page: the run so far summed up (GET /api/debrief), with a
// timeline of the player's actions against the page.
import { t } from "./i18n.js";
import { $, state, clockOf, controlSpec, apiError } from "./state.js";
import { api } from "./api.js";
import { runParams } from "./playback.js";
import { displayScale, displayUnit } from "./controls.js";
import { timelineChart } from "./charts.js";

async function render() {
  const has = state.scenario && state.shown >= 0;
  $("debrief-empty").hidden = has;
  $("debrief-body").hidden = !has;
  if (!has) return;
  let body;
  try {
    body = await api("/api/debrief", runParams({ at: state.shown + 1 }));
  } catch (err) {
    apiError(err);
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

export const page = { id: "debrief", heading: "debrief-h", render, relabel: () => {} };
