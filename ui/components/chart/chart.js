// A plotly chart that is updated in place. Streamlit's own chart element is remounted whenever its
// figure changes (its identity includes the figure), so every toggle drew every changed chart from
// scratch, each one twice (once more when its width was known): about 1.2 s of the browser's main
// thread per toggle for the Attention page at 16 tokens. Here the chart keeps its div and calls
// Plotly.react, which redraws only what changed. A chart outside the window waits. Its first drawing
// comes once the charts in the window have been painted (one chart per task, so input is handled
// between them); a later figure for it (a toggle) is drawn when it comes near the window or before
// printing, and until then the old picture is shown faded. A toggle redraws what the user is looking at.
//
// Under the plot, a row of export buttons (PNG, SVG, HTML, CSV). PNG and SVG are rendered here by
// plotly.js from the figure as the server sent it (not the page's look added below), at the size and
// scale the server names; HTML and CSV are made by the server when asked and arrive with the next data.
//
// Data (ui/chart.py, bytes): a line of JSON, then the figure as plotly JSON, then maybe a file. The line
// holds version (changes with the figure), config (plotly's config: the camera button's file name and
// scale), width ("stretch" or "content"), height (pixels), clickable, plotly (where plotly.js is:
// loadPlotly), export ({name, width, height, scale} of the PNG and SVG; null: no buttons)
// and maybe file ({name, mime, nonce, length}: the last `length` bytes are a file to save, once per
// nonce). A heatmap's hover text per cell may come as av_text {rows, cols}: cell [i][j] is rows[i] +
// cols[j] (n + m strings sent where there were n × m); its z as av_z {shape, bdata}: 4 significant digits
// in 3 bytes a value where float32 takes 4 (unpack). Triggers sent back: click {points:
// [{curve_number, point_index, x, y, customdata}]}, the shape of Streamlit's own chart selection, so the
// same Python code reads both; export {format: "html" or "csv", seq}.
//
// A stages chart of the first layer may come with `live` (live.js, appended to this file by ui/chart.py):
// then a click or key that changes the mask, scaling, temperature or hidden keys redraws it at once, computed in
// the browser from the model's raw scores, until the server's figure for the new setting replaces it.

export default function chart(component) {
  const { data, parentElement } = component;
  const about = read(data);
  if (about && about.preload) {
    // the hidden element at the top of every page (ui/chart.py, load_plotly): plotly.js is fetched
    // and evaluated while the server still builds the page, before the first chart's data arrives
    loadPlotly(about.plotly).catch(() => {});
    return;
  }
  let view = parentElement.__chart;
  if (!view) {
    view = createView(parentElement);
    parentElement.__chart = view;
  }
  view.send = component.setTriggerValue;
  view.update(about);
  // no cleanup function: Streamlit calls it at once when newer data arrives while this call loads
}

const decoder = new TextDecoder();

function read(data) {
  // one line of JSON about the chart, then the figure's JSON (parsed when drawn)
  if (!data) return null;
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data.buffer || data);
  const end = bytes.indexOf(10);
  if (end < 0) return null;
  const about = JSON.parse(decoder.decode(bytes.subarray(0, end)));
  const fileLength = about.file ? about.file.length : 0;
  about.spec = bytes.subarray(end + 1, bytes.length - fileLength);
  if (about.file) about.file.bytes = bytes.subarray(bytes.length - fileLength);
  return about;
}

const saved = new Set(); // nonces of the server's files saved by this page: each is saved once

function saveServerFile(file) {
  if (!file || saved.has(file.nonce)) return;
  saved.add(file.nonce);
  saveFile(new Blob([file.bytes], { type: file.mime }), file.name);
}

async function saveImage(data, format) {
  // PNG or SVG of the figure as the server sent it, at the server export's size (and the PNG's scale)
  const plan = data.export;
  const Plotly = await loadPlotly(data.plotly);
  const figure = unpack(JSON.parse(decoder.decode(data.spec)));
  const added = fitTheWidth(figure, plan.width, plan.height); // a title too long for the export's width takes more lines
  const image = await Plotly.toImage(
    { data: figure.data || [], layout: figure.layout || {}, config: {} },
    { format, width: plan.width, height: Math.round(plan.height + added), scale: format === "png" ? plan.scale : 1, imageDataOnly: true },
  );
  const blob = format === "png" ? new Blob([base64Bytes(image)], { type: "image/png" }) : new Blob([image], { type: "image/svg+xml" });
  saveFile(blob, `${plan.name}.${format}`);
}

