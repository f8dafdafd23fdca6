// chat.js: the conversation: messages, streamed tokens, tool calls.
//
// A Transcript keeps the messages of the open thread by id, in order, and
// their elements. Stream events update it in place: chunks of a reply add
// to its text as they come (messages-tuple), whole messages and the
// state's messages list (values) replace what was guessed from chunks.

import { h, clear, contentText, pretty } from "./dom.js";
import { t } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { icon } from "./icons.js";

function role(m) {
  const ty = String(m.type || m.role || "").toLowerCase();
  if (ty.startsWith("human") || ty === "user") return "human";
  if (ty.startsWith("ai") || ty === "assistant") return "ai";
  if (ty.startsWith("tool")) return "tool";
  if (ty.startsWith("system")) return "system";
  return ty || "ai";
}

// isChunk: a piece of a reply being streamed. LangChain names them
// AIMessageChunk; weft's server sends them as "ai" messages carrying
// tool_call_chunks (a whole message has tool_calls only).
function isChunk(m) {
  const ty = String(m.type || "");
  return ty.endsWith("Chunk") || ty.endsWith("_chunk") || Array.isArray(m.tool_call_chunks);
}

/** Transcript renders a thread's messages into a container. */
export class Transcript {
  constructor(container) {
    this.el = container;
    this.order = [];
    this.msgs = new Map(); // id → {msg, el, text, toolCalls: Map}
    this.toolResults = new Map(); // tool_call_id → tool message
    this.anon = 0;
  }

  clear() {
    this.order = [];
    this.msgs.clear();
    this.toolResults.clear();
    clear(this.el);
  }

  /** setAll(messages): the state's messages, replacing what is shown. */
  setAll(messages) {
    const keep = new Set();
    for (const m of messages || []) {
      const id = this.idOf(m);
      keep.add(id);
      this.put(m, false);
    }
    // Messages not in the state were removed (or guessed wrongly).
    for (const id of [...this.order]) {
      if (!keep.has(id)) this.remove(id);
    }
    // Keep the state's order.
    const ids = (messages || []).map((m) => this.idOf(m));
    this.order = ids;
    for (const id of ids) {
      const e = this.msgs.get(id);
      if (e && e.el) this.el.appendChild(e.el);
    }
  }

  idOf(m) {
    if (m.id) return String(m.id);
    if (!m.__anon) m.__anon = `anon-${++this.anon}`;
    return m.__anon;
  }

  remove(id) {
    const e = this.msgs.get(id);
    if (e && e.el) e.el.remove();
    this.msgs.delete(id);
    this.order = this.order.filter((x) => x !== id);
  }

  /** addHuman(text): shows the user's message before the server has it. */
  addHuman(text) {
    this.put({ type: "human", content: text, id: `local-${++this.anon}`, local: true }, false);
  }

  /** onMessageEvent(data): a messages-tuple event: [message or chunk, metadata]. */
  onMessageEvent(data) {
    const m = Array.isArray(data) ? data[0] : data;
    if (!m || typeof m !== "object") return;
    if (role(m) === "human") {
      // The state's copy replaces the local one.
      this.dropLocal();
    }
    this.put(m, isChunk(m));
  }

  dropLocal() {
    for (const [id, e] of [...this.msgs]) if (e.msg.local) this.remove(id);
  }

  put(m, chunk) {
    const id = this.idOf(m);
    let e = this.msgs.get(id);
    // A chunk of a message already whole (a joined stream replays the
    // chunks of replies the state holds) adds nothing.
    if (chunk && e && !e.streaming) return;
    if (!e) {
      e = { msg: { ...m, content: chunk ? "" : m.content }, el: null, toolCalls: [] };
      this.msgs.set(id, e);
      this.order.push(id);
    }
    if (chunk) {
      e.msg.content = contentText(e.msg.content) + contentText(m.content);
      for (const tc of m.tool_call_chunks || []) {
        const i = tc.index ?? e.toolCalls.length;
        const cur = e.toolCalls[i] || (e.toolCalls[i] = { id: "", name: "", args: "" });
        if (tc.id) cur.id = tc.id;
        if (tc.name) cur.name += tc.name;
        if (tc.args) cur.args += tc.args;
      }
      e.streaming = true;
    } else {
      const local = e.msg.local;
      e.msg = { ...m };
      if (local && !m.local) e.msg.local = false;
      e.toolCalls = (m.tool_calls || []).map((tc) => ({ id: tc.id, name: tc.name, args: tc.args }));
      e.streaming = false;
    }
    if (role(m) === "tool" && m.tool_call_id) this.toolResults.set(m.tool_call_id, e.msg);
    this.render(id, e);
  }

