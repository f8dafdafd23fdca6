// orch/plan.js: the plan approval point: the todo DAG drawn as SVG, the
// cost and time estimate, the Mermaid text; accept, reject with a reason,
// or edit (todos and dependencies changed, added, removed), checked here
// before it is sent: unique ids, known dependencies, no cycle.

import { h, clear } from "../dom.js";
import { t } from "../i18n.js";
import { checkDeps, drawDag } from "./dag.js";
import { allowed, duration, nextId, number, problemBanner, reasonForm, sender } from "./util.js";

/** renderPlan(container, interrupt, ctx): the plan viewer and editor. */
export function renderPlan(container, interrupt, ctx) {
  const v = interrupt.value;
  const plan = v.plan || { todos: [] };
  const todos = Array.isArray(plan.todos) ? plan.todos : [];
  const headId = nextId("h");
  const box = h("section", { class: "interrupt orch-interrupt orch-plan", "data-testid": "orch-plan", "aria-labelledby": headId });
  const { send, err } = sender(box, ctx);
  box.append(h("h3", { id: headId, text: t("orch.plan.title", { revision: plan.revision || 1 }) }), problemBanner(v));
  box.append(h("p", { class: "muted", text: t("orch.plan.ask", { n: todos.length }) }));
  if (plan.summary) box.append(h("p", { class: "orch-summary", text: plan.summary }));
  box.append(planFacts(plan));

  const dagSlot = h("div", { class: "orch-dag-slot" });
  const showDag = (list, cycle) => {
    clear(dagSlot).append(drawDag(list, { cycle, critical: cycle ? [] : (plan.estimate && plan.estimate.critical_path) || [], onSelect: (id) => focusTodo(id) }));
  };
  showDag(todos, null);
  box.append(dagSlot);

  const body = h("div", { class: "orch-plan-body" });
  box.append(body);
  const focusTodo = (id) => {
    const el = body.querySelector(`[data-todo-id="${CSS.escape(id)}"]`);
    if (el) {
      el.scrollIntoView({ block: "nearest" });
      const f = el.querySelector("input, button") || el;
      if (f.focus) f.focus();
    }
  };

  if (plan.mermaid) {
    const code = h("pre", { class: "mono", "data-testid": "plan-mermaid" }, h("code", { text: plan.mermaid }));
    const copy = h("button", {
      type: "button",
      class: "small",
      text: t("orch.plan.copy"),
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(plan.mermaid);
          copy.textContent = t("orch.plan.copied");
        } catch {
          const sel = window.getSelection();
          const range = document.createRange();
          range.selectNodeContents(code);
          sel.removeAllRanges();
          sel.addRange(range);
        }
      },
    });
    box.append(h("details", { class: "orch-mermaid" }, h("summary", { text: t("orch.plan.mermaid") }), copy, code));
  }

  const actions = h("div", { class: "actions" });
  const reject = reasonForm(t("orch.plan.rejectSend"), (reason) => send(reason ? { action: "reject", reason } : { action: "reject" }), "plan-reject");
  const view = () => {
    clear(body).append(todoList(todos));
    clear(actions);
    if (allowed(v, "accept")) actions.append(h("button", { type: "button", class: "primary", "data-testid": "plan-accept", text: t("orch.plan.accept"), onclick: () => send({ action: "accept" }) }));
    if (allowed(v, "edit")) actions.append(h("button", { type: "button", "data-testid": "plan-edit", text: t("orch.plan.edit"), onclick: () => edit() }));
    if (allowed(v, "reject")) actions.append(h("button", { type: "button", "data-testid": "plan-reject", text: t("orch.plan.reject"), onclick: () => reject.open() }));
    showDag(todos, null);
  };
  const edit = () => {
    clear(actions);
    reject.row.hidden = true;
    const editor = planEditor(plan, {
      onChange: (list, cycle) => showDag(list, cycle),
      onSend: (edited) => send({ action: "edit", plan: edited }),
      onDiscard: () => view(),
    });
    clear(body).append(editor);
    const first = editor.querySelector("input, textarea");
    if (first) first.focus();
  };
  view();
  box.append(actions, reject.row, err);
  container.append(box);
}

function planFacts(plan) {
  const e = plan.estimate || {};
  const items = [];
  if (plan.strategy) items.push(t("orch.plan.strategy", { strategy: plan.strategy }));
  if (e.seconds || e.critical_seconds) items.push(t("orch.plan.estimate", { critical: duration((e.critical_seconds || 0) * 1000), serial: duration((e.seconds || 0) * 1000) }));
  if (e.cost) items.push(t("orch.plan.cost", { cost: number(e.cost, 4) }));
  if (Array.isArray(e.critical_path) && e.critical_path.length) items.push(t("orch.plan.critical", { path: e.critical_path.join(" → ") }));
  return h("ul", { class: "orch-facts", "data-testid": "plan-facts" }, items.map((x) => h("li", { text: x })));
}

