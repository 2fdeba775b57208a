// The head view: the sentence twice (queries left, keys right), a line per (query, key, head) whose
// opacity is the attention weight. Hover previews a row, a click pins it, a second click unpins;
// clicking a key of the pinned row asks for the pair's worked example. No library, no network.
//
// Streamlit calls this function again whenever the data from Python changes; the view lives on the
// parent element and is updated in place, so focus and hover survive a rerun.
//
// Data (built by viz/head_view.py, component_data): tokens, lines (per head: q, k, w in thousandths,
// only weights above the threshold), row (the pinned query's full weights), pinned, pair, seq, note.
// Triggers sent back: pin {index|null, seq}, pair {query, key, seq}. State: window (focus window start).
// Export buttons under the view when the data has exports ({name, formats, csv: a token is pinned, why:
// why there is no PNG or SVG}); a click sends the trigger export {format, seq}, and the file comes back
// once with the next data as file ({name, mime, nonce, base64}), saved here.

export default function headView(component) {
  const { data, parentElement } = component;
  let view = parentElement.__headView;
  if (!view) {
    view = createView(parentElement);
    parentElement.__headView = view;
  }
  view.send = component.setTriggerValue;
  view.keep = component.setStateValue;
  view.update(data);
  // No cleanup function: Streamlit calls a returned cleanup at once when newer data arrived while this
  // call was loading, which would tear down the view that the newer call updates. Unmounting removes
  // the DOM, and the listeners with it.
}

