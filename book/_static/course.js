// The course's one script on top of the book theme: on a phone, a figure shown wider than the screen (course.css
// draws figures at 160% of the column below 600 px, so that their text stays readable) says so under itself, and
// opens in full on a tap, where the phone's own viewer zooms it. Without it nothing shows that part of the
// figure lies past the screen's edge.
(function () {
  "use strict";

  function mark(box) {
    const img = box.querySelector(":scope > img");
    const wider = box.scrollWidth > box.clientWidth + 1;
    let hint = box.nextElementSibling;
    if (!hint || !hint.classList.contains("figure-scroll-hint")) {
      if (!wider) return;
      hint = document.createElement("p");
      hint.className = "figure-scroll-hint";
      const open = document.createElement("a");
      open.href = img.currentSrc || img.src;
      open.textContent = "open the figure";
      hint.append("◀ ▶ This figure is wider than the screen: scroll it sideways, or ", open, ".");
      box.after(hint);
    }
    hint.hidden = !wider;
  }

  function markAll() {
    document.querySelectorAll(".bd-content div.cell_output:has(> img)").forEach((box) => {
      const img = box.querySelector(":scope > img");
      if (img.complete) mark(box);
      else img.addEventListener("load", () => mark(box), { once: true });
    });
  }

  document.addEventListener("DOMContentLoaded", markAll);
  window.addEventListener("resize", markAll);
})();