function todoList(todos) {
  return h(
    "ol",
    { class: "orch-todo-list", "data-testid": "plan-todos" },
    todos.map((td) =>
      h(
        "li",
        { "data-todo-id": td.id, tabindex: "-1" },
        h("strong", { class: "mono", text: td.id }),
        " ",
        td.title || "",
        h("div", { class: "muted small" }, [td.executor, td.tool].filter(Boolean).join(" · "), td.params && Object.keys(td.params).length ? h("code", { class: "params", text: ` ${JSON.stringify(td.params)}` }) : null),
        Array.isArray(td.depends_on) && td.depends_on.length ? h("div", { class: "muted small", text: `← ${td.depends_on.join(", ")}` }) : null,
      ),
    ),
  );
}

/**
 * checkDraft(draft): every problem of an edited plan that can be seen
 * here, with the todo and field it concerns. Returns {errors, cycle,
 * todos} (todos as they would be sent, when there are no errors).
 */
export function checkDraft(draft) {
  const errors = [];
  const todos = draft.map((d) => ({ id: d.id.trim(), title: d.title.trim(), executor: d.executor.trim(), tool: d.tool.trim(), depends_on: [...d.deps] }));
  if (todos.length === 0) errors.push({ field: "plan", text: t("orch.plan.err.empty") });
  const deps = checkDeps(todos);
  errors.push(...deps.errors);
  draft.forEach((d, i) => {
    const id = todos[i].id || t("orch.plan.todo", { n: i + 1 });
    if (!todos[i].title) errors.push({ index: i, field: "title", text: t("orch.plan.err.title", { id }) });
    if (!todos[i].executor) errors.push({ index: i, field: "executor", text: t("orch.plan.err.executor", { id }) });
    const text = d.paramsText.trim();
    if (text === "") todos[i].params = {};
    else {
      try {
        const p = JSON.parse(text);
        if (!p || typeof p !== "object" || Array.isArray(p)) throw new Error("{ … }");
        todos[i].params = p;
      } catch (e) {
        errors.push({ index: i, field: "params", text: t("orch.plan.err.params", { id, error: e.message }) });
      }
    }
    if (!todos[i].tool) delete todos[i].tool;
  });
  return { errors, cycle: deps.cycle, todos };
}

