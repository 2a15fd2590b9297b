// A model-call env's episode as the conversation (openenv/Harness-v0, or any env whose /schema says
// its observation is JSON text holding a model call, {"messages", "tools", "params"} in OpenAI chat
// form): each call's new messages (system, user, tool output), the policy's reply (its text and tool
// calls with their arguments), in order, and how the episode ended with its reward.
//
// Ids (the browser tests rely on them): #conversation-panel, #conversation holding one
// li.turn[data-role=<system|user|assistant|tool|end>] per entry.

import { el, fmt } from "./dom.js";

/** Whether /schema says the observation is a model call (envs/harness MODEL_CALL_CONTENT). */
export function publishesModelCalls(schema) {
  const field = schema && schema.observation && schema.observation.properties && schema.observation.properties.observation;
  return Boolean(field && field["x-content"] === "model_call");
}

function parsed(text) {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A message's content as text: a string, or the text of its parts. */
function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (part && typeof part.text === "string" ? part.text : JSON.stringify(part))).join("\n");
  return JSON.stringify(content, null, 1);
}

function toolCallNode(call) {
  const fn = (call && call.function) || call || {};
  let args = fn.arguments;
  if (typeof args === "string") args = parsed(args) ?? args;
  const argsText = typeof args === "string" ? args : JSON.stringify(args ?? {}, null, 1);
  return el("div", { class: "tool-call", "data-tool": String(fn.name || "") }, el("b", { text: `${fn.name || "?"}(…)` }), el("pre", { class: "text-value", text: argsText }));
}

function turn(role, label, ...body) {
  return el("li", { class: `turn turn-${role}`, dataset: { role } }, el("div", { class: "turn-role", text: label }), ...body);
}

function messageNode(message) {
  const role = String((message && message.role) || "user");
  const label = role === "tool" && message.tool_call_id ? `tool output (${message.tool_call_id})` : role === "tool" ? "tool output" : role;
  const text = contentText(message && message.content);
  const calls = Array.isArray(message && message.tool_calls) ? message.tool_calls : [];
  return turn(role, label, text ? el("pre", { class: "text-value", text }) : null, calls.map(toolCallNode));
}

/** The reply a step's action holds: the wire's {"action": text}, the text itself, or an assistant message. */
function replyOf(action) {
  const value = action && typeof action === "object" && "action" in action ? action.action : action;
  const message = typeof value === "string" ? parsed(value) : value;
  if (message && typeof message === "object" && !Array.isArray(message)) return message;
  return { content: typeof value === "string" ? value : JSON.stringify(value) };
}

/** The conversation of the page's current episode, kept in a list element. */
export class Conversation {
  constructor(list) {
    this.list = list;
    this.episode = null; // the episode shown
    this.seen = 0; // the messages of the last call already shown
    this.following = false; // whether the last call was seen, so a step's reply is the next message
  }

  /** Show one transition of episode `episode`: a new episode starts over; a step shows the reply, then
   * the next call's new messages. A watch may join mid-episode or skip steps (`skipped`): then the
   * replies come from the call's own history, as the agent keeps it. */
  take(event, action, data, episode, skipped = 0) {
    if (event === "reset" || episode !== this.episode) {
      this.list.replaceChildren();
      this.episode = episode;
      this.seen = 0;
      this.following = event === "reset";
    }
    const follows = event === "step" && this.following && !skipped;
    if (follows) this.list.append(messageNode({ ...replyOf(action), role: "assistant" }));
    this.following = true;
    // The observation's text, as the wire carries it: the Text value, or the model's field of that name.
    const observation = data.observation && typeof data.observation === "object" ? data.observation.observation : data.observation;
    const call = parsed(observation);
    const messages = call && Array.isArray(call.messages) ? call.messages : [];
    if (event === "reset" && call && Array.isArray(call.tools) && call.tools.length) {
      const names = call.tools.map((tool) => (tool.function && tool.function.name) || tool.name || "?");
      this.list.append(el("li", { class: "hint", text: `tools: ${names.join(", ")}` }));
    }
    let fresh = messages.slice(messages.length >= this.seen ? this.seen : 0);
    // The reply just shown comes back as the call's first new message, as the agent keeps it.
    if (follows && fresh.length && fresh[0].role === "assistant") fresh = fresh.slice(1);
    for (const message of fresh) this.list.append(messageNode(message));
    if (messages.length) this.seen = messages.length;
    if (data.done || data.truncated) {
      const info = data.info && typeof data.info === "object" ? data.info : {};
      const how = data.done ? "terminated" : "truncated";
      const reason = info.end ? ` (${info.end})` : "";
      this.list.append(turn("end", `episode ${how}${reason}`, el("b", { class: "turn-reward", text: `reward ${fmt(Number(data.reward) || 0)}` })));
    }
    this.list.scrollTop = this.list.scrollHeight; // follow the live end
  }
}
