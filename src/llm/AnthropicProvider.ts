/**
 * The `anthropic` provider on the official `@anthropic-ai/sdk`.
 *
 * Prompt caching layout of every request, in the order the API hashes it (tools → system →
 * messages):
 *
 *   tools      the agent's tools, if any, always in one order
 *   system[0]  the stable prefix (persona + group section)       ← breakpoint 1
 *   system[1]  the running summary under its heading, if any     ← breakpoint 2
 *   messages   the session's history, user/assistant alternating, then the turn's tool steps
 *   history    the last block before the newest turn, when that turn is long ← breakpoint 4
 *   last msg   its last content block                              ← breakpoint 3
 *
 * Breakpoint 1 lets every call with the same persona/group prefix (a fresh session, a call right
 * after the summary changed) read the prefix from cache. Breakpoint 2 keeps prefix +
 * summary cached while the history before the newest turns changes — the context budget leaves
 * the oldest turns out as the conversation grows, which changes the start of `messages`. Breakpoint 3 caches the whole
 * conversation; the next turn of the session appends an assistant and a user message, and the
 * API's lookback finds the previous turn's entry two blocks before its own breakpoint, so only
 * the new turn is written. A newest turn too long for that lookback (many files, many tool steps)
 * gets breakpoint 4 at the end of the history before it, which finds the previous entry instead.
 * Nothing that changes per call is added by this provider: the request is a pure function of the
 * `LlmRequest` and the bytes of its files.
 *
 * Files (src/llm/anthropicFiles.ts): a user turn with `attachments` is several blocks — a label and
 * an `image` or `document` block per file, then the turn's text — and the breakpoint on the last
 * block of a message lands on that text. Each file is read once per request (`readFile`), however
 * many turns name it; one that cannot be read or sent is its line again.
 *
 * Tools (src/llm/anthropicTools.ts) come first in that order, so breakpoint 1 caches them together
 * with the system prompt. A turn's earlier tool round trips follow the messages (an assistant
 * message with its `tool_use` blocks, a user message with the `tool_result`s); breakpoint 3 then
 * sits on the last `tool_result`, so each step of a turn reads the previous step's entry through the
 * lookback. A reply that stops to call tools (`stop_reason: tool_use`) comes back with `toolCalls`;
 * tool calls of a reply that stopped for any other reason (cut at `max_tokens` in the middle of the
 * arguments) are not handed on, as they may be incomplete.
 *
 * Retries (429, 529, 5xx, connection errors) are the SDK's (`llm.max_retries`, honouring
 * `retry-after`). The time limits are the LlmGate's (first token, idle, overall cap), applied
 * through the request's signal; the SDK's per-attempt timeout is only the overall cap as a
 * backstop.
 *
 * Thinking: models that think by default (adaptive thinking) send `thinking` /
 * `redacted_thinking` blocks and `thinking_delta` events. They are never reply text — only
 * `text` blocks are — but each one is reported through `onActivity`, so a model that thinks for
 * a minute before its first word is not taken for a stalled one.
 *
 * Replies are bounded: a stream is left at `req.maxReplyBytes` — the SDK then aborts the request
 * and closes the connection, so neither it nor we hold more than the budget — and the text so far comes back with
 * `cut: 'bytes'` (and no tool calls: the model's reply was not taken whole); a reply the API
 * stopped at `max_tokens` comes back with `cut: 'max_tokens'`. Tool arguments are not reply text:
 * they are neither streamed through `onDelta` nor counted in the budget (`max_tokens` bounds them).
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ChorusConfig } from '../config/schema.js';
import type { LlmError } from '../core/errors.js';
import { LlmError as LlmErrorClass } from '../core/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse, Logger } from '../core/ports.js';
import type { ReplyCut, Usage } from '../core/types.js';
import type { ToolCall } from '../core/toolTypes.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../files/pixels.js';
import { readAnthropicStream } from './anthropicStream.js';
import { anthropicUserContent, planAnthropicFiles } from './anthropicFiles.js';
import { anthropicStepMessages, anthropicToolParams } from './anthropicTools.js';
import { CallController, FailureReporter, ReplyBudget, displayUrl, sdkClientOptions, nonEmpty, providerFailure } from './common.js';
import { estimateCost } from './pricing.js';
import { NO_FILES, readPromptFiles, type PromptFiles } from './promptFiles.js';
import { toolInputOf } from './toolInput.js';

type LlmConfig = ChorusConfig['llm'];
type CreateParams = Anthropic.MessageCreateParamsNonStreaming;
type TextBlockParam = Anthropic.TextBlockParam;
type MessageParam = Anthropic.MessageParam;
type ContentBlockParam = Anthropic.ContentBlockParam;

/** What a call produced, streamed or not, before usage and cost are worked out. */
interface Reply {
  text: string;
  model: string | undefined;
  usage: Partial<Anthropic.Usage> | null | undefined;
  stopReason: string | null;
  cut?: ReplyCut | undefined;
  /** The reply had thinking (explains an empty text). */
  thought: boolean;
  /** The calls the model stopped to make (only with `stop_reason: tool_use`). */
  toolCalls: ToolCall[];
  /** Tool calls were left out because the reply stopped for another reason (explains an empty text). */
  droppedCalls: boolean;
}

