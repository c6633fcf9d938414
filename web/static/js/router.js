// The router: one page of the registry shown at a time, chosen by the
// URL's hash, and the language switch, which relabels every page.
import * as i18n from "./i18n.js";
import { t } from "./i18n.js";
import { $ } from "./state.js";
import { pages } from "./pages.js";

let current = null;

function pageOf(hash) {
  const id = (hash || "").slice(1);
  return pages.find((p) => p.id === id) || pages[0];
}

// buildNav writes the navigation's links from the registry.
export function buildNav() {
  const nav = $("nav");
  nav.replaceChildren();
  for (const p of pages) {
    const a = document.createElement("a");
    a.href = `#${p.id}`;
    a.id = `nav-${p.id}`;
    a.textContent = t(`nav.${p.id}`);
    nav.append(a);
  }
}

// route shows the page the hash names (the first page for any other).
export async function route() {
  const shown = pageOf(location.hash);
  for (const p of pages) {
    $(p.section || p.id).hidden = p !== shown;
    const a = $(`nav-${p.id}`);
    if (p === shown) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (current && current !== shown && current.leave) current.leave();
  current = shown;
  if (shown.render) await shown.render();
}

// focusPage moves keyboard and screen-reader focus to the shown page's
// heading, after a change of hash.
export function focusPage() {
  const p = pageOf(location.hash);
  if (!p.heading || p === pages[0]) return;
  const h = $(p.heading);
  h.setAttribute("tabindex", "-1");
  h.focus();
}

export async function setLanguage(lang) {
  await i18n.load(lang);
  try {
    localStorage.setItem("afloat.lang", lang);
  } catch {
    // storage may be off; the choice then lasts for this page only
  }
  $("lang").value = i18n.lang();
  i18n.apply();
  buildNav();
  for (const p of pages) if (p.relabel) p.relabel();
  await route();
}
