// app.js: the shell of weft's web UI: picking an assistant, the chat and
// its runs, interrupts, past threads, history, language, theme, API key.
// The orchestrator's views (orch/index.js) register into it.

import "./strings.js";
import { api, ApiError, setKeyPrompt, apiKey, setApiKey } from "./api.js";
import { t, lang, setLang, languages, applyI18n, onLangChange } from "./i18n.js";
import { h, clear, $ } from "./dom.js";
import { renderInterrupt } from "./interrupts.js";
import { Transcript } from "./chat.js";
import { Threads } from "./threads.js";
import { History } from "./history.js";
import { fillIcons } from "./icons.js";
import { emitCustom, emitRunState, emitThread, setSendImpl } from "./bus.js";
import "./orch/index.js";

export { onCustom, onRunState, onThread, panel, sendMessage } from "./bus.js";

// The stream modes every run asks for: the state after each step, the
// model's tokens, the views' events and each node's writes (interrupts).
const STREAM_MODES = ["values", "messages-tuple", "custom", "updates"];

const state = {
  assistants: [],
  assistantId: "",
  threadId: "",
  thread: null,
  run: null, // {threadId, runId, controller, stopping}
  inputKind: new Map(), // assistant id → {kind: "messages"|"field"|"json", field}
  forkFrom: null, // checkpoint id the next message branches from
  pending: [], // interrupts waiting for an answer
};

const els = {};
let transcript;
let threads;
let history;

// ------------------------------------------------------------ start

async function main() {
  for (const id of ["assistant", "new-thread", "lang", "theme", "key", "messages", "interrupts", "composer", "composer-input", "send", "stop", "thread-title", "run-status", "notice", "threads", "threads-toggle", "history", "history-toggle", "run-panel", "panel-toggle"]) {
    els[id] = document.getElementById(id);
  }
  document.documentElement.lang = lang();
  setupTheme();
  setupLang();
  setupKey();
  applyI18n();
  fillIcons();
  transcript = new Transcript(els.messages);
  threads = new Threads({ list: $("#thread-list"), search: $("#thread-search"), more: $("#threads-more"), onOpen: openThread, onDeleted: threadDeleted, onRenamed: threadRenamed, notice });
  history = new History({ root: els.history, toggle: els["history-toggle"], onFork: forkFrom, onRerun: rerunFrom, notice, current: () => state.threadId });
  setupComposer();
  setupLayout();
  // The skip link moves the focus without touching the URL's fragment,
  // which names the open thread.
  $(".skip").addEventListener("click", (e) => {
    e.preventDefault();
    els["composer-input"].focus();
  });
  setSendImpl(sendText);
  els["new-thread"].addEventListener("click", () => newThread());
  els.assistant.addEventListener("change", () => {
    state.assistantId = els.assistant.value;
    localStorage.setItem("weft.assistant", state.assistantId);
    if (state.threadId) newThread();
  });
  window.addEventListener("hashchange", () => routeFromHash());
  onLangChange(() => {
    applyI18n();
    renderStatus();
    transcript.rerender();
    showInterrupts(true);
    threads.render();
    history.render();
    setTitle();
  });
  await loadAssistants();
  await threads.load();
  await routeFromHash();
  if (!state.run) document.body.dataset.run = "idle";
  document.body.dataset.ready = "true";
}

function notice(message) {
  if (!message) {
    els.notice.hidden = true;
    els.notice.textContent = "";
    return;
  }
  els.notice.textContent = message;
  els.notice.hidden = false;
}

function errText(err) {
  if (err instanceof ApiError) return err.message;
  return err && err.message ? err.message : String(err);
}

// ------------------------------------------------------------ theme, language, key

