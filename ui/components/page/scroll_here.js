// An anchor the page scrolls to once per request (ui/attention.py, scroll_here).
export default function scrollHere({ data, parentElement }) {
  // scroll once per request (the token changes with every click that asks for it), also across remounts
  const done = (window.__attentionVizScrolled = window.__attentionVizScrolled || {});
  if (!data || !data.token || done[data.name] === data.token) return;
  done[data.name] = data.token;
  const anchor = parentElement.querySelector(".scroll-here") || parentElement;
  // again after the rerun has drawn what follows, which may move the anchor
  for (const wait of [100, 700, 1500]) setTimeout(() => anchor.scrollIntoView({ block: "start" }), wait);
}
