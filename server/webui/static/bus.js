// bus.js: the listeners the views register with the shell. It holds no
// imports, so that modules the shell imports (orch/index.js) can register
// while the shell's own module is still being evaluated.

const customFns = [];
const runStateFns = [];
const threadFns = [];
let sendImpl = null;

/** onCustom(fn): fn(data, {threadId, runId}) for each custom event of the active run. */
export function onCustom(fn) {
  customFns.push(fn);
}

/** onRunState(fn): fn({threadId, runId, status}) as runs start and end. */
export function onRunState(fn) {
  runStateFns.push(fn);
}

/** onThread(fn): fn({threadId, assistantId, values}) when a thread is opened or a new one started. */
export function onThread(fn) {
  threadFns.push(fn);
}

function call(fns, ...args) {
  for (const fn of fns) {
    try {
      fn(...args);
    } catch (err) {
      console.error("listener failed", err);
    }
  }
}

/** emitCustom, emitRunState, emitThread: called by the shell. */
export const emitCustom = (data, meta) => call(customFns, data, meta);
export const emitRunState = (s) => call(runStateFns, s);
export const emitThread = (s) => call(threadFns, s);

/** panel(): the side panel <aside id="run-panel"> the views fill. */
export function panel() {
  return document.getElementById("run-panel");
}

/** sendMessage(text): sends text as the user's next message. */
export function sendMessage(text) {
  if (!sendImpl) throw new Error("the shell is not ready");
  return sendImpl(text);
}

/** setSendImpl(fn): the shell's sendMessage. */
export function setSendImpl(fn) {
  sendImpl = fn;
}
