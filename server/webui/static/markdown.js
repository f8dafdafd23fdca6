// markdown.js: a small, safe Markdown renderer.
//
// parseMarkdown(src) reads CommonMark's common subset plus GitHub's tables,
// strikethrough, task items and bare http(s) links into a tree of plain
// objects; renderMarkdown(src, opts) builds DOM nodes from it. Text is only
// ever set as text (createTextNode, textContent): no HTML in the source is
// interpreted, raw HTML shows as the characters it is. Links keep only
// http, https and relative URLs; images only URLs of this page's origin.
// No element gets an id or a name from the source.

const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;
const SPACE = /\s/u;

// ---------------------------------------------------------------- blocks

const RE_FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*(.*)$/;
const RE_ATX = /^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$/;
const RE_HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const RE_QUOTE = /^ {0,3}> ?/;
const RE_LIST = /^( {0,3})([-+*]|\d{1,9}[.)])(?=[ \t]|$)([ \t]*)/;
const RE_SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const RE_DELIM_ROW = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function isBlank(line) { return /^[ \t]*$/.test(line); }

// expandTabs turns leading tabs into spaces (to the next multiple of 4).
function expandTabs(line) {
  if (!line.includes('\t')) return line;
  let out = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\t') out += ' '.repeat(4 - (out.length % 4));
    else if (c === ' ') out += c;
    else return out + line.slice(i);
  }
  return out;
}

function indentOf(line) {
  let n = 0;
  while (n < line.length && line[n] === ' ') n++;
  return n;
}

// startsBlock says whether line starts a block that interrupts a
// paragraph.
function startsBlock(line) {
  if (RE_FENCE.test(line) || RE_ATX.test(line) || RE_HR.test(line) || RE_QUOTE.test(line)) return true;
  const m = RE_LIST.exec(line);
  // An ordered list interrupts a paragraph only when it starts at 1, and
  // an empty item never does (CommonMark).
  if (m && line.slice(m[0].length).trim() !== '') return !/^\d/.test(m[2]) || /^1[.)]$/.test(m[2]);
  return false;
}

function splitCells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
    if (s[i] === '|') { cells.push(cur.trim()); cur = ''; continue; }
    cur += s[i];
  }
  cells.push(cur.trim());
  return cells;
}

function parseBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }
    let m;
    if ((m = RE_FENCE.exec(line)) && !(m[2][0] === '`' && m[3].includes('`'))) {
      const indent = m[1].length, fence = m[2], info = m[3].trim();
      const body = [];
      i++;
      const close = new RegExp('^ {0,3}' + (fence[0] === '`' ? '`' : '~') + '{' + fence.length + ',}[ \\t]*$');
      while (i < lines.length && !close.test(lines[i])) {
        let l = lines[i];
        const n = Math.min(indent, indentOf(l));
        body.push(l.slice(n));
        i++;
      }
      i++; // the closing fence, or the end
      out.push({ type: 'code', lang: info.split(/\s+/)[0] || '', text: body.join('\n') });
      continue;
    }
    if ((m = RE_ATX.exec(line))) {
      const text = m[2].replace(/(?:^|[ \t]+)#+[ \t]*$/, '').trim();
      out.push({ type: 'heading', level: m[1].length, text });
      i++;
      continue;
    }
    if (RE_HR.test(line)) { out.push({ type: 'hr' }); i++; continue; }
    if (RE_QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length) {
        const l = lines[i];
        if (RE_QUOTE.test(l)) { inner.push(l.replace(RE_QUOTE, '')); i++; continue; }
        // Lazy continuation: a paragraph line without the marker.
        if (!isBlank(l) && !startsBlock(l) && inner.length && !isBlank(inner[inner.length - 1])) { inner.push(l); i++; continue; }
        break;
      }
      out.push({ type: 'blockquote', children: parseBlocks(inner) });
      continue;
    }
    if ((m = RE_LIST.exec(line))) {
      const r = parseList(lines, i);
      out.push(r.node);
      i = r.next;
      continue;
    }
    if (indentOf(line) >= 4) {
      const body = [];
      while (i < lines.length && (indentOf(lines[i]) >= 4 || isBlank(lines[i]))) { body.push(lines[i].slice(4)); i++; }
      while (body.length && isBlank(body[body.length - 1])) body.pop();
      out.push({ type: 'code', lang: '', text: body.join('\n') });
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && RE_DELIM_ROW.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const head = splitCells(line);
      const delims = splitCells(lines[i + 1]);
      if (head.length === delims.length && (line.includes('|') || lines[i + 1].includes('|'))) {
        const align = delims.map(d => d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : '');
        const rows = [];
        i += 2;
        while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines[i])) {
          const cells = splitCells(lines[i]).slice(0, head.length);
          while (cells.length < head.length) cells.push('');
          rows.push(cells);
          i++;
        }
        out.push({ type: 'table', align, head, rows });
        continue;
      }
    }
    // A paragraph, or a setext heading.
    const para = [line.replace(/^[ \t]+/, '')];
    i++;
    let level = 0;
    while (i < lines.length && !isBlank(lines[i])) {
      const l = lines[i];
      if ((m = RE_SETEXT.exec(l))) { level = m[1][0] === '=' ? 1 : 2; i++; break; }
      if (startsBlock(l)) break;
      if (l.includes('|') && i + 1 < lines.length && RE_DELIM_ROW.test(lines[i + 1]) && lines[i + 1].includes('-') &&
          splitCells(l).length === splitCells(lines[i + 1]).length) break;
      para.push(l.replace(/^[ \t]+/, ''));
      i++;
    }
    const text = para.join('\n');
    out.push(level ? { type: 'heading', level, text: text.trim() } : { type: 'paragraph', text: text.replace(/[ \t]+$/, '') });
  }
  return out;
}

// parseList reads a list starting at lines[start]: its items, each parsed
// as blocks, nested lists by indentation.
function parseList(lines, start) {
  const first = RE_LIST.exec(lines[start]);
  const ordered = /^\d/.test(first[2]);
  const marker = ordered ? first[2].slice(-1) : first[2];
  const node = { type: 'list', ordered, start: ordered ? parseInt(first[2], 10) : 1, tight: true, items: [] };
  let i = start;
  let blankBetween = false;
  while (i < lines.length) {
    const m = RE_LIST.exec(lines[i]);
    if (!m) break;
    const sameKind = ordered ? /^\d/.test(m[2]) && m[2].slice(-1) === marker : m[2] === marker;
    if (!sameKind || RE_HR.test(lines[i]) && !ordered) break;
    if (blankBetween) node.tight = false;
    const rest = lines[i].slice(m[0].length);
    const pad = m[3].length;
    // The item's content starts after the marker and 1 to 4 spaces; more
    // than 4 means an indented code block, so the content starts after 1.
    const offset = m[1].length + m[2].length + (rest === '' ? 1 : pad > 4 ? 1 : pad);
    const body = [pad > 4 ? ' '.repeat(pad - 1) + rest : rest];
    i++;
    let sawBlank = false;
    let internalBlank = false;
    while (i < lines.length) {
      const l = lines[i];
      if (isBlank(l)) { body.push(''); sawBlank = true; i++; continue; }
      if (indentOf(l) >= offset) {
        if (sawBlank) internalBlank = true;
        body.push(l.slice(offset));
        sawBlank = false;
        i++;
        continue;
      }
      // Lazy continuation of the item's last paragraph.
      if (!sawBlank && !startsBlock(l) && !RE_LIST.test(l)) { body.push(l.replace(/^[ \t]+/, '')); i++; continue; }
      break;
    }
    while (body.length && isBlank(body[body.length - 1])) body.pop();
    if (internalBlank && hasTwoBlocksAroundBlank(body)) node.tight = false;
    let checked = null;
    const task = /^\[([ xX])\][ \t]+/.exec(body[0] || '');
    if (task && !ordered) { checked = task[1] !== ' '; body[0] = body[0].slice(task[0].length); }
    node.items.push({ children: parseBlocks(body), checked });
    blankBetween = sawBlank;
    if (sawBlank && !(i < lines.length && RE_LIST.test(lines[i]))) break;
  }
  return { node, next: i };
}

