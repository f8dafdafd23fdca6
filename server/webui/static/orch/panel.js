// orch/panel.js: the side panel of an orchestrator run: the layer it is
// in, the todos with their live state and elapsed time (parallel todos
// running together), the plan's graph coloured by state, and the result:
// the report, attachments, result files and next actions. It follows the
// run's custom events, and is rebuilt from the thread's state when a
// thread is reopened (the events are gone by then).

import { h, clear } from "../dom.js";
import { t } from "../i18n.js";
import { renderMarkdown } from "../markdown.js";
import { sendMessage } from "../bus.js";
import { drawDag, setDagStatus } from "./dag.js";
import { blobURL, download, fetchBlob, fetchText, fileForPath, fileURL, listFiles, relativeFile, revokeAll } from "./files.js";
import { duration, statusText, time } from "./util.js";

const LAYERS = ["cognitive", "planning", "execution", "response"];
const KIND_LAYER = { clarification: "cognitive", plan: "planning", step: "execution", error: "execution", pause: "execution" };

/** Panel is the run panel's content for one thread at a time. */
export class Panel {
  constructor(aside) {
    this.aside = aside;
    this.threadId = "";
    this.timer = 0;
    this.reset("");
  }

  // ---------------------------------------------------------------- model

  reset(threadId) {
    this.threadId = threadId;
    this.task = 0;
    this.layer = "";
    this.todos = new Map();
    this.order = [];
    // The run's elapsed time counts while it works, not while it waits
    // for a person: activeMs so far, plus now - activeSince while active.
    this.activeMs = 0;
    this.activeSince = NaN;
    this.serverSpan = NaN;
    this.active = false;
    this.waiting = "";
    this.end = null;
    this.progress = null;
    this.complete = null;
    this.files = undefined; // undefined: not loaded; null: the server keeps none
    this.fileError = "";
    this.maxRunning = 0;
    this.structureChanged = true;
    revokeAll();
    this.stopTimer();
    if (this.root) this.root.remove();
    this.root = null;
  }

  /** visible: whether there is anything to show. */
  get visible() {
    return !!(this.layer || this.todos.size || this.complete || this.waiting);
  }

  todo(id) {
    let td = this.todos.get(id);
    if (!td) {
      td = { id, title: "", executor: "", tool: "", depends_on: [], status: "pending", start: NaN, end: NaN, clientStart: NaN, attempt: 0, method: "", reason: "" };
      this.todos.set(id, td);
      this.order.push(id);
      this.structureChanged = true;
    }
    return td;
  }

  setTodos(list, keepTimes) {
    const ids = list.map((x) => x.id);
    const same = ids.length === this.order.length && ids.every((id, i) => id === this.order[i]);
    if (!same) {
      const old = this.todos;
      this.todos = new Map();
      this.order = [];
      for (const x of list) {
        const td = this.todo(x.id);
        const prev = old.get(x.id);
        if (prev && keepTimes) Object.assign(td, prev);
      }
      this.structureChanged = true;
    }
    for (const x of list) {
      const td = this.todo(x.id);
      const deps = Array.isArray(x.depends_on) ? x.depends_on : [];
      if (td.title !== (x.title || "") || td.tool !== (x.tool || "") || deps.join() !== td.depends_on.join()) this.structureChanged = true;
      td.title = x.title || "";
      td.executor = x.executor || "";
      td.tool = x.tool || "";
      td.depends_on = deps;
      if (x.status) td.status = x.status;
      if (x.attempt) td.attempt = x.attempt;
      if (x.reason !== undefined) td.reason = x.reason || "";
    }
  }

  // ---------------------------------------------------------------- events

