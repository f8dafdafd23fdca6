// orch/schemaform.js: a form generated from a tool's JSON Schema (an
// object's properties: strings, numbers, integers, booleans, enums, arrays
// of those, nested objects; anything else as JSON), with each field's
// required mark, default and validation message.

import { h } from "../dom.js";
import { t } from "../i18n.js";
import { nextId } from "./util.js";

// typeOf: the schema's type, the first that is not "null".
function typeOf(schema) {
  let ty = schema && schema.type;
  if (Array.isArray(ty)) ty = ty.find((x) => x !== "null");
  if (!ty && schema && Array.isArray(schema.enum)) ty = typeof schema.enum.find((v) => v !== null && v !== "") || "string";
  if (!ty && schema && schema.properties) ty = "object";
  return ty || "any";
}

const primitive = (ty) => ty === "string" || ty === "number" || ty === "integer" || ty === "boolean";

/**
 * schemaForm(schema, value, opts): a fieldset for an object schema, filled
 * from value (the step's parameters) or the schema's defaults. Returns
 * {el, read(), changed()}: read() validates every field and returns
 * {value, errors}, marking the invalid fields; opts.onInput is called on
 * each change.
 */
export function schemaForm(schema, value, opts = {}) {
  const root = objectField(schema || { type: "object" }, value ?? {}, { name: "", label: opts.label || "", required: true, top: true, onInput: opts.onInput || (() => {}), testid: opts.testid || "param" });
  return {
    el: root.el,
    read() {
      const errors = [];
      const v = root.read(errors);
      return { value: v === undefined ? {} : v, errors };
    },
  };
}

// A field is {el, read(errors) → value|undefined}; undefined leaves the
// property out.

function fieldFor(schema, value, ctx) {
  const ty = typeOf(schema);
  if (Array.isArray(schema.enum) && ty !== "array") return enumField(schema, value, ctx);
  if (ty === "object") return objectField(schema, value, ctx);
  if (ty === "array") {
    const items = schema.items || {};
    const ity = typeOf(items);
    if (Array.isArray(items.enum)) return enumListField(schema, value, ctx);
    if (primitive(ity)) return listField(schema, value, ctx);
    return jsonField(schema, value, ctx);
  }
  if (ty === "boolean") return boolField(schema, value, ctx);
  if (ty === "number" || ty === "integer") return numberField(schema, value, ctx, ty === "integer");
  if (ty === "string") return stringField(schema, value, ctx);
  return jsonField(schema, value, ctx);
}

// wrap builds the field's label, help and error line around a control.
function wrap(schema, ctx, control, id) {
  const errId = `${id}-err`;
  const helpId = `${id}-help`;
  const label = h("label", { for: id }, ctx.label || ctx.name, ctx.required ? h("span", { class: "req", text: ` (${t("orch.form.required")})` }) : null);
  const help = schema.description ? h("p", { class: "help", id: helpId, text: schema.description }) : null;
  const err = h("p", { class: "field-error", id: errId, role: "alert", "data-testid": `${ctx.testid}-error` });
  const describedBy = [help ? helpId : "", errId].filter(Boolean).join(" ");
  control.setAttribute("aria-describedby", describedBy);
  if (ctx.required) control.setAttribute("aria-required", "true");
  const el = h("div", { class: "field schema-field", "data-field": ctx.name }, label, control, help, err);
  const fail = (msg, errors) => {
    err.textContent = msg;
    control.setAttribute("aria-invalid", "true");
    errors.push({ field: ctx.name, message: msg, control });
  };
  const ok = () => {
    err.textContent = "";
    control.removeAttribute("aria-invalid");
  };
  return { el, fail, ok };
}

function initial(schema, value) {
  if (value !== undefined && value !== null) return value;
  return schema.default;
}

