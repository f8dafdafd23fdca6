// orch/clarify.js: the clarification point: the question, what was
// understood (intent, entities), an answer box, proceed anyway, and the
// reuse of an earlier answer.

import { h } from "../dom.js";
import { t } from "../i18n.js";
import { allowed, nextId, percent, problemBanner, sender } from "./util.js";

/** renderClarification(container, interrupt, ctx): the clarification's controls. */
export function renderClarification(container, interrupt, ctx) {
  const v = interrupt.value;
  const c = v.clarification || {};
  const box = h("section", { class: "interrupt orch-interrupt orch-clarify", "data-testid": "orch-clarify", "aria-labelledby": nextId("h") });
  const headId = box.getAttribute("aria-labelledby");
  const { send, err } = sender(box, ctx);
  box.append(h("h3", { id: headId, text: t("orch.clarify.title") }), problemBanner(v));
  box.append(h("p", { class: "orch-question", "data-testid": "orch-clarify-question", text: c.question || v.message }));
  if (c.request) box.append(h("p", { class: "muted small" }, `${t("orch.clarify.request")}: `, h("q", { text: c.request })));
  const intent = c.intent || {};
  const chips = [intent.domain, intent.category, intent.subcategory].filter(Boolean);
  const ents = Array.isArray(c.entities) ? c.entities : [];
  if (chips.length || ents.length) {
    const dl = h("dl", { class: "orch-understood" });
    if (chips.length) dl.append(h("dt", { text: t("orch.clarify.intent") }), h("dd", {}, chips.map((x) => h("span", { class: "chip", text: x }))));
    if (ents.length)
      dl.append(
        h("dt", { text: t("orch.clarify.entities") }),
        h("dd", {}, ents.map((e) => h("span", { class: "chip", title: percent(e.confidence) }, h("span", { class: "muted", text: `${e.type}: ` }), e.value))),
      );
    box.append(dl);
  }

  if (allowed(v, "clarify")) {
    const id = nextId("answer");
    const answer = h("textarea", { id, rows: 2, "data-testid": "orch-clarify-answer" });
    const form = h(
      "form",
      { class: "orch-answer" },
      h("label", { for: id, text: t("orch.clarify.answer") }),
      answer,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", "data-testid": "orch-clarify-send", text: t("orch.clarify.send") })),
    );
    answer.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = answer.value.trim();
      if (!text) {
        err.textContent = t("orch.clarify.empty");
        answer.setAttribute("aria-invalid", "true");
        answer.focus();
        return;
      }
      answer.removeAttribute("aria-invalid");
      send({ action: "clarify", answer: text });
    });
    box.append(form);
  }

  const past = Array.isArray(c.past) ? c.past : [];
  if (allowed(v, "reuse_past") && past.length) {
    const name = nextId("past");
    const radios = past.map((p, i) => {
      const rid = `${name}-${i}`;
      const r = h("input", { type: "radio", name, id: rid, value: p.id, checked: i === 0, "data-testid": `orch-clarify-past-${i}` });
      return h(
        "li",
        {},
        r,
        h(
          "label",
          { for: rid },
          t("orch.clarify.pastItem", { question: p.question || p.request || "", answer: p.answer || "" }),
          h("span", { class: "muted small", text: ` · ${t("orch.clarify.pastMeta", { count: p.reuse_count || 0, confidence: percent(p.confidence) })}` }),
        ),
      );
    });
    const fs = h(
      "fieldset",
      { class: "orch-past" },
      h("legend", { text: t("orch.clarify.past") }),
      h("ul", { class: "plain" }, radios),
      h("button", {
        type: "button",
        "data-testid": "orch-clarify-reuse",
        text: t("orch.clarify.reuse"),
        onclick: () => {
          const picked = fs.querySelector(`input[name="${name}"]:checked`);
          send({ action: "reuse_past", past_id: picked ? picked.value : "" });
        },
      }),
    );
    box.append(fs);
  }

  if (allowed(v, "proceed_anyway")) {
    box.append(h("div", { class: "actions" }, h("button", { type: "button", "data-testid": "orch-clarify-proceed", text: t("orch.clarify.proceed"), onclick: () => send({ action: "proceed_anyway" }) })));
  }
  box.append(err);
  container.append(box);
}
