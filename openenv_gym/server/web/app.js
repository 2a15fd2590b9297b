// The web debug page of an openenv-gym server (GET /web). Each page load opens its own /ws session
// on the page's origin (in the render mode /schema offers: rgb_array, else ansi), or, with
// ?watch=<session id>, a read-only view of another session's transitions (/web/watch).
//
// Stable ids and data-testid attributes (the browser tests rely on them):
//   #connection[data-state]          connecting | connected | closed | error (+ #connection-text)
//   #env-id #env-name #action-space #observation-space #render-modes #render-fps #time-limit
//   #error-banner (hidden unless an error) #error-code #error-message #error-dismiss
//   #controls                        every control that acts (hidden and disabled when watching)
//   #seed #reset-options #reset
//   #action-form                     [data-testid=action-<a>] one button per Discrete action a;
//                                    [data-testid=box-slider-<i>] / [data-testid=box-number-<i>]
//                                    per Box element (<path>-<i> inside a Dict); #text-action
//   #step #random-action #fill-random #action-problems
//   #random-n #random-steps #run[data-running] #auto-reset
//   #tools-panel #tool-select #tool-form [data-arg=<name>] #call-tool #tool-result
//   #raw-action #raw-step
//   #frame (canvas, rgb_array) #frame-text (ansi) #viewing (shown when scrubbed into the past)
//   #observation #info #last-reward #last-terminated #last-truncated #last-action
//   #episode-count #step-count #episode-return #total-steps   (each with data-value)
//   svg #plot-reward #plot-return #plot-episode-return #plot-episode-length, each holding
//     path[data-testid=plot-<name>-line][data-points] once it has data (name: reward, return,
//     episode-return, episode-length)
//   #scrubber #scrub-label #scrub-live #history-list #download-log
//   #sessions-panel #sessions-list [data-testid=watch-<session id>] #watch-banner
//   #conversation-panel #conversation  (a model-call env's episode: see conversation.js)
//   body[data-ready]                 "true" once /schema is read and the session is open
// From the console: window.openenvGymPage holds the page's state.

import { byId, el, fmt } from "./dom.js";
import { Conversation, publishesModelCalls } from "./conversation.js";
import { linePlot } from "./plots.js";
import { toolArgumentsForm } from "./schema_form.js";
import { actionToWire, describeSpace, observationFromWire, sampleSpace, spaceControl } from "./spaces.js";
import { drawImage, jsonReplacer, logSummary, treeNode, valueNode } from "./view.js";
import { NDArray, Socket, socketURL } from "./wire.js";

const HISTORY_LENGTH = 1000;
const FRAME_BYTES = 48 * 2 ** 20; // what the history's frames may take, compressed
const LOG_LINES = 20000;
const SESSIONS_EVERY_MS = 2000;
const EPISODES_KEPT = 10000; // the per-episode plots' data (a watched trainer may end thousands)

/** The last HISTORY_LENGTH transitions, each with its frame (a JPEG blob or ansi text). */
class History {
  constructor(length) {
    this.length = length;
    this.records = [];
    this.frameBytes = 0;
  }

  /** Add `record`; returns whether the oldest one was dropped to make room. */
  push(record) {
    this.records.push(record);
    if (this.records.length <= this.length) return false;
    this.forget(this.records.shift());
    return true;
  }

  forget(record) {
    if (record.frame && record.frame.blob) this.frameBytes -= record.frame.blob.size;
    record.frame = null;
  }

  keepFrame(record, blob) {
    if (!this.records.includes(record)) return;
    record.frame.blob = blob;
    this.frameBytes += blob.size;
    for (const old of this.records) {
      if (this.frameBytes <= FRAME_BYTES) break;
      if (old !== record && old.frame && old.frame.blob) this.forget(old);
    }
  }
}

const page = {
  schema: null,
  metadata: null,
  actionSpace: null,
  observationSpace: null,
  tools: [],
  renderMode: null,
  renderFailed: false,
  fps: 10,
  socket: null,
  watching: null, // the watched session's id (watch mode)
  watchingEnv: null, // and its sub-env, for a batch or vector session
  control: null,
  toolForm: null,
  queue: Promise.resolve(),
  queued: 0,
  running: false,
  episode: newEpisode(0, null),
  episodes: [],
  totalSteps: 0,
  lastInfo: {},
  history: new History(HISTORY_LENGTH),
  log: [],
  logDropped: 0,
  cursor: null, // an index into history.records while scrubbing; null follows the live step
  nextId: 0,
  shownFrame: null, // the id of the record whose frame the canvas shows
  conversation: null, // a Conversation when the env's observation is a model call
};
window.openenvGymPage = page;