function stringField(schema, value, ctx) {
  const id = nextId("f");
  const v = initial(schema, value);
  const multiline = (schema.maxLength || 0) > 200 || (typeof v === "string" && v.length > 80);
  let type = "text";
  if (schema.format === "date") type = "date";
  else if (schema.format === "date-time") type = "datetime-local";
  else if (schema.format === "email") type = "email";
  else if (schema.format === "uri") type = "url";
  const control = multiline
    ? h("textarea", { id, rows: 3, name: ctx.name, "data-testid": `${ctx.testid}-${ctx.name}`, value: v == null ? "" : String(v) })
    : h("input", { id, type, name: ctx.name, "data-testid": `${ctx.testid}-${ctx.name}`, value: v == null ? "" : String(v) });
  if (schema.maxLength) control.maxLength = schema.maxLength;
  control.addEventListener("input", ctx.onInput);
  const w = wrap(schema, ctx, control, id);
  return {
    el: w.el,
    read(errors) {
      const s = control.value;
      const label = ctx.label || ctx.name;
      if (s === "") {
        if (ctx.required && !ctx.top) {
          // An empty string is still a string: a required field whose
          // schema accepts "" (a pattern allowing it) is left as "".
          if (schema.minLength > 0 || (schema.pattern && !safeTest(schema.pattern, ""))) return w.fail(t("orch.form.err.required", { field: label }), errors);
          w.ok();
          return "";
        }
        w.ok();
        return value === "" ? "" : undefined;
      }
      if (schema.minLength && [...s].length < schema.minLength) return w.fail(t("orch.form.err.minLength", { field: label, n: schema.minLength }), errors);
      if (schema.maxLength && [...s].length > schema.maxLength) return w.fail(t("orch.form.err.maxLength", { field: label, n: schema.maxLength }), errors);
      if (schema.pattern && !safeTest(schema.pattern, s)) return w.fail(t("orch.form.err.pattern", { field: label }), errors);
      w.ok();
      return s;
    },
  };
}

function safeTest(pattern, s) {
  try {
    return new RegExp(pattern, "u").test(s);
  } catch {
    return true; // a pattern JavaScript cannot read is left to the server
  }
}

function numberField(schema, value, ctx, integer) {
  const id = nextId("f");
  const v = initial(schema, value);
  const control = h("input", { id, type: "number", name: ctx.name, inputmode: integer ? "numeric" : "decimal", step: integer ? "1" : "any", "data-testid": `${ctx.testid}-${ctx.name}`, value: v == null ? "" : String(v) });
  if (schema.minimum !== undefined) control.min = String(schema.minimum);
  if (schema.maximum !== undefined) control.max = String(schema.maximum);
  control.addEventListener("input", ctx.onInput);
  const w = wrap(schema, ctx, control, id);
  return {
    el: w.el,
    read(errors) {
      const label = ctx.label || ctx.name;
      const s = control.value.trim();
      if (s === "") {
        if (control.validity && control.validity.badInput) return w.fail(t("orch.form.err.number", { field: label }), errors);
        if (ctx.required) return w.fail(t("orch.form.err.required", { field: label }), errors);
        w.ok();
        return undefined;
      }
      const n = Number(s);
      if (!Number.isFinite(n)) return w.fail(t("orch.form.err.number", { field: label }), errors);
      if (integer && !Number.isInteger(n)) return w.fail(t("orch.form.err.integer", { field: label }), errors);
      if (schema.minimum !== undefined && n < schema.minimum) return w.fail(t("orch.form.err.min", { field: label, min: schema.minimum }), errors);
      if (schema.maximum !== undefined && n > schema.maximum) return w.fail(t("orch.form.err.max", { field: label, max: schema.maximum }), errors);
      if (schema.exclusiveMinimum !== undefined && n <= schema.exclusiveMinimum) return w.fail(t("orch.form.err.min", { field: label, min: schema.exclusiveMinimum }), errors);
      if (schema.exclusiveMaximum !== undefined && n >= schema.exclusiveMaximum) return w.fail(t("orch.form.err.max", { field: label, max: schema.exclusiveMaximum }), errors);
      w.ok();
      return n;
    },
  };
}

function boolField(schema, value, ctx) {
  const id = nextId("f");
  const v = initial(schema, value);
  const control = h("input", { id, type: "checkbox", name: ctx.name, "data-testid": `${ctx.testid}-${ctx.name}`, checked: !!v });
  control.addEventListener("change", ctx.onInput);
  const w = wrap(schema, ctx, control, id);
  w.el.classList.add("check");
  return {
    el: w.el,
    read() {
      // An unset optional boolean stays out unless it was set or ticked.
      if (!control.checked && v === undefined && !ctx.required) return undefined;
      return control.checked;
    },
  };
}