let plotlyPromise = null;
function loadPlotly(source) {
  // source (ui/chart.py, PLOTLY): {script: "app/static/plotly-….min.js"}, served by the app (ui/assets.py),
  // loaded as a classic script (it sets window.Plotly). Found from the frontend's entry script
  // (<base>/static/js/index.….js), so a base URL path or a proxy in front changes nothing.
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    const entry = document.querySelector('script[type="module"][src*="/static/js/index."]');
    if (!entry || !source || !source.script) return Promise.reject(new Error("plotly.js was not found in the page"));
    const loaded = () => {
      if (!window.Plotly) throw new Error("plotly.js did not load");
      return window.Plotly;
    };
    plotlyPromise = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL("../../" + source.script, entry.src).href;
      script.async = true;
      script.onload = resolve;
      script.onerror = () => reject(new Error("plotly.js did not load"));
      document.head.appendChild(script);
    }).then(loaded);
    plotlyPromise.catch(() => {
      plotlyPromise = null; // a later chart tries again
    });
  }
  return plotlyPromise;
}

// A chart outside the window (or in a tab not open) waits until it comes within 200 px of it (the observer
// below), and is drawn before printing. Drawing the charts below the window in the background took a
// fifth of chromium's main thread per page load (docs/performance.md).
const waiting = new Set(); // views never drawn yet, outside the window
const stale = new Set(); // views drawn before whose newest figure waits until they come near the window
const unplaced = new Set(); // views whose element is not in the page yet: tried again after the next paint
let scheduled = false;

function placeSoon(view) {
  unplaced.add(view);
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() =>
    setTimeout(() => {
      scheduled = false;
      const views = [...unplaced];
      unplaced.clear();
      for (const next of views) next.drawIfNear();
    }, 0),
  );
}

function drawAllNow() {
  for (const view of [...waiting, ...stale]) view.draw();
}

window.addEventListener("beforeprint", drawAllNow);
if (window.matchMedia) {
  const print = window.matchMedia("print");
  if (print.addEventListener) print.addEventListener("change", (e) => e.matches && drawAllNow());
}

const observer = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      const view = entry.target.__chart;
      if (!view) continue;
      view.visible = entry.isIntersecting;
      if (view.visible && (waiting.has(view) || stale.has(view))) view.draw();
    }
  },
  { rootMargin: "200px 0px" },
);

