// interrupts.js: answering a run's interrupts. Views register a renderer
// for the interrupt values they know (registerInterrupt); any other value
// gets a form built from its payload, with a raw JSON editor besides.

import { h, clear, pretty } from "./dom.js";
import { t } from "./i18n.js";

const renderers = [];

/**
 * registerInterrupt(match, render): match(value) → boolean; render(container,
 * interrupt {id, value}, ctx) fills container. ctx = {resume(value): Promise,
 * t, api, threadId, assistantId}. The first renderer whose match is true wins.
 */
export function registerInterrupt(match, render) {
  renderers.push({ match, render });
}

/** renderInterrupt(container, interrupt, ctx): the interrupt's controls. */
export function renderInterrupt(container, interrupt, ctx) {
  clear(container);
  for (const r of renderers) {
    let ok = false;
    try {
      ok = !!r.match(interrupt.value);
    } catch (err) {
      console.error("interrupt matcher failed", err);
    }
    if (ok) {
      r.render(container, interrupt, ctx);
      return;
    }
  }
  genericForm(container, interrupt, ctx);
}

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

// isHumanInterrupt: LangGraph's agent-inbox shape
// {action_request: {action, args}, config: {allow_*}, description}.
function isHumanInterrupt(v) {
  return v && typeof v === "object" && v.action_request && typeof v.action_request === "object" && v.config;
}

// The kinds of field a value of the payload gets.
function kindOf(v) {
  if (typeof v === "string") return v.length > 80 || v.includes("\n") ? "textarea" : "text";
  if (typeof v === "number") return "number";
  if (typeof v === "boolean") return "checkbox";
  if (v === null) return "text";
  return "json";
}

/**
 * fieldsFor(value): the editable fields of a payload: one per key of an
 * object (nested objects and lists as JSON), or one for a scalar.
 */
// offeredActions: the answers an interrupt says it takes, as a list of
// strings in its "actions" field (the approval planner's question, say);
// the form offers each as a button that answers {action}.
function offeredActions(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return [];
  const a = value.actions;
  return Array.isArray(a) && a.length > 0 && a.every((x) => typeof x === "string" && x !== "") ? a : [];
}

function fieldsFor(value) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const skip = offeredActions(value).length > 0 ? "actions" : null;
    return Object.entries(value)
      .filter(([key]) => key !== skip)
      .map(([key, v]) => ({ key, kind: kindOf(v), value: v }));
  }
  return [{ key: null, kind: kindOf(value), value }];
}

function fieldControl(f, id) {
  switch (f.kind) {
    case "textarea":
      return h("textarea", { id, rows: 4, value: f.value ?? "" });
    case "number":
      return h("input", { id, type: "number", step: "any", value: String(f.value) });
    case "checkbox":
      return h("input", { id, type: "checkbox", checked: f.value });
    case "json":
      return h("textarea", { id, rows: 5, class: "mono", spellcheck: "false", value: pretty(f.value) });
    default:
      return h("input", { id, type: "text", value: f.value ?? "" });
  }
}

function readField(f, el) {
  switch (f.kind) {
    case "number": {
      if (el.value.trim() === "") throw new Error(t("interrupt.errNumber", { field: f.key ?? t("interrupt.value") }));
      const n = Number(el.value);
      if (!Number.isFinite(n)) throw new Error(t("interrupt.errNumber", { field: f.key ?? t("interrupt.value") }));
      return n;
    }
    case "checkbox":
      return el.checked;
    case "json":
      try {
        return JSON.parse(el.value);
      } catch (err) {
        throw new Error(t("interrupt.errJSON", { field: f.key ?? t("interrupt.value"), error: err.message }));
      }
    default:
      return f.value === null && el.value === "" ? null : el.value;
  }
}