// hasTwoBlocksAroundBlank: a blank line inside an item makes the list
// loose when it separates two of the item's own blocks (not when it sits
// inside a nested list or a code block).
function hasTwoBlocksAroundBlank(body) {
  const blocks = parseBlocks(body);
  if (blocks.length < 2) return false;
  return true;
}

// ---------------------------------------------------------------- inlines

// parseInline reads a paragraph's text into inline nodes: text, code,
// em, strong, del, link, image, br (hard break), softbreak.
export function parseInline(src) {
  const nodes = [];
  const brackets = [];
  let text = '';
  const flush = () => { if (text) { nodes.push({ type: 'text', text }); text = ''; } };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') {
      const n = src[i + 1];
      if (n === '\n') { flush(); nodes.push({ type: 'br' }); i += 2; continue; }
      if (n !== undefined && /[!-/:-@[-`{-~]/.test(n)) { text += n; i += 2; continue; }
      text += c; i++; continue;
    }
    if (c === '`') {
      let j = i;
      while (src[j] === '`') j++;
      const run = j - i;
      let k = j, close = -1;
      while (k < src.length) {
        if (src[k] === '`') {
          let e = k;
          while (src[e] === '`') e++;
          if (e - k === run) { close = k; break; }
          k = e;
        } else k++;
      }
      if (close < 0) { text += src.slice(i, j); i = j; continue; }
      let code = src.slice(j, close).replace(/\n/g, ' ');
      if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim() !== '') code = code.slice(1, -1);
      flush();
      nodes.push({ type: 'code', text: code });
      i = close + run;
      continue;
    }
    if (c === '\n') {
      const hard = / {2,}$/.test(text);
      text = text.replace(/ +$/, '');
      flush();
      nodes.push({ type: hard ? 'br' : 'softbreak' });
      i++;
      while (src[i] === ' ') i++;
      continue;
    }
    if (c === '!' && src[i + 1] === '[') {
      flush();
      brackets.push({ at: nodes.length, image: true, active: true });
      nodes.push({ type: 'text', text: '![' });
      i += 2;
      continue;
    }
    if (c === '[') {
      flush();
      brackets.push({ at: nodes.length, image: false, active: true });
      nodes.push({ type: 'text', text: '[' });
      i++;
      continue;
    }
    if (c === ']') {
      flush();
      const b = brackets.pop();
      if (!b || !b.active) { text += ']'; i++; continue; }
      const dest = src[i + 1] === '(' ? linkDestination(src, i + 2) : null;
      if (!dest) { text += ']'; i++; continue; }
      const children = nodes.splice(b.at + 1);
      processEmphasis(children);
      nodes[b.at] = b.image
        ? { type: 'image', url: dest.url, title: dest.title, alt: plainText(children) }
        : { type: 'link', url: dest.url, title: dest.title, children };
      if (!b.image) for (const o of brackets) if (!o.image) o.active = false; // no links in links
      i = dest.end;
      continue;
    }
    if (c === '<') {
      const m = /^<((?:https?|mailto):[^\s<>]*)>/i.exec(src.slice(i));
      if (m) {
        flush();
        nodes.push({ type: 'link', url: m[1], title: '', children: [{ type: 'text', text: m[1] }] });
        i += m[0].length;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      let j = i;
      while (src[j] === c) j++;
      const count = j - i;
      if (c === '~' && count > 2) { text += src.slice(i, j); i = j; continue; }
      const before = i === 0 ? '\n' : src[i - 1];
      const after = j >= src.length ? '\n' : src[j];
      const left = !SPACE.test(after) && (!PUNCT.test(after) || SPACE.test(before) || PUNCT.test(before));
      const right = !SPACE.test(before) && (!PUNCT.test(before) || SPACE.test(after) || PUNCT.test(after));
      let open = left, close = right;
      if (c === '_') {
        open = left && (!right || PUNCT.test(before));
        close = right && (!left || PUNCT.test(after));
      }
      flush();
      nodes.push({ type: 'delim', char: c, count, orig: count, open, close });
      i = j;
      continue;
    }
    if ((c === 'h' || c === 'H') && (i === 0 || /[\s(*_~]/.test(src[i - 1]))) {
      const m = /^https?:\/\/[^\s<]+/i.exec(src.slice(i));
      if (m) {
        let url = m[0];
        // Trailing punctuation is not part of the link; a closing
        // parenthesis is when the URL opened one.
        for (;;) {
          const last = url[url.length - 1];
          if (/[?!.,:*_~'"]/.test(last)) { url = url.slice(0, -1); continue; }
          if (last === ')' && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) { url = url.slice(0, -1); continue; }
          break;
        }
        flush();
        nodes.push({ type: 'link', url, title: '', children: [{ type: 'text', text: url }] });
        i += url.length;
        continue;
      }
    }
    text += c;
    i++;
  }
  flush();
  processEmphasis(nodes);
  return mergeText(nodes);
}

// linkDestination reads `url "title")` from src at i (just after the
// opening parenthesis).
function linkDestination(src, i) {
  const ws = () => { while (i < src.length && /[ \t\n]/.test(src[i])) i++; };
  ws();
  let url = '';
  if (src[i] === '<') {
    const end = src.indexOf('>', i);
    if (end < 0 || src.slice(i, end).includes('\n')) return null;
    url = src.slice(i + 1, end);
    i = end + 1;
  } else {
    let depth = 0;
    while (i < src.length) {
      const c = src[i];
      if (c === '\\' && i + 1 < src.length && /[!-/:-@[-`{-~]/.test(src[i + 1])) { url += src[i + 1]; i += 2; continue; }
      if (/[\s]/.test(c)) break;
      if (c === '(') depth++;
      if (c === ')') { if (depth === 0) break; depth--; }
      url += c;
      i++;
    }
  }
  ws();
  let title = '';
  const q = src[i];
  if (q === '"' || q === "'" || q === '(') {
    const closeQ = q === '(' ? ')' : q;
    let j = i + 1;
    while (j < src.length && src[j] !== closeQ) { if (src[j] === '\\') j++; j++; }
    if (j >= src.length) return null;
    title = src.slice(i + 1, j).replace(/\\(.)/g, '$1');
    i = j + 1;
    ws();
  }
  if (src[i] !== ')') return null;
  return { url, title, end: i + 1 };
}

// processEmphasis pairs the delimiter runs of nodes into em, strong and
// del, in place (CommonMark's algorithm, without its optimisations).
function processEmphasis(nodes) {
  for (let ci = 0; ci < nodes.length; ci++) {
    const closer = nodes[ci];
    if (closer.type !== 'delim' || !closer.close || closer.count === 0) continue;
    let matched = false;
    for (let oi = ci - 1; oi >= 0; oi--) {
      const opener = nodes[oi];
      if (opener.type !== 'delim' || opener.char !== closer.char || !opener.open || opener.count === 0) continue;
      if (closer.char === '~') {
        if (opener.count !== closer.count) continue;
      } else if ((opener.close || closer.open) && (opener.orig + closer.orig) % 3 === 0 && !(opener.orig % 3 === 0 && closer.orig % 3 === 0)) {
        continue;
      }
      const use = closer.char === '~' ? closer.count : opener.count >= 2 && closer.count >= 2 ? 2 : 1;
      const children = nodes.splice(oi + 1, ci - oi - 1);
      const type = closer.char === '~' ? 'del' : use === 2 ? 'strong' : 'em';
      nodes.splice(oi + 1, 0, { type, children: children.map(n => n.type === 'delim' ? delimText(n) : n) });
      opener.count -= use;
      closer.count -= use;
      ci = oi + 2; // the closer's new place
      if (opener.count === 0) { nodes.splice(oi, 1); ci--; }
      if (closer.count === 0) { nodes.splice(ci, 1); ci--; } else ci--; // look at the same closer again
      matched = true;
      break;
    }
    if (!matched) closer.close = false;
  }
  for (let k = 0; k < nodes.length; k++) if (nodes[k].type === 'delim') nodes[k] = delimText(nodes[k]);
}

function delimText(n) { return { type: 'text', text: n.char.repeat(n.count) }; }

function mergeText(nodes) {
  const out = [];
  for (const n of nodes) {
    if (n.children) n.children = mergeText(n.children);
    const last = out[out.length - 1];
    if (n.type === 'text' && last && last.type === 'text') last.text += n.text;
    else if (n.type !== 'text' || n.text) out.push(n);
  }
  return out;
}

function plainText(nodes) {
  return nodes.map(n => n.type === 'text' || n.type === 'code' ? n.text : n.type === 'image' ? n.alt : n.children ? plainText(n.children) : n.type === 'softbreak' || n.type === 'br' ? ' ' : n.char ? n.char.repeat(n.count) : '').join('');
}

// ---------------------------------------------------------------- public

/**
 * parseMarkdown reads Markdown into a tree of plain objects: blocks
 * (heading, paragraph, code, list, table, blockquote, hr) whose text is
 * parsed into inline nodes (text, code, em, strong, del, link, image, br,
 * softbreak).
 */
export function parseMarkdown(src) {
  const lines = String(src ?? '').replace(/\r\n?/g, '\n').replace(/\0/g, '\uFFFD').split('\n').map(expandTabs);
  return { type: 'root', children: inlineAll(parseBlocks(lines)) };
}

function inlineAll(blocks) {
  for (const b of blocks) {
    if (b.type === 'paragraph' || b.type === 'heading') b.children = parseInline(b.text);
    else if (b.type === 'blockquote') inlineAll(b.children);
    else if (b.type === 'list') for (const it of b.items) inlineAll(it.children);
    else if (b.type === 'table') {
      b.head = b.head.map(parseInline);
      b.rows = b.rows.map(r => r.map(parseInline));
    }
  }
  return blocks;
}

/**
 * safeURL returns the URL to use for a link (kind "link": http, https or
 * relative) or an image (kind "image": this page's origin only), or null
 * when it is not allowed.
 */
export function safeURL(raw, kind, origin = globalThis.location?.origin, base = globalThis.document?.baseURI) {
  // Browsers drop tabs and newlines inside URLs, so "java\nscript:" is
  // checked as the scheme it becomes.
  const s = String(raw ?? '').replace(/[\u0000-\u001F\u007F]/g, '').trim();
  if (!s) return null;
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(s);
  const scheme = m ? m[1].toLowerCase() : '';
  if (kind === 'image') {
    if (scheme && scheme !== 'http' && scheme !== 'https' && scheme !== 'blob') return null;
    if (!origin || !base) return null;
    let u;
    try { u = new URL(s, base); } catch { return null; }
    const o = u.protocol === 'blob:' ? new URL(u.pathname).origin : u.origin;
    return o === origin ? u.href : null;
  }
  if (scheme && scheme !== 'http' && scheme !== 'https') return null;
  if (/^[\\/][\\/]/.test(s) && !scheme) {
    // Protocol-relative: another host, over this page's scheme.
    return s.replace(/\\/g, '/');
  }
  return s.replace(/ /g, '%20');
}

/**
 * renderMarkdown builds DOM nodes from Markdown, never HTML from its text.
 * opts.resolve(url, kind) may rewrite a URL before it is checked (kind
 * "link" or "image"; return null to drop it); opts.loadImage(img, url),
 * when given, is called instead of setting an allowed image's src (to load
 * it with credentials, say).
 * @param {string} src
 * @param {{resolve?: (url: string, kind: string) => (string|null), loadImage?: (img: HTMLImageElement, url: string) => void}} [opts]
 * @returns {DocumentFragment}
 */
export function renderMarkdown(src, opts = {}) {
  const frag = document.createDocumentFragment();
  for (const b of parseMarkdown(src).children) frag.append(renderBlock(b, opts, false));
  return frag;
}

function el(tag, children, className) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (children) for (const c of children) if (c != null) e.append(c);
  return e;
}

function renderBlock(b, opts, tight) {
  switch (b.type) {
    case 'heading': return el('h' + b.level, renderInlines(b.children, opts));
    case 'paragraph': {
      const kids = renderInlines(b.children, opts);
      if (tight) { const f = document.createDocumentFragment(); f.append(...kids); return f; }
      return el('p', kids);
    }
    case 'code': {
      const code = el('code');
      code.textContent = b.text;
      if (/^[A-Za-z0-9_+-]{1,32}$/.test(b.lang)) {
        code.className = 'language-' + b.lang;
        code.dataset.lang = b.lang;
      }
      return el('pre', [code]);
    }
    case 'hr': return el('hr');
    case 'blockquote': return el('blockquote', b.children.map(c => renderBlock(c, opts, false)));
    case 'list': {
      const list = el(b.ordered ? 'ol' : 'ul');
      if (b.ordered && b.start !== 1) list.start = b.start;
      for (const it of b.items) {
        const li = el('li');
        if (it.checked !== null) {
          const box = el('input');
          box.type = 'checkbox';
          box.disabled = true;
          box.checked = it.checked;
          li.className = 'task';
          li.append(box, ' ');
        }
        for (const c of it.children) li.append(renderBlock(c, opts, b.tight));
        list.append(li);
      }
      return list;
    }
    case 'table': {
      const row = (cells, tag) => el('tr', cells.map((c, k) => {
        const cell = el(tag, renderInlines(c, opts));
        if (b.align[k]) cell.style.textAlign = b.align[k];
        return cell;
      }));
      const table = el('table', [el('thead', [row(b.head, 'th')]), b.rows.length ? el('tbody', b.rows.map(r => row(r, 'td'))) : null]);
      return el('div', [table], 'md-table');
    }
  }
  return document.createTextNode('');
}

function renderInlines(nodes, opts) {
  const out = [];
  for (const n of nodes) {
    switch (n.type) {
      case 'text': out.push(document.createTextNode(n.text)); break;
      case 'softbreak': out.push(document.createTextNode('\n')); break;
      case 'br': out.push(el('br')); break;
      case 'code': { const c = el('code'); c.textContent = n.text; out.push(c); break; }
      case 'em': case 'strong': case 'del': out.push(el(n.type, renderInlines(n.children, opts))); break;
      case 'link': {
        const url = checked(n.url, 'link', opts);
        const kids = renderInlines(n.children, opts);
        if (!url) { out.push(el('span', kids)); break; }
        const a = el('a', kids);
        a.href = url;
        if (n.title) a.title = n.title;
        if (/^https?:/i.test(url) || url.startsWith('//')) { a.target = '_blank'; a.rel = 'noopener noreferrer'; }
        out.push(a);
        break;
      }
      case 'image': {
        const url = checked(n.url, 'image', opts);
        if (!url) { const s = el('span', [n.alt ? '[' + n.alt + ']' : '[image]'], 'md-image-blocked'); out.push(s); break; }
        const img = el('img');
        img.alt = n.alt;
        if (n.title) img.title = n.title;
        img.loading = 'lazy';
        img.decoding = 'async';
        img.referrerPolicy = 'no-referrer';
        if (opts.loadImage) opts.loadImage(img, url); else img.src = url;
        out.push(img);
        break;
      }
    }
  }
  return out;
}

function checked(url, kind, opts) {
  let u = url;
  if (opts.resolve) {
    u = opts.resolve(url, kind);
    if (u == null) return null;
  }
  return safeURL(u, kind);
}
