// Diagrams stay readable: never drawn smaller than their text can be read, and a diagram
// taller than the window gets a button that fits it to the window and back.
//
// Material draws each Mermaid diagram into a closed shadow root of a new div.mermaid that
// replaces the <pre class="mermaid">; this script waits for those and wraps each in a
// div.diagram. A diagram that the column would shrink below READABLE of its own size (a
// wide graph on a phone) keeps that size and its box scrolls sideways instead; where the
// drawing is taller than the window, the box gets the button.
// tests/test_browser.py (tests/book_layout.js) checks that every tall diagram has one and
// that it works. The styles are in layout.css.
(function () {
  "use strict";

  // Mermaid writes its text at 16 px: drawn at 0.72 of its size, that is 11.5 px.
  const READABLE = 0.72;

  function wrap(host) {
    if (host.parentElement.classList.contains("diagram")) return;
    const box = document.createElement("div");
    box.className = "diagram";
    host.replaceWith(box);
    box.append(host);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "diagram-fit";
    button.addEventListener("click", () => toggle(box, host, button));
    box.prepend(button);
    watcher.observe(host);
  }

  function toggle(box, host, button) {
    box.classList.toggle("fitted");
    update(box, host, button);
  }

  // Scale the drawing down so that it fits the window's height, or show it at its own
  // size. (The drawing is in a closed shadow root, so it is scaled as a whole: a transform,
  // with a negative margin that gives back the room it no longer takes.)
  function update(box, host, button) {
    host.style.transform = host.style.marginBottom = "";
    keepReadable(host);
    const height = host.getBoundingClientRect().height;
    const tall = height > window.innerHeight;
    button.hidden = !tall;
    if (!tall) {
      box.classList.remove("fitted");
      return;
    }
    const fitted = box.classList.contains("fitted");
    if (fitted) {
      const scale = (window.innerHeight - 48) / height;
      host.style.transform = `scale(${scale})`;
      host.style.marginBottom = `${-(1 - scale) * height}px`;
    }
    button.textContent = fitted ? "Actual size" : "Fit to window";
    button.title = fitted
      ? "Show the diagram at its own size (scroll to read it)"
      : "Shrink the diagram to see it whole";
  }

  // The drawing is as wide as the column up to its own width (Mermaid's max-width), so its
  // own size shows in an unbounded column; its scale is the ratio of the two heights.
  function keepReadable(host) {
    host.style.minWidth = "";
    const shown = host.getBoundingClientRect();
    if (shown.height === 0) return; // not laid out (a closed tab): measured when shown
    host.style.width = "100000px";
    const ownHeight = host.getBoundingClientRect().height;
    host.style.width = "";
    const scale = shown.height / ownHeight;
    if (scale < READABLE) host.style.minWidth = `${(shown.width * READABLE) / scale}px`;
  }

  // A diagram in a closed tab or block has no size until it is shown: watch its size.
  const watcher = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const box = entry.target.closest(".diagram");
      update(box, entry.target, box.querySelector(".diagram-fit"));
    }
  });

  function wrapAll() {
    document.querySelectorAll("article div.mermaid").forEach(wrap);
  }

  new MutationObserver(wrapAll).observe(document.documentElement, {
    childList: true,
    subtree: true,
  });
  // The window's height decides what is tall.
  window.addEventListener("resize", () => {
    document.querySelectorAll(".diagram").forEach((box) => {
      update(box, box.querySelector("div.mermaid"), box.querySelector(".diagram-fit"));
    });
  });
})();
