/**
 * The `openai` provider: chat completions on the official `openai` SDK against
 * any OpenAI-compatible `llm.base_url` — OpenAI itself, Ollama (`http://127.0.0.1:11434/v1`),
 * llama.cpp's server, vLLM.
 *
 * The stable prefix and the summary go into ONE system message (prefix first, then the summary):
 * several chat templates of local models accept only a single, leading system message, and the
 * servers' automatic prefix caching still sees the same stable beginning on every turn.
 *
 * Usage is taken from the response where the server reports it (zeros otherwise). Streams ask for
 * a final usage chunk with `stream_options.include_usage`; a server that rejects that option gets
 * the request again without it, and is remembered. `inputTokens` counts the uncached prompt
 * tokens, `cacheReadTokens` the cached ones (`prompt_tokens_details.cached_tokens`), the same
 * meaning as for Anthropic.
 *
 * Replies are bounded: a stream stops being read at `req.maxReplyBytes` — leaving the
 * SDK's iterator aborts the request, so the server sees the connection close — and the text so far
 * comes back with `cut: 'bytes'`; a reply the server ended for length (`finish_reason: length`)
 * comes back with `cut: 'max_tokens'`.
 *
 * Thinking is never reply text: `reasoning_content` / `reasoning` deltas (llama.cpp,
 * vLLM, DeepSeek) are not read as content, and a `<think>…</think>` block at the start of the
 * content (Qwen, DeepSeek-R1 through llama.cpp or Ollama without a reasoning parser) is stripped
 * from the stream and the final text alike (src/llm/thinking.ts). Both are reported through
 * `onActivity`, so a model that thinks for a while is not taken for a stalled one.
 *
 * Tools (src/llm/openAiTools.ts): `tools` as functions and `tool_choice`; a turn's earlier round
 * trips follow the messages as assistant `tool_calls` and `tool` messages. The calls of a reply are
 * collected from `delta.tool_calls` fragments, however a server splits them, and handed on whatever
 * the finish reason says — Ollama and llama.cpp may end a reply with calls on `stop` — except
 * `length`: a reply cut at `max_tokens` may end in the middle of a call's arguments. Tool arguments
 * are not reply text: never passed to `onDelta`, not counted in the byte budget (`max_tokens`
 * bounds them), but counted as activity. A reply cut at the byte budget carries no calls. A reply
 * of only calls that never got a name has nothing anyone can run: `unknown_tool`, like a call to a
 * tool the turn did not offer (the router's notice says so). Which calls the turn can run is the
 * router's to decide: calls are handed on whatever tools the request offered.
 *
 * Files (src/llm/openAiFiles.ts): a user turn with `attachments` is sent as content parts (images
 * as `image_url` data URLs, text files as text, PDFs as their line); every other message stays a
 * plain string. A server that cannot take images (llama.cpp without `--mmproj`: "image input is
 * not supported") is a request refused, not a server failing (src/llm/errors.ts).
 */
import OpenAI from 'openai';
import type { ChorusConfig } from '../config/schema.js';
import { LlmError } from '../core/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse, Logger } from '../core/ports.js';
import type { ReplyCut, Usage } from '../core/types.js';
import type { ToolCall } from '../core/toolTypes.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../files/pixels.js';
import { CallController, FailureReporter, ReplyBudget, displayUrl, sdkClientOptions, providerFailure } from './common.js';
import { ToolCallCollector, firstCallNumber, openAiStepMessages, openAiToolParams, toolCallsOfMessage } from './openAiTools.js';
import { openAiUserContent } from './openAiFiles.js';
import { estimateCost } from './pricing.js';
import { NO_FILES, readPromptFiles, type PromptFiles } from './promptFiles.js';
import { ThinkFilter, stripThinking } from './thinking.js';

type LlmConfig = ChorusConfig['llm'];
type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** Local servers need no key, but the SDK insists on one; this placeholder is sent instead. */
const NO_KEY = 'no-key';

/** Build the chat completion parameters for one request (exported for tests). */
export function buildOpenAiParams(
  req: LlmRequest,
  defaultMaxTokens: number,
  files: PromptFiles = NO_FILES,
  maxImagePixels = DEFAULT_MAX_IMAGE_PIXELS,
): ChatParams {
  if (req.messages.length === 0) throw new LlmError('OpenAI-compatible: a request needs at least one message', 'bad_request', false);
  const system = req.summary && req.summary.trim() ? `${req.system}\n\n${req.summary}` : req.system;
  const messages: ChatMessage[] = [];
  if (system.trim()) messages.push({ role: 'system', content: system });
  for (const m of req.messages) {
    // Only a turn with files has content parts: every other message is a plain string, as servers
    // without vision expect it.
    if (m.role === 'user' && m.attachments?.length) {
      messages.push({ role: 'user', content: openAiUserContent(m, files, maxImagePixels) });
    }
    else messages.push({ role: m.role, content: m.content });
  }
  messages.push(...openAiStepMessages(req.toolSteps));
  return { model: req.model, max_tokens: req.maxTokens ?? defaultMaxTokens, ...openAiToolParams(req), messages };
}