function setupTheme() {
  let kept = "";
  try {
    kept = localStorage.getItem("weft.theme") || "";
  } catch {
    // storage disabled
  }
  const system = () => (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  const apply = (theme) => {
    document.documentElement.dataset.theme = theme;
    els.theme.setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
    els.theme.title = t(theme === "dark" ? "theme.dark" : "theme.light");
  };
  apply(kept || system());
  els.theme.addEventListener("click", () => {
    const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    try {
      localStorage.setItem("weft.theme", next);
    } catch {
      // storage disabled
    }
    apply(next);
  });
}

function setupLang() {
  for (const l of languages) els.lang.appendChild(h("option", { value: l.code, text: l.name, lang: l.code }));
  els.lang.value = lang();
  els.lang.addEventListener("change", () => setLang(els.lang.value));
}

function setupKey() {
  const dialog = $("#key-dialog");
  const input = $("#key-input");
  const reason = $("#key-reason");
  const ask = (status) =>
    new Promise((resolve) => {
      reason.textContent = status && apiKey() ? t("key.rejected", { status }) : t("key.help");
      input.value = "";
      dialog.returnValue = "";
      dialog.addEventListener(
        "close",
        () => {
          resolve(dialog.returnValue === "ok" && input.value.trim() ? input.value.trim() : null);
        },
        { once: true },
      );
      dialog.showModal();
      input.focus();
    });
  setKeyPrompt(ask);
  els.key.addEventListener("click", async () => {
    const key = await ask(0);
    if (key) {
      setApiKey(key);
      await loadAssistants();
      await threads.load();
    }
  });
}

// ------------------------------------------------------------ layout

function setupLayout() {
  // Narrow screens: the thread list is a drawer, the run panel a tab.
  const drawer = (button, target, open) => {
    target.classList.toggle("open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  };
  els["threads-toggle"].addEventListener("click", () => {
    const open = !els.threads.classList.contains("open");
    drawer(els["threads-toggle"], els.threads, open);
    if (open) $("#thread-search").focus();
  });
  els.threads.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && els.threads.classList.contains("open")) {
      drawer(els["threads-toggle"], els.threads, false);
      els["threads-toggle"].focus();
    }
  });
  threads.closeDrawer = () => drawer(els["threads-toggle"], els.threads, false);
  // A tap beside the open drawer closes it.
  document.addEventListener("click", (e) => {
    if (!els.threads.classList.contains("open")) return;
    if (els.threads.contains(e.target) || els["threads-toggle"].contains(e.target)) return;
    if (e.target.closest("dialog")) return;
    threads.closeDrawer();
  });
  els["panel-toggle"].addEventListener("click", () => {
    const open = !els["run-panel"].classList.contains("open");
    drawer(els["panel-toggle"], els["run-panel"], open);
  });
  // The run panel shows once a view puts something in it.
  const panelEl = els["run-panel"];
  const sync = () => {
    const has = panelEl.childElementCount > 0;
    panelEl.hidden = !has;
    els["panel-toggle"].hidden = !has;
  };
  new MutationObserver(sync).observe(panelEl, { childList: true });
  sync();
}

function setupComposer() {
  els.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = els["composer-input"].value.trim();
    if (!text || state.run) return;
    els["composer-input"].value = "";
    sendText(text).catch((err) => notice(errText(err)));
  });
  els["composer-input"].addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      els.composer.requestSubmit();
    }
  });
  els.stop.addEventListener("click", () => stopRun());
}

// ------------------------------------------------------------ assistants

async function loadAssistants() {
  let list = [];
  try {
    list = (await api.post("/assistants/search", { limit: 100, sort_by: "name", sort_order: "asc" })) || [];
    notice("");
  } catch (err) {
    notice(t("error.load", { message: errText(err) }));
  }
  state.assistants = list;
  clear(els.assistant);
  if (list.length === 0) els.assistant.appendChild(h("option", { value: "", text: t("assistant.none") }));
  for (const a of list) {
    const label = a.name && a.name !== a.graph_id ? `${a.name} (${a.graph_id})` : a.graph_id || a.name || a.assistant_id;
    els.assistant.appendChild(h("option", { value: a.assistant_id, text: label, "data-graph": a.graph_id }));
  }
  let kept = "";
  try {
    kept = localStorage.getItem("weft.assistant") || "";
  } catch {
    // storage disabled
  }
  const pick = list.find((a) => a.assistant_id === kept) || list[0];
  state.assistantId = pick ? pick.assistant_id : "";
  els.assistant.value = state.assistantId;
}

function assistantById(id) {
  return state.assistants.find((a) => a.assistant_id === id || a.graph_id === id);
}

// inputKind reads the assistant's input schema once: a chat (messages),
// one text field, or JSON.
async function inputKind(assistantId) {
  if (state.inputKind.has(assistantId)) return state.inputKind.get(assistantId);
  let kind = { kind: "messages" };
  try {
    const s = await api.get(`/assistants/${encodeURIComponent(assistantId)}/schemas`);
    const props = (s && s.input_schema && s.input_schema.properties) || {};
    if (!props.messages) {
      // A graph whose input is not a chat: the message goes to its text
      // field, the one with a name that says so, else the first one.
      const strings = Object.entries(props)
        .filter(([, p]) => p && p.type === "string")
        .map(([k]) => k);
      const preferred = ["input", "goal", "question", "query", "prompt", "text", "message", "topic", "request"];
      const field = preferred.find((k) => strings.includes(k)) || strings[0];
      kind = field ? { kind: "field", field } : { kind: "json" };
    }
  } catch {
    // keep the chat form: most assistants take messages
  }
  state.inputKind.set(assistantId, kind);
  return kind;
}

