// Presentation mode (ui/style.py): arrow keys, Page Up/Down and space move from one figure to the next.
export default function presentationKeys() {
  if (document.presentationKeys) return;
  document.presentationKeys = true;
  document.addEventListener("keydown", (event) => {
    const forward = ["ArrowRight", "ArrowDown", "PageDown", " "].includes(event.key);
    const back = ["ArrowLeft", "ArrowUp", "PageUp"].includes(event.key);
    if (!forward && !back) return;
    if (["INPUT", "TEXTAREA"].includes(event.target.tagName)) return;
    const charts = [...document.querySelectorAll(".av-chart:not(.av-chart-hidden)")]; // not a head's hidden chart
    if (!charts.length) return;
    const tops = charts.map((c) => c.getBoundingClientRect().top);
    let index = forward ? tops.findIndex((t) => t > 80) : tops.map((t) => t < 60).lastIndexOf(true);
    if (index < 0) index = forward ? charts.length - 1 : 0;
    charts[index].scrollIntoView({ behavior: "smooth", block: "start" });
    event.preventDefault();
  });
}
