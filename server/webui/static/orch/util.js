// orch/util.js: small helpers shared by the orchestrator views.

import { h } from "../dom.js";
import { t, lang } from "../i18n.js";

let uid = 0;
/** nextId(prefix): an element id of our own (never from the payload). */
export const nextId = (prefix) => `orch-${prefix}-${++uid}`;

/** duration(ms): "0.4 s", "12 s", "3 min 05 s". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s % 60);
  return `${m} min ${String(rest).padStart(2, "0")} s`;
}

/** percent(x): 0.87 → "87 %". */
export function percent(x) {
  return `${Math.round((Number(x) || 0) * 100)} %`;
}

/** number(x): a number in the interface's language. */
export function number(x, digits = 2) {
  return Number(x || 0).toLocaleString(lang() === "ko" ? "ko-KR" : "en-US", { maximumFractionDigits: digits });
}

/** time(value): a Date's milliseconds, or NaN (Go's zero time too). */
export function time(value) {
  if (!value) return NaN;
  const ms = Date.parse(value);
  return ms > Date.UTC(1971, 0, 1) ? ms : NaN;
}

/** actionAllowed(value, action): whether the request offers the action. */
export function allowed(value, action) {
  return !Array.isArray(value.actions) || value.actions.includes(action);
}

/** problemBanner(value): the alert saying why the last answer was refused. */
export function problemBanner(value) {
  if (!value.problem) return document.createDocumentFragment();
  return h("p", { class: "orch-problem", role: "alert", "data-testid": "orch-problem", text: t("orch.problem", { problem: value.problem }) });
}

/**
 * sender(box, ctx): a function that resumes the run with a decision,
 * disabling box's controls meanwhile and showing a failure in its error
 * line. Returns {send, err}.
 */
export function sender(box, ctx) {
  const err = h("p", { class: "error", role: "alert", "data-testid": "orch-error" });
  const busy = (b) => box.querySelectorAll("button, input, textarea, select").forEach((x) => {
    if (b) {
      x.dataset.wasDisabled = x.disabled ? "1" : "";
      x.disabled = true;
    } else {
      x.disabled = x.dataset.wasDisabled === "1";
    }
  });
  const send = async (decision) => {
    err.textContent = "";
    busy(true);
    try {
      await ctx.resume(decision);
    } catch (e) {
      err.textContent = e && e.message ? e.message : String(e);
      busy(false);
    }
  };
  return { send, err };
}

/**
 * reasonForm(label, onSend, testid): a hidden row with a reason input and
 * a confirm button; returns {row, open}.
 */
export function reasonForm(buttonText, onSend, testid) {
  const id = nextId("reason");
  const input = h("input", { type: "text", id, "data-testid": `${testid}-reason`, maxlength: "500" });
  const row = h(
    "form",
    { class: "orch-reason", hidden: true },
    h("label", { for: id, text: t("orch.reason") }),
    input,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "danger", "data-testid": `${testid}-confirm`, text: buttonText }),
      h("button", { type: "button", text: t("orch.cancel"), onclick: () => ((row.hidden = true)) }),
    ),
  );
  row.addEventListener("submit", (e) => {
    e.preventDefault();
    onSend(input.value.trim());
  });
  const open = () => {
    row.hidden = false;
    input.focus();
  };
  return { row, open };
}

/** statusText(status): the word for a todo's status. */
export function statusText(status) {
  return t(`orch.status.${status || "pending"}`);
}

/** clip(s, n): s cut to about n display columns (wide characters count two). */
export function clip(s, n) {
  s = String(s ?? "");
  let w = 0;
  let out = "";
  for (const ch of s) {
    const cw = /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]/u.test(ch) ? 2 : 1;
    if (w + cw > n) return out + "…";
    w += cw;
    out += ch;
  }
  return out;
}