// ------------------------------------------------------------ threads

async function routeFromHash() {
  const m = /thread=([0-9a-fA-F-]{36})/.exec(location.hash);
  if (m && m[1] !== state.threadId) await openThread(m[1]);
  else if (!m && state.threadId) newThread();
  else if (!m) renderEmpty();
}

function renderEmpty() {
  if (transcript.order.length === 0 && !state.threadId) {
    clear(els.messages).appendChild(h("p", { class: "empty muted", "data-testid": "chat-empty", text: t("chat.empty") }));
  }
}

function newThread() {
  if (state.run) return;
  state.threadId = "";
  state.thread = null;
  state.pending = [];
  state.forkFrom = null;
  transcript.clear();
  showInterrupts();
  history.close();
  setTitle();
  renderStatus("");
  if (location.hash) history_replace("");
  threads.select("");
  renderEmpty();
  emitThread({ threadId: "", assistantId: state.assistantId, values: null });
  els["composer-input"].focus();
}

function history_replace(hash) {
  window.history.replaceState(null, "", hash ? `#${hash}` : location.pathname);
}

function setTitle() {
  const title = state.thread && state.thread.metadata && state.thread.metadata.title;
  els["thread-title"].textContent = title || (state.threadId ? state.threadId.slice(0, 8) : t("thread.untitled"));
  document.title = title ? `${title} · weft` : "weft";
}

/** openThread(id): shows a thread where it stopped, with its pending interrupts. */
async function openThread(id) {
  if (state.run && state.run.threadId !== id) {
    // A run streaming into another thread keeps going on the server.
    state.run.detached = true;
    state.run.controller.abort();
    state.run = null;
  }
  threads.closeDrawer && threads.closeDrawer();
  let thread;
  try {
    thread = await api.get(`/threads/${id}`);
  } catch (err) {
    notice(t("error.load", { message: errText(err) }));
    return;
  }
  notice("");
  state.threadId = id;
  state.thread = thread;
  state.forkFrom = null;
  history_replace(`thread=${id}`);
  const aid = thread.metadata && (thread.metadata.assistant_id || thread.metadata.graph_id);
  const a = aid && assistantById(aid);
  if (a) {
    state.assistantId = a.assistant_id;
    els.assistant.value = a.assistant_id;
  }
  setTitle();
  threads.select(id);
  transcript.clear();
  await loadState();
  history.threadChanged();
  // A run still going (or waiting) on this thread: follow its stream.
  // (Not awaited: the page is ready while the run goes on.)
  if (thread.status === "busy") followActiveRun(id).catch((err) => notice(errText(err)));
  else renderStatus(thread.status === "error" ? "error" : thread.status === "interrupted" ? "interrupted" : "");
}

async function loadState() {
  const id = state.threadId;
  let st;
  try {
    st = await api.get(`/threads/${id}/state`);
  } catch (err) {
    notice(t("error.load", { message: errText(err) }));
    return;
  }
  if (id !== state.threadId) return;
  showValues(st.values);
  state.pending = (st.tasks || []).flatMap((task) => task.interrupts || []);
  showInterrupts();
  emitThread({ threadId: id, assistantId: state.assistantId, values: st.values, state: st });
}

function showValues(values) {
  if (values && Array.isArray(values.messages)) transcript.setAll(values.messages);
  else if (values && !Array.isArray(values) && Object.keys(values).length) transcript.showValues(values);
}

async function followActiveRun(threadId) {
  let runs = [];
  try {
    runs = (await api.get(`/threads/${threadId}/runs?limit=5`)) || [];
  } catch {
    return;
  }
  const run = runs.find((r) => r.status === "running" || r.status === "pending");
  if (!run) return;
  await streamRun(threadId, `/threads/${threadId}/runs/${run.run_id}/stream`, null, { lastEventId: "-1", runId: run.run_id });
}

function threadDeleted(id) {
  if (id === state.threadId) newThread();
}

