// The stages of the first layer, redrawn by the browser the moment the mask, the scaling, the temperature or
// the hidden keys change, before the server's figure for the new setting arrives (which then replaces it).
//
// The server sends, with a stages chart it can be redrawn for (viz/content/attention.py, stages_in_browser):
// the head's raw scores Q·Kᵀ as the model computed them (float32), the divisor √d_k, the masked cells of
// each mask choice, the sentence's tokens as the "Hide key tokens" box names them, what the titles are made
// of, and the settings its figure shows (`now`); ui/view.py adds where the controls are (`controls`: their
// widget keys, the mask's labels, the temperature slider's values). From those this file computes what
// model/attention.py's attention_stages computes: S' = S × (1/√d_k) in float32, the mask by position (a
// hidden key's whole column), S'' = S' where the key is allowed, and softmax(S'/T) over the allowed keys,
// and writes the panels, their ranges and titles as viz/stages.py's stages_figure does
// (tests/test_live_stages.py runs this file in node against the server's own figures).

const LIVE_STAGES = ["scores_raw", "scores_scaled", "scores_masked", "pattern"];

function base64Bytes(text) {
  // (chart.js uses it too: ui/chart.py sends both files as one module)
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// what the server sends for any chart, unpacked (chart.js draws it; sameDrawing compares it)
function unpack(figure) {
  // a trace's text per cell, sent as its row and column parts, and its z, sent as 4 significant digits
  // (viz/payload.py, browser_json)
  for (const trace of figure.data || []) {
    const parts = trace.av_text;
    if (parts) {
      delete trace.av_text;
      trace.text = parts.rows.map((row) => parts.cols.map((col) => row + col));
    }
    if (trace.av_z) {
      trace.z = decimalValues(trace.av_z);
      delete trace.av_z;
    }
  }
  return figure;
}

const NAN_DIGITS = -32768;
const POWERS = Array.from({ length: 80 }, (_, k) => Number(`1e${k}`)); // the doubles nearest 10^k, as viz/payload.py's

function decimalValues({ shape, bdata }) {
  // n digits (int16) then n powers of ten (int8): value = digits × 10^power, as rows of float32
  const [rows, cols] = shape;
  const n = rows * cols;
  const bytes = base64Bytes(bdata);
  const digits = new Int16Array(bytes.buffer, 0, n);
  const power = new Int8Array(bytes.buffer, 2 * n, n);
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const p = power[i];
    values[i] = digits[i] === NAN_DIGITS ? NaN : p >= 0 ? digits[i] * POWERS[p] : digits[i] / POWERS[-p];
  }
  return Array.from({ length: rows }, (_, r) => values.subarray(r * cols, (r + 1) * cols));
}