const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Blocks in the newest turn (its user message and tool steps) from which on the history before it
 * gets a breakpoint of its own: the API looks about 20 blocks back from a breakpoint for an entry,
 * and the assistant message before the turn is one more. Kept below that, with room.
 */
const LONG_TAIL_BLOCKS = 16;

/**
 * Build the Messages API parameters for one request, with the cache breakpoints described above.
 * Exported for tests and for anyone who wants to see exactly what is sent.
 */
export function buildAnthropicParams(
  req: LlmRequest,
  defaultMaxTokens: number,
  files: PromptFiles = NO_FILES,
  maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS,
): CreateParams {
  if (req.messages.length === 0) {
    throw new LlmErrorClass('Anthropic: a request needs at least one message', 'bad_request', false);
  }
  const system: TextBlockParam[] = [{ type: 'text', text: nonEmpty(req.system), cache_control: EPHEMERAL }];
  if (req.summary && req.summary.trim()) system.push({ type: 'text', text: req.summary, cache_control: EPHEMERAL });

  const plan = planAnthropicFiles(req.messages, files, maxImagePixels);
  const messages: MessageParam[] = req.messages.map((m, i) => {
    if (m.role === 'assistant') return { role: 'assistant', content: [{ type: 'text', text: nonEmpty(m.content) }] };
    if (!m.attachments?.length) return { role: 'user', content: [{ type: 'text', text: nonEmpty(m.content) }] };
    return { role: 'user', content: anthropicUserContent(m, plan[i]!, files) };
  });
  const steps = anthropicStepMessages(req.toolSteps);
  messages.push(...steps);
  // Breakpoint 3: the last block of the last message, a tool_result when the turn has steps.
  markLastBlock(messages[messages.length - 1]!);
  // Breakpoint 4, only when the newest turn is long (many files, many tool steps): the end of the
  // history before it, so the previous turn's entry is found even though it now lies beyond the
  // lookback of breakpoint 3.
  const history = req.messages.length - 1;
  const tail = [messages[history]!, ...steps].reduce((n, m) => n + (m.content as ContentBlockParam[]).length, 0);
  if (history >= 1 && tail >= LONG_TAIL_BLOCKS) markLastBlock(messages[history - 1]!);

  return {
    model: req.model,
    max_tokens: req.maxTokens ?? defaultMaxTokens,
    ...anthropicToolParams(req),
    system,
    messages,
  };
}

/** Put a breakpoint on the last block of a message. */
function markLastBlock(m: MessageParam): void {
  const content = m.content as ContentBlockParam[];
  content[content.length - 1] = { ...content[content.length - 1]!, cache_control: EPHEMERAL } as ContentBlockParam;
}

/** Map the API's usage object to ours (missing counters are zero). */
function usageFromAnthropic(u: Partial<Anthropic.Usage> | null | undefined): Usage {
  return {
    inputTokens: u?.input_tokens ?? 0,
    outputTokens: u?.output_tokens ?? 0,
    cacheReadTokens: u?.cache_read_input_tokens ?? 0,
    cacheWriteTokens: u?.cache_creation_input_tokens ?? 0,
  };
}

export class AnthropicProvider implements LlmProvider {
  readonly name = 'anthropic';
  private readonly client: Anthropic;
  private readonly config: LlmConfig;
  private readonly logger: Logger;
  private readonly baseUrl: string;
  private readonly failures: FailureReporter;
  private readonly secrets: string[];

  /** `limits.max_image_pixels`: a larger image is sent as its line. */
  private readonly maxImagePixels: number;

