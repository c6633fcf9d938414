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

function lookup(key) {
  let msg = current[key];
  if (msg === undefined) {
    missing.add(`${currentLang}:${key}`);
    msg = english[key] ?? key;
  }
  return msg;
}

function fill(msg, vars) {
  return msg.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

// t returns the message for key with {name} placeholders filled from vars;
// a plural message (below) takes its form from vars.n.
export function t(key, vars = {}) {
  const msg = lookup(key);
  if (typeof vars.n === "number" && formSplit.test(msg)) return pick(msg, vars.n, vars);
  return fill(msg, vars);
}

// A message that depends on a count holds one form per plural category of
// its language, each after its name in brackets: "[one] {n} request
// [other] {n} requests". "[=1]" matches exactly 1, for a language whose
// categories do not single it out (Tagalog's "one" also covers 2, 3, 5…);
// "[other]" is required and is the fallback.
const formSplit = /\[(=\d+|zero|one|two|few|many|other)\]\s*/;

// forms splits a plural message into its forms by category.
export function forms(msg) {
  const parts = msg.split(formSplit);
  const out = {};
  for (let i = 1; i < parts.length; i += 2) out[parts[i]] = parts[i + 1].trim();
  return out;
}

const rules = new Map();

// tn returns the form of a plural message for the count n, chosen by the
// language's plural rules (Intl.PluralRules), with placeholders filled
// from vars ({n} is n unless vars says otherwise, e.g. "1,250").
export function tn(key, n, vars = {}) {
  return pick(lookup(key), n, { n, ...vars });
}

function pick(msg, n, vars) {
  const f = forms(msg);
  if (!rules.has(currentLang)) rules.set(currentLang, new Intl.PluralRules(currentLang));
  const text = f[`=${n}`] ?? f[rules.get(currentLang).select(n)] ?? f.other ?? msg;
  return fill(text, vars);
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
