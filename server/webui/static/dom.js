// dom.js: building elements without innerHTML, so text from the server is
// always text.

/**
 * h(tag, attrs, ...children): an element. attrs: class, text, dataset
 * (object), on<event> (listener), hidden, and any other attribute (false,
 * null and undefined leave it out). Children: nodes, strings (as text),
 * arrays of them, null/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = tag.includes(":") || tag === "svg" ? document.createElementNS("http://www.w3.org/2000/svg", tag.replace(/^svg:/, "")) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "text") el.textContent = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" && "value" in el) el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** clear(el): removes el's children; returns el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** $(selector, root): querySelector. */
export function $(selector, root = document) {
  return root.querySelector(selector);
}

/** Text of a LangChain message content: a string, or a list of parts. */
export function contentText(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === "string" ? p : p && (p.type === "text" || p.text) ? p.text || "" : ""))
      .join("");
  }
  return JSON.stringify(content);
}

/** pretty(v): JSON as indented text. */
export function pretty(v) {
  if (typeof v === "string") {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}