const ROW = { small: 22, large: 18 };
const savedFiles = new Set(); // nonces of the server's files saved by this page: each is saved once

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function shown(text) {
  // token text is shown as text (never as HTML); make spaces and invisible characters visible
  if (text === "") return "∅";
  return text.replace(/ /g, "␣").replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

function createView(parent) {
  const root = el("div", "hv");
  const bar = el("div", "hv-bar");
  const legend = el("div", "hv-legend");
  const windowBox = el("div", "hv-window");
  const earlier = el("button", "hv-step", "◀ earlier");
  const later = el("button", "hv-step", "later ▶");
  const windowText = el("span", "hv-window-text");
  windowBox.append(earlier, windowText, later);
  bar.append(legend, windowBox);
  const note = el("p", "hv-note");
  const heads = el("div", "hv-heads");
  const colQ = el("div", "hv-col hv-q");
  const colK = el("div", "hv-col hv-k");
  colQ.setAttribute("role", "group");
  colK.setAttribute("role", "group");
  colQ.setAttribute("aria-label", "Query tokens: Enter pins a row, arrow keys move it");
  colK.setAttribute("aria-label", "Key tokens: Enter shows the pair's worked example");
  const canvas = el("canvas", "hv-lines");
  canvas.setAttribute("aria-hidden", "true");
  const aboveQ = el("div", "hv-edge hv-above");
  const belowQ = el("div", "hv-edge hv-below");
  const body = el("div", "hv-body");
  const linesBox = el("div", "hv-canvas");
  linesBox.append(aboveQ, canvas, belowQ);
  body.append(colQ, linesBox, colK);
  const headers = el("div", "hv-headers");
  headers.append(el("span", "hv-h-q", "query (attends from)"), el("span", "hv-h-mid", ""), el("span", "hv-h-k", "key (attends to)"));
  const status = el("p", "hv-status");
  status.setAttribute("aria-live", "polite");
  const tableBox = el("div", "hv-table");
  const exportsBox = el("div", "av-chart-exports");
  exportsBox.hidden = true;
  root.append(bar, note, headers, body, status, tableBox, exportsBox);
  heads.remove();
  parent.appendChild(root);

  const s = {
    signature: null, tokens: [], lines: [], rows: [], cols: [], rowCache: new Map(),
    pinned: null, pair: null, hover: null, seq: 0, start: 0, window: 128, data: null,
    qButtons: [], kButtons: [], focusSide: "q", focusIndex: 0, rowHeight: ROW.small,
  };
  const view = { send: () => {}, keep: () => {} };

  const visible = () => [s.start, Math.min(s.tokens.length, s.start + s.window)];
  const inWindow = (i) => i >= visible()[0] && i < visible()[1];
  const color = (index) => s.lines[index].color;

  function setWindowFor(i) {
    const n = s.tokens.length;
    if (n <= s.window || i === null || inWindow(i)) return false;
    s.start = Math.max(0, Math.min(i - Math.floor(s.window / 2), n - s.window));
    view.keep("window", s.start);
    return true;
  }

  function buildTokens() {
    colQ.replaceChildren();
    colK.replaceChildren();
    s.qButtons = [];
    s.kButtons = [];
    const [a, b] = visible();
    for (let i = a; i < b; i++) {
      for (const side of ["q", "k"]) {
        const button = el("button", "hv-tok", shown(s.tokens[i]));
        button.type = "button";
        button.dataset.i = String(i);
        button.dataset.side = side;
        button.tabIndex = -1;
        button.title = `${i}: ${s.tokens[i]}`;
        (side === "q" ? colQ : colK).appendChild(button);
        (side === "q" ? s.qButtons : s.kButtons).push(button);
      }
    }
    const n = s.tokens.length;
    windowBox.hidden = n <= s.window;
    windowText.textContent = `positions ${a}–${b - 1} of ${n}`;
    earlier.disabled = a === 0;
    later.disabled = b >= n;
    rovingFocus(false);
  }

  function button(side, i) {
    const list = side === "q" ? s.qButtons : s.kButtons;
    return list[i - s.start];
  }

  function rovingFocus(move) {
    for (const b of s.qButtons.concat(s.kButtons)) b.tabIndex = -1;
    if (!inWindow(s.focusIndex)) s.focusIndex = s.pinned !== null && inWindow(s.pinned) ? s.pinned : s.start;
    const target = button(s.focusSide, s.focusIndex);
    if (!target) return;
    target.tabIndex = 0;
    if (move) target.focus({ preventScroll: false });
  }

  function index() {
    // rows[head][q] = [[k, w], ...], cols[head][k] = [[q, w], ...] for lines above the threshold
    const n = s.tokens.length;
    s.rows = s.lines.map((line) => {
      const rows = Array.from({ length: n }, () => []);
      for (let t = 0; t < line.q.length; t++) rows[line.q[t]].push([line.k[t], line.w[t] / 1000]);
      return rows;
    });
    s.cols = s.lines.map((line) => {
      const cols = Array.from({ length: n }, () => []);
      for (let t = 0; t < line.q.length; t++) cols[line.k[t]].push([line.q[t], line.w[t] / 1000]);
      return cols;
    });
  }

  function legendAndNote(d) {
    legend.replaceChildren();
    for (const line of d.lines) {
      const chip = el("span", "hv-chip", `head ${line.head}`);
      chip.style.setProperty("--hv-color", line.color);
      legend.appendChild(chip);
    }
    note.textContent = d.note;
  }

  const HINTS = {
    png: "The view as a PNG image.",
    svg: "The view as an SVG drawing.",
    html: "The interactive head view as one file that works offline.",
    csv: "The pinned row: its weight to every key, per head.",
  };
  let exportSeq = 0;

  function describeExports(plan) {
    exportsBox.hidden = !plan;
    const wanted = plan ? JSON.stringify(plan) : "";
    if (!plan || exportsBox.dataset.plan === wanted) return;
    exportsBox.dataset.plan = wanted;
    exportsBox.replaceChildren();
    for (const format of plan.formats) {
      const button = el("button", "av-chart-export", format.toUpperCase());
      button.type = "button";
      button.disabled = format === "csv" && !plan.csv;
      button.title = button.disabled ? "Pin a token to download its row." : HINTS[format];
      button.addEventListener("click", () => {
        button.setAttribute("aria-busy", "true");
        setTimeout(() => button.removeAttribute("aria-busy"), 30_000);
        view.send("export", { format, seq: ++exportSeq });
      });
      exportsBox.append(button);
    }
    if (plan.why) exportsBox.append(el("span", "av-chart-export-why", plan.why));
  }

  function saveServerFile(file) {
    if (!file || savedFiles.has(file.nonce)) return;
    savedFiles.add(file.nonce);
    saveFile(new Blob([Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0))], { type: file.mime }), file.name);  // save_file.js
    for (const button of exportsBox.querySelectorAll("[aria-busy]")) button.removeAttribute("aria-busy");
  }

  view.update = (d) => {
    s.data = d;
    describeExports(d.exports);
    saveServerFile(d.file);
    const fresh = d.signature !== s.signature;
    if (fresh) {
      s.signature = d.signature;
      s.tokens = d.tokens;
      s.lines = d.lines;
      s.window = d.window;
      s.rowCache = new Map();
      s.hover = null;
      s.rowHeight = s.tokens.length <= 48 ? ROW.small : ROW.large;
      root.style.setProperty("--hv-row", `${s.rowHeight}px`);
      index();
      legendAndNote(d);
    }
    if (d.row) s.rowCache.set(d.row.query, d.row);
    if (d.seq >= s.seq) {
      s.seq = d.seq;
      s.pinned = d.pinned;
      s.pair = d.pair;
    }
    if (s.start + s.window > s.tokens.length) s.start = Math.max(0, s.tokens.length - s.window);
    const moved = setWindowFor(s.pinned);
    if (fresh || moved || s.qButtons.length === 0) buildTokens();
    render();
  };

  function pin(i) {
    s.pinned = i;
    s.seq += 1;
    if (i !== null) {
      s.focusSide = "q";
      s.focusIndex = i;
      if (setWindowFor(i)) buildTokens();
    }
    if (s.pair && s.pair[0] !== i) s.pair = null;
    view.send("pin", { index: i, seq: s.seq });
    render();
  }

  function choosePair(k) {
    if (s.pinned === null) {
      status.textContent = "Pin a query token (left column) first, then click a key for its worked example.";
      return;
    }
    s.pair = [s.pinned, k];
    s.seq += 1;
    view.send("pair", { query: s.pinned, key: k, seq: s.seq });
    render();
  }

  // --- drawing -------------------------------------------------------------------------------

  function activeLines() {
    // what to draw: [headIndex, q, k, w]; a hovered token previews, else the pinned row, else all
    const out = [];
    const h = s.hover;
    if (h && h.side === "k" && s.pinned === null) {
      s.cols.forEach((cols, hi) => cols[h.i].forEach(([q, w]) => out.push([hi, q, h.i, w])));
      return { lines: out, mode: "column", focus: h.i };
    }
    const q = h && h.side === "q" ? h.i : s.pinned;
    if (q !== null && q !== undefined) {
      s.rows.forEach((rows, hi) => rows[q].forEach(([k, w]) => out.push([hi, q, k, w])));
      return { lines: out, mode: "row", focus: q };
    }
    const [a, b] = visible();
    s.rows.forEach((rows, hi) => {
      for (let i = a; i < b; i++) rows[i].forEach(([k, w]) => out.push([hi, i, k, w]));
    });
    return { lines: out, mode: "all", focus: null };
  }

  function render() {
    const [a, b] = visible();
    const rowH = s.rowHeight;
    const height = (b - a) * rowH;
    const width = Math.max(80, linesBox.clientWidth || 240);
    const ratio = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);  // resizing a canvas reallocates it: only when needed
      canvas.height = Math.round(height * ratio);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const y = (i) => (i - a + 0.5) * rowH;
    const { lines, mode, focus } = activeLines();
    const outside = { above: new Map(), below: new Map() };
    ctx.lineWidth = mode === "all" ? 1.5 : 2.5;
    const spread = s.lines.length > 1 ? Math.min(3, (rowH * 0.5) / (s.lines.length - 1)) : 0;
    for (const [hi, q, k, w] of lines) {
      if (!inWindow(q)) continue;
      let yk;
      if (k < a || k >= b) {
        if (mode === "all") continue;  // keys outside the window: summed at the edge for one row or column only
        const side = k < a ? outside.above : outside.below;
        side.set(hi, (side.get(hi) || 0) + w);
        yk = k < a ? -2 : height + 2;
      } else yk = y(k);
      // heads side by side within a row, so lines of several heads to one key stay apart
      const shift = (hi - (s.lines.length - 1) / 2) * spread;
      ctx.globalAlpha = Math.min(1, w);
      ctx.strokeStyle = color(hi);
      ctx.beginPath();
      ctx.moveTo(0, y(q) + shift);
      ctx.lineTo(width, yk + shift);
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    if (s.pair && inWindow(s.pair[0]) && inWindow(s.pair[1])) {
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 3;
      ctx.strokeStyle = getComputedStyle(root).color || "#000";
      ctx.beginPath();
      ctx.moveTo(0, y(s.pair[0]));
      ctx.lineTo(width, y(s.pair[1]));
      ctx.stroke();
      ctx.setLineDash([]);
    }
    edge(aboveQ, outside.above, "↑", a, "earlier");
    edge(belowQ, outside.below, "↓", s.tokens.length - b, "later");
    highlight(lines, mode, focus);
    table();
    describe(mode, focus);
  }

  function edge(node, sums, arrow, count, word) {
    if (!sums.size) {
      node.textContent = "";
      return;
    }
    const parts = [...sums.entries()].map(([hi, w]) => `h${s.lines[hi].head} ${w.toFixed(2)}`);
    node.textContent = `${arrow} to ${count} ${word} keys: ${parts.join(" · ")}`;
  }

  function highlight(lines, mode, focus) {
    const strongest = new Map(); // key (or query) → [w, headIndex]
    for (const [hi, q, k, w] of lines) {
      const other = mode === "column" ? q : k;
      if (mode === "all") continue;
      const current = strongest.get(other);
      if (!current || w > current[0]) strongest.set(other, [w, hi]);
    }
    for (const b of s.qButtons.concat(s.kButtons)) {
      const i = Number(b.dataset.i);
      const side = b.dataset.side;
      b.classList.toggle("hv-pinned", side === "q" && i === s.pinned);
      b.setAttribute("aria-pressed", side === "q" ? String(i === s.pinned) : "false");
      b.classList.toggle("hv-focus-row", mode !== "all" && i === focus && side === (mode === "column" ? "k" : "q"));
      b.classList.toggle("hv-pair", !!s.pair && ((side === "q" && i === s.pair[0]) || (side === "k" && i === s.pair[1])));
      const target = (mode === "column" && side === "q") || (mode === "row" && side === "k") ? strongest.get(i) : null;
      if (target) {
        b.style.setProperty("--hv-color", color(target[1]));
        b.style.setProperty("--hv-weight", String(Math.round(target[0] * 100)));
        b.classList.add("hv-weighted");
      } else b.classList.remove("hv-weighted");
    }
  }

  function rowOf(q) {
    const cached = s.rowCache.get(q);
    if (cached) return cached;
    const full = s.data && s.data.full;  // a standalone page carries every row
    return full ? { query: q, weights: full[q].weights, masked: full[q].masked } : null;
  }

  function table() {
    const row = s.pinned === null ? null : rowOf(s.pinned);
    const key = `${s.signature}|${s.pinned}|${!!row}|${s.pair}`;
    if (key === s.tableKey) return;  // rebuilt only when the pinned row or the pair changes, not on hover
    s.tableKey = key;
    tableBox.replaceChildren();
    if (s.pinned === null) {
      tableBox.appendChild(el("p", "hv-hint", "Click a token on the left (or focus it and press Enter) to pin its row; its weights appear here as a table."));
      return;
    }
    const caption = `Weights of “${shown(s.tokens[s.pinned])}” (position ${s.pinned}) to every key`;
    if (!row) {
      tableBox.appendChild(el("p", "hv-hint", `${caption}: loading…`));
      return;
    }
    const t = el("table", "hv-row-table");
    t.appendChild(el("caption", "", caption));
    const head = el("tr");
    head.append(el("th", "", "key"), el("th", "", s.data && s.data.words ? "word" : "token"));
    for (const line of s.lines) {
      const th = el("th", "", `head ${line.head}`);
      th.style.setProperty("--hv-color", line.color);
      head.appendChild(th);
    }
    const thead = el("thead");
    thead.appendChild(head);
    const tbody = el("tbody");
    for (let k = 0; k < s.tokens.length; k++) {
      const tr = el("tr");
      tr.dataset.key = String(k);
      if (s.pair && s.pair[1] === k) tr.className = "hv-pair-row";
      const th = el("th", "", String(k));
      th.scope = "row";
      tr.append(th, el("td", "hv-token", shown(s.tokens[k])));
      row.weights.forEach((weights) => {
        const td = el("td", "hv-w", row.masked[k] ? "masked" : weights[k].toFixed(4));
        td.dataset.value = String(weights[k]);
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    }
    t.append(thead, tbody);
    tableBox.appendChild(t);
  }

  function describe(mode, focus) {
    if (mode === "row" && focus !== null) {
      const verb = focus === s.pinned && (!s.hover || s.hover.i === s.pinned) ? "Pinned" : "Preview";
      status.textContent = `${verb}: where “${shown(s.tokens[focus])}” (${focus}) looks. ` +
        (s.pinned !== null ? "Click a key for the pair's worked example; click the pinned token again or press Escape to unpin." : "Click to pin.");
    } else if (mode === "column") {
      status.textContent = `Preview: which queries look at “${shown(s.tokens[focus])}” (${focus}).`;
    } else {
      status.textContent = "Every line above the threshold. Hover a token to preview its row; click to pin it.";
    }
  }

  // --- events --------------------------------------------------------------------------------

  function target(event) {
    const b = event.target.closest ? event.target.closest(".hv-tok") : null;
    return b ? { side: b.dataset.side, i: Number(b.dataset.i) } : null;
  }

  const onOver = (event) => {
    const t = target(event);
    if (!t) return;
    if (!s.hover || s.hover.i !== t.i || s.hover.side !== t.side) {
      s.hover = t.side === "k" && s.pinned !== null ? null : t;
      render();
    }
  };
  const onLeave = () => {
    if (s.hover) {
      s.hover = null;
      render();
    }
  };
  const onClick = (event) => {
    const t = target(event);
    if (!t) return;
    s.focusSide = t.side;
    s.focusIndex = t.i;
    rovingFocus(false);
    if (t.side === "q") {
      s.hover = null;
      pin(s.pinned === t.i ? null : t.i);
    } else choosePair(t.i);
  };
  const onFocus = (event) => {
    const t = target(event);
    if (!t) return;
    s.focusSide = t.side;
    s.focusIndex = t.i;
    rovingFocus(false);
    if (s.pinned === null || t.side === "q") {
      s.hover = t.side === "k" && s.pinned !== null ? null : t;
      render();
    }
  };
  const onKey = (event) => {
    const t = target(event);
    const n = s.tokens.length;
    const current = t ? t.i : s.pinned !== null ? s.pinned : s.start;
    const side = t ? t.side : "q";
    let next = null;
    if (event.key === "ArrowDown") next = Math.min(n - 1, current + 1);
    else if (event.key === "ArrowUp") next = Math.max(0, current - 1);
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = n - 1;
    else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      s.focusSide = event.key === "ArrowRight" ? "k" : "q";
      s.focusIndex = current;
      rovingFocus(true);
      event.preventDefault();
      return;
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      if (side === "q") pin(s.pinned === current ? null : current);
      else choosePair(current);
      rovingFocus(true);
      return;
    } else if (event.key === "Escape") {
      event.preventDefault();
      s.hover = null;
      if (s.pinned !== null) pin(null);
      status.textContent = "Unpinned. " + status.textContent;
      return;
    } else return;
    event.preventDefault();
    s.focusSide = side;
    s.focusIndex = next;
    if (!inWindow(next)) {
      s.start = Math.max(0, Math.min(next - Math.floor(s.window / 2), n - s.window));
      view.keep("window", s.start);
      buildTokens();
    }
    if (side === "q" && s.pinned !== null) pin(next);
    rovingFocus(true);
  };
  const step = (direction) => {
    const n = s.tokens.length;
    s.start = Math.max(0, Math.min(s.start + direction * Math.floor(s.window / 2), n - s.window));
    view.keep("window", s.start);
    buildTokens();
    render();
  };
  const onEarlier = () => step(-1);
  const onLater = () => step(1);
  const resize = new ResizeObserver(() => render());

  body.addEventListener("mouseover", onOver);
  body.addEventListener("mouseleave", onLeave);
  body.addEventListener("click", onClick);
  body.addEventListener("focusin", onFocus);
  body.addEventListener("keydown", onKey);
  earlier.addEventListener("click", onEarlier);
  later.addEventListener("click", onLater);
  resize.observe(linesBox);

  view.state = s;
  return view;
}
