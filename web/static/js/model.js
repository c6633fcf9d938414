// The model page: every formula with its sources and the numbers of the
// minute on the dashboard put in (GET /api/explain).
import { t } from "./i18n.js";
import { $, state, apiError } from "./state.js";
import { api } from "./api.js";
import { runParams } from "./playback.js";

async function render() {
  // Without a game, explain the opening minute of the steady scenario.
  const params = state.scenario
    ? runParams({ minute: Math.max(0, state.shown) })
    : new URLSearchParams({ scenario: "steady", noise: "0", minute: "0" });
  let body;
  try {
    body = await api("/api/explain", params);
  } catch (err) {
    apiError(err);
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

export const page = { id: "model", heading: "model-h", render, relabel: () => {} };