function formatG(x, digits) {
  // Python's format(x, f".{digits}g"): the shortest of fixed or scientific notation, no trailing zeros
  if (x === 0) return "0";
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  const [mantissa, exponentText] = x.toExponential(digits - 1).split("e");
  const exponent = Number(exponentText);
  const trim = (text) => (text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text);
  if (exponent < -4 || exponent >= digits) {
    const sign = exponent < 0 ? "-" : "+";
    return `${trim(mantissa)}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  return trim(x.toFixed(digits - 1 - exponent));
}

function maskedCells(mask, n, keys) {
  // the bits of np.packbits (first cell in the highest bit), as booleans row by row, and the columns of the
  // hidden keys (MaskSpec.build: no query of the sentence may attend to them)
  const bytes = base64Bytes(mask.bits);
  const hidden = new Uint8Array(n * n);
  for (let i = 0; i < n * n; i++) hidden[i] = (bytes[i >> 3] >> (7 - (i & 7))) & 1;
  for (const key of keys) for (let i = 0; i < n; i++) hidden[i * n + key] = 1;
  return hidden;
}

function liveStages(live, setting) {
  // the four panels [n × n] for {scaling, mask, temperature}, as the model computes them; masked cells NaN
  // in the last two (apply_mask), a row with no allowed key all NaN
  const n = live.n;
  const raw = new Float32Array(base64Bytes(live.raw).buffer);
  const divisor = setting.scaling ? live.divisor : 1.0;
  const inverse = Math.fround(1.0 / divisor);
  const hidden = maskedCells(live.masks[setting.mask], n, setting.hidden);
  const scaled = new Float32Array(n * n);
  const masked = new Float32Array(n * n);
  const pattern = new Float32Array(n * n);
  const logits = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let top = -Infinity;
    for (let j = 0; j < n; j++) {
      const cell = i * n + j;
      scaled[cell] = Math.fround(raw[cell] * inverse);
      masked[cell] = hidden[cell] ? NaN : scaled[cell];
      logits[j] = Math.fround(scaled[cell] / setting.temperature);
      if (!hidden[cell] && logits[j] > top) top = logits[j];
    }
    let sum = 0;
    for (let j = 0; j < n; j++) sum += hidden[i * n + j] ? 0 : Math.exp(logits[j] - top);
    for (let j = 0; j < n; j++) {
      const cell = i * n + j;
      pattern[cell] = hidden[cell] ? NaN : Math.fround(Math.exp(logits[j] - top) / sum);
    }
  }
  return { panels: { scores_raw: raw, scores_scaled: scaled, scores_masked: masked, pattern }, hidden, divisor };
}

function finiteExtent(values) {
  let low = Infinity;
  let high = -Infinity;
  for (const v of values) {
    if (Number.isFinite(v)) {
      if (v < low) low = v;
      if (v > high) high = v;
    }
  }
  return low <= high ? [low, high] : null;
}

function spread(values, isPattern) {
  // viz/stages.py _spread: what a panel holds, under its title
  const extent = finiteExtent(values);
  if (!extent) return "no visible cell";
  if (isPattern) return `largest weight ${extent[1].toFixed(2)}`;
  return `${formatG(extent[0], 3)} to ${formatG(extent[1], 3)}`.replaceAll("-", "−");
}

function withSpread(title, range) {
  // viz/stages.py _with_spread: the range on a small second line, after any note the title has there
  const at = title.indexOf("<br><sup>");
  const head = at < 0 ? title : title.slice(0, at);
  let note = at < 0 ? "" : title.slice(at + "<br><sup>".length);
  if (note.endsWith("</sup>")) note = note.slice(0, -"</sup>".length);
  return `${head}<br><sup>${note ? note + " · " : ""}${range}</sup>`;
}

function stageTitles(live, setting, divisor, maskName) {
  // viz/stages.py stage_titles
  const hidden = setting.hidden.length;
  const scaled = divisor === 1.0 ? "no scaling (÷ 1)" : `÷ √d_k = ÷ √${live.d_head} = ÷ ${formatG(divisor, 3)}`;
  let masked;
  if (maskName === "none") masked = hidden ? `masked: ${hidden} hidden` : "masked: nothing";
  else masked = `masked: ${maskName}` + (hidden ? `<br><sup>+ ${hidden} hidden</sup>` : "");
  const softmax = setting.temperature === 1.0 ? "softmax" : `softmax(· ÷ T), T = ${formatG(setting.temperature, 6)}`;
  return { scores_raw: "raw Q·Kᵀ", scores_scaled: scaled, scores_masked: masked, pattern: softmax };
}

function headTitle(live, setting, mask) {
  // viz/content/attention.py head_title and state_note
  const parts = [];
  if (setting.hidden.length) parts.push("hidden " + setting.hidden.map((p) => live.hide.quoted[p]).join(", "));
  if (!setting.scaling) parts.push("scaling off");
  if (setting.temperature !== 1.0) parts.push(`T = ${formatG(setting.temperature, 6)}`);
  const own = live.own;
  const whatIf =
    live.what_if || setting.hiding || mask.causal !== own.mask[0] || mask.padding !== own.mask[1] || setting.scaling !== own.scaling || setting.temperature !== own.temperature;
  if (whatIf) parts.push("what-if");
  return `${live.title} · mask ${mask.name}` + parts.map((part) => ` · ${part}`).join("");
}

function maskMarks(hidden, n, marks) {
  // viz/heatmap.py mask_marks: a cross on every masked cell (an SVG over the panel) and a transparent
  // heatmap on them for hovering; null beyond marks.max_side cells a side or with nothing masked. Returns
  // the trace and layout image for a panel (3: masked scores, 4: softmax), both panels' crosses made once.
  if (n > marks.max_side || !hidden.some((h) => h)) return null;
  const cellPx = marks.panel_px / n;
  const crossPx = Math.max(3, Math.round(0.5 * Math.max(6, Math.min(18, 0.55 * cellPx))));
  const half = Math.min(0.3, crossPx / 2 / cellPx);
  const f = (v) => v.toFixed(3);
  let strokes = "";
  const z = [];
  for (let q = 0; q < n; q++) {
    const row = new Float32Array(n);
    for (let k = 0; k < n; k++) {
      const on = hidden[q * n + k];
      row[k] = on ? 1 : NaN;
      if (on) {
        strokes += `M${f(k + 0.5 - half)} ${f(q + 0.5 - half)}L${f(k + 0.5 + half)} ${f(q + 0.5 + half)}`;
        strokes += `M${f(k + 0.5 + half)} ${f(q + 0.5 - half)}L${f(k + 0.5 - half)} ${f(q + 0.5 + half)}`;
      }
    }
    z.push(row);
  }
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${n} ${n}" preserveAspectRatio="none">` +
    `<path d="${strokes}" fill="none" stroke="${marks.colour}" stroke-width="1" vector-effect="non-scaling-stroke"/></svg>`;
  const source = "data:image/svg+xml;base64," + btoa(svg);
  const range = Array.from({ length: n }, (_, i) => i);
  return (panel) => ({
    image: {
      source,
      xref: `x${panel} domain`,
      yref: `y${panel} domain`,
      x: 0,
      y: 1,
      sizex: 1,
      sizey: 1,
      xanchor: "left",
      yanchor: "top",
      sizing: "stretch",
      layer: "above",
    },
    trace: {
      type: "heatmap",
      z,
      x: range,
      y: range,
      colorscale: [
        [0.0, "rgba(0,0,0,0)"],
        [1.0, "rgba(0,0,0,0)"],
      ],
      zmin: 0,
      zmax: 1,
      showscale: false,
      hoverongaps: false,
      hovertemplate: "masked: query %{y} may not attend to key %{x}<extra></extra>",
      name: "masked cells",
      showlegend: false,
      meta: { role: "decoration" },
      xaxis: `x${panel}`,
      yaxis: `y${panel}`,
    },
  });
}

function withHead(live, own) {
  // the `live` of a shown head's chart for the head of a placeholder (ui/chart.py, placeholder_data): what
  // is a head's own (viz/content/attention.py, head_in_browser) replaced by the placeholder's
  return { ...live, head: own.head, raw: own.raw, title: own.title };
}

function liveHeads(live) {
  // the heads whose pills are on now (the pills are in head order), or null when the pills are not on the
  // page; none on shows head 0, as the server does
  const controls = live.controls;
  const box = controls && controls.heads && document.querySelector(`.st-key-${CSS.escape(controls.heads)}`);
  const pills = box ? box.querySelectorAll("button[aria-pressed]") : [];
  if (!pills.length) return null;
  const heads = new Set();
  pills.forEach((pill, head) => pill.getAttribute("aria-pressed") === "true" && heads.add(head));
  return heads.size ? heads : new Set([0]);
}

function predictStages(figure, live, setting) {
  // `figure` (the server's stages figure, unpacked) redrawn for `setting`: its panels' values, their colour
  // ranges, the panel and figure titles and the mask marks; everything else (labels, hover text, the
  // click targets) as it is. For another head of the layer than the figure's (`live.head`), its raw
  // scores too.
  const n = live.n;
  const mask = live.masks[setting.mask];
  const { panels, hidden, divisor } = liveStages(live, setting);
  const rows = (values) => Array.from({ length: n }, (_, r) => values.subarray(r * n, (r + 1) * n));
  const titles = stageTitles(live, setting, divisor, mask.name);
  const marksOn = maskMarks(hidden, n, live.marks);
  const data = [];
  const images = [];
  for (const trace of figure.data || []) {
    if (trace.name === "masked cells") continue; // drawn anew below
    const stage = trace.meta && trace.meta.stage;
    const otherHead = LIVE_STAGES.includes(stage) && trace.meta.head !== live.head;
    if (otherHead) trace.meta = { ...trace.meta, head: live.head };
    if (LIVE_STAGES.includes(stage) && (stage !== "scores_raw" || otherHead)) trace.z = rows(panels[stage]);
    data.push(trace);
    if (marksOn && (stage === "scores_masked" || stage === "pattern")) {
      const marks = marksOn(stage === "pattern" ? 4 : 3);
      // its cells answer clicks where the panel's do (viz/clickable.py, with_cell_targets)
      if (trace.meta && trace.meta.click) marks.trace.meta = { ...marks.trace.meta, click: trace.meta.click };
      data.push(marks.trace);
      images.push(marks.image);
    }
  }
  figure.data = data;
  const layout = figure.layout;
  layout.images = (layout.images || []).filter((image) => !/^[xy][34] domain$/.test(image.xref || "")).concat(images);
  if (!layout.images.length) delete layout.images;
  LIVE_STAGES.forEach((stage, index) => {
    layout.annotations[index].text = withSpread(titles[stage], spread(panels[stage], stage === "pattern"));
  });
  let top = 0;
  for (const stage of ["scores_raw", "scores_scaled", "scores_masked"]) {
    const extent = finiteExtent(panels[stage]);
    if (extent) top = Math.max(top, Math.abs(extent[0]), Math.abs(extent[1]));
  }
  top = top || 1.0;
  layout.coloraxis.cmin = -top;
  layout.coloraxis.cmax = top;
  if (live.pattern_colour === "own") {
    const extent = finiteExtent(panels.pattern);
    const largest = extent && extent[1] > 0 ? extent[1] : 1.0;
    layout.coloraxis2.cmax = largest;
    layout.coloraxis2.colorbar.title.text = `weight (0 to max ${formatG(largest, 2)})`;
  }
  if (layout.title) layout.title.text = headTitle(live, setting, mask);
  return figure;
}

function liveSetting(live) {
  // the controls as the page shows them now ({scaling, mask, temperature, hidden: the positions hidden in
  // this sentence, hiding: whether any key of any sentence is}), or null when one of the first three is
  // not on the page or shows something the server did not name (a mask being typed). Without the "Hide
  // key tokens" box (a lesson may leave it out), the hidden keys are those of the server's figure.
  const controls = live.controls;
  if (!controls) return null;
  const within = (key, selector) => {
    const box = document.querySelector(`.st-key-${CSS.escape(key)}`);
    return box && box.querySelector(selector);
  };
  const scaling = within(controls.scaling, "input[type=checkbox]");
  const mask = within(controls.mask, "button[role=radio][aria-checked=true]"); // the mask's pills: the one chosen
  const temperature = within(controls.temperature, "input[type=range]");
  if (!scaling || !mask || !temperature) return null;
  const choice = Object.keys(controls.mask_labels).find((name) => controls.mask_labels[name] === mask.textContent.trim());
  const value = controls.temperatures[Number(temperature.value)];
  if (choice === undefined || !live.masks[choice] || !(value > 0)) return null;
  let hidden = live.now.hidden;
  let hiding = live.now.hiding;
  const box = controls.hidden && document.querySelector(`.st-key-${CSS.escape(controls.hidden)}`);
  if (box) {
    const chosen = Array.from(box.querySelectorAll("[data-tag]"), (tag) => tag.getAttribute("aria-label"));
    hidden = [...new Set(chosen.map((label) => live.hide.labels[label]).filter((p) => p !== undefined))].sort((a, b) => a - b);
    hiding = chosen.length > 0;
    // the token pills of this sentence (one a position, in order), drawn with the box, when they were touched
    // after it: until the server's rerun, only the control clicked shows the change
    const pills = hideTouched === "pills" && controls.hide_here && document.querySelector(`.st-key-${CSS.escape(controls.hide_here)}`);
    const pressed = pills ? pills.querySelectorAll("button[aria-pressed]") : [];
    if (pressed.length === live.hide.quoted.length) {
      const elsewhere = chosen.some((label) => live.hide.labels[label] === undefined); // a key of another sentence
      hidden = [];
      pressed.forEach((pill, position) => pill.getAttribute("aria-pressed") === "true" && hidden.push(position));
      hiding = hidden.length > 0 || elsewhere;
    }
  }
  return { scaling: scaling.checked, mask: choice, temperature: value, hidden, hiding };
}

// Which of the two controls of hidden keys was touched last: "pills" (the sentence's token pills) or "box"
// (the "Hide key tokens" box, its list of choices included). They show the same keys once the server's
// rerun has come; between a click and that rerun, only the one clicked shows the change.
let hideTouched = null;

function noteHideTouched(event, controls) {
  const target = event.target;
  if (!controls || !(target instanceof Element)) return;
  const within = (key) => key && target.closest(`.st-key-${CSS.escape(key)}`);
  if (within(controls.hide_here)) hideTouched = "pills";
  else if (within(controls.hidden) || target.closest("[role=listbox], [role=option]")) hideTouched = "box";
}

function sameSetting(live, setting) {
  // whether `setting` draws the figure the server sent (the choice "model" and "causal" can be one mask)
  const now = live.now;
  return (
    setting.scaling === now.scaling &&
    live.masks[setting.mask].name === now.mask &&
    setting.temperature === now.temperature &&
    setting.hiding === now.hiding &&
    setting.hidden.join() === now.hidden.join()
  );
}

function sameDrawing(a, b) {
  // whether two figures draw the same picture: the same keys, strings and booleans alike, numbers within
  // 0.1 % of each other. The server sends a panel's values to 4 significant digits (at most 0.05 % off);
  // the browser's are float32: one colour step of a 256-step scale is 0.4 % of its range.
  if (a === b) return true;
  const close = (x, y) => (Number.isNaN(x) && Number.isNaN(y)) || Math.abs(x - y) <= 1e-3 * Math.max(Math.abs(x), Math.abs(y)) + 1e-9;
  if (typeof a === "number" && typeof b === "number") return close(a, b);
  const numbersA = numbersOf(a);
  const numbersB = numbersOf(b);
  if (numbersA || numbersB) {
    if (!numbersA || !numbersB || numbersA.length !== numbersB.length) return false;
    for (let i = 0; i < numbersA.length; i++) if (!close(numbersA[i], numbersB[i])) return false;
    return true;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    // lists of anything else (typed arrays are numbers, above)
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameDrawing(a[i], b[i])) return false;
    return true;
  }
  if (!a || !b || typeof a !== "object" || typeof b !== "object") return false;
  const keys = (o) => Object.keys(o).filter((k) => o[k] !== undefined);
  const keysA = keys(a);
  return keysA.length === keys(b).length && keysA.every((k) => b[k] !== undefined && sameDrawing(a[k], b[k]));
}

const TYPED = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array };

function numbersOf(value) {
  // a list of numbers however it is written (plotly's typed array {dtype, bdata}, a typed array, rows of
  // them or of numbers), flat; null for anything else
  if (value && typeof value === "object" && typeof value.bdata === "string" && TYPED[value.dtype]) return new TYPED[value.dtype](base64Bytes(value.bdata).buffer);
  if (ArrayBuffer.isView(value)) return value;
  if (!Array.isArray(value) || !value.length) return null;
  if (value.every((v) => typeof v === "number")) return value;
  const isRow = (row) => ArrayBuffer.isView(row) || (Array.isArray(row) && row.every((v) => typeof v === "number"));
  return value.every(isRow) ? value.flatMap((row) => Array.from(row)) : null;
}
