// api.js: the LangGraph Server API of `weft serve`, over fetch.
//
// Every request goes to the page's own origin. When the server asks for an
// API key (401 or 403), the function set with setKeyPrompt is asked for one;
// the key is kept in localStorage and sent as `x-api-key`.

const KEY_STORAGE = "weft.apiKey";

/** An HTTP answer that is not a success: status and the body (JSON or text). */
export class ApiError extends Error {
  constructor(status, body, method, path) {
    super(`${method} ${path}: ${status} ${describe(body)}`);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

function describe(body) {
  if (body == null) return "";
  if (typeof body === "string") return body.slice(0, 300);
  if (body.error && body.error.issues) {
    return body.error.issues.map((i) => `${(i.path || []).join(".")}: ${i.message}`).join("; ");
  }
  if (body.message) return String(body.message);
  if (body.detail) return String(body.detail);
  return JSON.stringify(body).slice(0, 300);
}

let keyPrompt = null;

/** setKeyPrompt(fn): fn(status) → Promise<string|null> asks the user for a key. */
export function setKeyPrompt(fn) {
  keyPrompt = fn;
}

/** The API key kept in this browser, or "". */
export function apiKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

/** Keeps (or, with "", forgets) the API key. */
export function setApiKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch {
    // Storage may be disabled; the key then lasts for this page only.
    memoryKey = key;
  }
}
let memoryKey = "";

function headers(extra) {
  const h = { ...extra };
  const key = apiKey() || memoryKey;
  if (key) h["x-api-key"] = key;
  return h;
}

async function readBody(res) {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// send makes a request, asking for a key once when the server wants one.
async function send(method, path, body, signal, extraHeaders) {
  for (let attempt = 0; ; attempt++) {
    const init = { method, headers: headers(extraHeaders), signal };
    if (body !== undefined && body !== null) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    if ((res.status === 401 || res.status === 403) && keyPrompt && attempt === 0) {
      const key = await keyPrompt(res.status);
      if (key) {
        setApiKey(key);
        continue;
      }
    }
    if (!res.ok) throw new ApiError(res.status, await readBody(res), method, path);
    return res;
  }
}

async function json(method, path, body, signal) {
  const res = await send(method, path, body, signal);
  if (res.status === 204) return null;
  return readBody(res);
}

/**
 * stream(path, body, onEvent, signal, opts): a server-sent event stream.
 * A body makes it a POST (a run); body null makes it a GET (joining a run),
 * with opts.lastEventId sent as Last-Event-ID. onEvent({event, data, id})
 * is called for each event, data parsed as JSON when it is JSON.
 * Resolves with {contentLocation, lastId} once the stream ends.
 */
async function stream(path, body, onEvent, signal, opts = {}) {
  const extra = { accept: "text/event-stream" };
  if (opts.lastEventId !== undefined && opts.lastEventId !== null) {
    extra["last-event-id"] = String(opts.lastEventId);
  }
  const method = body === null || body === undefined ? "GET" : "POST";
  const res = await send(method, path, method === "POST" ? body : null, signal, extra);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let ev = { event: "message", data: "", id: null };
  let lastId = null;
  const dispatch = () => {
    if (ev.data === "" && ev.event === "message") return;
    let data = ev.data;
    try {
      data = JSON.parse(ev.data);
    } catch {
      // not JSON: handed over as text
    }
    if (ev.id !== null) lastId = ev.id;
    onEvent({ event: ev.event, data, id: ev.id });
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        dispatch();
        ev = { event: "message", data: "", id: null };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") ev.event = val;
      else if (field === "data") ev.data = ev.data ? ev.data + "\n" + val : val;
      else if (field === "id") ev.id = val;
    }
  }
  if (ev.data !== "") dispatch();
  return { contentLocation: res.headers.get("content-location"), lastId };
}

/** The API: get, post, patch, put, del return the parsed JSON body (null for none). */
export const api = {
  get: (path, signal) => json("GET", path, null, signal),
  post: (path, body, signal) => json("POST", path, body ?? {}, signal),
  patch: (path, body, signal) => json("PATCH", path, body ?? {}, signal),
  put: (path, body, signal) => json("PUT", path, body ?? {}, signal),
  del: (path, signal) => json("DELETE", path, null, signal),
  stream,
  /** raw(method, path, body): the Response itself, for headers or files. */
  raw: (method, path, body, signal) => send(method, path, body, signal),
};