function createView(parent) {
  const box = document.createElement("div");
  box.className = "av-chart";
  const gd = document.createElement("div");
  gd.className = "av-chart-plot";
  const note = document.createElement("p");
  note.className = "av-chart-note";
  const exports = document.createElement("div");
  exports.className = "av-chart-exports"; // ui/style.py hides it in print and in presentation mode
  exports.hidden = true;
  for (const label of ["PNG", "SVG", "HTML", "CSV"]) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "av-chart-export";
    button.textContent = label;
    button.addEventListener("click", () => exportAs(label.toLowerCase(), button));
    exports.append(button);
  }
  box.append(gd, note, exports);
  parent.append(box);
  box.__chart = null;
  let exportSeq = 0;

  function describeExports(plan) {
    // a tooltip per button (the title is its description: the accessible name stays "PNG", "SVG", ...)
    const [png, svg, html, csv] = exports.children;
    png.title = `${plan.name}.png: ${plan.width} × ${plan.height} at ${plan.scale}×, drawn by your browser`;
    svg.title = `${plan.name}.svg: ${plan.width} × ${plan.height}, drawn by your browser`;
    html.title = `${plan.name}.html: the interactive figure, works offline`;
    csv.title = `${plan.name}.csv: the numbers of the figure`;
  }

  function exportAs(format, button) {
    const data = view.wanted;
    if (!data || !data.export) return;
    if (format === "html" || format === "csv") {
      // made by the server: the file arrives with the chart's next data (saveServerFile)
      if (view.send) view.send("export", { format, seq: ++exportSeq });
      return;
    }
    if (button.getAttribute("aria-busy") === "true") return;
    button.setAttribute("aria-busy", "true");
    note.textContent = "";
    saveImage(data, format)
      .catch((error) => {
        note.textContent = `The ${format.toUpperCase()} could not be made: ${error && error.message ? error.message : error}`;
      })
      .finally(() => button.removeAttribute("aria-busy"));
  }

  function cameraButton(Plotly, options) {
    // plotly's camera button (its icon, at the modebar's end), reading the view's options when clicked: they
    // name the view (its file name changes with every toggle), and a new config would make Plotly.react
    // draw the chart from scratch. A placeholder's drawing (another head's figure) takes plotly's default name.
    const click = () => {
      const wanted = view.wanted;
      const newest = wanted && !wanted.placeholder && wanted.config ? wanted.config.toImageButtonOptions : {};
      return Plotly.downloadImage(gd, Object.assign({ format: "png" }, newest)).catch((error) => {
        note.textContent = `The image could not be made: ${error && error.message ? error.message : error}`;
      });
    };
    return { modeBarButtonsToRemove: ["toImage"], modeBarButtonsToAdd: [{ name: "Download plot", icon: Plotly.Icons.camera, click }] };
  }

  const view = {
    gd,
    visible: false,
    shown: null, // version drawn
    wanted: null, // newest data
    drawing: false,
    config: null, // plotly's config of the drawing, but the camera button's options (JSON)
    seen: false, // was in the page once
    tries: 0,
    send: null,
    predicted: null, // the setting drawn by the browser ahead of the server (live.js), or null
    ahead: null, // what that drawing was made from: {shown, spec, live, setting} (drewAhead)
    hidden: false, // a head not shown: a placeholder, or a chart whose head's pill was just clicked off
    update(data) {
      if (!data) return;
      view.wanted = data;
      if (box.isConnected) {
        view.seen = true;
        observer.observe(box); // again, if it was let go while out of the page (liveNow)
      }
      saveServerFile(data.file);
      exports.hidden = !data.export;
      if (data.export) describeExports(data.export);
      if (data.live) liveViews.add(view);
      else liveViews.delete(view);
      // the server's figure replaces the browser's. Only a click or a key makes the browser draw ahead: a
      // figure the server changed itself (the "T = 1" button, a lesson) may come before the controls that
      // show its setting, so they are not read here
      const ahead = view.predicted;
      view.predicted = null;
      markDrawnAhead();
      view.hide(Boolean(data.placeholder));
      if (data.placeholder) {
        waiting.delete(view);
        stale.delete(view);
        return;
      }
      gd.style.minHeight = `${data.height}px`; // the page keeps its layout while the chart waits
      if (view.shown === shownAs(data, null) || (ahead && view.drewAhead(data))) {
        waiting.delete(view);
        stale.delete(view);
        box.classList.remove("av-chart-stale");
        return;
      }
      if (view.shown === null) view.drawIfNear();
      else if (view.visible) view.draw();
      else {
        // a new figure for a chart outside the window: drawn when it comes near (or for printing), and
        // shown faded until then, so that an old picture is never taken for the new one
        stale.add(view);
        box.classList.add("av-chart-stale");
      }
    },
    draw() {
      waiting.delete(view);
      stale.delete(view);
      if (!box.isConnected) {
        if (view.seen || ++view.tries > 50) {
          observer.unobserve(box); // removed from the page: nothing to draw
          liveViews.delete(view);
        }
        else placeSoon(view); // not in the page yet: again soon
        return;
      }
      view.seen = true;
      const wanted = view.wanted;
      if (!wanted || view.hidden || view.shown === shownAs(wanted, view.predicted)) return;
      // a placeholder is drawn from a shown head's figure (its template), with its own head's raw scores
      const template = wanted.placeholder ? templateFor(wanted.live) : view;
      if (!template || (wanted.placeholder && !view.predicted)) return;
      const data = template.wanted;
      const live = wanted.placeholder ? withHead(data.live, wanted.live) : data.live;
      if (view.drawing) {
        view.again = true; // drawn again with the newest data when this drawing ends
        return;
      }
      view.drawing = true;
      loadPlotly(data.plotly)
        .then((Plotly) => {
          const predicted = view.predicted;
          if (view.hidden) return; // its head's pill was clicked off meanwhile
          // the server's figure is parsed once per version; the browser's own (live.js) is a copy of it that
          // shares every array it does not change, so that Plotly.react, which compares arrays by identity,
          // recomputes only the panels whose values changed
          const sent = predicted ? predictStages(copyForLive(template.figure()), live, predicted) : view.figure();
          const figure = narrowerToFit(sent, gd.clientWidth);
          const layout = figure.layout || {};
          const room = figure === sent ? Math.max(gd.clientWidth, (layout.meta && layout.meta.min_width) || 0) : layout.width;
          lookOfThePage(figure, gd, room, data.height, box.clientWidth);
          view.fitted = layout.meta && layout.meta.narrower ? figure : null; // drawn again for another width (listen)
          if (view.fitted) gd.style.minHeight = `${figure === sent ? data.height : layout.height}px`;
          // a figure that needs its width to be read (layout.meta.min_width: the stages' panels) keeps it on a
          // narrow screen, and its box scrolls sideways (chart.css)
          gd.style.minWidth = layout.meta && layout.meta.min_width ? `${layout.meta.min_width}px` : "";
          box.classList.toggle("av-chart-scrolls", Boolean(layout.meta && layout.meta.min_width > box.clientWidth)); // says so (chart.css)
          if (data.width !== "content") {
            delete layout.width;
            layout.autosize = true;
          }
          const { toImageButtonOptions, ...rest } = Object.assign({ displaylogo: false, responsive: false }, data.config || {});
          if (toImageButtonOptions) Object.assign(rest, cameraButton(Plotly, toImageButtonOptions));
          const first = view.shown === null;
          const started = performance.now();
          // A config that differs in any way makes Plotly.react draw the chart from scratch and then react
          // again (plotly.js 4.1: about twice the time of the update itself). The camera button's options
          // (its file name names the view) change with every toggle: our camera button reads them when it is
          // clicked (cameraButton), and react gets the config only when the rest of it changed.
          const stable = JSON.stringify(rest);
          const done = first || stable !== view.config ? Plotly.react(gd, figure.data || [], layout, rest) : Plotly.react(gd, figure.data || [], layout);
          view.config = stable;
          // how long each drawing took, when the browser benchmark asks (bench/browser.py sets the list)
          if (window.__avChartTimes) window.__avChartTimes.push([started, performance.now() - started, view.visible]);
          view.shown = shownAs(wanted, predicted);
          // what was drawn ahead, to compare with the server's figure when it comes (drewAhead)
          view.ahead = predicted ? { shown: view.shown, spec: data.spec, live, setting: predicted } : null;
          markDrawnAhead();
          if (view.wanted === wanted) box.classList.remove("av-chart-stale");
          note.textContent = "";
          if (first) listen(Plotly);
          return done;
        })
        .catch((error) => {
          note.textContent = `This chart could not be drawn: ${error && error.message ? error.message : error}`;
        })
        .finally(() => {
          view.drawing = false;
          if (view.again) {
            view.again = false;
            view.draw();
          }
        });
    },
  };

  view.drawIfNear = () => {
    // a chart never drawn: at once if it is near the window (or not in the page yet: draw tries again
    // after the next paint), else when it comes near
    if (view.visible || !box.isConnected || isNearWindow(box)) view.draw();
    else waiting.add(view);
  };

  view.drewAhead = (data) => {
    // whether the drawing ahead already shows the server's new figure, to the digits it was sent with. Then
    // the drawing stays: the server's figure would redraw the chart (at a slow laptop's speed, as long as
    // the drawing ahead took) for changes of a colour below one step of its scale. The drawing ahead is
    // made again from the figure it started from as the server sent it (Plotly.react writes into what it
    // draws), and compared with the new figure before anything draws it. A head's pill drew its head from
    // another head's figure (a placeholder's drawing): the server's own figure of the head is compared too.
    const ahead = view.ahead;
    if (!ahead || view.shown !== ahead.shown || data.placeholder || !data.live || !sameSetting(data.live, ahead.setting)) return false;
    const again = predictStages(copyForLive(unpack(JSON.parse(decoder.decode(ahead.spec)))), ahead.live, ahead.setting);
    if (!sameDrawing(again, view.figure())) return false;
    view.shown = shownAs(data, null);
    view.ahead = null;
    return true;
  };

  view.figure = () => {
    // the server's figure, parsed once per version
    const data = view.wanted;
    if (!view.parsed || view.parsed.version !== data.version) view.parsed = { version: data.version, figure: unpack(JSON.parse(decoder.decode(data.spec))) };
    return view.parsed.figure;
  };

  view.hide = (hidden) => {
    // a head not shown takes no room (chart.css hides its box too). Its drawing is kept: when its pill brings
    // the same figure back, nothing is drawn again (at 512 tokens a head's first drawing took 200-240 ms of
    // the main thread, after 150-300 ms of React mounting its element anew)
    if (hidden === view.hidden) return;
    view.hidden = hidden;
    box.classList.toggle("av-chart-hidden", hidden);
    // hidden, or shown again as it was drawn: reported as a drawing to the browser benchmark (bench/browser.py)
    if (view.shown !== null && window.__avChartTimes) window.__avChartTimes.push([performance.now(), 0, view.visible]);
  };

  view.follow = () => {
    // after a click or a key: if the heads, mask, scaling, temperature or hidden keys now show another
    // setting than the server's figure, draw that setting's stages at once (live.js), show the stages of a
    // head whose pill was clicked on, hide those of a head clicked off; the server's figure follows
    const data = view.wanted;
    if (!data || !data.live) return;
    const heads = liveHeads(data.live);
    if (heads ? !heads.has(data.live.head) : data.placeholder) {
      view.predicted = null;
      markDrawnAhead();
      view.hide(true);
      return;
    }
    const template = data.placeholder ? templateFor(data.live) : view;
    if (!template) return;
    const live = data.placeholder ? withHead(template.wanted.live, data.live) : data.live;
    const shown = liveSetting(live);
    const setting = shown && (data.placeholder || !sameSetting(live, shown)) ? shown : null;
    if (data.placeholder && !setting) return; // the controls cannot be read: the server's figure will come
    const showing = view.hidden;
    if (showing) {
      view.hide(false);
      gd.style.minHeight = `${template.wanted.height}px`;
    } else if (setting && !view.visible) return; // a chart out of sight waits for the server's figure
    if (!showing && shownAs(data, setting) === shownAs(data, view.predicted)) return;
    view.predicted = setting;
    view.draw();
  };

  let resizing = null;

  function listen(Plotly) {
    // after the first drawing
    gd.on("plotly_click", (event) => {
      // not while the browser's own figure is shown: the server reads a click against its figure
      if (!view.wanted || !view.wanted.clickable || !view.send || view.predicted) return;
      const points = (event.points || []).map((p) => ({
        curve_number: p.curveNumber,
        point_index: p.pointIndex !== undefined ? p.pointIndex : p.pointNumber,
        x: p.x,
        y: p.y,
        customdata: ArrayBuffer.isView(p.customdata) ? Array.from(p.customdata) : p.customdata,
      }));
      view.send("click", { points });
    });
    if (resizing) return;
    let width = box.clientWidth;
    resizing = new ResizeObserver(() => {
      if (view.hidden) return; // no width while hidden: the drawing keeps its own until the chart is shown
      if (box.clientWidth !== width && view.shown !== null && view.wanted && view.wanted.width !== "content") {
        width = box.clientWidth;
        Plotly.Plots.resize(gd);
      }
      // a figure with narrower variants is drawn again when another of them fits the box's new width
      if (view.fitted && view.parsed && narrowerToFit(view.parsed.figure, box.clientWidth) !== view.fitted) {
        view.shown = "another width"; // no version: draw() draws it again
        view.draw();
      }
    });
    resizing.observe(box);
  }

  box.__chart = view;
  observer.observe(box);
  return view;
}