/** Map a chat completion usage object to ours. */
function usageFromOpenAi(u: OpenAI.CompletionUsage | null | undefined): Usage {
  const prompt = u?.prompt_tokens ?? 0;
  const cached = Math.min(u?.prompt_tokens_details?.cached_tokens ?? 0, prompt);
  return { inputTokens: prompt - cached, outputTokens: u?.completion_tokens ?? 0, cacheReadTokens: cached, cacheWriteTokens: 0 };
}

export class OpenAiProvider implements LlmProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly config: LlmConfig;
  private readonly logger: Logger;
  private readonly baseUrl: string;
  private readonly failures: FailureReporter;
  private readonly secrets: string[];
  /** Set once the server refused `stream_options`; later streams go without it. */
  private streamOptionsUnsupported = false;

  /** `limits.max_image_pixels`: a larger image is sent as its line. */
  private readonly maxImagePixels: number;

  constructor(opts: { config: LlmConfig; logger: Logger; maxImagePixels?: number | undefined }) {
    this.config = opts.config;
    this.maxImagePixels = opts.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS;
    this.logger = opts.logger.child({ component: 'llm', provider: 'openai' });
    this.baseUrl = displayUrl(opts.config.base_url ?? DEFAULT_OPENAI_BASE_URL);
    this.secrets = opts.config.api_key ? [opts.config.api_key] : [];
    this.failures = new FailureReporter(this.logger, 'OpenAI-compatible endpoint', this.baseUrl);
    this.client = new OpenAI({
      apiKey: opts.config.api_key || NO_KEY,
      ...sdkClientOptions(opts.config, this.baseUrl, this.logger, this.secrets),
    });
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    let call: CallController | undefined;
    try {
      const files = await readPromptFiles(req, this.logger);
      const params = buildOpenAiParams(req, this.config.max_tokens, files, this.maxImagePixels);
      let result: Reply;
      call = new CallController(req.signal);
      if (req.onDelta) {
        try {
          result = await this.streamed(params, req, call, !this.streamOptionsUnsupported);
        } catch (err) {
          if (this.streamOptionsUnsupported || !rejectsStreamOptions(err)) throw err;
          this.streamOptionsUnsupported = true;
          this.logger.info({ baseUrl: this.baseUrl }, 'endpoint does not accept stream_options; streaming without usage');
          call.dispose();
          call = new CallController(req.signal);
          result = await this.streamed(params, req, call, false);
        }
      } else {
        const res = await this.client.chat.completions.create(params, { signal: call.signal });
        const choice = res.choices[0];
        // Inline thinking is never reply text; the `reasoning_content` field is simply not read.
        const visible = stripThinking(choice?.message?.content ?? '');
        // Not streamed: the body is already read, but nothing over the budget goes further.
        const budget = new ReplyBudget(req.maxReplyBytes);
        const text = budget.take(visible.text);
        const cut = budget.cut ? 'bytes' : choice?.finish_reason === 'length' ? 'max_tokens' : undefined;
        const reasoning = (choice?.message as { reasoning_content?: unknown } | undefined)?.reasoning_content;
        const collected = toolCallsOfMessage(choice?.message);
        const thought = visible.thought || (typeof reasoning === 'string' && reasoning.length > 0);
        const calls = keptCalls(cut, collected.calls(firstCallNumber(req)));
        const usage = usageFromOpenAi(res.usage);
        result = { text, model: res.model || req.model, usage, cut, thought, ...calls, unnamed: collected.unnamed };
      }
      if (!result.text.trim() && result.toolCalls.length === 0 && result.unnamed > 0 && !result.droppedCalls) {
        // A call without a name cannot be run nor sent back: the reply has nothing the turn can use.
        const said = 'OpenAI-compatible: the model answered only with a tool call that has no name';
        throw new LlmError(said, 'unknown_tool', false);
      }
      if (!result.text.trim() && result.toolCalls.length === 0) {
        const why = result.droppedCalls
          ? ': it ran out of max_tokens in the middle of a tool call'
          : result.thought
            ? result.cut === 'max_tokens'
              ? ': it spent max_tokens thinking'
              : ': only thinking, no answer'
            : '';
        throw new LlmError(`OpenAI-compatible: the model returned no text${why}`, 'empty', false);
      }
      this.failures.succeeded(req.model);
      const { thought: _t, droppedCalls: _d, unnamed: _u, toolCalls, ...reply } = result;
      return { ...reply, ...(toolCalls.length ? { toolCalls } : {}), costUsd: estimateCost(result.model, result.usage, this.config.prices) };
    } catch (err) {
      throw providerFailure(err, req, { provider: 'OpenAI-compatible endpoint', call, secrets: this.secrets, failures: this.failures });
    } finally {
      call?.dispose();
    }
  }

  private async streamed(params: ChatParams, req: LlmRequest, call: CallController, includeUsage: boolean): Promise<Reply> {
    const onDelta = req.onDelta!;
    const maxReplyBytes = req.maxReplyBytes;
    const stream = await this.client.chat.completions.create(
      { ...params, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) },
      { signal: call.signal },
    );
    let text = '';
    let model = params.model;
    let usage: Usage | undefined;
    let lengthStop = false;
    let reasoned = false;
    const calls = new ToolCallCollector();
    const budget = new ReplyBudget(maxReplyBytes);
    const think = new ThinkFilter();
    const pass = (visible: string) => {
      if (!visible) return;
      const part = budget.take(visible);
      if (!part) return;
      text += part;
      try {
        onDelta(part);
      } catch (err) {
        this.logger.warn({ err: String(err) }, 'onDelta listener threw; ignoring');
      }
    };
    for await (const chunk of stream) {
      if (chunk.model) model = chunk.model;
      if (chunk.usage) usage = usageFromOpenAi(chunk.usage);
      const choice = chunk.choices?.[0];
      if (choice?.finish_reason === 'length') lengthStop = true;
      const delta = choice?.delta as (OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null; reasoning?: string | null }) | undefined;
      // Reasoning deltas (llama.cpp, vLLM, DeepSeek: `reasoning_content`; OpenRouter and others:
      // `reasoning`) are the model working, never reply text.
      const reasoning = delta?.reasoning_content || delta?.reasoning;
      if (reasoning) reasoned = true;
      if (reasoning || delta?.content || delta?.tool_calls?.length) activity(req);
      if (delta?.tool_calls?.length) calls.push(delta.tool_calls);
      if (delta?.content) {
        pass(think.push(delta.content));
        // Leaving the loop aborts the request: the rest of the reply is never read.
        if (budget.cut) break;
      }
    }
    if (!budget.cut) pass(think.end());
    if (budget.cut) {
      this.logger.debug({ model, bytes: maxReplyBytes }, `reply over ${maxReplyBytes} bytes: stream closed, reply cut`);
      // Usage comes in the last chunk, which a cut stream never reaches: zeros, not a guess.
      const thought = reasoned || think.thought;
      const none = { toolCalls: [], droppedCalls: calls.count > 0, unnamed: 0 };
      return { text, model, usage: usage ?? usageFromOpenAi(null), cut: 'bytes', thought, ...none };
    }
    // The SDK ends the iteration quietly when its signal fires; make that an error.
    if (call.signal.aborted) throw call.signal.reason ?? new Error('aborted');
    const cut = lengthStop ? 'max_tokens' : undefined;
    const kept = keptCalls(cut, calls.calls(firstCallNumber(req)));
    const thought = reasoned || think.thought;
    return { text, model, usage: usage ?? usageFromOpenAi(null), cut, thought, ...kept, unnamed: calls.unnamed };
  }
}