// planEditor: the editable todos: id, title, executor, tool, parameters
// and dependencies of each; add and remove.
function planEditor(plan, { onChange, onSend, onDiscard }) {
  let key = 0;
  const draft = (plan.todos || []).map((td) => ({
    key: ++key,
    id: td.id || "",
    title: td.title || "",
    executor: td.executor || "",
    tool: td.tool || "",
    paramsText: td.params && Object.keys(td.params).length ? JSON.stringify(td.params) : "{}",
    deps: new Set(td.depends_on || []),
  }));
  const executors = [...new Set((plan.todos || []).map((td) => td.executor).filter(Boolean))];
  const tools = [...new Set((plan.todos || []).map((td) => td.tool).filter(Boolean))];
  const exList = nextId("executors");
  const toolList = nextId("tools");
  const summaryId = nextId("summary");
  const summary = h("textarea", { id: summaryId, rows: 2, "data-testid": "plan-summary", value: plan.summary || "" });
  const cards = h("div", { class: "orch-edit-todos" });
  const report = h("div", { class: "orch-check", "data-testid": "plan-check", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "orch-plan-editor", "data-testid": "plan-editor", novalidate: true },
    h("datalist", { id: exList }, executors.map((x) => h("option", { value: x }))),
    h("datalist", { id: toolList }, tools.map((x) => h("option", { value: x }))),
    h("div", { class: "field" }, h("label", { for: summaryId, text: t("orch.plan.summary") }), summary),
    cards,
    h("div", { class: "actions" }, h("button", { type: "button", "data-testid": "plan-add-todo", text: t("orch.plan.add"), onclick: () => addTodo() })),
    report,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "primary", "data-testid": "plan-edit-send", text: t("orch.plan.sendEdit") }),
      h("button", { type: "button", "data-testid": "plan-edit-discard", text: t("orch.plan.discard"), onclick: () => onDiscard() }),
    ),
  );

  const check = () => {
    const r = checkDraft(draft);
    clear(report);
    for (const c of cards.querySelectorAll("[aria-invalid]")) c.removeAttribute("aria-invalid");
    if (r.errors.length) {
      report.className = "orch-check invalid";
      report.append(h("p", { text: t("orch.plan.invalid") }), h("ul", { "data-testid": "plan-errors" }, r.errors.map((e) => h("li", { "data-field": e.field, text: e.text }))));
      for (const e of r.errors) {
        if (e.index === undefined) continue;
        const card = cards.children[e.index];
        const ctl = card && card.querySelector(`[data-f="${e.field}"]`);
        if (ctl) ctl.setAttribute("aria-invalid", "true");
      }
    } else {
      report.className = "orch-check valid";
      report.append(h("p", { text: t("orch.plan.valid") }));
    }
    onChange(r.todos.map((td, i) => ({ ...td, title: td.title || draft[i].title })), r.cycle);
    return r;
  };

  const depsBox = (d, i) => {
    const others = draft.filter((o) => o !== d && o.id.trim());
    const name = nextId("deps");
    if (!others.length) return h("p", { class: "muted small", text: t("orch.plan.noDeps") });
    return h(
      "div",
      { class: "deps", "data-f": "deps", "data-testid": `plan-todo-deps-${i}` },
      others.map((o) => {
        const id = `${name}-${o.key}`;
        const box = h("input", { type: "checkbox", id, "data-dep": o.id.trim(), checked: d.deps.has(o.id.trim()) });
        box.addEventListener("change", () => {
          if (box.checked) d.deps.add(o.id.trim());
          else d.deps.delete(o.id.trim());
          check();
        });
        return h("label", { class: "choice", for: id }, box, ` ${o.id.trim()}`);
      }),
    );
  };

  const refreshDeps = () => {
    draft.forEach((d, i) => {
      const card = cards.children[i];
      const slot = card && card.querySelector(".deps-slot");
      if (slot) clear(slot).append(depsBox(d, i));
    });
  };

  const card = (d, i) => {
    const ids = { id: nextId("tid"), title: nextId("ttitle"), executor: nextId("texec"), tool: nextId("ttool"), params: nextId("tparams") };
    const input = (field, extra) => {
      const el = h("input", { type: "text", id: ids[field], "data-f": field, "data-testid": `plan-todo-${field}-${i}`, value: d[field], ...extra });
      el.addEventListener("input", () => {
        if (field === "id") {
          const old = d.id.trim();
          d.id = el.value;
          const now = d.id.trim();
          // Todos that depended on the old id depend on the new one.
          for (const o of draft) if (o.deps.has(old)) (o.deps.delete(old), now && o.deps.add(now));
          refreshDeps();
          legend.textContent = `${t("orch.plan.todo", { n: i + 1 })}: ${now}`;
        } else d[field] = el.value;
        check();
      });
      return el;
    };
    const params = h("textarea", { id: ids.params, rows: 2, class: "mono", spellcheck: "false", "data-f": "params", "data-testid": `plan-todo-params-${i}`, value: d.paramsText });
    params.addEventListener("input", () => {
      d.paramsText = params.value;
      check();
    });
    const legend = h("legend", { text: `${t("orch.plan.todo", { n: i + 1 })}: ${d.id}` });
    return h(
      "fieldset",
      { class: "orch-edit-todo", "data-todo-id": d.id, "data-testid": `plan-todo-${i}` },
      legend,
      h("div", { class: "grid" },
        h("div", { class: "field" }, h("label", { for: ids.id, text: t("orch.plan.id") }), input("id", { maxlength: "64", autocomplete: "off", spellcheck: "false" })),
        h("div", { class: "field wide" }, h("label", { for: ids.title, text: t("orch.plan.todoTitle") }), input("title")),
        h("div", { class: "field" }, h("label", { for: ids.executor, text: t("orch.plan.executor") }), input("executor", { list: exList, autocomplete: "off" })),
        h("div", { class: "field" }, h("label", { for: ids.tool, text: t("orch.plan.tool") }), input("tool", { list: toolList, autocomplete: "off" })),
        h("div", { class: "field wide" }, h("label", { for: ids.params, text: t("orch.plan.params") }), params),
      ),
      h("fieldset", { class: "deps-wrap" }, h("legend", { text: t("orch.plan.deps") }), h("div", { class: "deps-slot" }, depsBox(d, i))),
      h("div", { class: "actions" }, h("button", { type: "button", class: "small", "data-testid": `plan-todo-remove-${i}`, text: t("orch.plan.remove", { id: d.id || i + 1 }), onclick: () => removeTodo(d) })),
    );
  };

  const renderCards = () => {
    clear(cards).append(...draft.map((d, i) => card(d, i)));
    check();
  };
  const addTodo = () => {
    const used = new Set(draft.map((d) => d.id.trim()));
    let n = draft.length + 1;
    while (used.has(`t${n}`)) n++;
    draft.push({ key: ++key, id: `t${n}`, title: "", executor: executors[0] || "", tool: "", paramsText: "{}", deps: new Set() });
    renderCards();
    const last = cards.lastElementChild;
    const title = last && last.querySelector('[data-f="title"]');
    if (title) title.focus();
  };
  const removeTodo = (d) => {
    const gone = d.id.trim();
    draft.splice(draft.indexOf(d), 1);
    for (const o of draft) o.deps.delete(gone);
    renderCards();
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const r = check();
    if (r.errors.length) {
      const bad = cards.querySelector("[aria-invalid]");
      (bad || report).focus && (bad || report).focus();
      return;
    }
    const out = { todos: r.todos };
    if (summary.value.trim()) out.summary = summary.value.trim();
    onSend(out);
  });
  renderCards();
  return form;
}
