// What a reader cannot read without scrolling sideways or zooming, on the page as drawn.
//
// tests/test_browser.py evaluates this function on every page of the book, at a desktop
// and a phone width, after opening every collapsed block and tab so that their content is
// laid out too. It returns {problems: [...], counts: {...}}; each problem is one line that
// names the element ("code block 3 under 'Heading' (starts 'graph():')").
//
// It measures:
// - hidden overflow: an element of the page (a code block, a table's scroll box, anything
//   else) whose content is wider than its box, so that part of it is off to the side, and
//   a page that is wider than the window. A diagram too wide for the screen at a readable
//   size keeps that size in a box (div.diagram, chapters/assets/diagrams.js) that scrolls
//   sideways: a problem too, also counted as `panned`;
// - every Mermaid diagram: the size each piece of text is drawn at (its font size times
//   the scale the SVG is drawn at), labels whose boxes overlap each other or a box they do
//   not belong to, and a diagram taller than the window with no button (.diagram-fit) that
//   fits it to the window;
// - every image (the benchmarks' charts): the book gives each the `width` it is drawn for,
//   at which its smallest text is `chartTextPx` high (benchmarks/plots.py); drawn
//   narrower, that text shrinks with it, and must stay at least `minFontPx`.
(options) => {
  const {minFontPx, slackPx, chartTextPx} = options;
  const problems = [];
  const counts = {
    code: 0, tables: 0, diagrams: 0, labels: 0, panned: 0, images: 0, smallestFontPx: null,
  };
  const article = document.querySelector("article") || document.body;
  const headings = [...article.querySelectorAll("h1, h2, h3, h4, h5, h6")];

  const under = (el) => {
    let title = "the top of the page";
    for (const h of headings) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) {
        title = `'${starts(h.textContent.replace(/¶$/, ""))}'`;
      }
    }
    return title;
  };
  const starts = (text) => text.replace(/\s+/g, " ").trim().slice(0, 50);
  const round = (x) => Math.round(x * 10) / 10;

  // Hidden overflow: every element that clips or scrolls its content sideways.
  const codeBlocks = [...article.querySelectorAll("pre > code")];
  counts.code = codeBlocks.length;
  counts.tables = article.querySelectorAll("table").length;
  const hosts = [...article.querySelectorAll("div.mermaid")];
  for (const el of article.querySelectorAll("*")) {
    const overflowX = getComputedStyle(el).overflowX;
    if (overflowX === "visible" || el.clientWidth === 0) continue;
    const hidden = el.scrollWidth - el.clientWidth;
    if (hidden <= slackPx) continue;
    let what;
    if (el.matches(".diagram")) {
      counts.panned += 1;
      what = `diagram ${hosts.indexOf(el.querySelector("div.mermaid")) + 1}`;
    } else if (el.matches("pre > code")) {
      what = `code block ${codeBlocks.indexOf(el) + 1}`;
    } else if (el.closest(".highlight")) {
      what = "code listing";
    } else if (el.querySelector("table")) {
      what = "table";
    } else {
      what = `<${el.tagName.toLowerCase()} class="${el.className}">`;
    }
    problems.push(
      `${what} under ${under(el)} (starts '${starts(el.textContent)}'): ` +
        `${hidden} px of ${el.scrollWidth} hidden to the side`,
    );
  }
  const pageOverflow = document.documentElement.scrollWidth - window.innerWidth;
  if (pageOverflow > slackPx) {
    problems.push(`the page is ${pageOverflow} px wider than the window`);
  }

  // Diagrams: Material draws each into the (opened) shadow root of a div.mermaid.
  counts.diagrams = hosts.length;
  hosts.forEach((host, i) => {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    const name = `diagram ${i + 1} under ${under(host)}`;
    if (!svg) {
      problems.push(`${name}: not drawn`);
      return;
    }
    const labels = textsOf(svg);
    counts.labels += labels.length;
    for (const label of labels) {
      if (counts.smallestFontPx === null || label.fontPx < counts.smallestFontPx) {
        counts.smallestFontPx = round(label.fontPx);
      }
      if (label.fontPx < minFontPx) {
        problems.push(`${name}: text '${label.text}' is ${round(label.fontPx)} px high`);
      }
    }
    for (const overlap of overlaps(svg, labels)) problems.push(`${name}: ${overlap}`);
    const tall = tooTall(host);
    if (tall) problems.push(`${name}: ${tall}`);
  });
  for (const jag of jagged()) problems.push(jag);
  for (const small of smallImages()) problems.push(small);
  return {problems, counts};

  // An image's text is `chartTextPx` high at the width the book gives it.
  function smallImages() {
    const found = [];
    [...article.querySelectorAll("img")].forEach((img, i) => {
      counts.images += 1;
      const name = `image ${i + 1} under ${under(img)} ('${img.getAttribute("src")}')`;
      const width = parseFloat(img.getAttribute("width"));
      if (!(width > 0)) {
        found.push(`${name}: no width attribute, so the size of its text is unknown`);
        return;
      }
      const textPx = (chartTextPx * img.getBoundingClientRect().width) / width;
      if (textPx < minFontPx) {
        found.push(`${name}: drawn ${Math.round(img.getBoundingClientRect().width)} px ` +
          `wide of ${width}, its text ${round(textPx)} px high`);
      }
    });
    return found;
  }

  // A diagram taller than the window needs a button that fits it to the window, and back.
  function tooTall(host) {
    const height = host.getBoundingClientRect().height;
    if (height <= window.innerHeight) return null;
    const button = host.closest(".diagram")?.querySelector(".diagram-fit:not([hidden])");
    const size = `${Math.round(height)} px tall in a ${window.innerHeight} px window`;
    if (!button) return `${size}, with no button that fits it to the window`;
    button.click();
    const fitted = host.getBoundingClientRect().height;
    button.click();
    const back = host.getBoundingClientRect().height;
    if (fitted > window.innerHeight) return `${size}, and its button leaves it ${fitted} px`;
    if (Math.abs(back - height) > slackPx) return `${size}, ${back} px after fitting and back`;
    return null;
  }

  // Tables with the same header on one page (the exercise index) line up: same columns.
  function jagged() {
    const found = [];
    const byHeader = new Map();
    // The API pages' parameter tables (mkdocstrings, .doc) size to their own content.
    for (const table of article.querySelectorAll("table:not([class])")) {
      if (table.closest(".doc")) continue;
      const header = table.querySelector("tr");
      if (!header || table.clientWidth === 0) continue;
      const key = starts(header.textContent);
      const columns = [...header.children].map((cell) => Math.round(cell.getBoundingClientRect().width));
      if (!byHeader.has(key)) {
        byHeader.set(key, columns);
      } else if (byHeader.get(key).some((w, i) => Math.abs(w - columns[i]) > slackPx)) {
        found.push(
          `table under ${under(table)} (header '${key}'): columns ${columns.join(", ")} px, ` +
            `where the first table with this header has ${byHeader.get(key).join(", ")}`,
        );
      }
    }
    return found;
  }

  // Each piece of text of a diagram: SVG <text>, or HTML text in a <foreignObject>.
  function textsOf(svg) {
    const found = [];
    const walker = document.createTreeWalker(svg, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || el.closest("style")) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const rect = range.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0) continue;  // drawn nowhere (display: none)
      found.push({
        text: starts(text),
        el,
        rect,
        fontPx: parseFloat(getComputedStyle(el).fontSize) * scaleOf(el),
      });
    }
    return found;
  }

  // How much the SVG's transforms and viewBox scale what is drawn inside it.
  function scaleOf(el) {
    const graphic = el instanceof SVGGraphicsElement ? el : el.closest("foreignObject");
    const ctm = graphic.getScreenCTM();
    return Math.hypot(ctm.a, ctm.b);
  }

  function overlaps(svg, labels) {
    const found = [];
    const boxes = [...svg.querySelectorAll("g.node")].map((node) => ({
      node,
      rect: (node.querySelector(":scope > rect, :scope > polygon, :scope > path, " +
        ":scope > circle, :scope > g > rect, :scope > g > path") || node).getBoundingClientRect(),
      text: starts(node.textContent),
    }));
    for (let a = 0; a < labels.length; a++) {
      // Two lines of one label touch; pieces of text of different labels must not.
      for (let b = a + 1; b < labels.length; b++) {
        if (labelOf(labels[a].el) === labelOf(labels[b].el)) continue;
        if (intersect(labels[a].rect, labels[b].rect)) {
          found.push(`text '${labels[a].text}' overlaps text '${labels[b].text}'`);
        }
      }
      const own = labels[a].el.closest("g.node");
      for (const box of boxes) {
        if (box.node !== own && intersect(labels[a].rect, box.rect)) {
          found.push(`text '${labels[a].text}' overlaps the box '${box.text}'`);
        }
      }
    }
    return found;
  }

  function labelOf(el) {
    return el.closest("g.node, g.edgeLabel, g.cluster-label, g.cluster, text") || el;
  }

  function intersect(r, s) {
    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
    const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    return w > slackPx && h > slackPx;
  }
}