  constructor(opts: { config: LlmConfig; logger: Logger; maxImagePixels?: number | undefined }) {
    this.config = opts.config;
    this.maxImagePixels = opts.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS;
    this.logger = opts.logger.child({ component: 'llm', provider: 'anthropic' });
    this.baseUrl = displayUrl(opts.config.base_url ?? DEFAULT_ANTHROPIC_BASE_URL);
    this.secrets = opts.config.api_key ? [opts.config.api_key] : [];
    this.failures = new FailureReporter(this.logger, 'Anthropic', this.baseUrl);
    this.client = new Anthropic({
      apiKey: opts.config.api_key ?? null,
      ...sdkClientOptions(opts.config, this.baseUrl, this.logger, this.secrets),
    });
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    let params: CreateParams;
    try {
      const files = await readPromptFiles(req, this.logger);
      params = buildAnthropicParams(req, this.config.max_tokens, files, this.maxImagePixels);
    } catch (err) {
      throw this.fail(err, req, undefined);
    }
    const call = new CallController(req.signal);
    try {
      const reply = req.onDelta
        ? await this.streamed(params, req, call)
        : fromMessage(await this.client.messages.create(params, { signal: call.signal }), req.maxReplyBytes);
      if (!reply.text.trim() && reply.toolCalls.length === 0) {
        const why = reply.droppedCalls
          ? ', in the middle of a tool call'
          : reply.thought
            ? reply.stopReason === 'max_tokens'
              ? ', it spent max_tokens thinking'
              : ', only thinking'
            : '';
        throw new LlmErrorClass(`Anthropic: the model returned no text (stop_reason ${reply.stopReason ?? 'unknown'}${why})`, 'empty', false);
      }
      const usage = usageFromAnthropic(reply.usage);
      const model = reply.model || req.model;
      this.failures.succeeded(req.model);
      const calls = reply.toolCalls.length ? { toolCalls: reply.toolCalls } : {};
      return { text: reply.text, model, usage, costUsd: estimateCost(model, usage, this.config.prices), cut: reply.cut, ...calls };
    } catch (err) {
      throw this.fail(err, req, call);
    } finally {
      call.dispose();
    }
  }

  private async streamed(params: CreateParams, req: LlmRequest, call: CallController): Promise<Reply> {
    const onDelta = req.onDelta!;
    const maxReplyBytes = req.maxReplyBytes;
    // Retries before the first byte are the SDK's, as for a whole reply.
    const stream = await this.client.messages.create({ ...params, stream: true }, { signal: call.signal });
    const got = await readAnthropicStream(stream, {
      budget: new ReplyBudget(maxReplyBytes),
      onText: (part) => {
        try {
          onDelta(part);
        } catch (err) {
          this.logger.warn({ err: String(err) }, 'onDelta listener threw; ignoring');
        }
      },
      // Every block of output is the model working, thinking and tool arguments included: the
      // gate's first-token and idle limits count it. Pings and message_start are the server, not
      // the model, and do not count.
      onActivity: () => {
        try {
          req.onActivity?.();
        } catch {
          // A listener's failure is the listener's; the stream goes on.
        }
      },
    });
    if (got.cutAtBudget) {
      this.logger.debug({ model: params.model, bytes: maxReplyBytes }, `reply over ${maxReplyBytes} bytes: stream closed, reply cut`);
      // The usage known so far is message_start's (the input side); the final count never came.
      return { text: got.text, model: got.model, usage: got.usage, stopReason: null, cut: 'bytes', thought: got.thought, toolCalls: [], droppedCalls: got.toolCalls.length > 0 };
    }
    // The SDK ends the iteration quietly when its signal fires; make that an error.
    if (call.signal.aborted) throw call.signal.reason ?? new Error('aborted');
    if (!got.complete) throw new LlmErrorClass('Anthropic: the stream ended before the message was complete', 'server', true);
    const cut = got.stopReason === 'max_tokens' ? 'max_tokens' : undefined;
    return { text: got.text, model: got.model, usage: got.usage, stopReason: got.stopReason, cut, thought: got.thought, ...keptCalls(got.stopReason, got.toolCalls) };
  }

  private fail(err: unknown, req: LlmRequest, call: CallController | undefined): LlmError {
    return providerFailure(err, req, { provider: 'Anthropic', call, secrets: this.secrets, failures: this.failures });
  }
}

/**
 * The calls are handed on only when the model stopped to make them; a reply stopped at
 * `max_tokens` may end in the middle of a call's arguments, and running half a call is worse than
 * running none.
 */
function keptCalls(stopReason: string | null, calls: ToolCall[]): { toolCalls: ToolCall[]; droppedCalls: boolean } {
  return stopReason === 'tool_use' ? { toolCalls: calls, droppedCalls: false } : { toolCalls: [], droppedCalls: calls.length > 0 };
}

/** The text of a whole message, held to the byte budget. Thinking blocks are never reply text. */
function fromMessage(message: Anthropic.Message, maxReplyBytes: number | undefined): Reply {
  const full = message.content
    .filter((b): b is Anthropic.TextBlock => b.type === 'text')
    .map((b) => b.text)
    .join('');
  const thought = message.content.some((b) => b.type === 'thinking' || b.type === 'redacted_thinking');
  const budget = new ReplyBudget(maxReplyBytes);
  const text = budget.take(full);
  const cut = budget.cut ? 'bytes' : message.stop_reason === 'max_tokens' ? 'max_tokens' : undefined;
  const calls = message.content
    .filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
    .map((b): ToolCall => ({ id: b.id, name: b.name, input: toolInputOf(b.input) }));
  // A reply cut at the byte budget is not taken whole, streamed or not: no calls from it.
  const kept = budget.cut ? { toolCalls: [], droppedCalls: calls.length > 0 } : keptCalls(message.stop_reason, calls);
  return { text, model: message.model, usage: message.usage, stopReason: message.stop_reason, cut, thought, ...kept };
}
