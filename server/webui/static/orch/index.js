// orch/index.js: the orchestrator's views, registered into the shell:
// its approval points as interrupt renderers (clarification, plan, step,
// error, pause) and its progress events into the run panel (layers,
// todos, result). The shell imports this module once.

import "./strings.js";
import { registerInterrupt } from "../interrupts.js";
import { onLangChange } from "../i18n.js";
import { onCustom, onRunState, onThread, panel } from "../bus.js";
import { renderClarification } from "./clarify.js";
import { renderPlan } from "./plan.js";
import { renderStep } from "./step.js";
import { renderError, renderPause } from "./errpause.js";
import { Panel } from "./panel.js";

// isRequest: an orchestrator approval point's value (agent/orchestrator
// Request): a kind, a message, the actions, and the kind's payload.
function isRequest(kind, payload) {
  return (v) => !!v && typeof v === "object" && v.kind === kind && Array.isArray(v.actions) && (payload === null || (v[payload] && typeof v[payload] === "object"));
}

registerInterrupt(isRequest("clarification", "clarification"), renderClarification);
registerInterrupt(isRequest("plan", "plan"), renderPlan);
registerInterrupt(isRequest("step", "step"), renderStep);
registerInterrupt(isRequest("error", "failure"), renderError);
registerInterrupt(isRequest("pause", "pause"), renderPause);

let view = null;
const current = () => {
  if (!view) {
    const aside = panel();
    if (!aside) return null;
    view = new Panel(aside);
  }
  return view;
};

onThread(({ threadId, values, state }) => {
  const p = current();
  if (!p) return;
  if (p.threadId !== threadId) p.reset(threadId || "");
  if (threadId && values) p.fromState(values, state);
});

onCustom((data, meta) => {
  const p = current();
  if (!p) return;
  if (meta && meta.threadId && p.threadId !== meta.threadId) p.reset(meta.threadId);
  p.onEvent(data);
});

onRunState(({ threadId, status }) => {
  const p = current();
  if (!p || (threadId && p.threadId && p.threadId !== threadId)) return;
  p.runState(status);
});

// The panel's words follow the language (the shell re-renders the
// interrupts itself).
onLangChange(() => {
  if (view) view.relabel();
});

/** orchPanel(): the run panel's view, for tests and tools. */
export function orchPanel() {
  return current();
}