/** What one call produced, before its cost is worked out. */
interface Reply {
  text: string;
  model: string;
  usage: Usage;
  cut?: ReplyCut | undefined;
  /** The model thought (reasoning deltas or an inline block): explains an empty reply. */
  thought: boolean;
  /** The calls the model stopped to make, in order. */
  toolCalls: ToolCall[];
  /** Calls were left out because the reply was cut (explains an empty reply). */
  droppedCalls: boolean;
  /** Calls that came without a name: nothing can run them. */
  unnamed: number;
}

/** A cut reply hands on no calls: at `max_tokens` the last one may be half written, at the byte budget the reply was not read whole. */
function keptCalls(cut: ReplyCut | undefined, calls: ToolCall[]): { toolCalls: ToolCall[]; droppedCalls: boolean } {
  return cut ? { toolCalls: [], droppedCalls: calls.length > 0 } : { toolCalls: calls, droppedCalls: false };
}

/** Tell the caller the model is producing (its first-token and idle limits count this). */
function activity(req: LlmRequest): void {
  try {
    req.onActivity?.();
  } catch {
    // A listener's failure is the listener's; the stream goes on.
  }
}

/** Did the server refuse the request because of `stream_options` (older OpenAI-compatible servers)? */
function rejectsStreamOptions(err: unknown): boolean {
  const status = (err as { status?: unknown })?.status;
  if (status !== 400 && status !== 422) return false;
  const msg = err instanceof Error ? err.message : String(err);
  return /stream_options|include_usage/i.test(msg);
}
