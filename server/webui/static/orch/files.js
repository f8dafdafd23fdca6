// orch/files.js: a thread's result files, over GET /threads/{id}/files.
// Files are fetched with the API key (api.raw), so images and downloads
// go through blob: URLs: an <img src> or <a href> could not send it.

import { api, ApiError } from "../api.js";

/** fileURL(threadId, name): the API path of one file. */
export function fileURL(threadId, name) {
  return `/threads/${encodeURIComponent(threadId)}/files/${String(name).split("/").map(encodeURIComponent).join("/")}`;
}

/** listFiles(threadId): the thread's files, or null when the server keeps none. */
export async function listFiles(threadId) {
  try {
    const list = await api.get(`/threads/${encodeURIComponent(threadId)}/files`);
    return Array.isArray(list) ? list : [];
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 405)) return null;
    throw err;
  }
}

/** fetchBlob(threadId, name): the file's bytes. */
export async function fetchBlob(threadId, name) {
  const res = await api.raw("GET", fileURL(threadId, name));
  return res.blob();
}

/** fetchText(threadId, name): the file's text. */
export async function fetchText(threadId, name) {
  const res = await api.raw("GET", fileURL(threadId, name));
  return res.text();
}

const urls = new Set();

/** blobURL(blob): an object URL, revoked by revokeAll. */
export function blobURL(blob) {
  const u = URL.createObjectURL(blob);
  urls.add(u);
  return u;
}

/** revokeAll(): frees the object URLs made so far. */
export function revokeAll() {
  for (const u of urls) URL.revokeObjectURL(u);
  urls.clear();
}

/** download(threadId, name): saves the file through the browser. */
export async function download(threadId, name) {
  const blob = await fetchBlob(threadId, name);
  const u = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = u;
  a.download = String(name).split("/").pop();
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(u), 60000);
  return blob;
}

/**
 * fileForPath(files, path, task): the listed file a saved path (an
 * attachment's, the report's) stands for: the one whose name ends the
 * path; else task-N/ and the path's last element.
 */
export function fileForPath(files, path, task) {
  const p = String(path || "").replace(/\\/g, "/");
  if (!p) return null;
  let best = null;
  for (const f of files || []) {
    if ((p === f.name || p.endsWith(`/${f.name}`)) && (!best || f.name.length > best.length)) best = f.name;
  }
  if (best) return best;
  const base = p.split("/").pop();
  const guess = task ? `task-${task}/${base}` : base;
  return (files || []).some((f) => f.name === guess) ? guess : null;
}

/**
 * relativeFile(dir, url): the file a relative link of a file in dir
 * names ("chart_t5.svg" in "task-1" → "task-1/chart_t5.svg"), or null
 * for an absolute URL or one leading out of the thread's files.
 */
export function relativeFile(dir, url) {
  const u = String(url || "");
  if (!u || /^[a-z][a-z0-9+.-]*:/i.test(u) || u.startsWith("/") || u.startsWith("\\") || u.startsWith("#")) return null;
  const parts = dir ? dir.split("/") : [];
  for (const seg of u.split(/[?#]/)[0].split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (!parts.length) return null;
      parts.pop();
      continue;
    }
    let d;
    try {
      d = decodeURIComponent(seg);
    } catch {
      return null;
    }
    parts.push(d);
  }
  return parts.length ? parts.join("/") : null;
}