function copyForLive(figure) {
  // what predictStages changes, copied; the rest (labels, hover text, raw scores) shared
  const layout = figure.layout;
  const bar = (axis) => axis && { ...axis, colorbar: axis.colorbar && { ...axis.colorbar, title: axis.colorbar.title && { ...axis.colorbar.title } } };
  return {
    data: figure.data.map((trace) => ({ ...trace })),
    layout: {
      ...layout,
      annotations: (layout.annotations || []).map((annotation) => ({ ...annotation })),
      title: layout.title && { ...layout.title },
      coloraxis: bar(layout.coloraxis),
      coloraxis2: bar(layout.coloraxis2),
    },
  };
}

function shownAs(data, predicted) {
  // what a view draws for `data`: the server's figure (its version) or the browser's for another setting
  // (a placeholder's: for its head)
  if (!predicted) return data.version;
  const { scaling, mask, temperature, hidden, hiding } = predicted;
  const base = data.placeholder ? `head ${data.live.head}` : data.version;
  return `${base} ${scaling} ${mask} ${temperature} ${hiding ? "hiding" : "-"} ${hidden.join(",")}`;
}

const liveViews = new Set(); // views of stages the browser can redraw for the controls (live.js)

function liveNow() {
  // the live views still in the page: one whose element Streamlit removed (another page, another layer, a
  // placeholder no longer sent) is let go
  for (const view of liveViews) {
    if (view.seen && !view.gd.isConnected) {
      liveViews.delete(view);
      observer.unobserve(view.gd.parentElement);
    }
  }
  return liveViews;
}

