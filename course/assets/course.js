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

  // A wide graph keeps a readable size and scrolls sideways: say so under it.
  function noteOverflow(figure) {
    const wide = figure.scrollWidth > figure.clientWidth + 2;
    figure.classList.toggle("bp-wide", wide);
  }

  function wire(root) {
    root.querySelectorAll(".bp-figure").forEach((figure) => {
      if (figure.dataset.bpZoom || figure.closest("dialog")) return;
      figure.dataset.bpZoom = "1";
      noteOverflow(figure);
      window.addEventListener("resize", () => noteOverflow(figure));
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
