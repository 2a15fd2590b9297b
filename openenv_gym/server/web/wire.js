// The wire: JSON frames (with Python's NaN/Infinity), packed "OGB2" binary frames, and a session
// socket that pairs each request with its reply (a /ws session answers strictly in order).

export const BINARY_SUBPROTOCOL = "openenv-gym.binary.v2";
const MAGIC = [0x4f, 0x47, 0x42, 0x32]; // "OGB2"
const ARRAY = "$array";
const NON_FINITE = { "\u0000NaN": NaN, "\u0000Infinity": Infinity, "\u0000-Infinity": -Infinity };

/** An n-dimensional array: a dtype string ("|u1", "<f4"...), a shape, and its items flat (C order). */
export class NDArray {
  constructor(dtype, shape, data) {
    this.dtype = dtype;
    this.shape = shape;
    this.data = data;
  }

  get size() {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  /** The items as nested lists, as the JSON form of the array would hold them. */
  toNested() {
    return nest(Array.from(this.data, Number), this.shape);
  }
}

/** Flat items as nested lists of `shape` (a scalar for shape []). */
export function nest(flat, shape) {
  if (shape.length === 0) return flat[0];
  let index = 0;
  const build = (depth) => {
    const out = [];
    for (let i = 0; i < shape[depth]; i++) out.push(depth === shape.length - 1 ? flat[index++] : build(depth + 1));
    return out;
  };
  return build(0);
}

// Python's json writes NaN, Infinity and -Infinity bare; JSON.parse refuses them. Outside strings,
// each becomes a marker string that the reviver turns back into the number.
function quoteNonFinite(text) {
  let out = "";
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    for (const token of ["NaN", "Infinity", "-Infinity"]) {
      if (text.startsWith(token, i)) {
        out += text.slice(last, i) + JSON.stringify("\u0000" + token);
        i += token.length - 1;
        last = i + 1;
        break;
      }
    }
  }
  return out + text.slice(last);
}

/** JSON text into a value; `onArray` turns each `{"$array": {...}}` into what it stands for. */
export function parseJSON(text, onArray = inlineArray) {
  const revive = (key, value) => {
    if (typeof value === "string" && value in NON_FINITE) return NON_FINITE[value];
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === ARRAY) return onArray(value[ARRAY]);
    }
    return value;
  };
  try {
    return JSON.parse(text, revive);
  } catch (error) {
    if (!/NaN|Infinity/.test(text)) throw error;
    return JSON.parse(quoteNonFinite(text), revive);
  }
}

function flattenNested(value, out = []) {
  if (Array.isArray(value)) for (const item of value) flattenNested(item, out);
  else out.push(value);
  return out;
}

/** An array carried inline in JSON: `{"dtype", "shape", "data": [...]}` or object `items`. */
function inlineArray(described) {
  const shape = described.shape.map(Number);
  const flat = described.dtype === "object" ? described.items : flattenNested(described.data);
  if (described.scalar) return flat[0];
  return new NDArray(described.dtype, shape, flat);
}

const TYPED = {
  f4: Float32Array,
  f8: Float64Array,
  i1: Int8Array,
  i2: Int16Array,
  i4: Int32Array,
  u1: Uint8Array,
  u2: Uint16Array,
  u4: Uint32Array,
  b1: Uint8Array,
};
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function readItems(dtype, buffer, start, count) {
  const order = dtype[0];
  const code = dtype.slice(1);
  const size = Number(dtype.slice(2));
  const bytes = buffer.slice(start, start + count * size); // a copy: aligned for its typed view
  if (code === "i8" || code === "u8") {
    const view = new DataView(bytes);
    const out = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      out[i] = Number(code === "i8" ? view.getBigInt64(i * 8, order !== ">") : view.getBigUint64(i * 8, order !== ">"));
    }
    return out;
  }
  const Typed = TYPED[code];
  if (Typed === undefined) throw new Error(`a packed array of dtype ${dtype} cannot be read here`);
  if (size === 1 || order === "<" || (order === "=" && LITTLE_ENDIAN)) return new Typed(bytes);
  const view = new DataView(bytes);
  const out = new Typed(count);
  const getter = { f4: "getFloat32", f8: "getFloat64", i2: "getInt16", i4: "getInt32", u2: "getUint16", u4: "getUint32" }[code];
  for (let i = 0; i < count; i++) out[i] = view[getter](i * size, false);
  return out;
}