function markDrawnAhead() {
  // the page says whether a chart shows stages the browser drew ahead of the server for another setting
  // (chart.css fades the what-if badge, which names the server's until its rerun), and whether for another
  // scaling or temperature (it fades the formulas above the stages too, which state them)
  const ahead = [...liveNow()].map((view) => view.predicted && !view.wanted.placeholder && view.shown === shownAs(view.wanted, view.predicted) && view);
  const formulas = ahead.some((view) => view && (view.predicted.scaling !== view.wanted.live.now.scaling || view.predicted.temperature !== view.wanted.live.now.temperature));
  document.documentElement.classList.toggle("av-drawn-ahead", ahead.some(Boolean));
  document.documentElement.classList.toggle("av-formulas-ahead", formulas);
}

function templateFor(own) {
  // a chart with the server's figure of another head of the same layer and sentence, for a placeholder
  // (shown or not: a head clicked off keeps its figure until the server's answer); null when none is
  for (const other of liveNow()) {
    const data = other.wanted;
    const same = data && data.live && ["n", "layer", "sentence", "model"].every((name) => data.live[name] === own[name]);
    if (same && !data.placeholder && data.spec && other.gd.isConnected) return other;
  }
  return null;
}
let following = false;

function controlsMayHaveChanged(event) {
  // after a click or key anywhere, once the page has rendered it: each live view reads the controls.
  // Two tasks later, not one: Streamlit sends a widget's new value from a task (setTimeout 0) that the
  // same click queues after this one, and the server's rerun should not wait for the browser's drawing
  for (const view of liveViews) {
    const controls = view.wanted && view.wanted.live && view.wanted.live.controls;
    if (controls && controls.hidden) {
      noteHideTouched(event, controls); // (a head's placeholder knows only where its pill is)
      break;
    }
  }
  if (following || !liveViews.size) return;
  following = true;
  setTimeout(
    () =>
      setTimeout(() => {
        following = false;
        for (const view of liveNow()) view.follow();
        markDrawnAhead(); // also when a chart drawn ahead has left the page
      }, 0),
    0,
  );
}

