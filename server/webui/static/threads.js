// threads.js: the list of past threads: search, open, rename, delete.

import { api } from "./api.js";
import { h, clear, $ } from "./dom.js";
import { t, formatDate } from "./i18n.js";
import { icon } from "./icons.js";

const PAGE = 100;

function titleOf(th) {
  const m = th.metadata || {};
  return m.title || th.thread_id.slice(0, 8);
}

/** Threads is the side list of the user's threads, newest first. */
export class Threads {
  constructor({ list, search, more, onOpen, onDeleted, onRenamed, notice }) {
    Object.assign(this, { list, search, more, onOpen, onDeleted, onRenamed, notice });
    this.items = [];
    this.selected = "";
    this.limit = PAGE;
    this.total = 0;
    let timer;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.render(), 120);
    });
    more.addEventListener("click", () => {
      this.limit += PAGE;
      this.load();
    });
  }

  /**
   * load(): the newest threads (limit of them). The search box filters
   * them by title and id as the user types.
   */
  async load() {
    const body = { limit: this.limit, sort_by: "updated_at", sort_order: "desc" };
    try {
      const res = await api.raw("POST", "/threads/search", body);
      this.items = (await res.json()) || [];
      this.total = Number(res.headers.get("x-pagination-total") || this.items.length);
    } catch (err) {
      this.notice(t("error.load", { message: err.message }));
      return;
    }
    this.render();
  }

  select(id) {
    this.selected = id;
    for (const li of this.list.querySelectorAll("li[data-thread-id]")) {
      const btn = li.querySelector(".open");
      if (li.dataset.threadId === id) btn.setAttribute("aria-current", "true");
      else btn.removeAttribute("aria-current");
    }
  }

  render() {
    clear(this.list);
    const q = this.search.value.trim().toLocaleLowerCase();
    const shown = q ? this.items.filter((th) => titleOf(th).toLocaleLowerCase().includes(q) || th.thread_id.includes(q)) : this.items;
    if (shown.length === 0) {
      this.list.appendChild(h("li", { class: "muted empty", "data-testid": "threads-empty", text: q ? t("threads.noMatch") : t("threads.empty") }));
    }
    for (const th of shown) {
      const title = titleOf(th);
      const status = th.status || "idle";
      this.list.appendChild(
        h(
          "li",
          { "data-thread-id": th.thread_id, "data-testid": "thread-item" },
          h(
            "button",
            {
              type: "button",
              class: "open",
              "aria-current": th.thread_id === this.selected ? "true" : null,
              "aria-label": t("threads.open", { title }),
              "data-testid": "thread-open",
              onclick: () => this.onOpen(th.thread_id),
            },
            h("span", { class: "title", text: title }),
            h("span", { class: "meta" }, h("span", { class: ["dot", status], "aria-hidden": "true" }), h("span", { text: `${t(`threads.status.${status}`)} · ${formatDate(th.updated_at)}` })),
          ),
          h("button", { type: "button", class: "icon small", "aria-label": t("threads.renameOf", { title }), title: t("threads.rename"), "data-testid": "thread-rename", onclick: () => this.rename(th) }, icon("edit")),
          h("button", { type: "button", class: "icon small", "aria-label": t("threads.deleteOf", { title }), title: t("threads.delete"), "data-testid": "thread-delete", onclick: () => this.remove(th) }, icon("trash")),
        ),
      );
    }
    this.more.hidden = this.items.length >= this.total;
  }

  async rename(th) {
    const dialog = $("#rename-dialog");
    const input = $("#rename-input");
    input.value = titleOf(th);
    dialog.returnValue = "";
    const answer = await new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok" ? input.value.trim() : null), { once: true });
      dialog.showModal();
      input.select();
    });
    if (!answer) return this.focusRow(th.thread_id, "thread-rename");
    try {
      await api.patch(`/threads/${th.thread_id}`, { metadata: { title: answer } });
    } catch (err) {
      this.notice(err.message);
      return;
    }
    this.onRenamed(th.thread_id, answer);
    await this.load();
    this.focusRow(th.thread_id, "thread-rename");
  }

  async remove(th) {
    const ok = await confirmDialog(t("threads.confirmDelete", { title: titleOf(th) }));
    if (!ok) return this.focusRow(th.thread_id, "thread-delete");
    try {
      await api.del(`/threads/${th.thread_id}`);
    } catch (err) {
      this.notice(err.message);
      return;
    }
    this.onDeleted(th.thread_id);
    await this.load();
    const first = this.list.querySelector("button");
    if (first) first.focus();
  }

  focusRow(id, testid) {
    const li = this.list.querySelector(`li[data-thread-id="${id}"]`);
    const b = li && li.querySelector(`[data-testid="${testid}"]`);
    if (b) b.focus();
  }
}

// confirmDialog(text): asks a yes-or-no question in the page's own dialog.
function confirmDialog(text) {
  const dialog = $("#confirm-dialog");
  $("#confirm-text").textContent = text;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    dialog.querySelector('[value="cancel"]').focus();
  });
}
