// The model page: every formula with its sources and the numbers of the
// minute on the dashboard put in (GET /api/explain), in the page's
// language. In the realistic mode a game's current minute is not
// explained (its numbers would show what the dashboard hides): the page
// explains the opening minute until the run is over.
import { t, has } from "./i18n.js";
import { $, state, apiError, realistic } from "./state.js";
import { api } from "./api.js";
import { runParams } from "./playback.js";

async function render() {
  // Without a game, explain the opening minute of the steady scenario.
  const hide = state.scenario && realistic() && !state.over;
  const minute = hide ? 0 : Math.max(0, state.shown);
  const params = state.scenario
    ? runParams({ minute })
    : new URLSearchParams({ scenario: "steady", noise: "0", minute: "0" });
  $("model-hidden").hidden = !hide;
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
    formula.className = "relation";
    formula.textContent = t(`relation.${f.key}`);
    const values = document.createElement("code");
    values.className = "values";
    values.textContent = t(`values.${f.key}`, f.args);
    li.append(title, formula, values);
    if (has(`formula.${f.id}.caveat`)) {
      const caveat = document.createElement("p");
      caveat.className = "caveat";
      caveat.textContent = t(`formula.${f.id}.caveat`);
      li.append(caveat);
    }
    const refs = document.createElement("div");
    refs.className = "refs";
    refs.textContent = `${t("model.source")} ${f.sources.map((n) => `[${n}]`).join("")}`;
    li.append(refs);
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
    if (s.url) {
      const a = document.createElement("a");
      a.href = s.url;
      a.rel = "noopener noreferrer";
      a.textContent = t(`source.${s.n}`);
      li.append(a);
    } else {
      li.textContent = t(`source.${s.n}`);
    }
    sources.append(li);
  }
}

export const page = { id: "model", heading: "model-h", render, relabel: () => {} };