  /** rerender(): draws every message again (after a language switch). */
  rerender() {
    for (const id of this.order) {
      const e = this.msgs.get(id);
      if (e && e.el) this.render(id, e);
    }
  }

  /** finish(): a reply is whole: no more streaming marks. */
  finish() {
    for (const [id, e] of this.msgs) {
      if (e.streaming) {
        e.streaming = false;
        this.render(id, e);
      }
    }
  }

  render(id, e) {
    const r = role(e.msg);
    if (r === "tool") {
      // Shown inside the call it answers, when there is one.
      const call = this.findCall(e.msg.tool_call_id);
      if (call) {
        if (e.el) e.el.remove();
        e.el = null;
        this.render(call.id, call.entry);
        return;
      }
    }
    if (r === "system") return;
    const text = contentText(e.msg.content);
    const body = h("div", { class: "body" });
    if (r === "ai" && !e.streaming) body.appendChild(renderMarkdown(text));
    else if (text) body.appendChild(h("p", { class: "plain", text }));
    const calls = e.toolCalls.filter((tc) => tc && (tc.name || tc.id));
    const el = h(
      "article",
      {
        class: ["msg", r, e.streaming && "streaming", r === "tool" && "orphan"],
        "data-testid": `msg-${r}`,
        "data-id": id,
        "aria-busy": e.streaming ? "true" : "false",
      },
      h("div", { class: "who", text: t(`chat.role.${r}`) }),
      text ? body : null,
      calls.map((tc) => this.toolCall(tc)),
    );
    if (r === "tool") {
      el.appendChild(h("pre", { class: "mono", text: text }));
    }
    if (r === "ai" && !text && calls.length === 0) {
      if (e.streaming) el.appendChild(h("span", { class: "typing", "aria-label": t("chat.typing") }));
      else return e.el && (e.el.remove(), (e.el = null));
    }
    // Keep a tool call open if the user opened it.
    if (e.el) {
      const open = new Set([...e.el.querySelectorAll("details.tool-call[open]")].map((d) => d.dataset.callId));
      for (const d of el.querySelectorAll("details.tool-call")) if (open.has(d.dataset.callId)) d.open = true;
      e.el.replaceWith(el);
    } else {
      this.place(id, el);
    }
    e.el = el;
  }

  place(id, el) {
    const i = this.order.indexOf(id);
    for (let j = i + 1; j < this.order.length; j++) {
      const next = this.msgs.get(this.order[j]);
      if (next && next.el) {
        this.el.insertBefore(el, next.el);
        return;
      }
    }
    this.el.appendChild(el);
  }

  findCall(callId) {
    if (!callId) return null;
    for (const [id, entry] of this.msgs) {
      if (entry.toolCalls.some((tc) => tc && tc.id === callId)) return { id, entry };
    }
    return null;
  }

  toolCall(tc) {
    const result = this.toolResults.get(tc.id);
    let args = tc.args;
    if (typeof args !== "string") args = JSON.stringify(args ?? {});
    const state = result ? (result.status === "error" ? "error" : "done") : "running";
    return h(
      "details",
      { class: ["tool-call", state], "data-testid": "tool-call", "data-call-id": tc.id || "" },
      h(
        "summary",
        {},
        icon("tool"),
        h("span", { class: "tool-name", text: tc.name || t("chat.tool") }),
        h("span", { class: ["badge", state], text: t(`chat.tool.${state}`) }),
      ),
      h("div", { class: "tool-part" }, h("div", { class: "label", text: t("chat.tool.args") }), h("pre", { class: "mono", tabindex: "0", "aria-label": t("chat.tool.args"), "data-testid": "tool-args", text: pretty(args) })),
      result
        ? h("div", { class: "tool-part" }, h("div", { class: "label", text: t("chat.tool.result") }), h("pre", { class: "mono", tabindex: "0", "aria-label": t("chat.tool.result"), "data-testid": "tool-result", text: pretty(contentText(result.content)) }))
        : null,
    );
  }

  /** The last AI message's text, for tests and titles. */
  lastAnswer() {
    for (let i = this.order.length - 1; i >= 0; i--) {
      const e = this.msgs.get(this.order[i]);
      if (e && role(e.msg) === "ai") return contentText(e.msg.content);
    }
    return "";
  }

  /** showValues(values): a state without messages, shown as JSON. */
  showValues(values) {
    this.clear();
    if (!values || Object.keys(values).length === 0) return;
    this.el.appendChild(h("article", { class: "msg state", "data-testid": "state-values" }, h("div", { class: "who", text: t("chat.state") }), h("pre", { class: "mono", text: pretty(values) })));
  }
}
