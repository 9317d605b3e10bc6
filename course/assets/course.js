// The course's own script: click or tap (or Enter) on a figure to see it at full size; again, or Escape, to close.
// And code, a formula or a table that scrolls sideways can be scrolled from the keyboard.
(function () {
  const touch = window.matchMedia("(hover: none) and (pointer: coarse)");

  // The SVG the screen shows: a figure drawn at two widths holds two, course.css hides one of them.
  function shown(figure) {
    const svgs = [...figure.querySelectorAll(":scope > svg")];
    return svgs.find((svg) => getComputedStyle(svg).display !== "none") || svgs[0];
  }

  // The copy in the dialog is drawn at the figure's natural size at least (course.css): on a
  // phone that is wider than the screen, and the dialog scrolls.
  function zoom(figure) {
    const dialog = document.createElement("dialog");
    dialog.className = "bp-zoom";
    const verb = touch.matches ? "tap" : "click";
    dialog.setAttribute("aria-label", `Figure at full size (${verb} or press Escape to close)`);
    const close = document.createElement("button");
    close.className = "bp-zoom-close";
    close.type = "button";
    close.textContent = "Close";
    dialog.appendChild(close);
    const copy = figure.cloneNode(true);
    copy.removeAttribute("tabindex");
    copy.removeAttribute("title");
    const svg = figure.querySelector(":scope > svg");
    // at full size means the page's own drawing, also where a phone shows its narrow version
    copy.querySelectorAll(":scope > svg.bp-narrow").forEach((narrow) => narrow.remove());
    copy.classList.remove("bp-two-widths");
    if (svg && svg.width && svg.width.baseVal && svg.height.baseVal.value) {
      const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
      copy.style.setProperty("--bp-w", `${width}px`);
      copy.style.setProperty("--bp-ratio", String(width / height));
    }
    dialog.appendChild(copy);
    dialog.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => dialog.remove());
    document.body.appendChild(dialog);
    dialog.showModal();
    close.focus();
  }

  // A figure wider than its column is drawn smaller: say under it that a click shows it full size.
  function noteScale(figure) {
    const svg = shown(figure);
    if (!svg || !svg.width || !svg.width.baseVal) return;
    const scaled = svg.getBoundingClientRect().width < 0.9 * svg.width.baseVal.value;
    figure.classList.toggle("bp-scaled", scaled);
  }

  function wire(root) {
    root.querySelectorAll(".bp-figure").forEach((figure) => {
      if (figure.dataset.bpZoom || figure.closest("dialog")) return;
      figure.dataset.bpZoom = "1";
      noteScale(figure);
      window.addEventListener("resize", () => noteScale(figure));
      figure.addEventListener("click", () => zoom(figure));
      figure.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          zoom(figure);
        }
      });
    });
  }

  // Code, a formula or a table that scrolls sideways takes the keyboard's focus, so that the arrow keys scroll it
  // (WCAG 2.1.1). The theme does the same for code only on a screen with hover, and for a table never; a phone or
  // a tablet can have a keyboard too. This observer is made after the theme's, so it has the last word when a
  // block's width changes.
  const scrolls = window.ResizeObserver && new ResizeObserver((entries) => {
    for (const { target } of entries) {
      if (target.scrollWidth > target.clientWidth + 1) target.setAttribute("tabindex", "0");
      else target.removeAttribute("tabindex");
    }
  });

  function start() {
    wire(document);
    if (scrolls) {
      document
        .querySelectorAll(".md-typeset pre > code, .bp-math, .md-typeset__scrollwrap")
        .forEach((box) => scrolls.observe(box));
    }
  }

  // Material's instant navigation swaps pages without a reload: document$ announces each page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(start);
  } else {
    document.addEventListener("DOMContentLoaded", start);
  }
})();