  /** onEvent(data): one custom event of the thread's run. */
  onEvent(data) {
    if (!data || typeof data !== "object" || typeof data.event !== "string") return;
    switch (data.event) {
      case "start":
        this.reset(this.threadId);
        this.task = data.task || 0;
        this.setActive(true);
        break;
      case "layer_start":
        this.layer = data.layer || this.layer;
        this.setActive(true);
        this.waiting = "";
        break;
      case "session_state":
        if (data.task) this.task = data.task;
        if (Array.isArray(data.todos)) this.setTodos(data.todos, true);
        break;
      case "todo_progress": {
        const td = this.todo(data.todo_id);
        const changed = td.title !== (data.title || td.title);
        if (data.title) td.title = data.title;
        if (data.executor) td.executor = data.executor;
        if (data.tool) td.tool = data.tool;
        if (changed) this.structureChanged = true;
        td.status = data.status || td.status;
        td.attempt = data.attempt || td.attempt;
        td.method = data.method || td.method;
        td.reason = data.reason || "";
        const at = time(data.time);
        if (data.status === "running") {
          td.start = at;
          td.end = NaN;
          td.clientStart = Date.now();
        } else if (data.status === "done" || data.status === "failed") {
          td.end = at;
        } else if (data.status === "pending") {
          td.start = td.end = td.clientStart = NaN;
        }
        this.waiting = "";
        break;
      }
      case "status":
        if (data.total) this.progress = { done: data.done || 0, total: data.total };
        break;
      case "hitl_request":
      case "human_input_required":
        this.waiting = data.kind || "";
        if (data.event === "hitl_request" && data.request && data.request.kind === "plan" && data.request.plan && Array.isArray(data.request.plan.todos)) {
          this.setTodos(data.request.plan.todos, true);
        }
        if (KIND_LAYER[this.waiting]) this.layer = KIND_LAYER[this.waiting];
        break;
      case "complete":
        this.complete = data;
        this.layer = "response";
        break;
      case "end":
        this.end = { status: data.status, message: (data.error && data.error.message) || data.message || "" };
        this.setActive(false);
        break;
      default:
        return;
    }
    this.render();
    if (data.event === "complete") this.loadFiles();
  }

  /** runState(status): the shell's run state: running, done, error, interrupted. */
  runState(status) {
    if (status === "running") {
      this.setActive(true);
      // A run that failed before (its request refused, say) is not the
      // task's end: the task goes on with this run.
      if (this.end && this.end.byRun) this.end = null;
    } else {
      this.setActive(false);
      if (status === "error" && !this.end) this.end = { status: "failed", message: "", byRun: true };
    }
    if (this.visible) this.render();
  }

  /** fromState(values, state): rebuilds the panel of a reopened thread. */
  fromState(values, state) {
    if (!values || typeof values !== "object") return;
    const todos = Array.isArray(values.todos) ? values.todos : [];
    const results = values.execution_results && typeof values.execution_results === "object" ? values.execution_results : {};
    const interrupts = ((state && state.tasks) || []).flatMap((tk) => tk.interrupts || []);
    const orch = interrupts.find((i) => i && i.value && typeof i.value.kind === "string" && KIND_LAYER[i.value.kind]);
    if (!todos.length && !values.plan && !values.response_result && !orch && !values.cognitive_result) return;
    this.task = values.task || 0;
    this.setTodos(values.plan && !todos.length ? values.plan.todos || [] : todos, false);
    let first = NaN;
    let last = NaN;
    for (const td of this.todos.values()) {
      const r = results[td.id];
      if (!r) continue;
      td.start = time(r.started);
      td.end = time(r.ended);
      td.method = r.method || "";
      td.attempt = r.attempt || td.attempt;
      if (r.error && !td.reason) td.reason = r.error;
      if (!Number.isNaN(td.start)) first = Number.isNaN(first) ? td.start : Math.min(first, td.start);
      if (!Number.isNaN(td.end)) last = Number.isNaN(last) ? td.end : Math.max(last, td.end);
    }
    const trace = Array.isArray(values.trace) ? values.trace.filter((e) => e.task === this.task) : [];
    // A todo still running (a run going on the server) has no result yet:
    // its start is when it was dispatched.
    for (const e of trace) {
      if (e.event === "dispatched" && e.todo_id) {
        const td = this.todos.get(e.todo_id);
        if (td && td.status === "running") td.start = time(e.time);
      }
    }
    // The events are gone: the run's time shown is its execution's, from
    // the first todo started to the last ended.
    this.serverSpan = !Number.isNaN(first) && !Number.isNaN(last) ? last - first : NaN;
    const rr = values.response_result;
    if (rr && (rr.text || rr.report || (rr.attachments && rr.attachments.length))) {
      this.layer = "response";
      const count = (s) => [...this.todos.values()].filter((x) => x.status === s).length;
      this.complete = { format: rr.format, text: rr.text, attachments: rr.attachments || [], next_actions: rr.next_actions || [], report: rr.report || "", succeeded: count("done"), failed: count("failed"), skipped: count("skipped") };
      this.end = { status: rr.outcome === "chat" ? "done" : rr.outcome || "done", message: "" };
    } else if (orch) {
      this.waiting = orch.value.kind;
      this.layer = KIND_LAYER[orch.value.kind];
      if (orch.value.kind === "plan" && orch.value.plan && !todos.length) this.setTodos(orch.value.plan.todos || [], false);
    } else if (todos.some((x) => x.status === "running" || x.status === "pending")) {
      this.layer = "execution";
    } else if (values.plan) {
      this.layer = "planning";
    } else {
      this.layer = "cognitive";
    }
    this.render();
    if (this.complete) this.loadFiles();
  }

