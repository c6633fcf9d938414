// Message catalogues: every string the console shows lives in
// /static/i18n/<lang>.json under a key. A key missing from the chosen
// language is recorded in missing (the browser test fails on it) and shown
// in English rather than as a raw key.

export const languages = ["en", "cy", "tl"];

let english = {};
let current = {};
let currentLang = "en";
export const missing = new Set();

async function fetchCatalogue(lang) {
  const res = await fetch(`/static/i18n/${lang}.json`, { cache: "no-cache" });
  if (!res.ok) throw new Error(`catalogue ${lang}: HTTP ${res.status}`);
  return res.json();
}

// load switches to lang, fetching its catalogue (and English, once).
export async function load(lang) {
  if (!languages.includes(lang)) lang = "en";
  if (Object.keys(english).length === 0) english = await fetchCatalogue("en");
  current = lang === "en" ? english : await fetchCatalogue(lang);
  currentLang = lang;
  document.documentElement.lang = lang;
}

export function lang() {
  return currentLang;
}

// t returns the message for key with {name} placeholders filled from vars.
export function t(key, vars = {}) {
  let msg = current[key];
  if (msg === undefined) {
    missing.add(`${currentLang}:${key}`);
    msg = english[key] ?? key;
  }
  return msg.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

// has reports whether the catalogue has key (for optional messages).
export function has(key) {
  return key in english;
}

// apply fills the static page: data-i18n sets an element's text,
// data-i18n-attr="attr:key;attr:key" its attributes.
export function apply(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) {
    el.textContent = t(el.dataset.i18n);
  }
  for (const el of root.querySelectorAll("[data-i18n-attr]")) {
    for (const pair of el.dataset.i18nAttr.split(";")) {
      const [attr, key] = pair.split(":");
      el.setAttribute(attr.trim(), t(key.trim()));
    }
  }
}
