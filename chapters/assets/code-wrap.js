// A wrapped line of code hangs 4 characters past its own indentation (layout.css), so that
// on a phone the continuation of `return x + y` inside a method stays inside the method
// instead of starting left of it, where it would read as a dedented line of its own.
// Each line is a span (pymdownx.highlight's line_spans); this script gives it --indent,
// its leading spaces, counting a pycon prompt (">>> " or "... ") as indentation too.
(function () {
  "use strict";

  const LEADING = /^(?:>>> |\.\.\. )?( *)/;

  function mark(root) {
    for (const line of root.querySelectorAll('pre > code > span[id*="__span-"]')) {
      const indent = line.textContent.match(LEADING)[0].length;
      if (indent > 0) line.style.setProperty("--indent", indent);
    }
  }

  // Material's document$ announces each page, also with instant navigation.
  if (window.document$) window.document$.subscribe(() => mark(document));
  else mark(document);
})();
