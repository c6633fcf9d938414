// The afloat console: the on-call simulator in the browser, and the labs.
// This module starts the page: the catalogue, what the server offers
// (GET /api/scenarios), then every page of the registry (pages.js).
import * as i18n from "./i18n.js";
import { t } from "./i18n.js";
import { $, state, perf, showError } from "./state.js";
import { api } from "./api.js";
import { pages } from "./pages.js";
import { buildNav, route, focusPage, setLanguage } from "./router.js";

window.afloat = { state, missing: i18n.missing, perf, ready: false };
try {
  new PerformanceObserver((list) => (perf.longTasks += list.getEntries().length)).observe({ type: "longtask" });
} catch {
  // a browser without long-task timing: perf.longTasks stays 0
}

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
  i18n.apply();
  buildNav();
  const ctx = { info: state.info };
  for (const p of pages) if (p.setup) p.setup(ctx);
  $("lang").addEventListener("change", () => setLanguage($("lang").value));
  window.addEventListener("hashchange", () => {
    route();
    focusPage();
  });
  for (const p of pages) if (p.start) await p.start(params);
  await route();
  window.afloat.ready = true;
}

main();
