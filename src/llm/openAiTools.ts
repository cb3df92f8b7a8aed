/**
 * Tools in chat completions (OpenAI, llama.cpp's server, Ollama, vLLM): the `tools` and
 * `tool_choice` parameters, a turn's earlier round trips as messages, and the calls of a reply,
 * streamed in fragments or whole.
 */
import type OpenAI from 'openai';
import { LlmError } from '../core/errors.js';
import type { LlmRequest } from '../core/ports.js';
import type { ToolCall, ToolStep } from '../core/toolTypes.js';
import { nonEmpty } from './common.js';
import { parseToolInput, toolInputOf } from './toolInput.js';

type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/**
 * `tools` and `tool_choice`, or nothing when the request has no tools (OpenAI refuses a
 * `tool_choice` without tools). `none` keeps the tools in the request, so the prompt prefix a
 * server caches stays the same, while the model must answer in text.
 */
export function openAiToolParams(req: LlmRequest): Pick<ChatParams, 'tools' | 'tool_choice'> {
  if (!req.tools?.length) return {};
  return {
    tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.inputSchema } })),
    tool_choice: req.toolChoice === 'none' ? 'none' : 'auto',
  };
}

/**
 * Each step as the assistant message that made the calls (its text, or null when it said nothing)
 * followed by one `tool` message per result, in order. The `tool` role has no error flag, so an
 * error result says so in its text.
 */
export function openAiStepMessages(steps: readonly ToolStep[] | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const step of steps ?? []) {
    if (step.calls.length === 0) throw new LlmError('OpenAI-compatible: a tool step needs at least one call', 'bad_request', false);
    out.push({
      role: 'assistant',
      content: step.text.trim() ? step.text : null,
      tool_calls: step.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })),
    });
    for (const r of step.results) {
      out.push({ role: 'tool', tool_call_id: r.callId, content: r.isError ? `Error: ${r.content}` : nonEmpty(r.content) });
    }
  }
  return out;
}

/**
 * The number the first call of this reply gets when the server sends no id (`call_<n>`): the calls
 * of the turn's earlier steps are counted, so made-up ids never repeat within a turn.
 */
export function firstCallNumber(req: LlmRequest): number {
  return (req.toolSteps ?? []).reduce((n, s) => n + s.calls.length, 0);
}

/** A tool call fragment as servers send it; looser than the SDK's type, as not every server keeps to it. */
interface Fragment {
  index?: number | null;
  id?: string | null;
  function?: { name?: string | null; arguments?: unknown } | null;
}

interface Pending {
  id: string | undefined;
  name: string;
  args: string;
  /** Arguments some servers send as an object instead of a JSON text. */
  object?: unknown;
}

/**
 * Collects a reply's tool calls from `delta.tool_calls` fragments. OpenAI sends each call's id and
 * name in its first fragment and the arguments in pieces, keyed by `index`; Ollama and llama.cpp
 * may send a whole call in one fragment, without `index`, or every call of a reply with index 0.
 * So a fragment starts a new call when its index is new, when it carries an id other than the one
 * its index has, or — without an index — when it carries an id or a name; an index-less fragment
 * with neither continues the last call.
 */
export class ToolCallCollector {
  private readonly pending: Pending[] = [];
  private readonly byIndex = new Map<number, Pending>();

  push(fragments: readonly unknown[]): void {
    for (const raw of fragments) {
      if (!raw || typeof raw !== 'object') continue;
      const f = raw as Fragment;
      const index = typeof f.index === 'number' ? f.index : undefined;
      const id = f.id || undefined;
      const name = f.function?.name || undefined;
      let call = index !== undefined ? this.byIndex.get(index) : id || name ? undefined : this.pending.at(-1);
      if (!call || (id && call.id && id !== call.id)) {
        call = { id, name: name ?? '', args: '' };
        this.pending.push(call);
        if (index !== undefined) this.byIndex.set(index, call);
      } else {
        call.id ??= id;
        if (!call.name && name) call.name = name;
      }
      const args = f.function?.arguments;
      if (typeof args === 'string') call.args += args;
      else if (args !== undefined && args !== null) call.object = args;
    }
  }

  get count(): number {
    return this.pending.length;
  }

  /** Calls that never got a name: nothing can run them (a reply of only these has no answer). */
  get unnamed(): number {
    return this.pending.filter((c) => !c.name).length;
  }

  /**
   * The calls in the order they were made. A call that never got a name cannot be run or sent back,
   * and is left out; one without an id gets `call_<n>`.
   */
  calls(firstNumber: number): ToolCall[] {
    return this.pending
      .filter((c) => c.name)
      .map((c, i) => ({
        id: c.id ?? `call_${firstNumber + i}`,
        name: c.name,
        input: c.object !== undefined && !c.args ? toolInputOf(c.object) : parseToolInput(c.args),
      }));
  }
}

/** The calls of a whole (non-streamed) reply: each entry is one call, whatever its `index` says. */
export function toolCallsOfMessage(message: { tool_calls?: readonly unknown[] | null } | undefined): ToolCallCollector {
  const collector = new ToolCallCollector();
  collector.push((message?.tool_calls ?? []).map((c, index) => ({ ...(c as object), index })));
  return collector;
}
