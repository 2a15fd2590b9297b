// Gymnasium spaces as /schema describes them (openenv_gym/spaces/codec.py): their names, random
// values, the wire form of an action, and a form control for each kind of space.

import { el, fmt } from "./dom.js";
import { nest } from "./wire.js";

export const ACTION_FIELD = "action";
export const OBSERVATION_FIELD = "observation";

const INTEGER_DTYPES = /^u?int|^bool/;

export function shapeSize(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function toNumber(value) {
  if (typeof value === "string") return Number(value.replace(/^inf$/, "Infinity").replace(/^-inf$/, "-Infinity"));
  return Number(value);
}

function flat(value, size) {
  if (!Array.isArray(value)) return new Array(size).fill(toNumber(value));
  const out = [];
  const walk = (v) => (Array.isArray(v) ? v.forEach(walk) : out.push(toNumber(v)));
  walk(value);
  return out;
}

/** A Box's bounds, one per element, with its shape, size and whether it holds integers. */
export function boxBounds(space) {
  const shape = space.shape.map(Number);
  const size = shapeSize(shape);
  return { shape, size, low: flat(space.low, size), high: flat(space.high, size), integer: INTEGER_DTYPES.test(space.dtype) };
}

function shapeText(shape) {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
}

/** The space as Gymnasium's repr names it: `Discrete(2)`, `Box(-2.0, 2.0, (1,), float32)`. */
export function describeSpace(space) {
  if (!space) return "none published";
  switch (space.type) {
    case "Discrete":
      return space.start ? `Discrete(${space.n}, start=${space.start})` : `Discrete(${space.n})`;
    case "Box": {
      const { shape, low, high } = boxBounds(space);
      const same = (values) => values.every((v) => Object.is(v, values[0]));
      const bound = (values) => (same(values) ? fmt(values[0]) : `[${values.slice(0, 4).map(fmt).join(" ")}${values.length > 4 ? " …" : ""}]`);
      return `Box(${bound(low)}, ${bound(high)}, ${shapeText(shape)}, ${space.dtype})`;
    }
    case "MultiDiscrete":
      return `MultiDiscrete(${JSON.stringify(space.nvec)})`;
    case "MultiBinary":
      return `MultiBinary(${JSON.stringify(space.n)})`;
    case "Text":
      return `Text(${space.min_length}, ${space.max_length}, charset of ${Array.from(space.charset).length})`;
    case "Dict":
      return `Dict(${Object.entries(space.spaces).map(([key, sub]) => `${key}: ${describeSpace(sub)}`).join(", ")})`;
    case "Tuple":
      return `Tuple(${space.spaces.map(describeSpace).join(", ")})`;
    default:
      return String(space.type);
  }
}

// Random values -------------------------------------------------------------------------------

function randomInt(low, highExclusive) {
  return low + Math.floor(Math.random() * (highExclusive - low));
}

function normal() {
  const u = 1 - Math.random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * Math.random());
}

function sampleBoxItem(low, high, integer) {
  let value;
  if (Number.isFinite(low) && Number.isFinite(high)) value = integer ? randomInt(low, high + 1) : low + Math.random() * (high - low);
  else if (Number.isFinite(low)) value = low - Math.log(1 - Math.random());
  else if (Number.isFinite(high)) value = high + Math.log(1 - Math.random());
  else value = normal();
  return integer ? Math.min(high, Math.max(low, Math.round(value))) : value;
}

/** A random value of `space`, as Gymnasium's `sample` draws it (a Discrete `mask` is honoured). */
export function sampleSpace(space, mask = null) {
  switch (space.type) {
    case "Discrete": {
      const allowed = mask && mask.length === space.n ? [...mask.keys()].filter((i) => mask[i]) : null;
      if (allowed && allowed.length) return space.start + allowed[randomInt(0, allowed.length)];
      return space.start + randomInt(0, space.n);
    }
    case "Box": {
      const { shape, low, high, integer } = boxBounds(space);
      return nest(low.map((l, i) => sampleBoxItem(l, high[i], integer)), shape);
    }
    case "MultiDiscrete": {
      const nvec = flat(space.nvec, 1);
      const start = space.start === undefined ? nvec.map(() => 0) : flat(space.start, nvec.length);
      const shape = Array.isArray(space.nvec) ? nestedShape(space.nvec) : [];
      return nest(nvec.map((n, i) => start[i] + randomInt(0, n)), shape);
    }
    case "MultiBinary": {
      const shape = Array.isArray(space.n) ? space.n : [space.n];
      return nest(new Array(shapeSize(shape)).fill(0).map(() => randomInt(0, 2)), shape);
    }
    case "Text": {
      const chars = Array.from(space.charset);
      const longest = Math.max(space.min_length, Math.min(space.max_length, 32));
      const length = randomInt(space.min_length, longest + 1);
      return Array.from({ length }, () => chars[randomInt(0, chars.length)]).join("");
    }
    case "Dict":
      return Object.fromEntries(Object.entries(space.spaces).map(([key, sub]) => [key, sampleSpace(sub)]));
    case "Tuple":
      return space.spaces.map((sub) => sampleSpace(sub));
    default:
      throw new Error(`no random values for a ${space.type} space`);
  }
}