for (const type of ["click", "keydown", "keyup", "input", "change", "pointerup"]) document.addEventListener(type, controlsMayHaveChanged, true);

function lookOfThePage(figure, element, width, height, shown) {
  // as Streamlit draws its own charts: the page's font where the figure names none, the title in bold,
  // and the title's lines fitted to the width the chart has and the part of it its box shows (fitTheWidth)
  const layout = figure.layout || {};
  const font = (layout.font = layout.font || {});
  if (!font.family) font.family = getComputedStyle(element).fontFamily;
  const title = layout.title;
  if (title && typeof title.text === "string" && title.text && !title.text.startsWith("<b>")) title.text = `<b>${title.text}</b>`;
  return fitTheWidth(figure, width, height, shown);
}

// A figure's title, margin and height as they were before fitTheWidth changed them (a figure is parsed once
// per version but may be drawn at several widths).
const asSent = new WeakMap();
const BREAK = /<br\s*\/?>/i; // a line break in plotly's text
let measurer = null;

function fitTheWidth(figure, width, height, shown) {
  // plotly draws a title on one line and cuts what does not fit (a phone's 390 px, or a long title in the
  // print theme's larger font). The title's words are broken into lines that fit `width`; a horizontal
  // legend above the plot that wraps into rows is counted too. The top margin and the height grow by the
  // lines added, so the plot keeps its size and nothing overlaps. `height`: the figure's height where its
  // layout names none. `shown`: the width its box shows, where a figure wider than a phone scrolls in it
  // (the stages): a title from the left fits that, so that it is not cut at the box's edge. Returns the
  // pixels added.
  const layout = figure.layout || {};
  if (!asSent.has(layout)) asSent.set(layout, { title: layout.title, margin: layout.margin, height: layout.height, annotations: layout.annotations, legend: layout.legend });
  const sent = asSent.get(layout);
  Object.assign(layout, { title: sent.title, margin: sent.margin, height: sent.height, annotations: sent.annotations, legend: sent.legend });
  const onTop = width && width < NARROW ? legendOnTop(layout, figure.data || []) : null;
  if (onTop) {
    layout.legend = onTop;
    // plotly's own right margin (80 px) was kept for nothing: the legend beside the plot pushed its own
    if (pick(layout, ["margin", "r"]) === undefined) layout.margin = Object.assign({}, layout.margin, { r: 20 });
  }
  const sentText = sent.title && sent.title.text;
  if (!width || typeof sentText !== "string") return 0;
  const family = (layout.font && layout.font.family) || "sans-serif";
  const fontSize = pick(layout, ["font", "size"]) || 12;
  const titleSize = pick(layout, ["title", "font", "size"]) || fontSize * 1.4;
  const x = pick(layout, ["title", "x"]) ?? 0.5;
  let room = width * (1 - (x < 0.5 ? x : 0)) - (x < 0.5 ? 12 : 24);
  if (shown && shown < width && x < 0.5) room = Math.min(room, shown - x * width - 12);
  const bare = sentText.startsWith("<b>") ? sentText.slice(3, -4) : sentText;
  const lines = [];
  for (const line of bare.split(BREAK)) {
    const small = /^\s*<sup>/i.test(line);
    lines.push(...wrapWords(line, room, `${sentText.startsWith("<b>") && !small ? "bold " : ""}${Math.round(small ? titleSize * 0.7 : titleSize)}px ${family}`));
  }
  const before = bare.split(BREAK).length; // the title's lines as sent
  const legendRows = legendRowsAbove(figure, width, fontSize, family);
  const panelTitles = panelTitlesFitted(layout, width, family);
  if (!onTop && lines.length === before && legendRows.rows <= 1 && !panelTitles.changed) return 0;
  // a legend moved below the axes: the figure grows by its rows, so that the plot keeps its height
  const under = onTop && onTop.yref === "container" ? legendRowsOf(figure, width, fontSize, family) : { rows: 0, height: 0 };
  const below = under.rows ? under.rows * under.height + 16 : 0;
  // the title's lines from 10 px below the top (plotly places a title's first line at its y, whatever its
  // anchor, and the others below it), then the legend's rows and the panels' titles, standing on the plot's top
  const text = lines.join("<br>");
  const top = pick(layout, ["margin", "t"]) ?? 100;
  const legendHeight = legendRows.rows ? legendRows.rows * legendRows.height + 10 : 0;
  const needed = 10 + (lines.length * 1.3 + 0.3) * titleSize + legendHeight + panelTitles.height + 12;
  const added = Math.max(0, Math.ceil(needed - top));
  if (panelTitles.changed) layout.annotations = panelTitles.annotations;
  const total = (sent.height || height) + added + below;
  layout.title = Object.assign({}, layout.title, {
    text: sentText.startsWith("<b>") ? `<b>${text}</b>` : text,
    yref: "container",
    y: 1 - (10 + titleSize) / total,
  });
  layout.margin = Object.assign({}, layout.margin, { t: top + added });
  if (sent.height || below) layout.height = (sent.height || height) + added + below;
  return added + below;
}

