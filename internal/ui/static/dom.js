// dom.js: small helpers to build the views' elements. Text always goes in
// as text nodes (never parsed as HTML), so a queue name, an id or a payload can
// never become markup.

/**
 * Makes an element: h("a", {href: "#/"}, "All queues"). Props are set as
 * properties, except "class", "aria-*" and "data-*", which are attributes;
 * children are nodes or strings (strings become text), null ones skipped.
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (name === "class") {
      node.className = value;
    } else if (name.startsWith("aria-") || name.startsWith("data-")) {
      node.setAttribute(name, String(value));
    } else {
      node[name] = value;
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

/** "1 job", "3 jobs": n and noun, in the plural unless n is 1. */
export function plural(n, noun) {
  return `${n.toLocaleString()} ${noun}${n === 1 ? "" : "s"}`;
}

/** A button with visible text and, when given, a fuller accessible label. */
export function button(text, label, onClick, className) {
  const b = h("button", { type: "button", class: className, "aria-label": label }, text);
  b.addEventListener("click", onClick);
  return b;
}

/**
 * A <time> for an RFC 3339 timestamp, shown in local time (the time of day
 * only when timeOnly); "—" when absent.
 */
export function when(iso, timeOnly = false) {
  if (!iso) {
    return h("span", {}, "—");
  }
  const date = new Date(iso);
  const text = Number.isNaN(date.getTime()) ? iso : timeOnly ? date.toLocaleTimeString() : date.toLocaleString();
  return h("time", { dateTime: iso, title: iso }, text);
}

/**
 * "12 s", "2 min 5 s", "2 h 30 min", "3 d 4 h": a length of time given in
 * ms (its sign ignored), to the second, in its two largest units.
 */
export function duration(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s >= 86400) {
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }
  if (s >= 3600) {
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  }
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** "in 42 s", "3 min 5 s ago" or "now": how far an RFC 3339 time is from now; "" for no time. */
export function fromNow(iso, now = Date.now()) {
  const ms = new Date(iso).getTime() - now;
  if (!iso || Number.isNaN(ms)) {
    return "";
  }
  if (Math.abs(ms) < 500) {
    return "now";
  }
  return ms > 0 ? `in ${duration(ms)}` : `${duration(ms)} ago`;
}

/** Any JSON value, pretty-printed; "—" when absent. */
export function pretty(value) {
  if (value === undefined || value === null) {
    return "—";
  }
  return JSON.stringify(value, null, 2);
}

/**
 * Runs render(), which rebuilds part of container, and then gives focus
 * back to the link or button that had it before, found again by its href
 * or label: a live update must not throw a keyboard user's place away.
 */
export function keepFocus(container, render) {
  const active = document.activeElement;
  const key = active !== container && container.contains(active) ? focusKey(active) : "";
  render();
  if (key === "" || container.contains(document.activeElement)) {
    return;
  }
  for (const node of container.querySelectorAll("a, button")) {
    if (focusKey(node) === key) {
      node.focus();
      return;
    }
  }
}

/**
 * What names a link or button across a rebuild: its data-focus-key when its
 * label changes with the data, else its href, else its label.
 */
function focusKey(node) {
  return node.dataset.focusKey || node.getAttribute("href") || node.getAttribute("aria-label") || node.textContent;
}

/**
 * Makes region (a box that holds a wide table) a tab stop only while its
 * content is wider than it, so that a keyboard user can scroll it then,
 * and does not stop on it for nothing otherwise. It stays focusable from
 * script (tabIndex -1) either way.
 */
export function tabStopWhenScrolling(region) {
  const check = () => {
    region.tabIndex = region.scrollWidth > region.clientWidth ? 0 : -1;
  };
  const watch = new ResizeObserver(check);
  watch.observe(region);
  for (const child of region.children) {
    watch.observe(child); // the table grows and shrinks with its rows
  }
  check();
}
