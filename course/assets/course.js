// The course's own script: click (or Enter) on a figure to see it large; click or Escape to close.
(function () {
  function zoom(figure) {
    const dialog = document.createElement("dialog");
    dialog.className = "bp-zoom";
    dialog.setAttribute("aria-label", "Zoomed figure (click or press Escape to close)");
    const copy = figure.cloneNode(true);
    copy.removeAttribute("tabindex");
    copy.removeAttribute("title");
    dialog.appendChild(copy);
    dialog.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => dialog.remove());
    document.body.appendChild(dialog);
    dialog.showModal();
  }

  // A figure wider than its column is drawn smaller: say under it that a click shows it full size.
  function noteScale(figure) {
    const svg = figure.querySelector(":scope > svg");
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

  // Material's instant navigation swaps pages without a reload: document$ announces each page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(() => wire(document));
  } else {
    document.addEventListener("DOMContentLoaded", () => wire(document));
  }
})();