function isPanelTitle(a) {
  // make_subplots' title of a panel: an annotation centred above it, in the figure's paper coordinates
  return a && a.xref === "paper" && a.yref === "paper" && a.xanchor === "center" && a.yanchor === "bottom" && typeof a.text === "string";
}

function panelTitlesFitted(layout, width, family) {
  // the titles of the panels (make_subplots' annotations: centred above their panel), each no wider than
  // the space between its neighbours in its row: broken into lines, or in a smaller font (down to 9 px)
  // where one word is wider. The top row's height above the panels (the tallest) is returned, for the
  // margin; a lower row's extra lines rise into the gap under the panels above. Whether any changed.
  const notes = layout.annotations;
  const none = { height: 0, changed: false, annotations: notes };
  if (!Array.isArray(notes)) return none;
  const rowOf = (a) => Math.round(a.y * 1000); // titles of one row stand at the same height
  const rows = new Map();
  for (const a of notes.filter(isPanelTitle)) rows.set(rowOf(a), [...(rows.get(rowOf(a)) || []), a]);
  if (![...rows.values()].some((row) => row.length >= 2)) return none;
  const plot = plotWidth(layout, width);
  let height = 0;
  let changed = false;
  const annotations = notes.map((a) => {
    if (!isPanelTitle(a)) return a;
    const row = rows.get(rowOf(a));
    if (row.length < 2) return a;
    const top = a.y >= 0.99;
    const gap = Math.min(...row.filter((b) => b !== a).map((b) => Math.abs(b.x - a.x))) * plot - 8;
    let size = (a.font && a.font.size) || 16;
    const sentLines = a.text.split(BREAK);
    const lines = sentLines.flatMap((line) => wrapWords(line, gap, `${size}px ${family}`));
    const widest = Math.max(...lines.map((line) => textWidth(line, `${size}px ${family}`)));
    if (widest > gap) size = Math.max(9, Math.floor((size * gap) / widest));
    if (top) height = Math.max(height, lines.length * size * 1.3);
    if (lines.length === sentLines.length && size === ((a.font && a.font.size) || 16)) return a;
    changed = true;
    return Object.assign({}, a, { text: lines.join("<br>"), font: Object.assign({}, a.font, { size }) });
  });
  return { height, changed, annotations };
}

function plotWidth(layout, width) {
  // the plot area's width in a chart `width` wide (plotly's margins default to 80 px left and right)
  const margin = Object.assign({ l: 80, r: 80 }, pick(layout, ["margin"]) || {});
  return width - margin.l - margin.r;
}

function pick(layout, path) {
  // a layout's value, or its template's
  for (let node of [layout, layout.template && layout.template.layout]) {
    for (const key of path) node = node && node[key];
    if (node !== undefined && node !== null) return node;
  }
  return undefined;
}

function textWidth(text, font) {
  measurer = measurer || document.createElement("canvas").getContext("2d");
  measurer.font = font;
  const plain = text.replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");
  return measurer.measureText(plain).width;
}

function wrapWords(line, room, font) {
  // the line as lines no wider than `room`, broken at spaces outside tags, and a word wider than the room
  // after its "·" (a score part's name, "position·position"); a word wider still stands alone
  if (textWidth(line, font) <= room) return [line];
  const words = [];
  for (const piece of line.split(" ")) {
    const last = words.length - 1;
    if (last >= 0 && (words[last].match(/</g) || []).length > (words[last].match(/>/g) || []).length) words[last] += ` ${piece}`;
    else words.push(piece);
  }
  const lines = packed(words, " ", room, font);
  return lines.flatMap((l) => (!l.includes(" ") && !l.includes("<") && l.includes("·") && textWidth(l, font) > room ? packed(l.split(/(?<=·)/), "", room, font) : [l]));
}

function packed(words, joiner, room, font) {
  // `words` joined by `joiner` into as few lines no wider than `room` as their order allows
  const lines = [];
  let current = "";
  for (const word of words) {
    const tried = current ? `${current}${joiner}${word}` : word;
    if (current && textWidth(tried, font) > room) {
      lines.push(current);
      current = word;
    } else current = tried;
  }
  if (current) lines.push(current);
  return lines;
}