  // ---------------------------------------------------------------- timer

  startTimer() {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), 250);
  }

  stopTimer() {
    if (this.timer) clearInterval(this.timer);
    this.timer = 0;
  }

  elapsedOf(td) {
    if (!Number.isNaN(td.start) && !Number.isNaN(td.end)) return td.end - td.start;
    if (td.status === "running") {
      if (!Number.isNaN(td.clientStart)) return Date.now() - td.clientStart;
      if (!Number.isNaN(td.start)) return Date.now() - td.start;
    }
    return NaN;
  }

  setActive(on) {
    if (on && !this.active) this.activeSince = Date.now();
    if (!on && this.active && !Number.isNaN(this.activeSince)) this.activeMs += Date.now() - this.activeSince;
    this.active = on;
  }

  runElapsed() {
    if (this.activeMs || this.active) return this.activeMs + (this.active ? Date.now() - this.activeSince : 0);
    return this.serverSpan;
  }

  // tick updates the times only: no element is made or removed.
  tick() {
    if (!this.root) return;
    for (const td of this.todos.values()) {
      if (td.status !== "running") continue;
      const el = this.rows && this.rows.get(td.id);
      if (el) el.time.textContent = duration(this.elapsedOf(td));
    }
    const re = this.runElapsed();
    this.els.elapsed.textContent = Number.isNaN(re) ? "" : t("orch.run.elapsed", { time: duration(re) });
    const running = [...this.todos.values()].some((x) => x.status === "running");
    if (!running && !this.active) this.stopTimer();
  }

  // ---------------------------------------------------------------- view

  build() {
    const els = {};
    els.elapsed = h("span", { class: "muted small", "data-testid": "orch-run-elapsed" });
    els.layers = h(
      "ol",
      { class: "orch-layers", "aria-label": t("orch.layers"), "data-testid": "orch-layers" },
      LAYERS.map((l) => h("li", { "data-layer": l, text: t(`orch.layer.${l}`) })),
    );
    els.status = h("p", { class: "orch-run-status", role: "status", "data-testid": "orch-run-status" });
    els.runningNow = h("p", { class: "orch-running-now small", "data-testid": "orch-running-now", "aria-live": "off" });
    els.dag = h("div", { class: "orch-dag-mini" });
    els.todosHead = h("h3", { text: t("orch.todos") });
    els.todos = h("ol", { class: "orch-todos", "data-testid": "orch-todos" });
    els.result = h("section", { class: "orch-result", "data-testid": "orch-result", hidden: true });
    this.els = els;
    this.rows = new Map();
    this.root = h(
      "section",
      { class: "orch-panel", "data-testid": "orch-panel", "data-thread": this.threadId },
      h("div", { class: "panel-head" }, h("h2", { text: t("orch.panel.title") }), els.elapsed),
      els.layers,
      els.status,
      els.runningNow,
      els.dag,
      els.todosHead,
      els.todos,
      els.result,
    );
    this.aside.append(this.root);
    this.structureChanged = true;
  }

  /** relabel(): builds the view anew, in the current language. */
  relabel() {
    if (!this.root) return;
    this.root.remove();
    this.root = null;
    this.render();
  }

  render() {
    if (!this.visible) return;
    if (!this.root || !this.root.isConnected) this.build();
    const els = this.els;
    const seen = this.layer ? LAYERS.indexOf(this.layer) : -1;
    for (const li of els.layers.children) {
      const i = LAYERS.indexOf(li.dataset.layer);
      li.className = i < seen || (i === seen && this.end) ? "done" : i === seen ? "current" : "";
      if (i === seen && !this.end) li.setAttribute("aria-current", "step");
      else li.removeAttribute("aria-current");
    }
    this.root.dataset.layer = this.layer || "";
    els.status.textContent = this.statusLine();
    els.status.dataset.state = this.end ? this.end.status : this.waiting ? "waiting" : this.active ? "running" : "";

    if (this.structureChanged) {
      this.structureChanged = false;
      this.rows = new Map();
      clear(els.todos);
      for (const id of this.order) {
        const row = this.makeRow(this.todos.get(id));
        this.rows.set(id, row);
        els.todos.append(row.li);
      }
      clear(els.dag);
      if (this.order.length) {
        const list = this.order.map((id) => this.todos.get(id));
        // Never below 60 % of its size, so its words stay readable: a
        // wide plan scrolls sideways in the panel, and Enlarge shows it
        // whole in a dialog.
        els.dag.append(
          drawDag(list, { status: (id) => this.todos.get(id).status, testid: "orch-dag", label: t("orch.plan.graph"), minScale: 0.6 }),
          h("button", { type: "button", class: "link small", "data-testid": "orch-dag-enlarge", text: t("orch.plan.enlarge"), onclick: () => this.openGraph() }),
        );
      }
    }
    const running = [];
    for (const td of this.todos.values()) {
      this.updateRow(td);
      if (td.status === "running") running.push(td.id);
      setDagStatus(els.dag, td.id, td.status);
      if (this.graphDialog) setDagStatus(this.graphDialog, td.id, td.status);
    }
    this.maxRunning = Math.max(this.maxRunning, running.length);
    this.root.dataset.running = String(running.length);
    this.root.dataset.maxRunning = String(this.maxRunning);
    els.runningNow.textContent = running.length ? `${t("orch.status.running")}: ${running.join(", ")}` : "";
    els.todosHead.hidden = this.todos.size === 0;
    this.renderResult();
    this.tick();
    if (running.length || this.active) this.startTimer();
  }

  statusLine() {
    if (this.end) {
      if (this.end.status === "failed" && !this.end.message) return t("orch.run.ended.failedPlain");
      return t(`orch.run.ended.${this.end.status}`, { message: this.end.message || "" });
    }
    if (this.waiting) return t("orch.run.waiting", { what: t(`orch.kind.${this.waiting}`) });
    const total = this.progress ? this.progress.total : this.todos.size;
    if (total && this.layer === "execution") {
      const done = this.progress ? this.progress.done : [...this.todos.values()].filter((x) => ["done", "failed", "skipped"].includes(x.status)).length;
      return t("orch.run.progress", { done, total });
    }
    return this.layer ? t(`orch.layer.${this.layer}`) : "";
  }

  makeRow(td) {
    const badge = h("span", { class: "badge" });
    const time = h("span", { class: "time mono small", "aria-label": "" });
    const meta = h("div", { class: "meta muted small" });
    const files = h("div", { class: "files small" });
    const li = h(
      "li",
      { class: "orch-todo", "data-todo-id": td.id, "data-testid": `orch-todo-${td.id}` },
      h("div", { class: "line" }, h("span", { class: "dot", "aria-hidden": "true" }), h("strong", { class: "mono", text: td.id }), h("span", { class: "title", text: td.title }), time),
      h("div", { class: "line2" }, badge, meta),
      files,
    );
    return { li, badge, time, meta, files };
  }

  updateRow(td) {
    const row = this.rows.get(td.id);
    if (!row) return;
    if (row.li.dataset.status !== td.status) {
      row.li.dataset.status = td.status;
      row.li.className = `orch-todo st-${td.status}`;
      row.badge.className = `badge st-${td.status}`;
      row.badge.textContent = statusText(td.status);
    }
    const bits = [[td.executor, td.tool].filter(Boolean).join(" · ")];
    if (td.attempt > 1) bits.push(t("orch.todo.attempt", { n: td.attempt }));
    if (td.method === "react" || td.method === "executor") bits.push(t(`orch.todo.method.${td.method}`));
    if (td.reason && (td.status === "failed" || td.status === "skipped")) bits.push(td.reason);
    const text = bits.filter(Boolean).join(" — ");
    if (row.meta.textContent !== text) row.meta.textContent = text;
    const el = this.elapsedOf(td);
    row.time.textContent = Number.isNaN(el) ? "" : duration(el);
  }

  // ---------------------------------------------------------------- result

  async loadFiles() {
    const tid = this.threadId;
    if (!tid) return;
    try {
      const files = await listFiles(tid);
      if (tid !== this.threadId) return;
      this.files = files;
    } catch (err) {
      if (tid !== this.threadId) return;
      this.files = [];
      this.fileError = err.message;
    }
    this.renderResult();
  }

  taskFiles() {
    if (!Array.isArray(this.files)) return [];
    const dir = this.task ? `task-${this.task}/` : "";
    return this.files.filter((f) => !dir || f.name.startsWith(dir));
  }

  renderResult() {
    const box = this.els.result;
    const c = this.complete;
    const empty = c && !this.todos.size && !c.report && !(c.attachments || []).length && !(c.next_actions || []).length;
    if (!c || empty) {
      // Nothing but the answer (plain chat): the chat shows it.
      box.hidden = true;
      return;
    }
    const key = JSON.stringify([c.report, (c.attachments || []).length, Array.isArray(this.files) ? this.files.length : String(this.files), this.task, this.fileError]);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.hidden = false;
    clear(box);
    const tid = this.threadId;
    box.append(h("h3", { text: t("orch.result.title") }), h("p", { class: "muted small", "data-testid": "orch-result-counts", text: t("orch.result.counts", { succeeded: c.succeeded || 0, failed: c.failed || 0, skipped: c.skipped || 0 }) }));
    const files = this.taskFiles();
    const reportName = c.report ? fileForPath(files, c.report, this.task) : null;
    if (reportName) {
      box.append(h("div", { class: "actions" }, h("button", { type: "button", class: "primary", "data-testid": "open-report", text: t("orch.result.report"), onclick: () => this.openDocument(reportName, t("orch.result.reportTitle")) })));
    }
    const atts = Array.isArray(c.attachments) ? c.attachments : [];
    if (atts.length) {
      const list = h("ul", { class: "plain orch-attachments", "data-testid": "orch-attachments" });
      for (const a of atts) {
        const name = fileForPath(files, a.path, this.task);
        const label = a.description || a.name;
        const item = h("li", {}, h("span", { class: "small", text: label }));
        if (name && String(a.media_type || "").startsWith("image/")) {
          const img = h("img", { alt: label, class: "orch-chart", "data-testid": "orch-attachment-image", "data-name": name });
          fetchBlob(tid, name).then((b) => (img.src = blobURL(b)), () => img.replaceWith(h("span", { class: "error", text: t("orch.result.loadFailed", { name, message: "" }) })));
          item.append(img);
        }
        if (name && /\.md$/.test(name)) item.append(" ", h("button", { type: "button", class: "link", text: t("orch.result.report"), onclick: () => this.openDocument(name, label) }));
        if (name) item.append(" ", this.downloadButton(name));
        list.append(item);
      }
      box.append(h("h4", { text: t("orch.result.attachments") }), list);
    }
    const next = Array.isArray(c.next_actions) ? c.next_actions : [];
    if (next.length) {
      box.append(
        h("h4", { text: t("orch.result.next") }),
        h(
          "ul",
          { class: "plain orch-next", "data-testid": "orch-next-actions" },
          next.map((text) =>
            h("li", {}, h("button", { type: "button", class: "next-action", "data-testid": "next-action", text, onclick: () => sendMessage(text).catch((e) => console.error(e)) })),
          ),
        ),
      );
    }
    if (this.fileError) {
      box.append(h("p", { class: "error", role: "alert", text: t("orch.result.loadFailed", { name: t("orch.result.files"), message: this.fileError }) }));
    } else if (this.files === null) {
      box.append(h("p", { class: "muted small", text: t("orch.result.noFiles") }));
    } else if (files.length) {
      box.append(
        h("h4", { text: t("orch.result.files") }),
        h(
          "ul",
          { class: "plain orch-files", "data-testid": "orch-files" },
          files.map((f) => h("li", { "data-name": f.name }, h("span", { class: "mono small", text: f.name.split("/").pop() }), " ", this.downloadButton(f.name))),
        ),
      );
      this.attachStepFiles(files);
    }
  }

  // attachStepFiles puts each todo's result files under its row.
  attachStepFiles(files) {
    for (const [id, row] of this.rows || []) {
      clear(row.files);
      const mine = files.filter((f) => {
        const base = f.name.split("/").pop();
        return base.startsWith(`step_${id}_`) && /\.(md|json)$/.test(base);
      });
      if (!mine.length) continue;
      row.files.append(...mine.map((f) => this.downloadButton(f.name, f.name.split("/").pop())));
      row.files.setAttribute("aria-label", t("orch.todo.files", { id }));
    }
  }

  downloadButton(name, text) {
    const base = name.split("/").pop();
    return h("button", {
      type: "button",
      class: "link small",
      "data-testid": "file-download",
      "data-name": name,
      "aria-label": t("orch.result.download", { name: base }),
      text: text || "⤓",
      onclick: () => download(this.threadId, name).catch((e) => alertIn(this.els.result, t("orch.result.loadFailed", { name: base, message: e.message }))),
    });
  }

  /** openGraph(): the plan's graph at full size, coloured live, in a dialog. */
  openGraph() {
    let dialog = document.getElementById("orch-graph-dialog");
    if (!dialog) {
      dialog = h("dialog", { id: "orch-graph-dialog", class: "orch-doc-dialog", "data-testid": "graph-dialog", "aria-labelledby": "orch-graph-title" });
      document.body.append(dialog);
    }
    const close = h("button", { type: "button", "data-testid": "graph-close", text: t("orch.result.close"), onclick: () => dialog.close() });
    const list = this.order.map((id) => this.todos.get(id));
    const body = h("div", { class: "orch-doc" }, drawDag(list, { status: (id) => (this.todos.get(id) || {}).status, testid: "orch-dag-large", label: t("orch.plan.graph"), minScale: 1 }));
    clear(dialog).append(h("header", { class: "orch-doc-head" }, h("h2", { id: "orch-graph-title", text: t("orch.plan.graph") }), h("span", { class: "spacer" }), close), body);
    this.graphDialog = body;
    dialog.addEventListener("close", () => (this.graphDialog = null), { once: true });
    if (!dialog.open) dialog.showModal();
    close.focus();
  }

  /** openDocument(name, title): a Markdown file of the thread, rendered, in a dialog. */
  async openDocument(name, title) {
    const tid = this.threadId;
    const dir = name.includes("/") ? name.slice(0, name.lastIndexOf("/")) : "";
    let dialog = document.getElementById("orch-doc-dialog");
    if (!dialog) {
      dialog = h("dialog", { id: "orch-doc-dialog", class: "orch-doc-dialog", "data-testid": "report-dialog", "aria-labelledby": "orch-doc-title" });
      document.body.append(dialog);
    }
    const body = h("article", { class: "orch-doc md", "data-testid": "report-body" });
    const close = h("button", { type: "button", "data-testid": "report-close", text: t("orch.result.close"), onclick: () => dialog.close() });
    clear(dialog).append(
      h("header", { class: "orch-doc-head" }, h("h2", { id: "orch-doc-title", text: title }), h("span", { class: "spacer" }), this.downloadButton(name, t("orch.result.download", { name: name.split("/").pop() })), close),
      body,
    );
    if (!dialog.open) dialog.showModal();
    close.focus();
    let text;
    try {
      text = await fetchText(tid, name);
    } catch (e) {
      body.append(h("p", { class: "error", role: "alert", text: t("orch.result.loadFailed", { name, message: e.message }) }));
      return;
    }
    const resolve = (url) => {
      const f = relativeFile(dir, url);
      return f ? fileURL(tid, f) : url;
    };
    body.append(
      renderMarkdown(text, {
        resolve,
        loadImage: (img, url) => {
          const prefix = `${location.origin}/threads/${encodeURIComponent(tid)}/files/`;
          if (!url.startsWith(prefix)) {
            img.src = url;
            return;
          }
          const file = url.slice(prefix.length).split("/").map(decodeURIComponent).join("/");
          fetchBlob(tid, file).then((b) => (img.src = blobURL(b)), () => (img.alt = `[${img.alt}]`));
        },
      }),
    );
    body.dataset.loaded = "true";
    // Links to the thread's other files open here (Markdown) or download.
    body.addEventListener("click", (e) => {
      const a = e.target.closest && e.target.closest("a[href]");
      if (!a) return;
      const prefix = `/threads/${encodeURIComponent(tid)}/files/`;
      const path = a.pathname;
      if (a.origin !== location.origin || !path.startsWith(prefix)) return;
      e.preventDefault();
      const file = path.slice(prefix.length).split("/").map(decodeURIComponent).join("/");
      if (/\.md$/.test(file)) this.openDocument(file, a.textContent || file);
      else download(tid, file).catch(() => {});
    });
  }
}

function alertIn(box, text) {
  box.append(h("p", { class: "error", role: "alert", text }));
}
