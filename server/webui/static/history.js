// history.js: time travel: a thread's checkpoints, the state at any of
// them, and forking a new branch from one.

import { api } from "./api.js";
import { h, clear, pretty, contentText } from "./dom.js";
import { t, formatDate } from "./i18n.js";
import { icon } from "./icons.js";

const PAGE = 30;

/** History is the panel of the open thread's checkpoints, newest first. */
export class History {
  constructor({ root, toggle, onFork, onRerun, notice, current }) {
    Object.assign(this, { root, toggle, onFork, onRerun, notice, current });
    this.items = [];
    this.selected = null;
    this.limit = PAGE;
    toggle.addEventListener("click", () => (this.root.hidden ? this.open() : this.close()));
    root.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        this.close();
        toggle.focus();
      }
    });
  }

  async open() {
    if (!this.current()) return;
    this.root.hidden = false;
    this.toggle.setAttribute("aria-expanded", "true");
    await this.refresh();
    const first = this.root.querySelector("button");
    if (first) first.focus();
  }

  close() {
    this.root.hidden = true;
    this.toggle.setAttribute("aria-expanded", "false");
  }

  threadChanged() {
    this.items = [];
    this.selected = null;
    this.limit = PAGE;
    if (!this.root.hidden) this.refresh();
  }

  async refresh() {
    const id = this.current();
    if (!id || this.root.hidden) return;
    try {
      this.items = (await api.post(`/threads/${id}/history`, { limit: this.limit })) || [];
    } catch (err) {
      this.notice(t("error.load", { message: err.message }));
      return;
    }
    this.render();
  }

  render() {
    clear(this.root);
    this.root.appendChild(
      h("div", { class: "panel-head" }, h("h2", { text: t("history.title") }), h("button", { type: "button", class: "icon", "aria-label": t("history.close"), "data-testid": "history-close", onclick: () => (this.close(), this.toggle.focus()) }, icon("close"))),
    );
    if (this.items.length === 0) {
      this.root.appendChild(h("p", { class: "muted", text: t("history.empty") }));
      return;
    }
    const list = h("ol", { class: "checkpoints", "data-testid": "checkpoints" });
    this.items.forEach((cp, i) => {
      const id = cp.checkpoint && cp.checkpoint.checkpoint_id;
      const md = cp.metadata || {};
      const step = md.step ?? "?";
      // "loop" is every ordinary step: only the others are worth a word.
      const source = md.source && md.source !== "loop" ? `${t(`history.source.${md.source}`)} · ` : "";
      const next = cp.next && cp.next.length ? t("history.next", { nodes: cp.next.join(", ") }) : t("history.end");
      const msgs = cp.values && Array.isArray(cp.values.messages) ? cp.values.messages : null;
      const last = msgs && msgs.length ? contentText(msgs[msgs.length - 1].content).slice(0, 60) : "";
      const selected = this.selected === id;
      list.appendChild(
        h(
          "li",
          { class: ["checkpoint", selected && "selected"], "data-checkpoint-id": id, "data-testid": "checkpoint" },
          h("div", { class: "cp-head" }, h("strong", { text: t("history.step", { step }) }), h("span", { class: "muted", text: ` ${source}${next}` }), i === 0 ? h("span", { class: "badge", text: t("history.current") }) : null),
          last ? h("div", { class: "cp-last", text: last }) : null,
          h("div", { class: "muted small", text: formatDate(cp.created_at) }),
          h(
            "div",
            { class: "actions" },
            h("button", { type: "button", "aria-expanded": selected ? "true" : "false", "aria-label": t("history.viewOf", { step }), "data-testid": "checkpoint-view", onclick: () => this.view(cp) }, t("history.view")),
            h("button", { type: "button", "aria-label": t("history.forkOf", { step }), "data-testid": "checkpoint-fork", onclick: () => this.onFork(id) }, t("history.fork")),
            cp.next && cp.next.length ? h("button", { type: "button", "data-testid": "checkpoint-rerun", onclick: () => this.onRerun(id) }, t("history.rerun")) : null,
          ),
          selected ? h("pre", { class: "mono state-view", "data-testid": "checkpoint-state", tabindex: "0", "aria-label": t("history.state", { id: id.slice(0, 8) }), text: pretty(this.selectedValues) }) : null,
        ),
      );
    });
    this.root.appendChild(list);
    if (this.items.length >= this.limit) {
      this.root.appendChild(h("button", { type: "button", class: "link", onclick: () => ((this.limit += PAGE), this.refresh()) }, t("history.more")));
    }
  }

  async view(cp) {
    const id = cp.checkpoint.checkpoint_id;
    if (this.selected === id) {
      this.selected = null;
      this.render();
      return;
    }
    try {
      const st = await api.get(`/threads/${this.current()}/state/${id}`);
      this.selectedValues = st.values;
    } catch (err) {
      this.notice(t("error.load", { message: err.message }));
      return;
    }
    this.selected = id;
    this.render();
    const btn = this.root.querySelector(`li[data-checkpoint-id="${id}"] [data-testid="checkpoint-view"]`);
    if (btn) btn.focus();
  }
}
