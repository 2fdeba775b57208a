// What the keyboard can reach on a page, and how a reached element looks (tests/test_accessibility.py).
window.focusProbe = {
  // Every visible control the Tab key should reach, numbered (data-probe) and grouped: the buttons of a
  // segmented control or of pills are one stop (the arrow keys move within it). Plotly's hover toolbar
  // and the headings' hover links are left out: the figure's own export buttons do what they do.
  controls() {
    const selector = 'input:not([type=hidden]), textarea, select, button, a[href], [role=slider], [role=combobox], [tabindex]:not([tabindex="-1"])';
    const found = [];
    let groups = 0;
    document.querySelectorAll(selector).forEach((el) => {
      if (el.disabled || el.tabIndex < 0 || el.closest('[aria-hidden=true], [inert], .modebar, [data-testid=stHeaderActionElements]')) return;
      const box = el.getBoundingClientRect();
      const shown = box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
      if (!shown && !el.matches('input[type=checkbox], input[type=radio]')) return; // a checkbox is drawn by its label
      const group = el.closest('[role=radiogroup], [role=group], [role=toolbar], [role=tablist], [data-testid=stButtonGroup]');
      if (group && !group.dataset.probeGroup) group.dataset.probeGroup = String(groups++);
      el.dataset.probe = String(found.length);
      found.push({ probe: el.dataset.probe, group: group ? group.dataset.probeGroup : null, label: (el.getAttribute('aria-label') || el.textContent || el.name || el.tagName).trim().slice(0, 40) });
    });
    return found;
  },
  // How an element and the three boxes around it are drawn: a focus indicator changes one of these.
  look(el) {
    const out = [];
    for (let node = el, depth = 0; node && depth < 4; node = node.parentElement, depth++) {
      const s = getComputedStyle(node);
      out.push([s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.borderColor, s.backgroundColor].join(' | '));
    }
    return out;
  },
  resting() {
    return Array.from(document.querySelectorAll('[data-probe]'), (el) => this.look(el));
  },
  focused() {
    const el = document.activeElement;
    return el && el !== document.body ? { probe: el.dataset.probe ?? null, look: this.look(el), label: (el.getAttribute('aria-label') || el.textContent || el.tagName).trim().slice(0, 40) } : null;
  },
};
