/**
 * The `anthropic` provider (SPEC §8, issue 5) on the official `@anthropic-ai/sdk`.
 *
 * Prompt caching layout of every request, in the order the API hashes it (tools → system →
 * messages):
 *
 *   system[0]  the stable prefix (persona + group section)       ← breakpoint 1
 *   system[1]  the running summary, when there is one
 *   messages   the session's history, user/assistant alternating
 *   last msg   its last content block                              ← breakpoint 2
 *
 * Breakpoint 1 lets every call with the same persona/group prefix (a fresh session, a call right
 * after the summary changed) read the prefix from cache. Breakpoint 2 caches the whole
 * conversation; the next turn of the session appends an assistant and a user message, and the
 * API's lookback finds the previous turn's entry two blocks before its own breakpoint, so only
 * the new turn is written. Nothing that changes per call is added by this provider: the request
 * is a pure function of the `LlmRequest`.
 *
 * Retries (429, 529, 5xx, connection errors) are the SDK's (`llm.max_retries`, honouring
 * `retry-after`); the timeout is `llm.timeout_seconds` per attempt, and for streams also the
 * longest silence between two events.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ChorusConfig } from '../config/schema.js';
import type { LlmError } from '../core/errors.js';
import { LlmError as LlmErrorClass } from '../core/errors.js';
import type { LlmProvider, LlmRequest, LlmResponse, Logger } from '../core/ports.js';
import type { Usage } from '../core/types.js';
import { CallController, FailureReporter, displayUrl, sdkClientOptions, nonEmpty, providerFailure } from './common.js';
import { estimateCost } from './pricing.js';

type LlmConfig = ChorusConfig['llm'];
type CreateParams = Anthropic.MessageCreateParamsNonStreaming;
type TextBlockParam = Anthropic.TextBlockParam;
type MessageParam = Anthropic.MessageParam;

export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Build the Messages API parameters for one request, with the cache breakpoints described above.
 * Exported for tests and for anyone who wants to see exactly what is sent.
 */
export function buildAnthropicParams(req: LlmRequest, defaultMaxTokens: number): CreateParams {
  if (req.messages.length === 0) {
    throw new LlmErrorClass('Anthropic: a request needs at least one message', 'bad_request', false);
  }
  const system: TextBlockParam[] = [{ type: 'text', text: nonEmpty(req.system), cache_control: EPHEMERAL }];
  if (req.summary && req.summary.trim()) system.push({ type: 'text', text: req.summary });

  const last = req.messages.length - 1;
  const messages: MessageParam[] = req.messages.map((m, i) => {
    const block: TextBlockParam = { type: 'text', text: nonEmpty(m.content) };
    if (i === last) block.cache_control = EPHEMERAL;
    return m.role === 'assistant' ? { role: 'assistant', content: [block] } : { role: 'user', content: [block] };
  });

  return {
    model: req.model,
    max_tokens: req.maxTokens ?? defaultMaxTokens,
    system,
    messages,
  };
}

/** Map the API's usage object to ours (missing counters are zero). */
export function usageFromAnthropic(u: Partial<Anthropic.Usage> | null | undefined): Usage {
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

  constructor(opts: { config: LlmConfig; logger: Logger }) {
    this.config = opts.config;
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
      params = buildAnthropicParams(req, this.config.max_tokens);
    } catch (err) {
      throw this.fail(err, req, undefined);
    }
    const call = new CallController(req.signal, Math.round(this.config.timeout_seconds * 1000));
    try {
      const message = req.onDelta ? await this.streamed(params, req.onDelta, call) : await this.client.messages.create(params, { signal: call.signal });
      const text = message.content
        .filter((b): b is Anthropic.TextBlock => b.type === 'text')
        .map((b) => b.text)
        .join('');
      if (!text.trim()) {
        throw new LlmErrorClass(`Anthropic: the model returned no text (stop_reason ${message.stop_reason ?? 'unknown'})`, 'empty', false);
      }
      const usage = usageFromAnthropic(message.usage);
      const model = message.model || req.model;
      this.failures.succeeded(req.model);
      return { text, model, usage, costUsd: estimateCost(model, usage, this.config.prices) };
    } catch (err) {
      throw this.fail(err, req, call);
    } finally {
      call.dispose();
    }
  }

  private async streamed(params: CreateParams, onDelta: (text: string) => void, call: CallController): Promise<Anthropic.Message> {
    const stream = this.client.messages.stream(params, { signal: call.signal });
    // Until the response starts, the SDK's own timeout and retries apply; from then on the
    // watchdog bounds the silence between two events.
    stream.on('connect', () => call.touch());
    stream.on('streamEvent', () => call.touch());
    stream.on('text', (delta) => {
      if (!delta) return;
      try {
        onDelta(delta);
      } catch (err) {
        this.logger.warn({ err: String(err) }, 'onDelta listener threw; ignoring');
      }
    });
    return await stream.finalMessage();
  }

  private fail(err: unknown, req: LlmRequest, call: CallController | undefined): LlmError {
    return providerFailure(err, req, { provider: 'Anthropic', call, secrets: this.secrets, failures: this.failures });
  }
}