function genericForm(container, interrupt, ctx) {
  const value = interrupt.value;
  const box = h("div", { class: "interrupt generic", "data-testid": "interrupt-generic" });
  container.appendChild(box);
  box.appendChild(h("h3", { text: t("interrupt.title") }));
  if (isHumanInterrupt(value)) {
    humanInterrupt(box, value, ctx);
    return;
  }
  const err = h("p", { class: "error", role: "alert", "aria-live": "assertive" });
  const busy = (b) => box.querySelectorAll("button, input, textarea").forEach((x) => (x.disabled = b));
  const submit = async (v) => {
    err.textContent = "";
    busy(true);
    try {
      await ctx.resume(v);
    } catch (e) {
      err.textContent = e.message;
      busy(false);
    }
  };

  // The answers the interrupt offers, one button each.
  const actions = offeredActions(value);
  if (actions.length > 0) {
    box.appendChild(h("p", { class: "muted", text: t("interrupt.actionsHelp") }));
    const row = h("div", { class: "actions", "data-testid": "interrupt-actions" });
    actions.forEach((a, i) =>
      row.appendChild(
        h("button", { type: "button", class: i === 0 ? "primary" : null, "data-testid": `interrupt-action-${a}`, text: a, onclick: () => submit({ action: a }) }),
      ),
    );
    box.appendChild(row);
  }

  // The payload, as a form of its fields.
  const fields = fieldsFor(value);
  const form = h("form", { class: "fields", "data-testid": "interrupt-form" });
  box.appendChild(h("p", { class: "muted", text: t("interrupt.formHelp") }));
  const controls = [];
  for (const f of fields) {
    const id = nextId("intf");
    const ctl = fieldControl(f, id);
    controls.push([f, ctl]);
    form.appendChild(h("div", { class: "field" }, h("label", { for: id, text: f.key ?? t("interrupt.value") }), ctl));
  }
  form.appendChild(h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", "data-testid": "interrupt-submit", text: t("interrupt.send") })));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let out;
    try {
      if (fields.length === 1 && fields[0].key === null) {
        out = readField(fields[0], controls[0][1]);
      } else {
        out = {};
        for (const [f, ctl] of controls) out[f.key] = readField(f, ctl);
      }
    } catch (e2) {
      err.textContent = e2.message;
      return;
    }
    submit(out);
  });
  box.appendChild(form);

  // Any answer, as JSON.
  const rawId = nextId("intraw");
  const raw = h("textarea", { id: rawId, rows: 6, class: "mono", spellcheck: "false", "data-testid": "interrupt-raw", value: pretty(value) });
  const rawErr = h("p", { class: "error", role: "alert" });
  const rawForm = h(
    "form",
    { class: "raw" },
    h("label", { for: rawId, text: t("interrupt.rawLabel") }),
    raw,
    rawErr,
    h("div", { class: "actions" }, h("button", { type: "submit", "data-testid": "interrupt-raw-submit", text: t("interrupt.sendJSON") })),
  );
  raw.addEventListener("input", () => {
    try {
      JSON.parse(raw.value);
      rawErr.textContent = "";
      raw.removeAttribute("aria-invalid");
    } catch (e2) {
      rawErr.textContent = t("interrupt.errJSON", { field: "JSON", error: e2.message });
      raw.setAttribute("aria-invalid", "true");
    }
  });
  rawForm.addEventListener("submit", (e) => {
    e.preventDefault();
    let v;
    try {
      v = JSON.parse(raw.value);
    } catch (e2) {
      rawErr.textContent = t("interrupt.errJSON", { field: "JSON", error: e2.message });
      raw.setAttribute("aria-invalid", "true");
      raw.focus();
      return;
    }
    submit(v);
  });
  box.appendChild(h("details", { class: "raw-editor" }, h("summary", { text: t("interrupt.raw") }), rawForm));
  box.appendChild(err);
}

// humanInterrupt answers LangGraph's HumanInterrupt with a HumanResponse
// list: [{type: accept|edit|response|ignore, args}].
function humanInterrupt(box, v, ctx) {
  const req = v.action_request;
  const cfg = v.config || {};
  const err = h("p", { class: "error", role: "alert" });
  if (v.description) box.appendChild(h("p", { text: v.description }));
  box.appendChild(h("p", {}, h("strong", { text: req.action })));
  const argsId = nextId("hiargs");
  const args = h("textarea", { id: argsId, rows: 6, class: "mono", value: pretty(req.args ?? {}), readonly: !cfg.allow_edit });
  box.appendChild(h("div", { class: "field" }, h("label", { for: argsId, text: t("interrupt.args") }), args));
  const respId = nextId("hiresp");
  const resp = h("textarea", { id: respId, rows: 3 });
  if (cfg.allow_respond) box.appendChild(h("div", { class: "field" }, h("label", { for: respId, text: t("interrupt.response") }), resp));
  const send = async (answer) => {
    err.textContent = "";
    try {
      await ctx.resume([answer]);
    } catch (e) {
      err.textContent = e.message;
    }
  };
  const row = h("div", { class: "actions" });
  if (cfg.allow_accept) row.appendChild(h("button", { type: "button", class: "primary", text: t("interrupt.accept"), onclick: () => send({ type: "accept", args: null }) }));
  if (cfg.allow_edit)
    row.appendChild(
      h("button", {
        type: "button",
        text: t("interrupt.edit"),
        onclick: () => {
          let a;
          try {
            a = JSON.parse(args.value);
          } catch (e) {
            err.textContent = t("interrupt.errJSON", { field: t("interrupt.args"), error: e.message });
            return;
          }
          send({ type: "edit", args: { action: req.action, args: a } });
        },
      }),
    );
  if (cfg.allow_respond) row.appendChild(h("button", { type: "button", text: t("interrupt.respond"), onclick: () => send({ type: "response", args: resp.value }) }));
  if (cfg.allow_ignore) row.appendChild(h("button", { type: "button", text: t("interrupt.ignore"), onclick: () => send({ type: "ignore", args: null }) }));
  box.appendChild(row);
  box.appendChild(err);
}