function newEpisode(index, seed) {
  return { index, seed, step: 0, return: 0, rewards: [], returns: [], started: index > 0, done: false, logged: false };
}

// Errors and connection ---------------------------------------------------------------------

function showError(data) {
  const banner = byId("error-banner");
  byId("error-code").textContent = String(data.code || "ERROR");
  byId("error-message").textContent = String(data.message || "");
  const details = Object.fromEntries(Object.entries(data).filter(([key]) => key !== "code" && key !== "message"));
  const box = byId("error-details-box");
  box.hidden = Object.keys(details).length === 0;
  byId("error-details").textContent = details.traceback ? String(details.traceback) : JSON.stringify(details, jsonReplacer, 1);
  banner.hidden = false;
}

function hideError() {
  byId("error-banner").hidden = true;
}

function setConnection(state, reason = "") {
  const node = byId("connection");
  node.dataset.state = state;
  const again = state === "closed" || state === "error" ? " · reload the page for a new session" : "";
  byId("connection-text").textContent = reason && state !== "connected" ? `${state}: ${reason}${again}` : state;
  node.title = byId("connection-text").textContent;
  if (state !== "connected") stopRunning();
}

/** A page-side failure: shown in the banner, as a server's error frame is. */
class PageError extends Error {}

// The episode's transitions -----------------------------------------------------------------

/** Take in one transition (ours or a watched session's) and show it. A watched one comes with
 * `episode`, the server's count of its episode (every step, sent or not), shown as it is. */
function takeTransition({ event, action, data, frame, seed = null, options = null, skipped = 0, episode = null }) {
  const info = data.info && typeof data.info === "object" ? data.info : {};
  const reward = typeof data.reward === "number" ? data.reward : Number(data.reward) || 0;
  if (episode !== null) {
    followEpisode(event, data, reward, episode);
  } else if (event === "reset") {
    closeEpisode();
    page.episode = newEpisode(page.episode.index + 1, seed);
    page.episode.started = true;
  } else {
    page.episode.step += 1;
    page.episode.return += reward;
    page.episode.rewards.push(reward);
    page.episode.returns.push(page.episode.return);
    page.totalSteps += 1;
    if (data.done || data.truncated) {
      page.episode.done = true;
      closeEpisode();
    }
  }
  page.lastInfo = info;
  const record = {
    id: page.nextId++,
    event,
    episode: page.episode.index,
    step: page.episode.step,
    action,
    data,
    skipped,
    frame: null,
  };
  if (page.history.push(record) && page.cursor !== null) page.cursor = Math.max(0, page.cursor - 1); // same record
  appendLog(record, seed, options);
  if (page.conversation) page.conversation.take(event, action, data, record.episode, skipped);
  attachFrame(record, frame);
  refresh();
}

function closeEpisode() {
  const episode = page.episode;
  if (!episode.started || episode.logged || episode.step === 0) return;
  episode.logged = true;
  keepEpisode({ index: episode.index, return: episode.return, length: episode.step });
}

function keepEpisode(episode) {
  page.episodes.push(episode);
  if (page.episodes.length > EPISODES_KEPT) page.episodes.shift();
}

/** Watch mode: the page's episode is the server's, whose transitions come sampled (a new index
 * is a new episode, its reset sent or not). */
function followEpisode(event, data, reward, episode) {
  const index = Number(episode.index) || 0;
  if (index !== page.episode.index) {
    page.episode = newEpisode(index, null);
    page.episode.started = true;
  }
  page.episode.step = Number(episode.length) || 0;
  page.episode.return = Number(episode.return) || 0;
  if (event === "step") {
    page.episode.rewards.push(reward);
    page.episode.returns.push(page.episode.return);
    page.episode.done = Boolean(data.done || data.truncated);
  }
}

function frameRecord(frame) {
  if (frame instanceof NDArray && frame.shape.length >= 2) return { kind: "image", blob: null, width: frame.shape[1], height: frame.shape[0] };
  if (typeof frame === "string") return { kind: "text", text: frame };
  return null;
}

const scratch = document.createElement("canvas"); // frames are drawn here, then kept as JPEG

/** Give `record` its frame: kept in the history, and shown when the page follows the live step. */
function attachFrame(record, frame) {
  record.frame = frameRecord(frame);
  if (!record.frame) return;
  if (record.frame.kind === "text") {
    if (page.cursor === null) showTextFrame(record);
    return;
  }
  drawImage(scratch, frame);
  if (page.cursor === null) {
    const canvas = byId("frame");
    canvas.width = scratch.width;
    canvas.height = scratch.height;
    canvas.getContext("2d").drawImage(scratch, 0, 0);
    page.shownFrame = record.id;
    showFrameKind("image");
  }
  scratch.toBlob((blob) => blob && page.history.keepFrame(record, blob), "image/jpeg", 0.85);
}

