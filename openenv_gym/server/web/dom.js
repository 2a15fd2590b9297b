// DOM helpers: every string reaches the page as a text node or an attribute, never as markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(node, props) {
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.setAttribute("class", value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  return node;
}

/** An HTML element with attributes (`text`, `class`, `dataset`, `on<event>`) and children. */
export function el(tag, props = {}, ...children) {
  const node = apply(document.createElement(tag), props);
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

/** An SVG element with attributes. */
export function svgEl(tag, props = {}, ...children) {
  const node = apply(document.createElementNS(SVG_NS, tag), props);
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

/** The element with this id (throws if the page lacks it: a typo, not a runtime condition). */
export function byId(id) {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`the page has no #${id}`);
  return node;
}

/** A number as a short string: integers as they are, others to 4 significant digits. */
export function fmt(value) {
  if (typeof value !== "number") return String(value);
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}
