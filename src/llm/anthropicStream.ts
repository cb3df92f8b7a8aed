/**
 * Reading one streamed Messages API reply from its raw events: reply text, thinking, tool calls,
 * stop reason and usage.
 *
 * The raw events are read rather than the SDK's `MessageStream`, because that helper parses each
 * tool call's arguments itself when its block ends and fails the whole stream when they are not
 * JSON; here the arguments are collected as text and made into an object by `parseToolInput`,
 * which keeps a broken call (and the rest of the reply) instead.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { ToolCall } from '../core/toolTypes.js';
import type { ReplyBudget } from './common.js';
import { parseToolInput, toolInputOf } from './toolInput.js';

/** What the stream gave, however it ended. */
export interface StreamedReply {
  text: string;
  model: string | undefined;
  usage: Partial<Anthropic.Usage> | undefined;
  stopReason: string | null;
  /** The model thought (thinking or redacted_thinking blocks). */
  thought: boolean;
  /** Tool calls whose block ended, in the order the model made them. */
  toolCalls: ToolCall[];
  /** `message_stop` arrived: the reply is whole. */
  complete: boolean;
  /** The text reached the byte budget; reading stopped there. */
  cutAtBudget: boolean;
}

export interface StreamHandlers {
  budget: ReplyBudget;
  /** Reply text as it comes, already held to the budget. */
  onText(part: string): void;
  /** Any block of model output: text, thinking, tool arguments. */
  onActivity(): void;
}

/** A tool_use block being streamed: its arguments arrive as pieces of one JSON text. */
interface OpenToolBlock {
  id: string;
  name: string;
  json: string;
  /** The input the block started with; the streamed JSON replaces it (the API starts with `{}`). */
  startInput: unknown;
}

/**
 * Read the stream to its end, or until the text reaches the budget: then the loop is left, which
 * makes the SDK abort the request, so the rest of the reply is never read. A stream that ends
 * early without an error (the caller aborted) comes back with `complete: false`.
 *
 * Tool arguments are neither reply text nor counted in the byte budget (they are bounded by the
 * request's `max_tokens`); they are the model working, so they count as activity.
 */
export async function readAnthropicStream(stream: AsyncIterable<Anthropic.RawMessageStreamEvent>, h: StreamHandlers): Promise<StreamedReply> {
  const out: StreamedReply = { text: '', model: undefined, usage: undefined, stopReason: null, thought: false, toolCalls: [], complete: false, cutAtBudget: false };
  const open = new Map<number, OpenToolBlock>();
  for await (const event of stream) {
    switch (event.type) {
      case 'message_start':
        out.model = event.message.model;
        out.usage = { ...event.message.usage };
        break;
      case 'content_block_start': {
        h.onActivity();
        const block = event.content_block;
        if (block.type === 'thinking' || block.type === 'redacted_thinking') out.thought = true;
        if (block.type === 'tool_use') open.set(event.index, { id: block.id, name: block.name, json: '', startInput: block.input });
        break;
      }
      case 'content_block_delta': {
        h.onActivity();
        const d = event.delta;
        if (d.type === 'thinking_delta' || d.type === 'signature_delta') out.thought = true;
        else if (d.type === 'input_json_delta') {
          const tool = open.get(event.index);
          if (tool) tool.json += d.partial_json;
        } else if (d.type === 'text_delta' && d.text) {
          const part = h.budget.take(d.text);
          if (part) {
            out.text += part;
            h.onText(part);
          }
          if (h.budget.cut) {
            out.cutAtBudget = true;
            return out;
          }
        }
        break;
      }
      case 'content_block_stop': {
        const tool = open.get(event.index);
        if (tool) {
          open.delete(event.index);
          // No deltas at all: the arguments are the ones the block started with (a tool without parameters).
          const input = tool.json ? parseToolInput(tool.json) : toolInputOf(tool.startInput);
          out.toolCalls.push({ id: tool.id, name: tool.name, input });
        }
        break;
      }
      case 'message_delta': {
        out.stopReason = event.delta.stop_reason;
        // The delta's counters are whole-message totals: they replace, never add; absent ones stay.
        const u = event.usage;
        const usage = (out.usage ??= {});
        usage.output_tokens = u.output_tokens;
        if (u.input_tokens != null) usage.input_tokens = u.input_tokens;
        if (u.cache_creation_input_tokens != null) usage.cache_creation_input_tokens = u.cache_creation_input_tokens;
        if (u.cache_read_input_tokens != null) usage.cache_read_input_tokens = u.cache_read_input_tokens;
        break;
      }
      case 'message_stop':
        out.complete = true;
        break;
    }
  }
  return out;
}
