// orch/step.js: the step approval point: the tool, its description, its
// recommended parameters in a form generated from the tool's JSON Schema;
// accept, edit (the form's parameters) or skip.

import { h } from "../dom.js";
import { t } from "../i18n.js";
import { schemaForm } from "./schemaform.js";
import { allowed, nextId, percent, problemBanner, reasonForm, sender } from "./util.js";

function parse(raw) {
  if (raw && typeof raw === "object") return raw;
  if (typeof raw === "string") {
    try {
      return JSON.parse(raw);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

// stable: JSON with sorted keys, to compare parameters.
function stable(v) {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (v && typeof v === "object") return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

/** renderStep(container, interrupt, ctx): the step approval's controls. */
export function renderStep(container, interrupt, ctx) {
  const v = interrupt.value;
  const st = v.step || {};
  const todo = st.todo || {};
  const headId = nextId("h");
  const box = h("section", { class: "interrupt orch-interrupt orch-step", "data-testid": "orch-step", "aria-labelledby": headId, "data-todo-id": todo.id || "" });
  const { send, err } = sender(box, ctx);
  box.append(h("h3", { id: headId, text: t("orch.step.title", { id: todo.id || "", title: todo.title || "" }) }), problemBanner(v));

  const facts = h("dl", { class: "orch-step-facts" });
  facts.append(h("dt", { text: t("orch.step.tool") }), h("dd", {}, h("code", { "data-testid": "orch-step-tool", text: st.tool || todo.tool || "" }), st.description ? h("p", { class: "muted small", "data-testid": "orch-step-description", text: st.description }) : null));
  if (Array.isArray(st.tools) && st.tools.length > 1)
    facts.append(h("dt", { text: t("orch.step.tools") }), h("dd", { class: "small" }, st.tools.map((x) => h("span", { class: "chip", text: `${x.name} ${Number(x.score || 0).toFixed(2)}` }))));
  box.append(facts);
  const notes = [];
  if (st.mode === "detailed" && st.readiness !== undefined) notes.push(t("orch.step.readiness", { percent: percent(st.readiness) }));
  if (st.predicted_acceptance !== undefined) notes.push(t("orch.step.predicted", { percent: percent(st.predicted_acceptance) }));
  if (st.inputs && Object.keys(st.inputs).length) notes.push(t("orch.step.inputs", { ids: Object.keys(st.inputs).join(", ") }));
  if (notes.length) box.append(h("p", { class: "muted small", text: notes.join(" · ") }));
  if (st.note) box.append(h("p", { class: "orch-note small", text: st.note }));
  const missing = Array.isArray(st.missing) ? st.missing : [];
  if (missing.length) box.append(h("p", { class: "orch-problem", role: "status", text: t("orch.step.missing", { names: missing.join(", ") }) }));

  const proposed = parse(st.params) || {};
  const schema = parse(st.schema);
  const status = h("p", { class: "muted small", "aria-live": "polite" });
  let read;
  let refresh = () => {};
  let editBtn = null;
  const formEl = h("form", { class: "orch-step-form", "data-testid": "orch-step-form", novalidate: true });
  const legend = h("legend", { text: t("orch.step.params") });
  if (schema && (schema.type === "object" || schema.properties)) {
    let changedOnce = false;
    const form = schemaForm(schema, proposed, {
      testid: "param",
      onInput: () => {
        changedOnce = true;
        refresh();
      },
    });
    read = () => form.read();
    formEl.append(h("fieldset", {}, legend, form.el));
    refresh = () => {
      const r = form.read();
      const same = r.errors.length === 0 && stable(r.value) === stable(proposed);
      status.textContent = same ? t("orch.step.unchanged") : "";
      if (editBtn) editBtn.disabled = !changedOnce && same;
    };
  } else {
    const id = nextId("params");
    const ta = h("textarea", { id, rows: 4, class: "mono", spellcheck: "false", "data-testid": "param-json", value: JSON.stringify(proposed, null, 2) });
    formEl.append(h("fieldset", {}, legend, h("div", { class: "field" }, h("label", { for: id, text: t("orch.step.noSchema") }), ta)));
    read = () => {
      try {
        const p = JSON.parse(ta.value);
        if (!p || typeof p !== "object" || Array.isArray(p)) throw new Error("{ … }");
        ta.removeAttribute("aria-invalid");
        return { value: p, errors: [] };
      } catch (e) {
        ta.setAttribute("aria-invalid", "true");
        return { value: null, errors: [{ field: "params", message: t("orch.form.err.json", { field: t("orch.step.params"), error: e.message }), control: ta }] };
      }
    };
  }
  formEl.append(status);
  box.append(formEl);

  const actions = h("div", { class: "actions" });
  if (allowed(v, "accept"))
    actions.append(h("button", { type: "button", class: "primary", "data-testid": "step-accept", disabled: missing.length > 0, text: t("orch.step.accept"), onclick: () => send({ action: "accept" }) }));
  if (allowed(v, "edit")) {
    editBtn = h("button", { type: "button", "data-testid": "step-edit", text: t("orch.step.edit") });
    formEl.addEventListener("submit", (e) => {
      e.preventDefault();
      const r = read();
      if (r.errors.length) {
        err.textContent = t("orch.form.fix");
        const c = r.errors[0].control;
        if (c && c.focus) c.focus();
        return;
      }
      send({ action: "edit", params: r.value });
    });
    editBtn.addEventListener("click", (e) => {
      e.preventDefault();
      formEl.requestSubmit();
    });
    actions.append(editBtn);
  }
  const skip = reasonForm(t("orch.step.skipSend"), (reason) => send(reason ? { action: "skip", reason } : { action: "skip" }), "step-skip");
  if (allowed(v, "skip")) actions.append(h("button", { type: "button", "data-testid": "step-skip", text: t("orch.step.skip"), onclick: () => skip.open() }));
  box.append(actions, skip.row, err);
  refresh();
  container.append(box);
}
