// orch/dag.js: a plan's todos as a graph: checking the dependencies
// (unknown ids, cycles), a layered layout, and an SVG drawing of it.

import { h } from "../dom.js";
import { t } from "../i18n.js";
import { clip, nextId, statusText } from "./util.js";

/**
 * findCycle(todos): a dependency cycle as ids in the direction work flows,
 * from the todo first in the plan, the first repeated at the end
 * (["t1", "t3", "t1"]), as the orchestrator names it; null when none.
 */
export function findCycle(todos) {
  const index = new Map(todos.map((td, i) => [td.id, i]));
  const color = new Array(todos.length).fill(0); // 0 white, 1 grey, 2 black
  const stack = [];
  let cycle = null;
  const visit = (i) => {
    color[i] = 1;
    stack.push(i);
    for (const d of todos[i].depends_on || []) {
      const j = index.get(d);
      if (j === undefined) continue;
      if (color[j] === 1) {
        const ids = stack.slice(stack.indexOf(j)).map((k) => todos[k].id).reverse();
        let first = 0;
        ids.forEach((id, k) => {
          if (index.get(id) < index.get(ids[first])) first = k;
        });
        cycle = [...ids.slice(first), ...ids.slice(0, first)];
        cycle.push(cycle[0]);
        return true;
      }
      if (color[j] === 0 && visit(j)) return true;
    }
    stack.pop();
    color[i] = 2;
    return false;
  };
  for (let i = 0; i < todos.length; i++) if (color[i] === 0 && visit(i)) return cycle;
  return null;
}

/**
 * checkDeps(todos): the structural problems of a list of todos: missing
 * or duplicate ids, dependencies on unknown ids or on the todo itself, a
 * cycle. Returns {errors: [{id, field, text}], cycle}.
 */
export function checkDeps(todos) {
  const errors = [];
  const seen = new Map();
  todos.forEach((td, i) => {
    const id = (td.id || "").trim();
    if (!id) errors.push({ index: i, field: "id", text: t("orch.plan.err.id", { field: t("orch.plan.todo", { n: i + 1 }) }) });
    else if (!/^[\p{L}\p{N}_-]+$/u.test(id)) errors.push({ index: i, field: "id", text: t("orch.plan.err.idChars", { id }) });
    else if (seen.has(id)) errors.push({ index: i, field: "id", text: t("orch.plan.err.dupId", { id }) });
    seen.set(id, i);
  });
  todos.forEach((td, i) => {
    for (const d of td.depends_on || []) {
      if (d === td.id) errors.push({ index: i, field: "deps", text: t("orch.plan.err.selfDep", { id: td.id }) });
      else if (!seen.has(d)) errors.push({ index: i, field: "deps", text: t("orch.plan.err.unknownDep", { id: td.id, dep: d }) });
    }
  });
  const cycle = findCycle(todos.map((td) => ({ id: td.id, depends_on: (td.depends_on || []).filter((d) => d !== td.id) })));
  if (cycle) errors.push({ field: "cycle", text: t("orch.plan.err.cycle", { cycle: cycle.join(" → ") }) });
  return { errors, cycle };
}

/**
 * levels(todos): each todo's depth (1 + the deepest of its dependencies),
 * by id. Todos on a cycle are placed after the deepest dependency already
 * placed, so that a drawing of an invalid plan still shows every todo.
 */
export function levels(todos) {
  const ids = new Set(todos.map((td) => td.id));
  const level = new Map();
  let left = todos.slice();
  while (left.length) {
    const next = [];
    let progress = false;
    for (const td of left) {
      const deps = (td.depends_on || []).filter((d) => ids.has(d) && d !== td.id);
      if (deps.every((d) => level.has(d))) {
        level.set(td.id, deps.reduce((m, d) => Math.max(m, level.get(d) + 1), 0));
        progress = true;
      } else next.push(td);
    }
    if (!progress) {
      // A cycle: place the first todo left by the dependencies placed.
      const td = next.shift();
      const deps = (td.depends_on || []).filter((d) => level.has(d));
      level.set(td.id, deps.reduce((m, d) => Math.max(m, level.get(d) + 1), 0));
    }
    left = next;
  }
  return level;
}