function showTextFrame(record) {
  byId("frame-text").textContent = record.frame.text;
  page.shownFrame = record.id;
  showFrameKind("text");
}

function appendLog(record, seed, options) {
  const data = record.data;
  const line = { episode: record.episode, step: record.step, event: record.event };
  if (record.event === "reset") {
    line.seed = seed;
    line.options = options;
  }
  line.action = record.action;
  line.reward = data.reward === undefined ? null : data.reward;
  line.terminated = Boolean(data.done);
  line.truncated = Boolean(data.truncated);
  line.info = data.info || {};
  if (record.skipped) line.skipped = record.skipped;
  line.observation = logSummary(observationFromWire(page.observationSpace, data.observation));
  page.log.push(JSON.stringify(line, jsonReplacer));
  if (page.log.length > LOG_LINES) {
    page.log.shift();
    page.logDropped += 1;
  }
}

// Showing the state -------------------------------------------------------------------------

function setCounter(id, value) {
  const node = byId(id);
  node.dataset.value = String(value);
  node.textContent = fmt(value);
}

function refresh() {
  setCounter("episode-count", page.episode.index);
  setCounter("step-count", page.episode.step);
  setCounter("episode-return", page.episode.return);
  setCounter("total-steps", page.totalSteps);
  const records = page.history.records;
  const scrubber = byId("scrubber");
  scrubber.max = String(Math.max(0, records.length - 1));
  if (page.cursor === null) scrubber.value = scrubber.max;
  byId("history-size").textContent = `${records.length} / ${HISTORY_LENGTH}`;
  byId("log-size").textContent = `${page.log.length} lines${page.logDropped ? ` (${page.logDropped} oldest dropped)` : ""}`;
  drawPlots();
  showRecord(page.cursor === null ? records[records.length - 1] : records[page.cursor], page.cursor === null);
  listHistory();
  if (page.control) page.control.setMask(Array.isArray(page.lastInfo.action_mask) ? page.lastInfo.action_mask : null);
}

function drawPlots() {
  linePlot(byId("plot-reward"), page.episode.rewards, { name: "reward", x0: 1 });
  linePlot(byId("plot-return"), page.episode.returns, { name: "return", x0: 1 });
  const episodes = page.episodes;
  const x0 = episodes.length ? episodes[0].index : 1;
  linePlot(byId("plot-episode-return"), episodes.map((e) => e.return), { name: "episode-return", x0, xLabel: "episode" });
  linePlot(byId("plot-episode-length"), episodes.map((e) => e.length), { name: "episode-length", x0, xLabel: "episode" });
}

function describeAction(action) {
  if (action === null || action === undefined) return "–";
  if (action && action.type === "call_tool" && typeof action.tool_name === "string") {
    return `${action.tool_name} ${JSON.stringify(action.arguments || {}, jsonReplacer)}`;
  }
  if (page.actionSpace && page.actionSpace.type !== "Dict" && action && typeof action === "object" && "action" in action && Object.keys(action).length === 1) {
    return JSON.stringify(action.action, jsonReplacer);
  }
  return JSON.stringify(action, jsonReplacer);
}

function resultText(result) {
  if (!result) return "";
  const texts = (result.content || []).filter((part) => part && typeof part.text === "string").map((part) => part.text);
  if (texts.length) return texts.join("\n");
  const data = result.data !== undefined ? result.data : result.structured_content;
  if (data === undefined || data === null) return "";
  return typeof data === "string" ? data : JSON.stringify(data, null, 1);
}

