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

// reachable makes every scrolling table wrapper of any page a region the
// keyboard can reach and a screen reader can name (a table that scrolls
// must be focusable to be read from the keyboard), named after the
// table's caption or the figure's. Pages add wrappers as they draw, so it
// watches the page.
function reachable(root) {
  for (const wrap of root.querySelectorAll(".table-wrap:not([tabindex])")) {
    wrap.tabIndex = 0;
    wrap.setAttribute("role", "region");
    if (!wrap.hasAttribute("aria-label") && !wrap.hasAttribute("aria-labelledby")) {
      const caption = wrap.querySelector("caption") || wrap.closest("figure")?.querySelector("figcaption");
      const heading = wrap.closest("section")?.querySelector("h1, h2");
      const name = (caption || heading)?.textContent.trim();
      if (name) wrap.setAttribute("aria-label", name);
    }
  }
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
  reachable(document);
  new MutationObserver(() => reachable(document)).observe($("main"), { childList: true, subtree: true });
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