function enumField(schema, value, ctx) {
  const id = nextId("f");
  const v = initial(schema, value);
  const control = h("select", { id, name: ctx.name, "data-testid": `${ctx.testid}-${ctx.name}` });
  const values = schema.enum;
  // Options carry the index of the value: enum values may be of any type.
  if (!values.includes("") || !ctx.required) {
    if (!values.includes("")) control.append(h("option", { value: "", text: t("orch.form.none") }));
  }
  values.forEach((ev, i) => {
    control.append(h("option", { value: String(i), text: ev === "" ? t("orch.form.none") : typeof ev === "string" ? ev : JSON.stringify(ev) }));
  });
  const at = values.findIndex((ev) => JSON.stringify(ev) === JSON.stringify(v));
  control.value = at >= 0 ? String(at) : "";
  control.addEventListener("change", ctx.onInput);
  const w = wrap(schema, ctx, control, id);
  return {
    el: w.el,
    read(errors) {
      const label = ctx.label || ctx.name;
      if (control.value === "") {
        if (ctx.required) return w.fail(t("orch.form.err.required", { field: label }), errors);
        w.ok();
        return undefined;
      }
      const i = Number(control.value);
      if (!(i >= 0 && i < values.length)) return w.fail(t("orch.form.err.enum", { field: label }), errors);
      w.ok();
      return values[i];
    },
  };
}

// listAnswer is what a list field answers: its items, or undefined (with
// a message under the field, focused from control) when there are fewer
// than minItems, or when an optional list left empty was never set.
function listAnswer(out, schema, value, ctx, label, err, errors, control) {
  const min = schema.minItems || 0;
  if (out.length < min) {
    err.textContent = t("orch.form.err.minItems", { field: label, n: min });
    errors.push({ field: ctx.name, message: err.textContent, control });
    return undefined;
  }
  err.textContent = "";
  if (out.length === 0 && !ctx.required && value === undefined) return undefined;
  return out;
}

function enumListField(schema, value, ctx) {
  const id = nextId("f");
  const v = Array.isArray(initial(schema, value)) ? initial(schema, value) : [];
  const values = schema.items.enum;
  const boxes = values.map((ev, i) => {
    const bid = `${id}-${i}`;
    const box = h("input", { type: "checkbox", id: bid, "data-testid": `${ctx.testid}-${ctx.name}-${i}`, checked: v.some((x) => JSON.stringify(x) === JSON.stringify(ev)) });
    box.addEventListener("change", ctx.onInput);
    return { box, ev, el: h("label", { class: "choice", for: bid }, box, ` ${typeof ev === "string" ? ev : JSON.stringify(ev)}`) };
  });
  const group = h("fieldset", { class: "choices", id, tabindex: "-1" }, h("legend", {}, ctx.label || ctx.name, ctx.required ? h("span", { class: "req", text: ` (${t("orch.form.required")})` }) : null), boxes.map((b) => b.el));
  const err = h("p", { class: "field-error", role: "alert" });
  const el = h("div", { class: "field schema-field", "data-field": ctx.name }, group, schema.description ? h("p", { class: "help", text: schema.description }) : null, err);
  return {
    el,
    read(errors) {
      const out = boxes.filter((b) => b.box.checked).map((b) => b.ev);
      return listAnswer(out, schema, value, ctx, ctx.label || ctx.name, err, errors, group);
    },
  };
}