function showRecord(record, live) {
  const viewing = byId("viewing");
  viewing.hidden = live || !record;
  if (!record) return;
  if (!live) viewing.textContent = `history: episode ${record.episode}, step ${record.step}`;
  const data = record.data;
  byId("scrub-label").textContent = `${live ? "live · " : ""}episode ${record.episode}, ${record.event === "reset" ? "reset" : `step ${record.step}`}`;
  byId("last-reward").textContent = data.reward === null || data.reward === undefined ? "–" : fmt(data.reward);
  byId("last-terminated").textContent = String(Boolean(data.done));
  byId("last-truncated").textContent = String(Boolean(data.truncated));
  byId("last-terminated").classList.toggle("flag-on", Boolean(data.done));
  byId("last-truncated").classList.toggle("flag-on", Boolean(data.truncated));
  byId("last-action").textContent = record.event === "reset" ? "reset" : describeAction(record.action);
  byId("last-action").title = byId("last-action").textContent;
  const observation = observationFromWire(page.observationSpace, data.observation);
  byId("observation").replaceChildren(valueNode(observation, page.observationSpace));
  byId("info").replaceChildren(treeNode(data.info || {}));
  const toolCall = data.observation && typeof data.observation === "object" && "tool_name" in data.observation;
  byId("tool-result-box").hidden = !toolCall;
  if (toolCall) {
    const obs = data.observation;
    byId("tool-result").textContent = obs.error
      ? `${obs.tool_name}: ${obs.error.error_type || "error"}: ${obs.error.message || ""}`
      : `${resultText(obs.result)}`;
    byId("tool-result").classList.toggle("invalid", Boolean(obs.error));
  }
  if (!live) showStoredFrame(record);
}

function showFrameKind(kind) {
  kind = kind || null;
  byId("frame").hidden = kind !== "image";
  byId("frame-text").hidden = kind !== "text";
  byId("frame-empty").hidden = kind !== null;
}

function showStoredFrame(record) {
  const frame = record.frame;
  if (!frame) return showFrameKind(null);
  if (frame.kind === "text") return showTextFrame(record);
  if (page.shownFrame === record.id) return showFrameKind("image");
  if (!frame.blob) return showFrameKind(null); // dropped to keep the history's memory bounded
  page.shownFrame = record.id;
  showFrameKind("image");
  createImageBitmap(frame.blob).then((bitmap) => {
    if (page.shownFrame === record.id) {
      const canvas = byId("frame");
      canvas.width = bitmap.width;
      canvas.height = bitmap.height;
      canvas.getContext("2d").drawImage(bitmap, 0, 0);
    }
    bitmap.close();
  });
}

function listHistory() {
  const records = page.history.records;
  const at = page.cursor === null ? records.length - 1 : page.cursor;
  const from = Math.max(0, Math.min(at - 3, records.length - 6));
  const items = records.slice(from, from + 6).map((record, k) => {
    const index = from + k;
    const text = record.event === "reset" ? `e${record.episode} reset` : `e${record.episode} s${record.step}  a=${describeAction(record.action)}  r=${fmt(Number(record.data.reward ?? 0))}${record.data.done ? " term" : ""}${record.data.truncated ? " trunc" : ""}`;
    return el("li", { class: index === at ? "current" : "", "data-index": index, text, onclick: () => scrubTo(index) });
  });
  byId("history-list").replaceChildren(...items);
}

function scrubTo(index) {
  const records = page.history.records;
  const last = records.length - 1;
  page.cursor = index >= last ? null : index;
  byId("scrubber").value = String(index);
  refresh();
  if (page.cursor === null && records[last]) showStoredFrame(records[last]);
}

// Talking to our session --------------------------------------------------------------------

/** Run `task` after every task queued before it (clicks are taken in order, none dropped). */
function enqueue(task) {
  page.queued += 1;
  const run = page.queue.then(task).finally(() => (page.queued -= 1));
  page.queue = run.catch(() => {});
  return run;
}

async function ask(frame) {
  if (!page.socket) throw new PageError("no session: this page is watching another one");
  let reply;
  try {
    reply = await page.socket.request(frame);
  } catch (error) {
    showError({ code: "CONNECTION_CLOSED", message: error.message });
    throw new PageError(error.message);
  }
  if (reply.type === "error") {
    showError(reply.data || {});
    throw new PageError(String((reply.data || {}).message));
  }
  return reply;
}

async function render() {
  if (!page.renderMode || page.renderFailed) return null;
  try {
    const reply = await ask({ type: "render" });
    if (reply.type === "render") return reply.data ? reply.data.frame : null;
  } catch (error) {
    page.renderFailed = true; // shown once in the banner; later steps go on without frames
  }
  return null;
}

async function transition(event, data, extra = {}) {
  const reply = await ask({ type: event, data });
  if (reply.type !== "observation") {
    showError({ code: "PAGE_ERROR", message: `expected an observation frame, got ${reply.type}` });
    throw new PageError("unexpected reply");
  }
  const frame = await render();
  takeTransition({ event, action: event === "step" ? data : null, data: reply.data, frame, ...extra });
  if (event === "reset" || !reply.data.done) hideErrorIfStale();
  return reply.data;
}

function hideErrorIfStale() {
  const code = byId("error-code").textContent;
  if (code === "PAGE_ERROR" || code === "VALIDATION_ERROR" || code === "EXECUTION_ERROR") hideError();
}

