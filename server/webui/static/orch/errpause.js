// orch/errpause.js: the error point (a failed todo: retry, skip, abort)
// and the pause point (verify, modify, delete the coming todos).

import { h, clear } from "../dom.js";
import { t } from "../i18n.js";
import { allowed, nextId, problemBanner, reasonForm, sender, statusText } from "./util.js";

/** renderError(container, interrupt, ctx): the failed todo and its choices. */
export function renderError(container, interrupt, ctx) {
  const v = interrupt.value;
  const f = v.failure || {};
  const todo = f.todo || {};
  const r = f.result || {};
  const headId = nextId("h");
  const box = h("section", { class: "interrupt orch-interrupt orch-error", "data-testid": "orch-error-point", "aria-labelledby": headId });
  const { send, err } = sender(box, ctx);
  box.append(h("h3", { id: headId, text: t("orch.error.title", { id: todo.id || "", title: todo.title || "" }) }), problemBanner(v));
  box.append(
    h("p", { class: "orch-failure", role: "status" }, r.error_code ? h("strong", { text: `${t("orch.error.code", { code: r.error_code })}: ` }) : null, r.error || todo.reason || ""),
    h("p", { class: "muted small", text: t("orch.error.detail", { tool: r.tool || todo.tool || "-", attempt: r.attempt || todo.attempt || 1 }) }),
  );
  const abort = reasonForm(t("orch.error.abortSend"), (reason) => send(reason ? { action: "abort", reason } : { action: "abort" }), "error-abort");
  const actions = h("div", { class: "actions" });
  if (allowed(v, "retry")) actions.append(h("button", { type: "button", class: "primary", "data-testid": "error-retry", text: t("orch.error.retry"), onclick: () => send({ action: "retry" }) }));
  if (allowed(v, "skip")) actions.append(h("button", { type: "button", "data-testid": "error-skip", text: t("orch.error.skip"), onclick: () => send({ action: "skip" }) }));
  if (allowed(v, "abort")) actions.append(h("button", { type: "button", class: "danger", "data-testid": "error-abort", text: t("orch.error.abort"), onclick: () => abort.open() }));
  box.append(actions, abort.row, err);
  container.append(box);
}

/** renderPause(container, interrupt, ctx): the coming todos, to go on with, drop or change. */
export function renderPause(container, interrupt, ctx) {
  const v = interrupt.value;
  const p = v.pause || {};
  const todos = Array.isArray(p.todos) ? p.todos : [];
  const next = new Set(p.next || []);
  const pending = todos.filter((td) => td.status === "pending");
  const headId = nextId("h");
  const box = h("section", { class: "interrupt orch-interrupt orch-pause", "data-testid": "orch-pause", "aria-labelledby": headId });
  const { send, err } = sender(box, ctx);
  box.append(h("h3", { id: headId, text: t("orch.pause.title") }), problemBanner(v));
  const name = nextId("drop");
  const list = h(
    "ul",
    { class: "plain orch-pause-list" },
    todos.map((td, i) => {
      const id = `${name}-${i}`;
      const canDrop = td.status === "pending" && allowed(v, "delete");
      return h(
        "li",
        { class: next.has(td.id) ? "next" : "" },
        canDrop ? h("input", { type: "checkbox", id, value: td.id, "data-testid": `pause-drop-${td.id}` }) : null,
        h("label", { for: canDrop ? id : null }, h("strong", { class: "mono", text: td.id }), ` ${td.title || ""} `, h("span", { class: `badge st-${td.status}`, text: statusText(td.status) }), next.has(td.id) ? h("span", { class: "badge next", text: t("orch.pause.next") }) : null),
      );
    }),
  );
  box.append(list);

  const modSlot = h("div", { class: "orch-pause-modify", hidden: true });
  const actions = h("div", { class: "actions" });
  if (allowed(v, "verify")) actions.append(h("button", { type: "button", class: "primary", "data-testid": "pause-verify", text: t("orch.pause.verify"), onclick: () => send({ action: "verify" }) }));
  if (allowed(v, "delete"))
    actions.append(
      h("button", {
        type: "button",
        "data-testid": "pause-delete",
        text: t("orch.pause.delete"),
        onclick: () => {
          const ids = [...list.querySelectorAll("input[type=checkbox]:checked")].map((x) => x.value);
          if (!ids.length) {
            err.textContent = t("orch.pause.noneSelected");
            return;
          }
          send({ action: "delete", delete: ids });
        },
      }),
    );
  if (allowed(v, "modify") && pending.length)
    actions.append(
      h("button", {
        type: "button",
        "data-testid": "pause-modify",
        text: t("orch.pause.modify"),
        onclick: () => {
          modSlot.hidden = false;
          modifyForm(modSlot, pending, (todo) => send({ action: "modify", todos: [todo] }));
        },
      }),
    );
  box.append(actions, modSlot, err);
  container.append(box);
}

// modifyForm: pick a pending todo, change its title, tool and parameters.
function modifyForm(slot, pending, onSend) {
  const ids = { pick: nextId("pick"), title: nextId("mt"), tool: nextId("mtool"), params: nextId("mp") };
  const pick = h("select", { id: ids.pick, "data-testid": "pause-modify-pick" }, pending.map((td) => h("option", { value: td.id, text: `${td.id} ${td.title || ""}` })));
  const title = h("input", { type: "text", id: ids.title, "data-testid": "pause-modify-title" });
  const tool = h("input", { type: "text", id: ids.tool, "data-testid": "pause-modify-tool" });
  const params = h("textarea", { id: ids.params, rows: 3, class: "mono", spellcheck: "false", "data-testid": "pause-modify-params" });
  const err = h("p", { class: "error", role: "alert" });
  const fill = () => {
    const td = pending.find((x) => x.id === pick.value) || pending[0];
    title.value = td.title || "";
    tool.value = td.tool || "";
    params.value = JSON.stringify(td.params || {}, null, 2);
  };
  pick.addEventListener("change", fill);
  const form = h(
    "form",
    {},
    h("div", { class: "field" }, h("label", { for: ids.pick, text: t("orch.pause.pick") }), pick),
    h("div", { class: "field" }, h("label", { for: ids.title, text: t("orch.plan.todoTitle") }), title),
    h("div", { class: "field" }, h("label", { for: ids.tool, text: t("orch.plan.tool") }), tool),
    h("div", { class: "field" }, h("label", { for: ids.params, text: t("orch.plan.params") }), params),
    err,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", "data-testid": "pause-modify-send", text: t("orch.pause.modifySend") })),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let p;
    try {
      p = JSON.parse(params.value || "{}");
      if (!p || typeof p !== "object" || Array.isArray(p)) throw new Error("{ … }");
    } catch (e2) {
      err.textContent = t("orch.form.err.json", { field: t("orch.plan.params"), error: e2.message });
      params.setAttribute("aria-invalid", "true");
      params.focus();
      return;
    }
    const td = { id: pick.value, params: p };
    if (title.value.trim()) td.title = title.value.trim();
    if (tool.value.trim()) td.tool = tool.value.trim();
    onSend(td);
  });
  clear(slot).append(form);
  fill();
  pick.focus();
}