// A figure of a fixed width whose content is placed in pixels (the Embeddings page's plane: its label boxes)
// can be neither stretched nor shrunk to fit its box. It may carry narrower variants of its layout,
// layout.meta.narrower: layout patches, each with its own width (viz/embeddings.py places the labels again for
// each). Where the chart's box is narrower than the figure, the widest variant that fits it is drawn (the
// narrowest where none fits), so that a phone's chart does not scroll sideways. The exports (saveImage) keep
// the figure as sent.
const narrowed = new WeakMap(); // a figure's layout → its variants as drawn, by width (each made once)

function narrowerToFit(figure, width) {
  const layout = figure.layout || {};
  const variants = [...((layout.meta && layout.meta.narrower) || [])].sort((a, b) => b.width - a.width);
  if (!variants.length || !layout.width || !width || layout.width <= width) return figure;
  const patch = variants.find((variant) => variant.width <= width) || variants[variants.length - 1];
  if (!narrowed.has(layout)) narrowed.set(layout, new Map());
  const made = narrowed.get(layout);
  // laid over the layout as sent: a drawing at another width changed its title, margin and height (fitTheWidth)
  if (!made.has(patch.width)) made.set(patch.width, { data: figure.data, layout: patched(Object.assign({}, layout, asSent.get(layout)), patch) });
  return made.get(patch.width);
}

function patched(base, patch) {
  // `base` with `patch` laid over it, neither changed: objects key by key, lists item by item (an annotation's
  // patch is the item at its index), other values replaced
  const plain = (value) => value && typeof value === "object" && !Array.isArray(value) && !ArrayBuffer.isView(value);
  if (Array.isArray(base) && Array.isArray(patch)) return base.map((item, i) => (i < patch.length ? patched(item, patch[i]) : item));
  if (!plain(base) || !plain(patch)) return patch;
  const out = { ...base };
  for (const key of Object.keys(patch)) out[key] = patched(base[key], patch[key]);
  return out;
}

const NARROW = 600; // px: a chart narrower than this is a phone's, where a legend beside the plot took a third of it

function legendOnTop(layout, data) {
  // a legend beside the plot (plotly's default place, or x ≥ 1) as a horizontal legend above it, in rows
  // (plotly pushes the plot down for them); below the figure's axes where the plot has panels with titles
  // above them, which it would cover (plotly pushes the bottom margin). Null where the legend is elsewhere
  // or not shown
  const legend = layout.legend || {};
  if (layout.showlegend === false || legend.orientation === "h" || (legend.x ?? 1.02) < 1) return null;
  const entries = data.filter((trace) => trace.showlegend === true || (trace.showlegend !== false && trace.type !== "heatmap" && trace.name));
  if (entries.length < 2 && layout.showlegend !== true) return null;
  if ((layout.annotations || []).some(isPanelTitle)) return Object.assign({}, legend, { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom" });
  return Object.assign({}, legend, { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom" });
}

function legendRowsAbove(figure, width, fontSize, family) {
  // a horizontal legend above the plot (y ≥ 1) wraps into rows when its entries are wider than the plot:
  // its rows and the height of one (no rows: no legend there)
  const legend = (figure.layout || {}).legend;
  if (!legend || legend.yref === "container" || !((legend.y ?? 1) >= 1)) return { rows: 0, height: 0 };
  return legendRowsOf(figure, width, fontSize, family);
}

function legendRowsOf(figure, width, fontSize, family) {
  // the rows of a horizontal legend, wrapped where its entries are wider than the plot, and the height of one
  const layout = figure.layout || {};
  const legend = layout.legend;
  const none = { rows: 0, height: 0 };
  if (!legend || legend.orientation !== "h" || layout.showlegend === false) return none;
  const groups = new Set();
  const entries = [];
  for (const trace of figure.data || []) {
    if (trace.showlegend === false || !trace.name || (trace.legendgroup && groups.has(trace.legendgroup))) continue;
    if (trace.legendgroup) groups.add(trace.legendgroup);
    entries.push(trace.name);
  }
  if (entries.length < 2 && layout.showlegend !== true) return none;
  const size = (legend.font && legend.font.size) || fontSize;
  const room = plotWidth(layout, width) - 40; // plotly wraps a little before the plot's width
  let rows = 1;
  let used = 0;
  for (const name of entries) {
    const entry = textWidth(name, `${size}px ${family}`) + 45; // the symbol, its gap and the space after
    if (used && used + entry > room) {
      rows += 1;
      used = 0;
    }
    used += entry;
  }
  return { rows, height: size * 1.6 };
}

function isNearWindow(element) {
  // within 200 px of the window, as the observer's rootMargin; an element not laid out (in a part of the
  // page that is not shown yet) is not
  const rect = element.getBoundingClientRect();
  if (!rect.width && !rect.height) return false;
  return rect.bottom >= -200 && rect.top <= window.innerHeight + 200;
}
