// On a phone a table keeps its words whole where it still fits that way. layout.css lets a
// cell break a word anywhere there, so that a table of ten columns fits 360 px; a table of
// four would then break "section" into "sectio|n" too. This script marks each table
// data-words="whole" (its cells break only a word longer than its column), measures it,
// and unmarks a table that no longer fits. Again when the window resizes.
(function () {
  "use strict";

  function fit() {
    const tables = document.querySelectorAll("article table:not([class])");
    for (const table of tables) table.dataset.words = "whole";
    for (const table of tables) {
      // The room ends at the wrapper's content box; Material's scroll box holds the
      // wrapper, which a table too wide can widen with it (an API page's did), so the
      // scroll box's edge counts.
      const wrapper = getComputedStyle(table.parentElement);
      const box = table.closest(".md-typeset__scrollwrap") || table.parentElement;
      const end = box.getBoundingClientRect().right - parseFloat(wrapper.paddingRight);
      if (table.getBoundingClientRect().right > end + 0.5) delete table.dataset.words;
    }
  }

  let pending = false;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fit();
    });
  });
  // Material's document$ announces each page, also with instant navigation.
  if (window.document$) window.document$.subscribe(fit);
  else fit();
})();