function nestedShape(value) {
  const shape = [];
  for (let v = value; Array.isArray(v); v = v[0]) shape.push(v.length);
  return shape;
}

/** The step frame's data for an action: a Dict space's fields, else `{"action": value}`. */
export function actionToWire(space, value) {
  return space.type === "Dict" ? value : { [ACTION_FIELD]: value };
}

/** An observation out of its wire form: a Dict space's fields, else the `observation` field. */
export function observationFromWire(space, data) {
  if (!data || typeof data !== "object" || Array.isArray(data)) return data;
  // OpenEnv's metadata inside an observation is never one of its fields (as the Python client reads it).
  const { metadata: _metadata, ...fields } = data;
  if (!space || space.type === "Dict") return fields;
  return OBSERVATION_FIELD in fields ? fields[OBSERVATION_FIELD] : fields;
}

// Form controls -------------------------------------------------------------------------------
//
// Each control is {node, get(), set(value), problems(), setMask(mask)}: get() returns the value
// as the wire carries it; problems() lists what would make the server refuse it (`warning: `
// entries are shown but do not block the step).

let fieldCount = 0;
function fieldId(prefix) {
  fieldCount += 1;
  return `${prefix}-${fieldCount}`;
}

function clamp(value, low, high) {
  return Math.min(high, Math.max(low, value));
}

function elementLabel(index, shape) {
  if (shape.length <= 1) return `[${index}]`;
  const parts = [];
  for (let d = shape.length - 1, rest = index; d >= 0; d--) {
    parts.unshift(rest % shape[d]);
    rest = Math.floor(rest / shape[d]);
  }
  return `[${parts.join(",")}]`;
}

function discreteControl(space, { onPick, top, path }) {
  const n = space.n;
  let value = space.start;
  let mask = null;
  if (top && n <= 64) {
    const buttons = [];
    const node = el("div", { class: "discrete-buttons", "data-testid": "discrete-actions" });
    for (let i = 0; i < n; i++) {
      const action = space.start + i;
      const keyHint = i < 10 ? `key ${i}` : "";
      const button = el("button", {
        type: "button",
        class: "action-button",
        id: `action-${action}`,
        "data-testid": `action-${action}`,
        "data-action": action,
        title: keyHint,
        text: String(action),
        onclick: () => {
          value = action;
          onPick(action);
        },
      });
      buttons.push(button);
      node.append(button);
    }
    return {
      node,
      get: () => value,
      set: (v) => (value = v),
      problems: () => [],
      setMask(newMask) {
        mask = newMask && newMask.length === n ? newMask : null;
        buttons.forEach((button, i) => {
          const masked = mask !== null && !mask[i];
          button.classList.toggle("masked", masked);
          button.disabled = masked;
          button.title = masked ? "masked by info[\"action_mask\"]" : i < 10 ? `key ${i}` : "";
        });
      },
      mask: () => mask,
    };
  }
  const input =
    n <= 64
      ? el("select", { id: fieldId("discrete"), "data-path": path }, ...Array.from({ length: n }, (_, i) => el("option", { value: space.start + i, text: String(space.start + i) })))
      : el("input", { type: "number", id: fieldId("discrete"), "data-path": path, min: space.start, max: space.start + n - 1, step: 1, value: space.start });
  return {
    node: input,
    get: () => Number(input.value),
    set: (v) => (input.value = String(v)),
    problems() {
      const v = Number(input.value);
      return Number.isInteger(v) && v >= space.start && v < space.start + n ? [] : [`${path || "action"}: expected an integer in [${space.start}, ${space.start + n})`];
    },
    setMask() {},
  };
}