/** Whether a binary message is a packed value. */
export function isPacked(buffer) {
  const head = new Uint8Array(buffer, 0, Math.min(4, buffer.byteLength));
  return head.length === 4 && MAGIC.every((byte, i) => head[i] === byte);
}

/** The value a packed binary message holds: "OGB2", a little-endian uint32 header length, the
 * JSON header, then each array's raw bytes at its offset from the end of the header. */
export function unpack(buffer) {
  if (!isPacked(buffer)) throw new Error("not a packed binary message");
  const length = new DataView(buffer).getUint32(4, true);
  const bodyStart = 8 + length;
  if (bodyStart > buffer.byteLength) throw new Error("malformed binary message: the header runs past its end");
  const header = new TextDecoder().decode(new Uint8Array(buffer, 8, length));
  return parseJSON(header, (described) => {
    if (described.dtype === "object") return inlineArray(described);
    const shape = described.shape.map(Number);
    const count = shape.reduce((a, b) => a * b, 1);
    const size = Number(described.dtype.slice(2));
    const start = bodyStart + described.offset;
    if (!(described.offset >= 0) || start + count * size > buffer.byteLength) {
      throw new Error("malformed binary message: an array runs past its end");
    }
    const data = readItems(described.dtype, buffer, start, count);
    return described.scalar ? data[0] : new NDArray(described.dtype, shape, data);
  });
}

/** One frame off the socket: `{type, data}`, from JSON text or a packed binary message. */
export function parseMessage(message) {
  return typeof message === "string" ? parseJSON(message) : unpack(message);
}

/** The WebSocket URL of `path` on this page's origin. */
export function socketURL(path) {
  const url = new URL(path, window.location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

/** A WebSocket that answers requests in order. `request(frame)` resolves with the reply frame;
 * frames nobody asked for (a refusal before the first request, a watch socket's stream) go to
 * `onFrame`. `onState` hears "connecting", "connected", "closed" and "error". */
export class Socket {
  constructor(url, { onFrame = () => {}, onState = () => {}, binary = true } = {}) {
    this.url = url;
    this.onFrame = onFrame;
    this.onState = onState;
    this.pending = [];
    this.closeReason = "";
    this.ws = new WebSocket(url, binary ? [BINARY_SUBPROTOCOL] : []);
    this.ws.binaryType = "arraybuffer";
    this.onState("connecting");
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener("open", () => {
        this.onState("connected");
        resolve();
      });
      this.ws.addEventListener("close", (event) => {
        this.closeReason = event.reason || `code ${event.code}`;
        reject(new Error(`the connection closed: ${this.closeReason}`));
      });
    });
    this.opened.catch(() => {}); // a refusal is reported through onState and onFrame
    this.ws.addEventListener("message", (event) => this.receive(event.data));
    this.ws.addEventListener("error", () => this.onState("error"));
    this.ws.addEventListener("close", (event) => {
      for (const { reject } of this.pending.splice(0)) reject(new Error(`the connection closed: ${this.closeReason}`));
      this.onState(event.wasClean || event.code === 1000 ? "closed" : "error", this.closeReason);
    });
  }

  get isOpen() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  receive(message) {
    let frame;
    try {
      frame = parseMessage(message);
    } catch (error) {
      frame = { type: "error", data: { code: "PAGE_ERROR", message: `unreadable frame: ${error.message}` } };
    }
    const waiting = this.pending.shift();
    if (waiting) waiting.resolve(frame);
    else this.onFrame(frame);
  }

  /** Send one frame; resolves with the server's reply (rejects when the connection closes). */
  async request(frame) {
    await this.opened;
    if (!this.isOpen) throw new Error(`the connection closed: ${this.closeReason}`);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.ws.send(JSON.stringify(frame));
    });
  }

  /** Send one frame and expect no reply (a watch socket answers only to refuse). */
  send(frame) {
    if (this.isOpen) this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  close() {
    this.ws.close(1000);
  }
}