// Geometry of the drawing, in SVG units.
const NODE_W = 168;
const NODE_H = 46;
const GAP_X = 24;
const GAP_Y = 46;
const PAD = 12;

/**
 * layout(todos): positions for a top-to-bottom layered drawing: a row per
 * level, todos in a row ordered by the mean position of their
 * dependencies (fewer crossings). Returns {nodes: Map id → {x, y, level,
 * todo}, edges: [{from, to}], width, height}.
 */
export function layout(todos) {
  const level = levels(todos);
  const rows = [];
  for (const td of todos) {
    const l = level.get(td.id);
    (rows[l] ||= []).push(td);
  }
  const pos = new Map();
  rows.forEach((row, l) => {
    if (l > 0) {
      const bary = (td) => {
        const ps = (td.depends_on || []).filter((d) => pos.has(d)).map((d) => pos.get(d));
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : Number.MAX_SAFE_INTEGER;
      };
      row.sort((a, b) => bary(a) - bary(b));
    }
    row.forEach((td, i) => pos.set(td.id, i));
  });
  const widest = Math.max(1, ...rows.map((r) => (r ? r.length : 0)));
  const width = PAD * 2 + widest * NODE_W + (widest - 1) * GAP_X;
  const nodes = new Map();
  rows.forEach((row, l) => {
    const rowW = row.length * NODE_W + (row.length - 1) * GAP_X;
    const x0 = (width - rowW) / 2;
    row.forEach((td, i) => nodes.set(td.id, { x: x0 + i * (NODE_W + GAP_X), y: PAD + l * (NODE_H + GAP_Y), level: l, todo: td }));
  });
  const edges = [];
  for (const td of todos) for (const d of td.depends_on || []) if (nodes.has(d) && d !== td.id) edges.push({ from: d, to: td.id });
  const height = PAD * 2 + rows.length * NODE_H + Math.max(0, rows.length - 1) * GAP_Y;
  return { nodes, edges, width, height };
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null && v !== false) el.setAttribute(k, String(v));
  for (const k of kids) if (k) el.append(k);
  return el;
}

/**
 * drawDag(todos, opts): the plan as an SVG element. opts.status(id) gives
 * a todo's status (its own otherwise); opts.cycle (ids) and
 * opts.critical (ids) are marked; opts.onSelect(id) makes the nodes
 * buttons; opts.label names the drawing. The drawing scales down to its
 * box, to no less than opts.minScale of its size (or opts.minWidth
 * pixels, 420 by default); its box scrolls beyond.
 */
