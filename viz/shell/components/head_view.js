// BertViz-style head view, drawn on a canvas in the browser: hover a token to isolate its lines (no server
// round trip), toggle heads, move the threshold; click a token to put it in focus for every page.
// Only the rows in view are drawn, so 512 tokens and 12 heads stay smooth.
export default function (component) {
  const { setStateValue, parentElement } = component;
  const data = component.data[0]; // sent as [data] (see _mount in __init__.py)
  parentElement.querySelector(".al-hv")?.remove(); // our previous drawing (the injected <style> stays)
  const n = data.tokens.length;
  // cross-attention: the keys are another text's tokens (the source), m of them; they take no focus
  const keys = data.keyTokens || data.tokens, m = keys.length, cross = Boolean(data.keyTokens);
  // a learned sink (gpt-oss): one more target below the keys, faded, that belongs to no token (key index n)
  const rows = data.sinkLabel ? n + 1 : Math.max(n, m);
  const rowH = data.rowHeight;
  const font = `${data.fontSize}px "DejaVu Sans", Arial, sans-serif`;
  const colours = { text: data.dark ? "#f8f9fa" : "#111111", muted: data.dark ? "#adb5bd" : "#6c757d",
                    bg: data.dark ? "#111418" : "#ffffff", focus: "#3b5bdb", key: "#e8590c" };
  // every line at least data.floor heavy arrives packed (viz/figures/headview.py sparse_lines): per query its
  // line count, then each line's key and weight as 16-bit integers, base64; decoded once into typed arrays
  const unpack = (b64) => {
    const text = atob(b64), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return new Uint16Array(bytes.buffer);
  };
  const floor = data.floor ?? 0.01;
  const STEPS_PER_UNIT = 60000; // viz/figures/headview.py WEIGHT_STEPS
  data.heads.forEach((head) => {
    if (head.q) return; // already decoded (a redraw with the same data)
    const counts = unpack(head.rows), k = unpack(head.k), steps = unpack(head.w);
    const q = new Uint16Array(k.length), start = new Uint32Array(counts.length + 1);
    for (let i = 0; i < counts.length; i++) { start[i + 1] = start[i] + counts[i]; q.fill(i, start[i], start[i + 1]); }
    const w = new Float32Array(steps.length);
    for (let e = 0; e < steps.length; e++) w[e] = steps[e] / STEPS_PER_UNIT;
    Object.assign(head, { q, k, w, steps, start });
  });
  const visible = data.heads.map(() => true);
  let threshold = Math.max(Math.round(data.threshold * 100) / 100, floor); // the slider's 0.01 steps
  // compared on the integers: a multiple of 0.01 is a whole number of steps, so the count is exact
  const atLeast = () => Math.round(threshold * STEPS_PER_UNIT);
  let hovered = null; // {side: "query" | "key", index}

  const root = document.createElement("div");
  root.className = "al-hv";
  const bar = document.createElement("div");
  bar.className = "al-hv-bar";
  data.heads.forEach((head, h) => {
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "al-hv-head on";
    chip.style.setProperty("--c", head.colour);
    chip.style.setProperty("--t", head.text || "#000");
    chip.setAttribute("aria-pressed", "true");
    chip.textContent = head.label;
    chip.onclick = () => {
      visible[h] = !visible[h];
      chip.classList.toggle("on", visible[h]);
      chip.setAttribute("aria-pressed", String(visible[h]));
      draw();
    };
    bar.appendChild(chip);
  });
  const label = document.createElement("label");
  label.className = "al-hv-threshold";
  label.textContent = "hide lines lighter than ";
  const slider = document.createElement("input");
  // the lowest setting is the lightest line sent: no line the slider promises is missing
  slider.type = "range"; slider.min = String(floor); slider.max = "0.5"; slider.step = "0.01";
  slider.value = String(threshold);
  const value = document.createElement("span");
  value.className = "al-hv-count";
  slider.oninput = () => { threshold = parseFloat(slider.value); draw(); };
  label.append(slider, value);
  bar.appendChild(label);
  root.appendChild(bar);

  const scroller = document.createElement("div");
  scroller.className = "al-hv-scroll";
  const height = Math.min(rows * rowH + 8, data.maxHeight);
  scroller.style.height = `${height}px`;
  const spacer = document.createElement("div");
  spacer.style.height = `${Math.max(0, rows * rowH + 8 - height)}px`; // the sticky canvas takes the first screen
  const canvas = document.createElement("canvas");
  canvas.className = "al-hv-canvas";
  // one keyboard stop: Tab / Shift+Tab and the arrow keys move through the tokens (queries, then keys), isolating
  // their lines as hovering does; Enter puts the token in focus as a click does; Tab past the last token leaves
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute("aria-label", "Head view tokens: Tab or the arrow keys move through them, Enter puts one in focus");
  const said = document.createElement("div");
  said.className = "al-hv-said";
  said.setAttribute("aria-live", "polite");
  scroller.append(canvas, spacer);
  root.append(scroller, said);
  parentElement.appendChild(root);

  const ctx = canvas.getContext("2d");
  ctx.font = font;
  ctx.font = "italic " + font; // the sink's label is set in italics: measured so, it is not cut off
  const sinkW = data.sinkLabel ? ctx.measureText(data.sinkLabel).width : 0;
  ctx.font = font;
  const widest = Math.max(...data.tokens.map((t) => ctx.measureText(t).width), ...keys.map((t) => ctx.measureText(t).width));
  const labelW = Math.min(220, Math.max(widest, sinkW, 20)) + 10;
  let width = 0;
  function layout() {
    width = scroller.clientWidth || 600;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = height * ratio;
    canvas.style.width = `${width}px`; canvas.style.height = `${height}px`;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }
  const xLeft = () => labelW + 6, xRight = () => width - labelW - 6;
  const rowY = (i) => i * rowH + rowH / 2 + 4 - scroller.scrollTop;

  function active() {
    if (hovered) return hovered;
    if (data.query >= 0) return { side: "query", index: data.query, fromFocus: true };
    return null;
  }

  function draw() {
    const t0 = performance.now();
    ctx.clearRect(0, 0, width, height);
    ctx.fillStyle = colours.bg; ctx.fillRect(0, 0, width, height);
    const top = Math.floor(scroller.scrollTop / rowH) - 1, bottom = top + Math.ceil(height / rowH) + 2;
    const act = active();
    let strong = 0, faint = 0, sinkLines = 0, total = 0;
    let maxW = 1e-9;
    data.heads.forEach((head, h) => { if (visible[h]) head.w.forEach((w) => { if (w > maxW) maxW = w; }); });
    // one stroke per line (overlapping lines darken, as in BertViz); its opacity and its width (half to full)
    // grow with its weight: the many light lines cost half the pixels of the heavy ones
    const xl = xLeft(), xr = xRight(), least = atLeast();
    let dashed = false;
    data.heads.forEach((head, h) => {
      if (!visible[h]) return;
      ctx.strokeStyle = head.colour;
      for (let e = 0; e < head.w.length; e++) {
        if (head.steps[e] < least) continue;
        total++;
        const q = head.q[e], k = head.k[e];
        if ((q < top || q > bottom) && (k < top || k > bottom)) continue; // off screen at both ends
        const share = head.w[e] / maxW;
        const touches = act && ((act.side === "query" && q === act.index) || (act.side === "key" && k === act.index));
        const toSink = !cross && k === n;
        if (act && !touches) faint++; else strong++;
        if (toSink) sinkLines++;
        ctx.globalAlpha = (act && !touches ? 0.04 : 0.15 + 0.85 * share) * (toSink ? 0.6 : 1); // the sink's: faded
        ctx.lineWidth = data.lineWidth * (0.5 + 0.5 * share);
        if (toSink !== dashed) { ctx.setLineDash(toSink ? [5, 4] : []); dashed = toSink; } // and dashed
        ctx.beginPath(); ctx.moveTo(xl, rowY(q)); ctx.lineTo(xr, rowY(k)); ctx.stroke();
      }
    });
    value.textContent = `${threshold.toFixed(2)} · ${total.toLocaleString("en")} lines`;
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    ctx.font = font; ctx.textBaseline = "middle";
    if (data.sinkLabel && n >= top && n < bottom) {
      ctx.fillStyle = colours.muted; ctx.textAlign = "left"; ctx.font = "italic " + font;
      ctx.fillText(data.sinkLabel, width - labelW, rowY(n));
    }
    for (let i = Math.max(0, top); i < Math.min(Math.max(n, m), bottom); i++) {
      for (const side of ["query", "key"]) {
        if (i >= (side === "query" ? n : m)) continue;
        const isAct = act && act.side === side && act.index === i;
        const isFocus = (side === "query" && i === data.query) || (side === "key" && !cross && i === data.key);
        ctx.fillStyle = isFocus ? (side === "query" ? colours.focus : colours.key) : isAct ? colours.focus : colours.text;
        ctx.textAlign = side === "query" ? "right" : "left";
        const x = side === "query" ? labelW : width - labelW;
        ctx.font = (isAct || isFocus ? "bold " : "") + font;
        ctx.fillText(side === "query" ? data.tokens[i] : keys[i], x, rowY(i));
      }
    }
    if (act && keyboard && act.index >= top && act.index < bottom) {
      ctx.strokeStyle = colours.focus; ctx.lineWidth = 2; ctx.globalAlpha = 1;  // where the keyboard is
      const x = act.side === "query" ? 2 : width - labelW - 2;
      ctx.strokeRect(x, rowY(act.index) - rowH / 2 + 1, labelW, rowH - 2);
    }
    root.dataset.active = act ? `${act.side}:${act.index}` : "";
    root.dataset.strong = String(strong);
    root.dataset.faint = String(faint);
    root.dataset.sinkLines = String(sinkLines); // lines drawn to the learned sink (0 without one)
    root.dataset.lines = String(total); // every line at least the threshold heavy, on screen or not (visible heads)
    root.dataset.keys = String(m); // the key side's tokens (a source's under cross-attention)
    root.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }

  function hit(event) {
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left, y = event.clientY - rect.top + scroller.scrollTop - 4;
    const index = Math.floor(y / rowH);
    if (index < 0) return null;
    if (x <= labelW + 4 && index < n) return { side: "query", index };
    if (x >= width - labelW - 4 && index < m) return { side: "key", index };
    return null;
  }
  let pending = false;
  const redraw = () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } };
  canvas.addEventListener("mousemove", (event) => {
    const h = hit(event);
    const same = (h && hovered && h.side === hovered.side && h.index === hovered.index) || (!h && !hovered);
    if (!same) { hovered = h; canvas.style.cursor = h ? "pointer" : "default"; redraw(); }
  });
  canvas.addEventListener("mouseleave", () => { hovered = null; redraw(); });
  canvas.addEventListener("click", (event) => {
    const h = hit(event);
    if (!h || (cross && h.side === "key")) return; // a source token is not a token of the text in focus
    const focus = h.side === "query" ? { query: h.index, key: data.key } : { query: data.query, key: h.index };
    setStateValue("focus", { ...focus, seq: Date.now() });
  });
  let cursor = null; // the token the keyboard is on: {side, index}
  let keyboard = false; // the canvas has the keyboard focus (tracked: the component may live in a shadow root)
  const place = (c) => {
    cursor = c; hovered = c;
    const y = c.index * rowH;
    if (y < scroller.scrollTop || y + rowH > scroller.scrollTop + height) scroller.scrollTop = Math.max(0, y - height / 2);
    let lines = 0;
    const least = atLeast();
    data.heads.forEach((head, h) => {
      if (!visible[h]) return;
      if (c.side === "query") { for (let e = head.start[c.index]; e < head.start[c.index + 1]; e++) lines += head.steps[e] >= least; }
      else { for (let e = 0; e < head.w.length; e++) lines += head.k[e] === c.index && head.steps[e] >= least; }
    });
    said.textContent = `${c.side} ${(c.side === "query" ? data.tokens : keys)[c.index]} (position ${c.index}): ${lines} lines`;
    root.dataset.active = `${c.side}:${c.index}`; // at once; the lines follow on the next frame
    redraw();
  };
  canvas.addEventListener("focus", () => {
    keyboard = true;
    place(cursor || { side: "query", index: Math.max(0, data.query) });
  });
  canvas.addEventListener("blur", () => { keyboard = false; hovered = null; redraw(); });
  canvas.addEventListener("keydown", (event) => {
    if (!cursor) return;
    let order = (cursor.side === "query" ? 0 : n) + cursor.index; // queries first, then keys
    const key = event.key;
    if (key === "Tab") {
      const next = order + (event.shiftKey ? -1 : 1);
      if (next < 0 || next >= n + m) return; // past either end: the browser moves on
      order = next;
    } else if (key === "ArrowDown" || key === "ArrowUp") {
      const last = (cursor.side === "query" ? n : m) - 1;
      const index = Math.min(Math.max(cursor.index + (key === "ArrowDown" ? 1 : -1), 0), last);
      order = (cursor.side === "query" ? 0 : n) + index;
    } else if (key === "ArrowLeft" || key === "ArrowRight") {
      order = key === "ArrowLeft" ? Math.min(cursor.index, n - 1) : n + Math.min(cursor.index, m - 1);
    } else if (key === "Enter" || key === " ") {
      event.preventDefault();
      const c = cursor;
      if (cross && c.side === "key") return;
      const focus = c.side === "query" ? { query: c.index, key: data.key } : { query: data.query, key: c.index };
      setStateValue("focus", { ...focus, seq: Date.now() });
      return;
    } else if (key === "Escape") {
      canvas.blur();
      return;
    } else {
      return;
    }
    event.preventDefault();
    place(order < n ? { side: "query", index: order } : { side: "key", index: order - n });
  });
  scroller.addEventListener("scroll", redraw);
  layout();
  if (data.query >= 0) scroller.scrollTop = Math.max(0, data.query * rowH - height / 2);
  draw();
  // redrawn when the width changes (not on the observer's first call: the view was just drawn at this width)
  const observer = new ResizeObserver(() => { if ((scroller.clientWidth || 600) !== width) { layout(); draw(); } });
  observer.observe(scroller);
  return () => observer.disconnect();
}