function boxControl(space, { path }) {
  const { shape, size, low, high, integer } = boxBounds(space);
  if (size > 16) {
    // A big Box: its value as JSON, checked for shape and bounds.
    const zero = nest(low.map((l, i) => clamp(0, l, high[i])), shape);
    const area = el("textarea", { class: "json-input", rows: 4, id: fieldId("box"), "data-path": path, spellcheck: "false" });
    area.value = JSON.stringify(zero);
    const read = () => JSON.parse(area.value);
    return {
      node: el("div", { class: "box-json" }, el("div", { class: "hint", text: `${describeSpace(space)}: a JSON array` }), area),
      get: read,
      set: (v) => (area.value = JSON.stringify(v)),
      problems() {
        let value;
        try {
          value = read();
        } catch (error) {
          return [`${path || "action"}: not JSON (${error.message})`];
        }
        const items = flat(value, size);
        if (items.length !== size || JSON.stringify(nestedShape(value)) !== JSON.stringify(shape)) return [`${path || "action"}: expected shape ${shapeText(shape)}`];
        const outside = items.findIndex((v, i) => !(v >= low[i] && v <= high[i]));
        return outside < 0 ? [] : [`${path || "action"}${elementLabel(outside, shape)}: outside [${fmt(low[outside])}, ${fmt(high[outside])}]`];
      },
      setMask() {},
    };
  }
  const inputs = [];
  const rows = [];
  for (let i = 0; i < size; i++) {
    const bounded = Number.isFinite(low[i]) && Number.isFinite(high[i]);
    const initial = clamp(0, low[i], high[i]);
    const step = integer ? 1 : bounded ? (high[i] - low[i]) / 200 : "any";
    const number = el("input", {
      type: "number",
      class: "box-number",
      id: fieldId("box"),
      "data-testid": `box-number-${path ? path + "-" : ""}${i}`,
      "data-index": i,
      step: integer ? 1 : "any",
      value: initial,
    });
    if (Number.isFinite(low[i])) number.min = String(low[i]);
    if (Number.isFinite(high[i])) number.max = String(high[i]);
    let slider = null;
    if (bounded) {
      slider = el("input", {
        type: "range",
        class: "box-slider",
        "data-testid": `box-slider-${path ? path + "-" : ""}${i}`,
        "data-index": i,
        min: low[i],
        max: high[i],
        step,
        value: initial,
        "aria-label": `${path || "action"}${elementLabel(i, shape)}`,
      });
      slider.addEventListener("input", () => (number.value = slider.value));
    }
    const clampInput = () => {
      let v = Number(number.value);
      if (number.value === "" || Number.isNaN(v)) v = initial;
      v = clamp(integer ? Math.round(v) : v, low[i], high[i]);
      number.value = String(v);
      if (slider) slider.value = String(v);
    };
    number.addEventListener("change", clampInput);
    number.addEventListener("input", () => {
      if (slider && number.value !== "") slider.value = number.value;
    });
    inputs.push({ number, slider, clampInput });
    rows.push(
      el(
        "div",
        { class: "box-row" },
        el("label", { class: "box-label", for: number.id, text: size > 1 ? elementLabel(i, shape) : shape.length ? "[0]" : "value" }),
        slider,
        number,
        el("span", { class: "hint box-bounds", text: `${fmt(low[i])} … ${fmt(high[i])}` }),
      ),
    );
  }
  const read = () =>
    nest(
      inputs.map(({ number, clampInput }) => {
        clampInput();
        return Number(number.value);
      }),
      shape,
    );
  return {
    node: el("div", { class: "box-control" }, rows),
    get: read,
    set(value) {
      const items = flat(value, size);
      inputs.forEach(({ number, slider }, i) => {
        number.value = String(items[i]);
        if (slider) slider.value = String(items[i]);
      });
    },
    problems: () => [],
    setMask() {},
  };
}

function multiDiscreteControl(space, { path }) {
  const nvec = flat(space.nvec, 1);
  const start = space.start === undefined ? nvec.map(() => 0) : flat(space.start, nvec.length);
  const shape = Array.isArray(space.nvec) ? nestedShape(space.nvec) : [];
  const selects = nvec.map((n, i) =>
    n <= 200
      ? el("select", { "data-index": i, id: fieldId("multidiscrete") }, ...Array.from({ length: n }, (_, k) => el("option", { value: start[i] + k, text: String(start[i] + k) })))
      : el("input", { type: "number", "data-index": i, id: fieldId("multidiscrete"), min: start[i], max: start[i] + n - 1, step: 1, value: start[i] }),
  );
  return {
    node: el("div", { class: "inline-controls" }, selects.map((select, i) => el("label", { class: "inline-control" }, el("span", { class: "hint", text: elementLabel(i, shape) }), select))),
    get: () => nest(selects.map((s) => Number(s.value)), shape),
    set: (value) => flat(value, nvec.length).forEach((v, i) => (selects[i].value = String(v))),
    problems: () =>
      selects.flatMap((s, i) => {
        const v = Number(s.value);
        return Number.isInteger(v) && v >= start[i] && v < start[i] + nvec[i] ? [] : [`${path || "action"}${elementLabel(i, shape)}: outside [${start[i]}, ${start[i] + nvec[i]})`];
      }),
    setMask() {},
  };
}

