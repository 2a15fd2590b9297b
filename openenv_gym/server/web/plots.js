// Line plots in plain SVG: one series, its last value, its range and a zero line when in range.

import { fmt, svgEl } from "./dom.js";

const WIDTH = 320;
const HEIGHT = 66;
const PAD = { left: 40, right: 8, top: 6, bottom: 16 };
const MAX_POINTS = 600; // longer series are thinned (every k-th point, and always the last)

function thin(values) {
  if (values.length <= MAX_POINTS) return values.map((v, i) => [i, v]);
  const every = Math.ceil(values.length / MAX_POINTS);
  const points = [];
  for (let i = 0; i < values.length; i += every) points.push([i, values[i]]);
  if (points[points.length - 1][0] !== values.length - 1) points.push([values.length - 1, values[values.length - 1]]);
  return points;
}

/** Draw `values` into `svg` (replacing what it held). `x0` is the x of the first value. */
export function linePlot(svg, values, { name, x0 = 0, xLabel = "step" }) {
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  const finite = values.filter(Number.isFinite);
  const children = [];
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  children.push(svgEl("rect", { class: "plot-frame", x: PAD.left, y: PAD.top, width: plotW, height: plotH }));
  if (finite.length === 0) {
    children.push(svgEl("text", { class: "plot-empty", x: PAD.left + plotW / 2, y: PAD.top + plotH / 2, "text-anchor": "middle", "dominant-baseline": "middle" }));
    children[children.length - 1].textContent = "no data yet";
    svg.replaceChildren(...children);
    svg.dataset.points = "0";
    return;
  }
  let low = Math.min(...finite);
  let high = Math.max(...finite);
  if (low === high) {
    low -= Math.abs(low) > 0 ? Math.abs(low) * 0.1 : 1;
    high += Math.abs(high) > 0 ? Math.abs(high) * 0.1 : 1;
  }
  const n = values.length;
  const x = (i) => PAD.left + (n === 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v) => PAD.top + plotH - ((v - low) / (high - low)) * plotH;
  if (low < 0 && high > 0) children.push(svgEl("line", { class: "plot-zero", x1: PAD.left, x2: PAD.left + plotW, y1: y(0), y2: y(0) }));
  const points = thin(values).filter(([, v]) => Number.isFinite(v));
  const d = points.map(([i, v], k) => `${k === 0 ? "M" : "L"}${x(i).toFixed(1)} ${y(v).toFixed(1)}`).join(" ");
  children.push(svgEl("path", { class: `plot-line plot-${name}`, d, "data-testid": `plot-${name}-line`, "data-points": points.length }));
  const [lastI, lastV] = points[points.length - 1];
  children.push(svgEl("circle", { class: `plot-dot plot-${name}`, cx: x(lastI), cy: y(lastV), r: 2.5 }));
  const label = (text, props) => {
    const node = svgEl("text", { class: "plot-label", ...props });
    node.textContent = text;
    return node;
  };
  children.push(label(fmt(high), { x: PAD.left - 4, y: PAD.top + 4, "text-anchor": "end", "dominant-baseline": "hanging" }));
  children.push(label(fmt(low), { x: PAD.left - 4, y: PAD.top + plotH, "text-anchor": "end" }));
  children.push(label(`${xLabel} ${x0}`, { x: PAD.left, y: HEIGHT - 3 }));
  children.push(label(`${x0 + n - 1}`, { x: PAD.left + plotW, y: HEIGHT - 3, "text-anchor": "end" }));
  svg.replaceChildren(...children);
  svg.dataset.points = String(points.length);
}