function threadRenamed(id, title) {
  if (id === state.threadId && state.thread) {
    state.thread.metadata = { ...(state.thread.metadata || {}), title };
    setTitle();
  }
}

// ------------------------------------------------------------ runs

/** sendText(text): the user's message, in a new thread if none is open. */
async function sendText(text) {
  if (state.run) throw new Error(t("run.busy"));
  if (!state.assistantId) throw new Error(t("assistant.none"));
  const kind = await inputKind(state.assistantId);
  let input;
  if (kind.kind === "messages") input = { messages: [{ role: "user", content: text }] };
  else if (kind.kind === "field") input = { [kind.field]: text };
  else {
    try {
      input = JSON.parse(text);
    } catch {
      input = text;
    }
  }
  if (!state.threadId) {
    const a = assistantById(state.assistantId);
    const thread = await api.post("/threads", {
      metadata: { title: text.slice(0, 80), assistant_id: state.assistantId, graph_id: a ? a.graph_id : undefined },
    });
    state.threadId = thread.thread_id;
    state.thread = thread;
    history_replace(`thread=${thread.thread_id}`);
    transcript.clear();
    setTitle();
    emitThread({ threadId: thread.thread_id, assistantId: state.assistantId, values: null });
    threads.load();
  }
  if (kind.kind === "messages") transcript.addHuman(text);
  const body = { input };
  if (state.forkFrom) {
    body.checkpoint_id = state.forkFrom;
    state.forkFrom = null;
    renderFork();
  }
  await startRun(body);
}

/** resume(value): answers the pending interrupt(s) with value. */
async function resume(value, interruptId) {
  let r = value;
  if (state.pending.length > 1 && interruptId) r = { [interruptId]: value };
  // The interrupt shows as soon as the run reports it, while the run may
  // still be saving its end on the server: an answer given in that moment
  // waits for it (enqueue) instead of failing with "thread busy".
  await startRun({ command: { resume: r }, multitask_strategy: "enqueue" });
}

async function startRun(body) {
  const tid = state.threadId;
  const req = {
    assistant_id: state.assistantId,
    stream_mode: STREAM_MODES,
    stream_resumable: true,
    on_disconnect: "continue",
    ...body,
  };
  state.pending = [];
  showInterrupts();
  await streamRun(tid, `/threads/${tid}/runs/stream`, req, {});
}

// streamRun reads a run's events (a new run when body is set, else joining
// one) until it ends.
async function streamRun(threadId, path, body, opts) {
  const controller = new AbortController();
  const run = { threadId, runId: opts.runId || "", controller, stopping: false, interrupted: false, failed: null };
  state.run = run;
  setRunning(true);
  const meta = () => ({ threadId, runId: run.runId });
  // body[data-run] is "busy" from a run's start until its end has settled
  // (the state reloaded), for tests and views waiting for that.
  document.body.dataset.run = "busy";
  emitRunState({ ...meta(), status: "running" });
  let ended = "done";
  try {
    await api.stream(
      path,
      body,
      (ev) => {
        if (state.run !== run) return;
        onEvent(run, ev, meta);
      },
      controller.signal,
      { lastEventId: opts.lastEventId },
    );
    if (run.failed) ended = "error";
    else if (run.interrupted) ended = "interrupted";
    else if (run.stopping) ended = "stopped";
  } catch (err) {
    if (run.detached) return;
    if (err.name === "AbortError") ended = "stopped";
    else {
      ended = "error";
      run.failed = errText(err);
      if (err instanceof ApiError && err.status === 409) run.failed = t("run.busy");
    }
  } finally {
    if (state.run === run) {
      state.run = null;
      setRunning(false);
    }
  }
  if (run.detached) {
    document.body.dataset.run = "idle";
    return;
  }
  // Counts the runs that ended, for tests waiting for the next one.
  document.body.dataset.runsEnded = String(Number(document.body.dataset.runsEnded || 0) + 1);
  transcript.finish();
  renderStatus(ended, run.failed);
  emitRunState({ ...meta(), status: ended === "stopped" ? "error" : ended });
  threads.load();
  if (threadId === state.threadId) {
    // The saved state is the truth: it has the messages and interrupts.
    await loadState();
    history.refresh();
  }
  if (!state.run) document.body.dataset.run = "idle";
  if (ended === "error" && body && run.failed && !run.runId) throw new Error(run.failed);
}