function resetData() {
  const data = {};
  const seedText = byId("seed").value.trim();
  if (seedText !== "") {
    const seed = Number(seedText);
    if (!Number.isInteger(seed)) throw new PageError("the seed must be an integer");
    data.seed = seed;
  }
  const optionsText = byId("reset-options").value.trim();
  if (optionsText !== "") {
    let options;
    try {
      options = JSON.parse(optionsText);
    } catch (error) {
      throw new PageError(`options: not JSON (${error.message})`);
    }
    if (options === null || typeof options !== "object" || Array.isArray(options)) throw new PageError("options: expected a JSON object");
    data.options = options;
  }
  return data;
}

function doReset() {
  return enqueue(async () => {
    let data;
    try {
      data = resetData();
    } catch (error) {
      showError({ code: "PAGE_ERROR", message: error.message });
      throw error;
    }
    return transition("reset", data, { seed: data.seed === undefined ? null : data.seed, options: data.options || null });
  });
}

function doStep(wire) {
  return enqueue(() => transition("step", wire));
}

function formAction() {
  const problems = page.control.problems();
  const blocking = problems.filter((p) => !p.startsWith("warning: "));
  byId("action-problems").textContent = problems.map((p) => p.replace(/^warning: /, "")).join("\n");
  if (blocking.length) throw new PageError(blocking.join("; "));
  return actionToWire(page.actionSpace, page.control.get());
}

function randomAction() {
  const mask = Array.isArray(page.lastInfo.action_mask) ? page.lastInfo.action_mask : null;
  const value = sampleSpace(page.actionSpace, mask);
  page.control.set(value);
  return actionToWire(page.actionSpace, value);
}

function stepWithForm() {
  try {
    return doStep(formAction());
  } catch (error) {
    showError({ code: "PAGE_ERROR", message: error.message });
    return Promise.resolve();
  }
}

async function randomSteps(count) {
  for (let i = 0; i < count; i++) {
    if (!page.episode.started || page.episode.done) break;
    await doStep(randomAction());
  }
}

function startRunning() {
  if (page.running || !page.actionSpace) return;
  page.running = true;
  byId("run").textContent = "Pause";
  byId("run").dataset.running = "true";
  runLoop().catch(() => stopRunning());
}

function stopRunning() {
  page.running = false;
  const run = document.getElementById("run");
  if (run) {
    run.textContent = "Run";
    run.dataset.running = "false";
  }
}

