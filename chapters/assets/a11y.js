// Two gaps in the theme's markup that a screen reader hears (tests/test_browser.py runs
// axe-core on every page): the search is a dialog with no name, and each code block's copy
// button sits in a <nav> of its own, so the page's list of landmarks holds one unnamed
// "navigation" per code block. The search gets its name; a copy button's box is no
// landmark (role "none": the button in it stays).
(function () {
  "use strict";

  function fix() {
    const search = document.querySelector('.md-search[role="dialog"]:not([aria-label])');
    if (search) search.setAttribute("aria-label", "Search");
    for (const nav of document.querySelectorAll("nav.md-code__nav:not([role])")) {
      nav.setAttribute("role", "none");
    }
  }

  // The theme adds the copy buttons after the page has loaded, and again on each page
  // that instant navigation shows.
  new MutationObserver(fix).observe(document.documentElement, { childList: true, subtree: true });
  fix();
})();