function multiBinaryControl(space) {
  const shape = Array.isArray(space.n) ? space.n : [space.n];
  const boxes = Array.from({ length: shapeSize(shape) }, (_, i) => el("input", { type: "checkbox", "data-index": i, id: fieldId("multibinary") }));
  return {
    node: el("div", { class: "inline-controls" }, boxes.map((box, i) => el("label", { class: "inline-control" }, box, el("span", { class: "hint", text: elementLabel(i, shape) })))),
    get: () => nest(boxes.map((b) => (b.checked ? 1 : 0)), shape),
    set: (value) => flat(value, boxes.length).forEach((v, i) => (boxes[i].checked = Boolean(v))),
    problems: () => [],
    setMask() {},
  };
}

function visible(char) {
  const code = char.codePointAt(0);
  return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, "0")}` : char;
}

function textControl(space, { path }) {
  const charset = new Set(Array.from(space.charset));
  const area = el("textarea", {
    class: "text-input",
    id: path ? fieldId("text") : "text-action",
    "data-testid": path ? `text-${path}` : "text-action",
    rows: space.max_length > 4096 ? 8 : space.max_length > 200 ? 4 : 2,
    spellcheck: "false",
    maxlength: space.max_length,
  });
  const counter = el("div", { class: "hint", "data-testid": "text-counter" });
  const problems = () => {
    const chars = Array.from(area.value);
    const found = [];
    if (chars.length < space.min_length || chars.length > space.max_length) {
      found.push(`${path || "action"}: expected ${space.min_length} to ${space.max_length} characters, got ${chars.length}`);
    }
    const outside = [...new Set(chars.filter((c) => !charset.has(c)))];
    if (outside.length) {
      found.push(`warning: ${path || "action"}: characters outside the space's charset (the server may refuse them): ${outside.slice(0, 8).map(visible).join(" ")}`);
    }
    return found;
  };
  const update = () => {
    const count = Array.from(area.value).length;
    const issues = problems();
    counter.textContent = `${count} / ${space.max_length} characters${issues.length ? " · " + issues.map((p) => p.replace(/^warning: /, "")).join("; ") : ""}`;
    counter.classList.toggle("invalid", issues.some((p) => !p.startsWith("warning: ")));
    counter.classList.toggle("warning", issues.length > 0);
  };
  area.addEventListener("input", update);
  update();
  return {
    node: el("div", { class: "text-control" }, area, counter),
    get: () => area.value,
    set(value) {
      area.value = String(value);
      update();
    },
    problems,
    setMask() {},
  };
}

/** A form control for values of `space`. A top-level Discrete space becomes one button per
 * action, each calling `onPick(action)`. */
export function spaceControl(space, { onPick = () => {}, top = true, path = "" } = {}) {
  switch (space.type) {
    case "Discrete":
      return discreteControl(space, { onPick, top, path });
    case "Box":
      return boxControl(space, { path });
    case "MultiDiscrete":
      return multiDiscreteControl(space, { path });
    case "MultiBinary":
      return multiBinaryControl(space, { path });
    case "Text":
      return textControl(space, { path });
    case "Dict":
    case "Tuple": {
      const entries = space.type === "Dict" ? Object.entries(space.spaces) : space.spaces.map((sub, i) => [String(i), sub]);
      const children = entries.map(([key, sub]) => [key, spaceControl(sub, { top: false, path: path ? `${path}.${key}` : key })]);
      const node = el(
        "div",
        { class: "nested-control" },
        children.map(([key, control]) => el("fieldset", { class: "field" }, el("legend", { text: space.type === "Dict" ? key : `[${key}]` }), control.node)),
      );
      return {
        node,
        get: () => (space.type === "Dict" ? Object.fromEntries(children.map(([key, c]) => [key, c.get()])) : children.map(([, c]) => c.get())),
        set: (value) => children.forEach(([key, c]) => c.set(value[space.type === "Dict" ? key : Number(key)])),
        problems: () => children.flatMap(([, c]) => c.problems()),
        setMask() {},
      };
    }
    default:
      throw new Error(`no form for a ${space.type} space`);
  }
}
