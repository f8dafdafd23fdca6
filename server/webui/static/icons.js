// icons.js: the few icons the shell draws, as inline SVG (no icon font,
// no image requests), in the current text colour.

const paths = {
  menu: "M3 6h18M3 12h18M3 18h18",
  key: "M14.5 9.5a4.5 4.5 0 1 1-9 0 4.5 4.5 0 0 1 9 0ZM13.2 12.7 21 20.5M17.5 17l2-2M19.5 19l1.5-1.5",
  theme: "M12 3a9 9 0 1 0 0 18V3Z M12 3a9 9 0 0 1 0 18",
  trash: "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6",
  edit: "M4 20h4L19 9l-4-4L4 16v4ZM13.5 6.5l4 4",
  close: "M6 6l12 12M18 6 6 18",
  tool: "M14 6a4 4 0 0 0 5 5l-8 8a2 2 0 0 1-3-3l8-8a4 4 0 0 0-2-2Z",
  history: "M3 12a9 9 0 1 0 3-6.7M3 4v5h5M12 7v5l3 3",
  plus: "M12 5v14M5 12h14",
};

/** icon(name): an <svg> element, hidden from assistive technology. */
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "18");
  svg.setAttribute("height", "18");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", "icon-svg");
  const p = document.createElementNS(ns, "path");
  p.setAttribute("d", paths[name] || "");
  svg.appendChild(p);
  return svg;
}

/** fillIcons(root): puts the icon named by data-icon into each element. */
export function fillIcons(root = document) {
  for (const el of root.querySelectorAll("[data-icon]")) {
    if (!el.querySelector("svg")) el.prepend(icon(el.dataset.icon));
  }
}