async function runLoop() {
  while (page.running) {
    const started = performance.now();
    if (!page.episode.started || page.episode.done) {
      if (!byId("auto-reset").checked && page.episode.done) break;
      await doReset();
    } else {
      await doStep(randomAction());
    }
    const wait = 1000 / page.fps - (performance.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  stopRunning();
}

// Building the page from /schema ------------------------------------------------------------

async function getJSON(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = { message: text };
  }
  if (!response.ok) {
    const error = new PageError(`GET ${path}: ${response.status} ${body.message || ""}`);
    error.data = { code: body.code || `HTTP_${response.status}`, ...body };
    throw error;
  }
  return body;
}

/** rgb_array, else ansi, among the modes offered; `?render_mode=` on the page's URL may pick. */
function chooseRenderMode(modes) {
  const asked = new URLSearchParams(window.location.search).get("render_mode");
  if (asked === "none") return null;
  if (asked && modes.includes(asked) && !asked.endsWith("_list") && asked !== "human") return asked;
  for (const mode of ["rgb_array", "ansi"]) if (modes.includes(mode)) return mode;
  return null;
}

function describeEnvironment() {
  const { schema, metadata } = page;
  const spaces = schema.spaces || {};
  page.actionSpace = spaces.action || null;
  page.observationSpace = spaces.observation || null;
  page.tools = Array.isArray(schema.tools) ? schema.tools : [];
  const render = schema.render || {};
  const modes = Array.isArray(render.modes) ? render.modes : [];
  page.renderMode = chooseRenderMode(modes);
  if (typeof render.fps === "number" && render.fps > 0) page.fps = render.fps;
  const id = metadata.target || metadata.name || "environment";
  byId("env-id").textContent = id;
  byId("env-name").textContent = metadata.name && metadata.name !== id ? metadata.name : "";
  document.title = `${id} · openenv-gym`;
  byId("env-description").textContent = metadata.description || "";
  byId("action-space").textContent = page.actionSpace ? describeSpace(page.actionSpace) : page.tools.length ? "tool calls" : "none published (raw JSON steps)";
  byId("observation-space").textContent = describeSpace(page.observationSpace);
  const mine = page.renderMode && !watchedSession() ? ` (this page: ${page.renderMode})` : "";
  byId("render-modes").textContent = modes.length ? `${modes.join(", ")}${mine}` : "none";
  byId("render-fps").textContent = typeof render.fps === "number" ? String(render.fps) : "not published (runs at 10)";
  const limit = metadata.max_episode_steps ?? schema.max_episode_steps;
  byId("time-limit").textContent = typeof limit === "number" ? `${limit} steps` : "not published (truncated shows when one is hit)";
  byId("frame-mode").textContent = page.renderMode ? `(${page.renderMode})` : "";
  byId("frame-panel").hidden = !page.renderMode;
  byId("run-fps").textContent = `run: ${page.fps} steps/s`;
  const modelCalls = publishesModelCalls(schema);
  byId("conversation-panel").hidden = !modelCalls;
  page.conversation = modelCalls ? new Conversation(byId("conversation")) : null;
}

function buildActionForm() {
  const form = byId("action-form");
  if (!page.actionSpace) {
    form.replaceChildren(el("p", { class: "hint", text: page.tools.length ? "This env is driven by its tools (below)." : "No action space published: send raw JSON steps (below)." }));
    for (const id of ["step", "random-action", "fill-random", "random-steps", "run"]) byId(id).disabled = true;
    byId("action-panel").hidden = page.tools.length > 0; // the tools panel takes its place
    if (!page.tools.length) byId("raw-panel").open = true;
    return;
  }
  try {
    page.control = spaceControl(page.actionSpace, { onPick: (action) => doStep(actionToWire(page.actionSpace, action)) });
  } catch (error) {
    form.replaceChildren(el("p", { class: "hint", text: `${error.message}: use a raw JSON step (below).` }));
    page.actionSpace = null;
    return;
  }
  form.replaceChildren(page.control.node);
  byId("keyboard-help").hidden = page.actionSpace.type !== "Discrete";
}

function buildTools() {
  if (!page.tools.length) return;
  byId("tools-panel").hidden = false;
  const select = byId("tool-select");
  select.replaceChildren(...page.tools.map((tool, i) => el("option", { value: String(i), text: String(tool.name) })));
  const choose = () => {
    const tool = page.tools[Number(select.value)];
    byId("tool-description").textContent = tool.description || "";
    page.toolForm = toolArgumentsForm(tool.input_schema || tool.inputSchema);
    byId("tool-form").replaceChildren(page.toolForm.node);
    byId("tool-problems").textContent = "";
  };
  select.addEventListener("change", choose);
  choose();
}

function callTool() {
  const tool = page.tools[Number(byId("tool-select").value)];
  let args;
  try {
    args = page.toolForm.get();
  } catch (error) {
    byId("tool-problems").textContent = error.message;
    return Promise.resolve();
  }
  byId("tool-problems").textContent = "";
  return doStep({ type: "call_tool", tool_name: tool.name, arguments: args });
}

function rawStep() {
  let data;
  try {
    data = JSON.parse(byId("raw-action").value || "{}");
  } catch (error) {
    showError({ code: "PAGE_ERROR", message: `raw step: not JSON (${error.message})` });
    return;
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    showError({ code: "PAGE_ERROR", message: "raw step: the step frame's data is a JSON object" });
    return;
  }
  doStep(data).catch(() => {});
}

function downloadLog() {
  const blob = new Blob(page.log.map((line) => line + "\n"), { type: "application/x-ndjson" });
  const url = URL.createObjectURL(blob);
  const id = String(page.metadata && (page.metadata.target || page.metadata.name) || "env").replace(/[^A-Za-z0-9._-]+/g, "_");
  const link = el("a", { href: url, download: `${id}-episodes.jsonl`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const quiet = (promise) => promise && promise.catch && promise.catch(() => {});

function wireControls() {
  byId("error-dismiss").addEventListener("click", hideError);
  byId("reset").addEventListener("click", () => quiet(doReset()));
  byId("step").addEventListener("click", () => quiet(stepWithForm()));
  byId("random-action").addEventListener("click", () => page.actionSpace && quiet(doStep(randomAction())));
  byId("fill-random").addEventListener("click", () => page.actionSpace && randomAction());
  byId("random-steps").addEventListener("click", () => {
    const count = Math.max(1, Math.min(10000, Number(byId("random-n").value) || 1));
    quiet(randomSteps(count));
  });
  byId("run").addEventListener("click", () => (page.running ? stopRunning() : startRunning()));
  byId("call-tool").addEventListener("click", () => quiet(callTool()));
  byId("raw-step").addEventListener("click", rawStep);
  byId("download-log").addEventListener("click", downloadLog);
  byId("scrubber").addEventListener("input", (event) => scrubTo(Number(event.target.value)));
  byId("scrub-live").addEventListener("click", () => scrubTo(page.history.records.length - 1));
  document.addEventListener("keydown", onKey);
}

const ARROWS = { ArrowLeft: 0, ArrowRight: 1, ArrowUp: 2, ArrowDown: 3 };

function onKey(event) {
  if (page.watching || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))) return;
  const space = page.actionSpace;
  if (event.key === " ") {
    event.preventDefault();
    return page.running ? stopRunning() : startRunning();
  }
  if (event.key === "r" || event.key === "R") return quiet(doReset());
  if (!space || space.type !== "Discrete") return;
  let index = null;
  if (/^[0-9]$/.test(event.key)) index = Number(event.key);
  else if (event.key in ARROWS) index = ARROWS[event.key];
  if (index === null || index >= space.n) return;
  const mask = page.control.mask ? page.control.mask() : null;
  if (mask && !mask[index]) return;
  event.preventDefault();
  quiet(doStep(actionToWire(space, space.start + index)));
}

// Watch mode --------------------------------------------------------------------------------

/** The watched session's name: its id, and the sub-env of a batch or vector session. */
function watchLabel() {
  return page.watchingEnv === null ? page.watching : `${page.watching} #${page.watchingEnv}`;
}

function enterWatchMode(id, subEnv) {
  page.watching = id;
  page.watchingEnv = subEnv;
  document.body.classList.add("watching");
  const controls = byId("controls");
  controls.hidden = true;
  for (const node of controls.querySelectorAll("button, input, select, textarea")) node.disabled = true;
  byId("watch-banner").hidden = false;
  byId("watch-text").textContent = `watching session ${watchLabel()} (read-only)`;
}

function watch(id, subEnv) {
  enterWatchMode(id, subEnv);
  let awaitingFrame = null; // the last watched record, which a binary render frame may follow
  page.socket = null;
  const query = `session=${encodeURIComponent(id)}${subEnv === null ? "" : `&env=${encodeURIComponent(subEnv)}`}`;
  page.watchSocket = new Socket(socketURL(`/web/watch?${query}`), {
    onState: (state, reason) => setConnection(state, reason),
    onFrame(frame) {
      const data = frame.data || {};
      if (frame.type === "watch_hello") {
        const session = data.session || {};
        const what = session.size > 1 ? `${session.kind} of ${session.size}, sub-env ${subEnv ?? 0}` : session.kind || "plain";
        byId("watch-text").textContent = `watching session ${watchLabel()} (read-only) · ${what}${session.render_mode ? ` · renders ${session.render_mode}` : ""}`;
        byId("frame-panel").hidden = !session.render_mode;
        byId("frame-mode").textContent = session.render_mode ? `(${session.render_mode})` : "";
        page.totalSteps = Number(session.steps) || 0;
        page.episode = newEpisode(Number(session.episodes) || 0, null); // the episode it is in
        refresh();
      } else if (frame.type === "watch_step") {
        // Transitions come sampled, at most a few a second: `index` is the session's count of steps
        // so far, `episode` the server's count of the current episode (every step) and `ended`
        // the episodes that ended since the last message, each whether or not its end was sent.
        const reply = data.reply && data.reply.type === "observation" ? data.reply.data || {} : {};
        const event = data.event === "reset" ? "reset" : "step";
        const index = Number(data.index) || 0;
        const skipped = event === "step" ? Math.max(0, index - page.totalSteps - 1) : 0;
        for (const ended of Array.isArray(data.ended) ? data.ended : []) {
          // One that began before watching did counts only the steps seen: no point of the plots.
          if (ended.whole) keepEpisode({ index: Number(ended.index), return: Number(ended.return), length: Number(ended.length) });
        }
        const episode = data.episode && typeof data.episode === "object" ? data.episode : { index: page.episode.index, length: 0, return: 0 };
        takeTransition({ event, action: data.action ?? null, data: reply, frame: null, skipped, episode });
        page.totalSteps = index;
        setCounter("total-steps", index);
        awaitingFrame = page.history.records[page.history.records.length - 1];
      } else if (frame.type === "render") {
        const record = awaitingFrame;
        awaitingFrame = null;
        if (record && page.history.records.includes(record)) attachFrame(record, data.frame);
      } else if (frame.type === "watch_end") {
        byId("watch-text").textContent = `session ${watchLabel()} ended (${data.reason || "closed"}); this view is read-only`;
      } else if (frame.type === "error") {
        showError(data);
      }
    },
  });
}

// Sessions panel ----------------------------------------------------------------------------

let sessionsTimer = null;

async function listSessions() {
  const status = byId("sessions-status");
  let body;
  try {
    body = await getJSON("/web/sessions");
  } catch (error) {
    status.textContent = `this server lists no sessions (${error.message})`;
    stopListing();
    return;
  }
  const sessions = Array.isArray(body.sessions) ? body.sessions : [];
  status.textContent = sessions.length ? `${sessions.length} live session${sessions.length === 1 ? "" : "s"} · refreshed every 2 s` : "no live session";
  byId("sessions-table").hidden = sessions.length === 0;
  byId("sessions-list").replaceChildren(
    ...sessions.map((session) => {
      const id = String(session.id);
      const name = `${id.length > 10 ? id.slice(0, 10) + "…" : id}${session.web ? " (web)" : ""}`;
      const action = watchControl(session, id);
      const kind = session.size > 1 ? `${session.kind} ×${session.size}` : String(session.kind);
      return el(
        "tr",
        { "data-session": id, title: `${id}\nrender mode: ${session.render_mode ?? "none"}\nage: ${fmt(session.age_s)} s\nwatchers: ${session.watchers}` },
        el("td", { class: "mono", text: name }),
        el("td", { text: kind }),
        el("td", { class: "mono", text: fmt(Number(session.steps)) }),
        el("td", { class: "mono", text: fmt(Number(session.episodes)) }),
        el("td", { class: "mono", text: `${fmt(Number(session.idle_s))} s` }),
        el("td", {}, action),
      );
    }),
  );
}

/** The watch link of a listed session; a batch or vector session's sub-env is picked beside it. */
function watchControl(session, id) {
  const size = Number(session.size) || 1;
  const href = (index) => `/web/?watch=${encodeURIComponent(id)}${size > 1 ? `&env=${index}` : ""}`;
  const link = el("a", { href: href(0), "data-testid": `watch-${id}`, class: "watch-link", text: id === page.watching ? "watching" : "watch" });
  if (size <= 1) return link;
  const select = el(
    "select",
    { class: "sub-env", "aria-label": "sub-env", "data-testid": `watch-env-${id}` },
    ...Array.from({ length: Math.min(size, 256) }, (_, i) => el("option", { value: String(i), text: `#${i}` })),
  );
  select.addEventListener("change", () => (link.href = href(select.value)));
  return el("span", { class: "watch-control" }, select, " ", link);
}

function stopListing() {
  if (sessionsTimer !== null) clearInterval(sessionsTimer);
  sessionsTimer = null;
}

function wireSessionsPanel() {
  const panel = byId("sessions-panel");
  panel.addEventListener("toggle", () => {
    stopListing();
    if (!panel.open) return;
    listSessions();
    sessionsTimer = setInterval(listSessions, SESSIONS_EVERY_MS);
  });
}

// Start -------------------------------------------------------------------------------------

/** The session id of `?watch=` on the page's URL (watch mode), or null. */
function watchedSession() {
  return new URLSearchParams(window.location.search).get("watch");
}

async function main() {
  wireControls();
  wireSessionsPanel();
  drawPlots();
  try {
    [page.schema, page.metadata] = await Promise.all([getJSON("/schema"), getJSON("/metadata")]);
  } catch (error) {
    setConnection("error", "cannot read /schema");
    showError(error.data || { code: "PAGE_ERROR", message: error.message });
    return;
  }
  describeEnvironment();
  const watched = watchedSession();
  if (watched) {
    watch(watched, new URLSearchParams(window.location.search).get("env"));
    document.body.dataset.ready = "true";
    return;
  }
  buildActionForm();
  buildTools();
  const query = page.renderMode ? `?render_mode=${encodeURIComponent(page.renderMode)}` : "";
  page.socket = new Socket(socketURL(`/ws${query}`), {
    onState: (state, reason) => setConnection(state, reason),
    onFrame: (frame) => frame.type === "error" && showError(frame.data || {}),
  });
  try {
    await page.socket.opened;
  } catch {
    return; // the refusal is in the banner and the indicator
  }
  if (!page.actionSpace && !page.tools.length && !page.schema.spaces) {
    // An OpenEnv-style server: its tools, if any, come from a list_tools step.
    try {
      const reply = await page.socket.request({ type: "step", data: { type: "list_tools" } });
      if (reply.type === "observation" && reply.data.observation && Array.isArray(reply.data.observation.tools) && reply.data.observation.tools.length) {
        page.tools = reply.data.observation.tools;
        buildTools();
      }
    } catch {
      // no tools then
    }
  }
  document.body.dataset.ready = "true";
}

main();
