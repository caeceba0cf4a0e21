// The token strip: every token of the text as a chip. Click: the query in focus; Shift+click (or the
// "key" mode): the key in focus. Sends {query, key} to Python; draws nothing it was not given.
export default function (component) {
  const { setStateValue, parentElement } = component;
  const data = component.data[0]; // sent as [data] (see _mount in __init__.py)
  parentElement.querySelector(".al-strip")?.remove(); // our previous drawing (the injected <style> stays)
  const root = document.createElement("div");
  root.className = "al-strip";
  const bar = document.createElement("div");
  bar.className = "al-strip-bar";
  let mode = "query";
  const modeButtons = {};
  for (const m of ["query", "key"]) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "al-mode" + (m === mode ? " on" : "");
    b.textContent = m === "query" ? "click picks the query (row)" : "click picks the key (column)";
    b.onclick = () => {
      mode = m;
      for (const [k, el] of Object.entries(modeButtons)) el.classList.toggle("on", k === mode);
    };
    modeButtons[m] = b;
    bar.appendChild(b);
  }
  const clear = document.createElement("button");
  clear.type = "button";
  clear.className = "al-clear";
  clear.textContent = "clear focus";
  clear.onclick = () => setStateValue("focus", { query: -1, key: -1, seq: Date.now() });
  bar.appendChild(clear);
  const hint = document.createElement("span");
  hint.className = "al-hint";
  hint.textContent = "Shift+click picks the key";
  bar.appendChild(hint);
  root.appendChild(bar);
  const chips = document.createElement("div");
  chips.className = "al-strip-chips";
  data.tokens.forEach((token, i) => {
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "al-tok" + (data.special[i] ? " special" : "");
    if (i === data.query) chip.classList.add("query");
    if (i === data.key) chip.classList.add("key");
    chip.textContent = token; // text, never HTML: tokens come from the user's text
    chip.title = `position ${i}`;
    chip.dataset.index = String(i);
    chip.onclick = (event) => {
      const asKey = event.shiftKey || mode === "key";
      const query = asKey ? data.query : i;
      const key = asKey ? i : data.key;
      setStateValue("focus", { query, key, seq: Date.now() });
    };
    chips.appendChild(chip);
  });
  root.appendChild(chips);
  parentElement.appendChild(root);
}
