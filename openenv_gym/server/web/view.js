// Showing values: observations (by their space when one is published), infos and any JSON, with
// arrays summarised, images drawn and text preformatted. Server strings only reach text nodes.

import { el, fmt } from "./dom.js";
import { NDArray } from "./wire.js";

const SMALL_ARRAY = 16; // arrays this long or shorter also show their items

/** Nested lists of numbers as an NDArray (null when `value` is not a rectangular numeric array). */
export function asArray(value, dtype = null) {
  if (value instanceof NDArray) return value;
  if (!Array.isArray(value)) return null;
  const shape = [];
  for (let v = value; Array.isArray(v); v = v[0]) shape.push(v.length);
  const flat = [];
  let rectangular = true;
  const walk = (v, depth) => {
    if (!rectangular) return;
    if (depth === shape.length) {
      if (typeof v === "number" || typeof v === "boolean") flat.push(Number(v));
      else rectangular = false;
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth]) {
      rectangular = false;
      return;
    }
    for (const item of v) walk(item, depth + 1);
  };
  walk(value, 0);
  if (!rectangular || flat.length === 0) return null;
  const integral = flat.every(Number.isInteger);
  return new NDArray(dtype || (integral ? "int" : "float"), shape, flat);
}

/** Shape, dtype, min, max, mean and NaN count of an array. */
export function summarise(array) {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let finite = 0;
  let nan = 0;
  for (const raw of array.data) {
    const v = Number(raw);
    if (Number.isNaN(v)) {
      nan += 1;
      continue;
    }
    if (v < min) min = v;
    if (v > max) max = v;
    if (Number.isFinite(v)) {
      sum += v;
      finite += 1;
    }
  }
  return { shape: array.shape, dtype: dtypeName(array.dtype), min, max, mean: finite ? sum / finite : NaN, nan };
}

const DTYPE_NAMES = { u1: "uint8", u2: "uint16", u4: "uint32", u8: "uint64", i1: "int8", i2: "int16", i4: "int32", i8: "int64", f2: "float16", f4: "float32", f8: "float64", b1: "bool" };
function dtypeName(dtype) {
  return /^[<>|=]/.test(dtype) ? DTYPE_NAMES[dtype.slice(1)] || dtype : dtype;
}

function isImage(array, dtype) {
  const name = dtypeName(dtype || array.dtype);
  const [h, w, c] = array.shape;
  const shaped = (array.shape.length === 2 || (array.shape.length === 3 && (c === 3 || c === 4 || c === 1))) && h >= 8 && w >= 8;
  return shaped && (name === "uint8" || name === "int" || name === "int64");
}

/** Draw an HxW or HxWxC (C = 1, 3, 4) uint8 array into `canvas` (resized to fit it). */
export function drawImage(canvas, array) {
  const [h, w, c = 1] = array.shape;
  const image = new ImageData(w, h);
  const out = image.data;
  const data = array.data;
  if (c === 3 && data instanceof Uint8Array) {
    for (let i = 0, j = 0; i < w * h; i++, j += 3) {
      out[i * 4] = data[j];
      out[i * 4 + 1] = data[j + 1];
      out[i * 4 + 2] = data[j + 2];
      out[i * 4 + 3] = 255;
    }
  } else {
    for (let i = 0; i < w * h; i++) {
      for (let k = 0; k < 3; k++) out[i * 4 + k] = data[i * c + (c >= 3 ? k : 0)];
      out[i * 4 + 3] = c === 4 ? data[i * 4 + 3] : 255;
    }
  }
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  canvas.getContext("2d").putImageData(image, 0, 0);
}

function summaryNode(array, dtype) {
  const s = summarise(array);
  const name = dtype || s.dtype;
  const parts = [
    el("span", { class: "array-shape", text: `shape (${s.shape.join(", ")}${s.shape.length === 1 ? "," : ""})` }),
    el("span", { text: name }),
    el("span", { text: `min ${fmt(s.min)}` }),
    el("span", { text: `max ${fmt(s.max)}` }),
    el("span", { text: `mean ${fmt(s.mean)}` }),
  ];
  if (s.nan) parts.push(el("span", { class: "warning", text: `NaN ${s.nan}` }));
  const node = el("div", { class: "array-summary", "data-testid": "array-summary" }, parts);
  if (array.size <= SMALL_ARRAY) {
    node.append(el("div", { class: "array-items mono", text: `[${Array.from(array.data, (v) => fmt(Number(v))).join(", ")}]` }));
  }
  return node;
}