// listField: an array of strings or numbers, one input per item.
function listField(schema, value, ctx) {
  const id = nextId("f");
  const items = schema.items || {};
  const ity = typeOf(items);
  const start = Array.isArray(initial(schema, value)) ? initial(schema, value) : [];
  const list = h("ol", { class: "items" });
  const rows = [];
  const label = ctx.label || ctx.name;
  const add = (v) => {
    const n = rows.length + 1;
    const f = ity === "boolean" ? boolField(items, v, { ...ctx, name: `${ctx.name}[${n}]`, label: `${label} ${n}`, required: true }) : ity === "string" ? stringField(items, v, { ...ctx, name: `${ctx.name}.${n}`, label: `${label} ${n}`, required: true }) : numberField(items, v, { ...ctx, name: `${ctx.name}.${n}`, label: `${label} ${n}`, required: true }, ity === "integer");
    const row = { f, li: null };
    const remove = h("button", { type: "button", class: "icon small", "aria-label": t("orch.form.remove", { n }), text: "×", onclick: () => {
      rows.splice(rows.indexOf(row), 1);
      row.li.remove();
      ctx.onInput();
    } });
    row.li = h("li", {}, f.el, remove);
    rows.push(row);
    list.append(row.li);
  };
  start.forEach(add);
  const addBtn = h("button", { type: "button", class: "small", "data-testid": `${ctx.testid}-${ctx.name}-add`, text: `${t("orch.form.add")}: ${label}`, onclick: () => {
    add(undefined);
    ctx.onInput();
    const last = rows[rows.length - 1];
    const input = last && last.li.querySelector("input, textarea, select");
    if (input) input.focus();
  } });
  const err = h("p", { class: "field-error", role: "alert" });
  const group = h("fieldset", { class: "list", id }, h("legend", {}, label, ctx.required ? h("span", { class: "req", text: ` (${t("orch.form.required")})` }) : null), list, addBtn);
  const el = h("div", { class: "field schema-field", "data-field": ctx.name }, group, schema.description ? h("p", { class: "help", text: schema.description }) : null, err);
  return {
    el,
    read(errors) {
      const out = [];
      for (const r of rows) {
        const v = r.f.read(errors);
        if (v !== undefined) out.push(v);
      }
      return listAnswer(out, schema, value, ctx, label, err, errors, addBtn);
    },
  };
}

function objectField(schema, value, ctx) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const v = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  const fields = Object.entries(props).map(([name, ps]) => [
    name,
    fieldFor(ps || {}, v[name], { name: ctx.top ? name : `${ctx.name}.${name}`, label: ps && ps.title ? ps.title : name, required: required.has(name), onInput: ctx.onInput, testid: ctx.testid }),
  ]);
  // Properties the value has and the schema does not name are kept as
  // they are (an open schema).
  const extra = Object.keys(v).filter((k) => !(k in props));
  const children = fields.map(([, f]) => f.el);
  const el = ctx.top
    ? h("div", { class: "schema-form" }, children)
    : h("fieldset", { class: "object", "data-field": ctx.name }, h("legend", {}, ctx.label || ctx.name, ctx.required ? h("span", { class: "req", text: ` (${t("orch.form.required")})` }) : null), schema.description ? h("p", { class: "help", text: schema.description }) : null, children);
  return {
    el,
    read(errors) {
      const out = {};
      for (const [name, f] of fields) {
        const fv = f.read(errors);
        if (fv !== undefined) out[name] = fv;
      }
      for (const k of extra) out[k] = v[k];
      if (!ctx.top && !ctx.required && Object.keys(out).length === 0 && value === undefined) return undefined;
      return out;
    },
  };
}

function jsonField(schema, value, ctx) {
  const id = nextId("f");
  const v = initial(schema, value);
  const control = h("textarea", { id, rows: 3, class: "mono", spellcheck: "false", name: ctx.name, "data-testid": `${ctx.testid}-${ctx.name}`, value: v === undefined ? "" : JSON.stringify(v, null, 2) });
  control.addEventListener("input", ctx.onInput);
  const w = wrap(schema, ctx, control, id);
  return {
    el: w.el,
    read(errors) {
      const label = ctx.label || ctx.name;
      const s = control.value.trim();
      if (s === "") {
        if (ctx.required) return w.fail(t("orch.form.err.required", { field: label }), errors);
        w.ok();
        return undefined;
      }
      try {
        const parsed = JSON.parse(s);
        w.ok();
        return parsed;
      } catch (e) {
        return w.fail(t("orch.form.err.json", { field: label, error: e.message }), errors);
      }
    },
  };
}