export function drawDag(todos, opts = {}) {
  const lay = layout(todos);
  const marker = nextId("arrow");
  const markerHot = nextId("arrowhot");
  const onCycle = new Set();
  const cycleEdges = new Set();
  if (opts.cycle) {
    for (let i = 0; i + 1 < opts.cycle.length; i++) {
      onCycle.add(opts.cycle[i]);
      cycleEdges.add(`${opts.cycle[i]}>${opts.cycle[i + 1]}`);
    }
  }
  const critical = new Set(opts.critical || []);
  const svg = s("svg", {
    class: "orch-dag",
    viewBox: `0 0 ${lay.width} ${lay.height}`,
    width: lay.width,
    height: lay.height,
    role: "group",
    "aria-label": opts.label || t("orch.plan.graph"),
    "data-testid": opts.testid || "plan-dag",
  });
  // Scaled down to its box, never up, and never below a legible size
  // (the box scrolls then): set through the CSSOM, which the page's
  // Content-Security-Policy allows.
  svg.style.maxWidth = `${lay.width}px`;
  const least = opts.minScale !== undefined ? lay.width * opts.minScale : Math.min(lay.width, opts.minWidth ?? 420);
  svg.style.minWidth = `${Math.round(least)}px`;
  const arrow = (id, cls) =>
    s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse", class: cls }, s("path", { d: "M0,0 L10,5 L0,10 z" }));
  svg.append(s("defs", {}, arrow(marker, "orch-arrow"), arrow(markerHot, "orch-arrow hot")));
  const edgeLayer = s("g", { class: "edges", "aria-hidden": "true" });
  for (const e of lay.edges) {
    const a = lay.nodes.get(e.from);
    const b = lay.nodes.get(e.to);
    const x1 = a.x + NODE_W / 2;
    const x2 = b.x + NODE_W / 2;
    let d;
    if (b.y > a.y) {
      const y1 = a.y + NODE_H;
      const y2 = b.y - 2;
      const my = (y1 + y2) / 2;
      d = `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
    } else {
      // A back edge (only in a cycle): around the side.
      const side = Math.max(a.x, b.x) + NODE_W + GAP_X / 2;
      d = `M${a.x + NODE_W},${a.y + NODE_H / 2} C${side},${a.y + NODE_H / 2} ${side},${b.y + NODE_H / 2} ${b.x + NODE_W + 2},${b.y + NODE_H / 2}`;
    }
    const hot = cycleEdges.has(`${e.from}>${e.to}`);
    edgeLayer.append(s("path", { d, class: hot ? "edge cycle" : critical.has(e.from) && critical.has(e.to) ? "edge critical" : "edge", "marker-end": `url(#${hot ? markerHot : marker})`, "data-from": e.from, "data-to": e.to }));
  }
  svg.append(edgeLayer);
  const nodeLayer = s("g", { class: "nodes" });
  for (const [id, n] of lay.nodes) {
    const status = (opts.status && opts.status(id)) || n.todo.status || "pending";
    const label = t("orch.plan.nodeLabel", { id, title: n.todo.title || "", status: statusText(status) });
    const g = s("g", {
      class: ["node", `st-${status}`, onCycle.has(id) ? "cycle" : "", critical.has(id) ? "critical" : ""].filter(Boolean).join(" "),
      transform: `translate(${n.x},${n.y})`,
      "data-id": id,
      "data-title": n.todo.title || "",
      "data-status": status,
      role: opts.onSelect ? "button" : "img",
      tabindex: opts.onSelect ? 0 : undefined,
      "aria-label": label,
    });
    g.append(
      s("title", {}, document.createTextNode(label)),
      s("rect", { width: NODE_W, height: NODE_H, rx: 7, ry: 7 }),
      s("circle", { cx: 12, cy: 14, r: 4.5, class: "dot" }),
      s("text", { x: 22, y: 18, class: "nid" }, document.createTextNode(clip(id, 10))),
      s("text", { x: 10, y: 36, class: "ntitle" }, document.createTextNode(clip(n.todo.title || "", 24))),
    );
    const tool = n.todo.tool || n.todo.executor;
    if (tool) g.append(s("text", { x: NODE_W - 8, y: 18, class: "ntool", "text-anchor": "end" }, document.createTextNode(clip(tool, 14))));
    if (opts.onSelect) {
      g.addEventListener("click", () => opts.onSelect(id));
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          opts.onSelect(id);
        }
      });
    }
    nodeLayer.append(g);
  }
  svg.append(nodeLayer);
  return h("div", { class: "orch-dag-wrap" }, svg);
}

/** setDagStatus(wrap, id, status): recolours one node of a drawing. */
export function setDagStatus(wrap, id, status) {
  for (const g of wrap.querySelectorAll("g.node")) {
    if (g.dataset.id !== id) continue;
    g.classList.remove("st-pending", "st-running", "st-done", "st-failed", "st-skipped");
    g.classList.add(`st-${status}`);
    if (g.dataset.status === status) continue;
    g.dataset.status = status;
    const label = t("orch.plan.nodeLabel", { id, title: g.dataset.title || "", status: statusText(status) });
    g.setAttribute("aria-label", label);
    const title = g.querySelector("title");
    if (title) title.textContent = label;
  }
}