function arrayNode(array, dtype) {
  if (isImage(array, dtype)) {
    const canvas = el("canvas", { class: "obs-image", "data-testid": "observation-image" });
    drawImage(canvas, array);
    return el("div", { class: "array-view" }, canvas, summaryNode(array, dtype));
  }
  return summaryNode(array, dtype);
}

function textNode(text, block) {
  if (text === "") return el("span", { class: "hint", text: "(empty)" });
  if (!block && text.length <= 80 && !text.includes("\n")) return el("span", { class: "text-value", text });
  return el("pre", { class: "text-value" }, text);
}

/** A node showing `value` of `space` (a Gymnasium space's JSON, or null to go by the value). */
export function valueNode(value, space = null) {
  const type = space && space.type;
  if (type === "Dict" && value && typeof value === "object" && !Array.isArray(value)) {
    // The space's order (the wire's may differ), then any field the space does not name.
    const ordered = {};
    for (const key of Object.keys(space.spaces)) if (key in value) ordered[key] = value[key];
    for (const [key, item] of Object.entries(value)) if (!(key in ordered)) ordered[key] = item;
    return treeNode(ordered, (key) => space.spaces[key] || null);
  }
  if (type === "Tuple" && Array.isArray(value)) {
    return treeNode(Object.fromEntries(value.map((v, i) => [`[${i}]`, v])), (key) => space.spaces[Number(key.slice(1, -1))] || null);
  }
  if (type === "Text") return textNode(String(value), true);
  if (typeof value === "string") return textNode(value, false);
  if (type === "Box" || type === "MultiDiscrete" || type === "MultiBinary") {
    const array = asArray(Array.isArray(value) || value instanceof NDArray ? value : [value], space.dtype || null);
    if (array) return arrayNode(array, space.dtype || null);
  }
  if (value instanceof NDArray) return arrayNode(value);
  if (Array.isArray(value)) {
    const array = asArray(value);
    if (array && (array.shape.length > 1 || array.size > SMALL_ARRAY)) return arrayNode(array);
    if (array) return el("span", { class: "mono", text: `[${array.data.map(fmt).join(", ")}]` });
    return treeNode(Object.fromEntries(value.map((v, i) => [`[${i}]`, v])));
  }
  if (value !== null && typeof value === "object") return treeNode(value);
  if (typeof value === "number") return el("span", { class: "mono number", text: fmt(value) });
  return el("span", { class: "mono", text: value === null ? "null" : String(value) });
}

/** An object as a two-column tree, each value shown by `valueNode`. */
export function treeNode(object, spaceOf = () => null) {
  const entries = Object.entries(object);
  if (entries.length === 0) return el("span", { class: "hint", text: "{}" });
  return el(
    "dl",
    { class: "tree" },
    entries.flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { "data-key": key }, valueNode(value, spaceOf(key)))]),
  );
}

/** A JSON-able summary of an observation for the log: small values as they are, arrays summarised. */
export function logSummary(value, limit = 4096) {
  const text = JSON.stringify(value, jsonReplacer);
  if (text === undefined || text.length <= limit) return text === undefined ? null : JSON.parse(text);
  const walk = (v) => {
    const array = v instanceof NDArray ? v : asArray(v);
    if (array && array.size > SMALL_ARRAY) {
      const s = summarise(array);
      return { summary: { shape: s.shape, dtype: s.dtype, min: s.min, max: s.max, mean: s.mean, nan: s.nan } };
    }
    if (typeof v === "string" && v.length > 1024) return `${v.slice(0, 1024)}… (${v.length} characters)`;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item)]));
    return v;
  };
  return JSON.parse(JSON.stringify(walk(value), jsonReplacer));
}

/** For JSON.stringify: NDArrays as nested lists, non-finite numbers as strings ("nan", "inf"). */
export function jsonReplacer(key, value) {
  if (value instanceof NDArray) return value.toNested();
  if (typeof value === "number" && !Number.isFinite(value)) return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
  return value;
}
