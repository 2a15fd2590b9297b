// A form for a tool's arguments, built from its JSON input schema (as server/tools.py publishes
// it: pydantic's schema of the signature, with $defs for nested models).
//
// A control is {node, get()}: get() returns the value, `undefined` for an optional field left
// empty (left out of the arguments), and throws an Error naming the field when it cannot be used.

import { el } from "./dom.js";

let count = 0;
function nextId() {
  count += 1;
  return `tool-arg-${count}`;
}

function resolve(schema, root, seen = 0) {
  if (schema && typeof schema.$ref === "string" && seen < 32) {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    const target = match && root[match[1]] ? root[match[1]][match[2].replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
    if (target) return resolve({ ...target, ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "$ref")) }, root, seen + 1);
  }
  if (schema && Array.isArray(schema.allOf) && schema.allOf.length === 1) {
    const { allOf, ...rest } = schema;
    return resolve({ ...allOf[0], ...rest }, root, seen + 1);
  }
  return schema || {};
}

/** `anyOf: [X, {type: null}]` as X, nullable. */
function unwrapNullable(schema, root) {
  const options = schema.anyOf || schema.oneOf;
  if (Array.isArray(options)) {
    const rest = options.filter((option) => option.type !== "null");
    if (rest.length === 1 && rest.length < options.length) {
      const { anyOf, oneOf, ...own } = schema;
      return { schema: resolve({ ...rest[0], ...own }, root), nullable: true };
    }
  }
  return { schema, nullable: false };
}

function jsonControl(name, schema, required) {
  const area = el("textarea", { class: "json-input", rows: 3, id: nextId(), "data-arg": name, spellcheck: "false" });
  if (schema.default !== undefined) area.placeholder = JSON.stringify(schema.default);
  return {
    node: area,
    get() {
      if (area.value.trim() === "") {
        if (required) throw new Error(`${name}: required`);
        return undefined;
      }
      try {
        return JSON.parse(area.value);
      } catch (error) {
        throw new Error(`${name}: not JSON (${error.message})`);
      }
    },
  };
}

function fieldControl(name, rawSchema, required, root) {
  const { schema } = unwrapNullable(resolve(rawSchema, root), root);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  const id = nextId();
  if (Array.isArray(schema.enum)) {
    const select = el(
      "select",
      { id, "data-arg": name },
      required ? null : el("option", { value: "", text: "(unset)" }),
      schema.enum.map((value, index) => el("option", { value: String(index), text: JSON.stringify(value) })),
    );
    if (schema.default !== undefined) {
      const index = schema.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(schema.default));
      if (index >= 0) select.value = String(index);
    }
    return { node: select, get: () => (select.value === "" ? undefined : schema.enum[Number(select.value)]) };
  }
  if (type === "string") {
    const long = (schema.maxLength || 0) > 200 || /code|program|source|text|content/i.test(name) || schema.format === "textarea";
    const input = long
      ? el("textarea", { id, "data-arg": name, rows: 6, spellcheck: "false", class: "text-input" })
      : el("input", { id, "data-arg": name, type: "text", spellcheck: "false" });
    if (schema.maxLength !== undefined) input.maxLength = schema.maxLength;
    if (schema.default !== undefined) input.placeholder = String(schema.default);
    return {
      node: input,
      get() {
        if (input.value === "") {
          if (required && schema.default === undefined) {
            if ((schema.minLength || 0) > 0) throw new Error(`${name}: required`);
            return "";
          }
          return undefined;
        }
        if (schema.minLength !== undefined && input.value.length < schema.minLength) throw new Error(`${name}: at least ${schema.minLength} characters`);
        return input.value;
      },
    };
  }
  if (type === "number" || type === "integer") {
    const input = el("input", { id, "data-arg": name, type: "number", step: type === "integer" ? 1 : "any" });
    if (schema.minimum !== undefined) input.min = String(schema.minimum);
    if (schema.maximum !== undefined) input.max = String(schema.maximum);
    if (schema.default !== undefined && schema.default !== null) input.placeholder = String(schema.default);
    return {
      node: input,
      get() {
        if (input.value === "") {
          if (required) throw new Error(`${name}: required`);
          return undefined;
        }
        const value = Number(input.value);
        if (Number.isNaN(value)) throw new Error(`${name}: not a number`);
        if (type === "integer" && !Number.isInteger(value)) throw new Error(`${name}: expected an integer`);
        if (schema.minimum !== undefined && value < schema.minimum) throw new Error(`${name}: at least ${schema.minimum}`);
        if (schema.maximum !== undefined && value > schema.maximum) throw new Error(`${name}: at most ${schema.maximum}`);
        if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) throw new Error(`${name}: more than ${schema.exclusiveMinimum}`);
        if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) throw new Error(`${name}: less than ${schema.exclusiveMaximum}`);
        return value;
      },
    };
  }
  if (type === "boolean") {
    if (required) {
      const box = el("input", { id, "data-arg": name, type: "checkbox" });
      box.checked = schema.default === true;
      return { node: box, get: () => box.checked };
    }
    const select = el(
      "select",
      { id, "data-arg": name },
      el("option", { value: "", text: schema.default === undefined ? "(unset)" : `(default: ${schema.default})` }),
      el("option", { value: "true", text: "true" }),
      el("option", { value: "false", text: "false" }),
    );
    return { node: select, get: () => (select.value === "" ? undefined : select.value === "true") };
  }
  if (type === "object" && schema.properties) {
    const inner = objectControl(schema, root, name);
    return {
      node: inner.node,
      get() {
        const value = inner.get();
        if (!required && Object.keys(value).length === 0) return undefined;
        return value;
      },
    };
  }
  return jsonControl(name, schema, required);
}

