/**
 * Tool calling in the fake OpenAI-compatible server: scripted calls, how they are streamed, and
 * the request checks OpenAI makes on `tools`, `tool_choice` and `tool` messages.
 *
 * A reply calls tools with `toolCalls` (see {@link OpenAiToolCall}; `callTool` in `./index.ts`
 * builds one), streamed in one of two ways:
 *
 * - `'split'` (default; OpenAI, vLLM, llama.cpp's server): after any text, each call's first chunk
 *   carries `{index, id, type: 'function', function: {name, arguments: ''}}`, the following
 *   chunks `{index, function: {arguments: <piece>}}`; then `finish_reason: 'tool_calls'`.
 * - `'whole'` (Ollama): one chunk carries every call whole, `{index, id, type, function: {name,
 *   arguments}}`, and, in the same chunk, `finish_reason: 'stop'` — what Ollama (and some
 *   llama.cpp builds) end a reply with calls on.
 *
 * `omitIds` / `omitIndex` drop those fields, as some local servers do. JSON answers carry
 * `message.tool_calls` (content null when there is no text) and `finish_reason: 'tool_calls'`.
 */

/** One tool call of a scripted reply. */
export interface OpenAiToolCall {
  /** Default `call_fake_<request index>_<n>`. */
  id?: string;
  name: string;
  /** The arguments (default `{}`); sent as a JSON text, as the API does. */
  input?: Record<string, unknown>;
  /** Send this text as the arguments instead of `input`'s JSON (a model writing broken JSON). */
  rawArguments?: string;
  /** `'split'` streams only: how the arguments are cut (default: pieces of 6 characters). */
  argumentChunks?: string[];
}

export type ToolCallStyle = 'split' | 'whole';

/** What one call's arguments are as text. */
export function argumentsText(call: OpenAiToolCall): string {
  return call.rawArguments ?? call.argumentChunks?.join('') ?? JSON.stringify(call.input ?? {});
}

/** The id a call gets when the script names none. */
export function openAiCallId(call: OpenAiToolCall, requestIndex: number, n: number): string {
  return call.id ?? `call_fake_${requestIndex}_${n}`;
}

/** The `message.tool_calls` of a JSON answer. */
export function messageToolCalls(calls: OpenAiToolCall[], requestIndex: number): Array<Record<string, unknown>> {
  return calls.map((c, n) => ({ id: openAiCallId(c, requestIndex, n), type: 'function', function: { name: c.name, arguments: argumentsText(c) } }));
}

/** The `delta.tool_calls` lists of a streamed reply, one per chunk, in order. */
export function toolCallDeltas(calls: OpenAiToolCall[], requestIndex: number, opts: { style: ToolCallStyle; omitIds?: boolean; omitIndex?: boolean }): Array<Array<Record<string, unknown>>> {
  const head = (c: OpenAiToolCall, n: number): Record<string, unknown> => ({
    ...(opts.omitIndex ? {} : { index: n }),
    ...(opts.omitIds ? {} : { id: openAiCallId(c, requestIndex, n) }),
    type: 'function',
  });
  if (opts.style === 'whole') return [calls.map((c, n) => ({ ...head(c, n), function: { name: c.name, arguments: argumentsText(c) } }))];
  const out: Array<Array<Record<string, unknown>>> = [];
  calls.forEach((c, n) => {
    out.push([{ ...head(c, n), function: { name: c.name, arguments: '' } }]);
    const text = argumentsText(c);
    const pieces = c.argumentChunks ?? Array.from({ length: Math.ceil(text.length / 6) }, (_, i) => text.slice(i * 6, i * 6 + 6));
    for (const piece of pieces) out.push([{ ...(opts.omitIndex ? {} : { index: n }), function: { arguments: piece } }]);
  });
  return out;
}

type Json = Record<string, unknown>;

/** A 400 the way OpenAI words it: message, and the parameter it is about. */
export interface ToolProblem {
  message: string;
  param: string | null;
  code: string | null;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * OpenAI's checks of tools and tool messages: function names of the allowed pattern, `tool_choice`
 * only with tools, assistant content null only with `tool_calls`, every `tool` message answering a
 * call of the assistant message before the run of `tool` messages it is in, and every call answered.
 */
export function validateToolRequest(body: Json): ToolProblem | null {
  const tools = body['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return { message: "Invalid type for 'tools': expected an array.", param: 'tools', code: 'invalid_type' };
    for (const [i, t] of (tools as Json[]).entries()) {
      const fn = t['function'] as Json | undefined;
      if (t['type'] !== 'function' || !fn) return { message: `Missing required parameter: 'tools[${i}].function'.`, param: `tools[${i}].function`, code: 'missing_required_parameter' };
      if (typeof fn['name'] !== 'string' || !NAME.test(fn['name'])) {
        return { message: `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, param: `tools[${i}].function.name`, code: 'invalid_value' };
      }
    }
  }
  const choice = body['tool_choice'];
  if (choice !== undefined) {
    if (!Array.isArray(tools) || tools.length === 0) return { message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param: 'tool_choice', code: null };
    if (typeof choice === 'string' && !['none', 'auto', 'required'].includes(choice)) return { message: `Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`, param: 'tool_choice', code: 'invalid_value' };
  }
  const msgs = body['messages'] as Json[];
  let open: Set<string> | null = null;
  for (const [i, m] of msgs.entries()) {
    const role = m['role'];
    if (role === 'tool') {
      const id = m['tool_call_id'];
      if (!open || typeof id !== 'string' || !open.has(id)) {
        return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: `messages.[${i}].role`, code: null };
      }
      open.delete(id);
      continue;
    }
    if (open && open.size) {
      return { message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`, param: 'messages', code: null };
    }
    open = null;
    if (role !== 'assistant') continue;
    const calls = Array.isArray(m['tool_calls']) ? (m['tool_calls'] as Json[]) : [];
    if ((m['content'] === null || m['content'] === undefined) && calls.length === 0) return { message: `Invalid value for 'content': expected a string, got null.`, param: `messages.[${i}].content`, code: null };
    if (calls.length) open = new Set(calls.map((c) => String(c['id'])));
  }
  if (open && open.size) {
    return { message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`, param: 'messages', code: null };
  }
  return null;
}