function onEvent(run, ev, meta) {
  const d = ev.data;
  switch (ev.event.split("|")[0]) {
    case "metadata":
      if (d && d.run_id && !run.runId) {
        run.runId = d.run_id;
        // The thread is busy now: the list shows it so.
        threads.load();
      } else if (d && d.run_id) run.runId = d.run_id;
      break;
    case "messages":
      transcript.onMessageEvent(d);
      break;
    case "values":
      if (d && typeof d === "object") {
        if (Array.isArray(d.messages)) transcript.setAll(d.messages);
        else {
          const { __interrupt__, ...values } = d;
          transcript.showValues(values);
        }
        if (d.__interrupt__) {
          run.interrupted = true;
          state.pending = d.__interrupt__;
        }
      }
      break;
    case "updates":
      if (d && d.__interrupt__) {
        run.interrupted = true;
        state.pending = d.__interrupt__;
        showInterrupts();
      }
      break;
    case "custom":
      emitCustom(d, meta());
      break;
    case "error":
      run.failed = (d && (d.message || d.error)) || String(d);
      break;
  }
}

async function stopRun() {
  const run = state.run;
  if (!run || run.stopping) return;
  run.stopping = true;
  els.stop.disabled = true;
  renderStatus("stopping");
  try {
    if (run.runId) await api.post(`/threads/${run.threadId}/runs/${run.runId}/cancel?action=interrupt`, {});
    else run.controller.abort();
  } catch (err) {
    notice(errText(err));
    run.controller.abort();
  }
  // The stream ends once the server has stopped the run; if it does not
  // within a while, stop reading it.
  setTimeout(() => {
    if (state.run === run) run.controller.abort();
  }, 10000);
}

function setRunning(on) {
  els.send.hidden = on;
  els.stop.hidden = !on;
  els.stop.disabled = false;
  els["composer-input"].setAttribute("aria-busy", on ? "true" : "false");
  if (on) renderStatus("running");
  if (on && document.activeElement === els.send) els.stop.focus();
  if (!on && document.activeElement === els.stop) els["composer-input"].focus();
}

let lastStatus = { status: "", message: "" };
function renderStatus(status = lastStatus.status, message = lastStatus.message) {
  lastStatus = { status, message };
  const el = els["run-status"];
  el.dataset.status = status || "";
  const text = {
    running: t("run.running"),
    stopping: t("run.running"),
    done: t("run.done"),
    error: t("run.error", { message: message || "" }),
    interrupted: t("run.interrupted"),
    stopped: t("run.stopped"),
  }[status];
  el.textContent = text || "";
}

// ------------------------------------------------------------ interrupts

let shownInterrupts = "";

// showInterrupts draws the pending interrupts' controls. The same
// interrupts are not drawn again (what the person typed stays), unless
// force (a language switch).
function showInterrupts(force = false) {
  const box = els.interrupts;
  const key = `${state.threadId} ${JSON.stringify(state.pending.map((i) => [i.id, i.value]))}`;
  if (key === shownInterrupts && !force) return;
  shownInterrupts = key;
  clear(box);
  box.hidden = state.pending.length === 0;
  for (const intr of state.pending) {
    const div = h("div", { class: "interrupt-slot", "data-interrupt-id": intr.id || "" });
    box.appendChild(div);
    renderInterrupt(div, intr, {
      resume: (v) => resume(v, intr.id),
      t,
      api,
      threadId: state.threadId,
      assistantId: state.assistantId,
    });
  }
  if (state.pending.length) renderStatus("interrupted");
}

// ------------------------------------------------------------ time travel

function forkFrom(checkpointId) {
  state.forkFrom = checkpointId;
  renderFork();
  els["composer-input"].focus();
}

function renderFork() {
  let bar = $("#fork-bar");
  if (!state.forkFrom) {
    if (bar) bar.remove();
    return;
  }
  if (!bar) {
    bar = h("div", { id: "fork-bar", class: "fork-bar", "data-testid": "fork-bar" });
    els.composer.before(bar);
  }
  clear(bar).append(
    h("span", { text: t("chat.forkFrom", { id: state.forkFrom.slice(0, 8) }) }),
    h("button", { type: "button", class: "link", "data-testid": "fork-cancel", text: t("chat.forkCancel"), onclick: () => ((state.forkFrom = null), renderFork()) }),
  );
}

async function rerunFrom(checkpointId) {
  if (state.run) return;
  await startRun({ input: null, checkpoint_id: checkpointId });
}

main().catch((err) => {
  console.error(err);
  notice(errText(err));
});