function objectControl(schema, root, prefix = "") {
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, sub]) => {
    const path = prefix ? `${prefix}.${name}` : name;
    const control = fieldControl(path, sub, required.has(name), root);
    const resolved = resolve(sub, root);
    const description = resolved.description || sub.description;
    const mark = required.has(name) ? el("span", { class: "required", text: " *" }) : null;
    const nested = control.node.tagName === "FIELDSET";
    if (nested && mark) control.node.querySelector("legend").append(mark);
    return {
      name,
      control,
      node: el(
        "div",
        { class: "tool-field" },
        nested ? null : el("label", { for: control.node.id, class: "tool-field-name" }, name, mark),
        control.node,
        description ? el("div", { class: "hint", text: description }) : null,
      ),
    };
  });
  const node = prefix ? el("fieldset", { class: "field" }, el("legend", { text: prefix.split(".").pop() }), fields.map((f) => f.node)) : el("div", {}, fields.map((f) => f.node));
  return {
    node,
    get() {
      const value = {};
      for (const { name, control } of fields) {
        const item = control.get();
        if (item !== undefined) value[name] = item;
      }
      return value;
    },
  };
}

/** The form of a tool's arguments; `raw JSON` stands in for the fields when ticked. */
export function toolArgumentsForm(inputSchema) {
  const root = inputSchema || { type: "object", properties: {} };
  const schema = resolve(root, root);
  const fields = schema.type === "object" || schema.properties ? objectControl(schema, root) : null;
  const raw = el("textarea", { class: "json-input", rows: 4, id: "tool-raw-args", "data-testid": "tool-raw-args", spellcheck: "false", hidden: true });
  const toggle = el("input", { type: "checkbox", id: "tool-raw-toggle", "data-testid": "tool-raw-toggle" });
  const useRaw = () => toggle.checked || fields === null;
  toggle.addEventListener("change", () => {
    if (toggle.checked) {
      try {
        raw.value = JSON.stringify(fields ? fields.get() : {}, null, 1);
      } catch {
        raw.value = "{}";
      }
    }
    raw.hidden = !useRaw();
    if (fields) fields.node.hidden = useRaw();
  });
  if (fields === null) {
    raw.hidden = false;
    raw.value = "{}";
  }
  return {
    node: el(
      "div",
      { class: "tool-args" },
      fields ? fields.node : null,
      raw,
      fields ? el("label", { class: "inline-control hint" }, toggle, " edit the arguments as JSON") : null,
    ),
    get() {
      if (!useRaw()) return fields.get();
      let value;
      try {
        value = JSON.parse(raw.value || "{}");
      } catch (error) {
        throw new Error(`arguments: not JSON (${error.message})`);
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("arguments: expected a JSON object");
      return value;
    },
  };
}
