// i18n.js: the interface's words in English and Korean. The language
// follows navigator.language until the user picks one, which is kept.

const LANG_STORAGE = "weft.lang";
const strings = { en: {}, ko: {} };
const listeners = [];

function initial() {
  try {
    const kept = localStorage.getItem(LANG_STORAGE);
    if (kept === "en" || kept === "ko") return kept;
  } catch {
    // storage disabled
  }
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
  for (const l of langs) {
    const base = String(l).toLowerCase().split("-")[0];
    if (base === "ko") return "ko";
    if (base === "en") return "en";
  }
  return "en";
}

let current = initial();

/** addStrings({en: {...}, ko: {...}}) adds (or replaces) words by key. */
export function addStrings(table) {
  for (const [l, words] of Object.entries(table)) {
    strings[l] = { ...(strings[l] || {}), ...words };
  }
}

/** The language in use: "en" or "ko". */
export function lang() {
  return current;
}

/** The languages there are words for, with their own names. */
export const languages = [
  { code: "en", name: "English" },
  { code: "ko", name: "한국어" },
];

/** Switches the language, keeps the choice and tells the listeners. */
export function setLang(l) {
  if (!strings[l]) throw new Error(`no strings for language ${l}`);
  current = l;
  try {
    localStorage.setItem(LANG_STORAGE, l);
  } catch {
    // storage disabled: the choice lasts for this page
  }
  document.documentElement.lang = l;
  for (const fn of listeners) fn(l);
}

/** onLangChange(fn): fn(lang) after each switch. */
export function onLangChange(fn) {
  listeners.push(fn);
}

/**
 * t(key, vars): the words for key in the current language (English when
 * missing, else the key itself), with {name} replaced by vars.name.
 */
export function t(key, vars) {
  let s = strings[current][key] ?? strings.en[key] ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

/**
 * applyI18n(root): fills the elements below root marked with
 * data-i18n (text), data-i18n-label (aria-label), data-i18n-title (title)
 * and data-i18n-placeholder (placeholder).
 */
export function applyI18n(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
}

/** Formats a date in the current language. */
export function formatDate(value) {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value ?? "");
  return d.toLocaleString(current === "ko" ? "ko-KR" : "en-US", { dateStyle: "medium", timeStyle: "short" });
}
