/**
 * # Fake OpenAI-compatible chat completions server
 *
 * `POST /v1/chat/completions` on 127.0.0.1 (random port), the way OpenAI, Ollama, llama.cpp's
 * server and vLLM answer it:
 *
 * - JSON: `{id, object: 'chat.completion', model, choices: [{message, finish_reason}], usage}`;
 *   `usage` is left out when the fake is built with `reportUsage: false` (servers that don't count).
 * - SSE (`stream: true`): `data: {chat.completion.chunk}` lines — a role chunk, one chunk per
 *   text piece, a chunk with `finish_reason` — then, when the request asked for
 *   `stream_options.include_usage` (and `reportUsage` is on), a last chunk with `choices: []` and
 *   the usage, then `data: [DONE]`.
 * - `rejectStreamOptions: true` answers any request carrying `stream_options` with a 400, like
 *   older servers that validate strictly.
 * - Errors in OpenAI's shape `{error: {message, type, param, code}}`.
 *
 * A small context like llama.cpp's `llama-server -c N`: with `nCtx`, a request whose prompt
 * tokens reach `nCtx` is refused with llama.cpp's own answer — 400 `{"error": {"code": 400, "message":
 * "request (P tokens) exceeds the available context size (N tokens)", "type":
 * "exceed_context_size_error", "n_prompt_tokens": P, "n_ctx": N}}` — and logged with `overflow: true`.
 * Each request logs its `promptTokens`.
 *
 * Content parts (`./files.ts`): `image_url` data URLs are decoded and logged per request
 * (`images`: media type, SHA-256, size); `noVision` refuses any request with an image the way
 * llama.cpp does without a vision projector ("image input is not supported", 500 or 400).
 *
 * Tokens are estimated as `ceil(chars / 4)` per message, plus `templateTokens` per message (default
 * 0) for the chat template's role markers; `cachedTokens` lets a test report a cached share in
 * `usage.prompt_tokens_details.cached_tokens`. Answers are scripted as for the Anthropic fake:
 * `queue(...)` first, then `reply(req, n)`; every request is kept in `requests`.
 *
 * Tool calls (`toolCalls`, or `callTool(name, input)`): streamed split over several chunks as OpenAI
 * does, or whole in one chunk ending on `finish_reason: 'stop'` as Ollama does (`toolCallStyle`);
 * see `./tools.ts`. Requests are checked as OpenAI checks them (tool names, `tool_choice` only with
 * tools, each `tool` message answering a call of the assistant message before it, each call
 * answered): a 400 otherwise. Tools and tool calls count in the prompt tokens.
 *
 * Runaway models: `hang: 'headers'` never answers, `hang: 'body'` sends the headers and
 * the first chunk and then falls silent — both until the client goes away; `repeat` streams one
 * piece many times (a 10 MB reply without holding 10 MB), honouring socket back-pressure so the
 * fake never buffers what the client did not read. Each logged request says how many body bytes
 * were written (`bytesSent`) and whether the client closed the connection before the fake had
 * finished (`closedEarly`); `open` counts responses still in progress.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { NO_VISION_MESSAGE, receiveImages, type ReceivedImage } from './files.js';
import { argumentsText, messageToolCalls, toolCallDeltas, validateToolRequest, type OpenAiToolCall, type ToolCallStyle } from './tools.js';

export * from './files.js';
export * from './tools.js';

export interface OpenAiReply {
  text?: string;
  chunks?: string[];
  model?: string;
  finishReason?: string;
  delayMs?: number;
  chunkDelayMs?: number;
  /** Send a `data: {"error": …}` chunk after this many text chunks (streaming). */
  streamErrorAfter?: number;
  /** Never finish: before the headers, or (streams) after the first chunk. Ends when the client leaves. */
  hang?: 'headers' | 'body';
  /** Stream `piece` this many times instead of `text` (generated lazily). */
  repeat?: { piece: string; times: number };
  /**
   * Reasoning before the answer, the way llama.cpp / vLLM / DeepSeek send it: streamed
   * as `delta.reasoning_content` chunks (one per word) before any content, and as
   * `message.reasoning_content` in JSON answers. Inline `<think>` blocks go in `text` / `chunks`.
   */
  reasoning?: string;
  /** Streams: after this many content chunks, fall silent (headers and text sent) until the client leaves. */
  stallAfter?: number;
  /** Tool calls after the text (which defaults to none when there are calls). */
  toolCalls?: OpenAiToolCall[];
  /** How streamed calls are sent (default `'split'`); `finishReason` defaults to `tool_calls` for split, `stop` for whole. */
  toolCallStyle?: ToolCallStyle;
  /** Streamed calls carry no `id` (some local servers). */
  omitToolCallIds?: boolean;
  /** Streamed calls carry no `index` (older Ollama). */
  omitToolCallIndex?: boolean;
}

/** A reply that calls one tool: `fake.queue(callTool('lookup', { q: 'AAPL' }, { text: 'Let me look.' }))`. */
export function callTool(name: string, input: Record<string, unknown> = {}, extra: OpenAiReply = {}): OpenAiReply {
  return { ...extra, toolCalls: [...(extra.toolCalls ?? []), { name, input }] };
}

export interface OpenAiFailure {
  status: number;
  /** The parameter an error is about (OpenAI's `error.param`). */
  param?: string | null;
  /** Send this JSON body instead of OpenAI's error shape (Ollama's own API answers `{error: "…"}`). */
  body?: unknown;
  message?: string;
  type?: string;
  code?: string | null;
  headers?: Record<string, string>;
}

export type OpenAiAnswer = string | OpenAiReply | OpenAiFailure;

export interface OpenAiLoggedRequest {
  index: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  stream: boolean;
  status: number;
  /** Response body bytes written so far. */
  bytesSent: number;
  /** The client closed the connection before the fake finished its answer. */
  closedEarly: boolean;
  /** Prompt tokens counted for this request (0 when it was refused before counting). */
  promptTokens: number;
  /** Refused for exceeding `nCtx`. */
  overflow: boolean;
  /** The `image_url` parts of the request, decoded (see `./files.ts`). */
  images?: ReceivedImage[];
}

export interface FakeOpenAiOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Report usage at all (default true). */
  reportUsage?: boolean;
  /** 400 for requests with `stream_options`. */
  rejectStreamOptions?: boolean;
  /** Cached prompt tokens to report (default 0, field omitted). */
  cachedTokens?: number;
  /** Models this server serves; any other answers 404 `model_not_found`, as OpenAI does. Default: all. */
  models?: string[];
  reply?: (req: OpenAiLoggedRequest, index: number) => OpenAiAnswer | Promise<OpenAiAnswer>;
  /** Context size, as llama-server's `-c`: prompts of this many tokens or more get a 400 `exceed_context_size_error`. */
  nCtx?: number;
  /** Tokens the chat template adds per message (default 0). */
  templateTokens?: number;
  /**
   * A model that cannot see, as llama.cpp serves one without `--mmproj`: a request with an image
   * is refused with its message, status 500 (`true`) or the one given (newer builds answer 400).
   */
  noVision?: boolean | { status: number };
}

const tokens = (s: string) => Math.ceil(s.length / 4);

function isFailure(a: OpenAiAnswer): a is OpenAiFailure {
  return typeof a === 'object' && typeof (a as OpenAiFailure).status === 'number';
}

export class FakeOpenAiServer {
  readonly requests: OpenAiLoggedRequest[] = [];
  private readonly queued: OpenAiAnswer[] = [];
  private server: http.Server | undefined;
  private port = 0;
  private inProgress = 0;
  reply: (req: OpenAiLoggedRequest, index: number) => OpenAiAnswer | Promise<OpenAiAnswer>;

  constructor(private readonly opts: FakeOpenAiOptions = {}) {
    this.reply = opts.reply ?? (() => 'ok');
  }

  /** Base URL for the SDK, including `/v1`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Responses still in progress (a hanging one counts until its client goes away). */
  get open(): number {
    return this.inProgress;
  }

  /** Every image the requests carried, in order (see `./files.ts`). */
  receivedImages(): ReceivedImage[] {
    return this.requests.flatMap((r) => r.images ?? []);
  }

  queue(...answers: OpenAiAnswer[]): this {
    this.queued.push(...answers);
    return this;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      this.inProgress++;
      res.once('close', () => this.inProgress--);
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) this.sendError(res, { status: 500, message: `fake crashed: ${String(err)}` });
        else res.destroy();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const path = (req.url ?? '/').split('?')[0]!;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
    const entry: OpenAiLoggedRequest = { index: this.requests.length, method: req.method ?? 'GET', path, headers, body: {}, stream: false, status: 0, bytesSent: 0, closedEarly: false, promptTokens: 0, overflow: false };
    this.requests.push(entry);
    res.once('close', () => {
      if (!res.writableFinished) entry.closedEarly = true;
    });
    const fail = (f: OpenAiFailure) => {
      entry.status = f.status;
      this.sendError(res, f);
    };
    if (req.method === 'GET' && path === '/v1/models') {
      // As Ollama, llama.cpp and vLLM list what they serve.
      if (this.opts.apiKey !== undefined && headers['authorization'] !== `Bearer ${this.opts.apiKey}`) {
        return fail({ status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error' });
      }
      const data = (this.opts.models ?? ['fake-model']).map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'local' }));
      entry.status = 200;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data }));
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return fail({ status: 404, message: `no route ${req.method} ${path}`, type: 'not_found' });
    try {
      entry.body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
    } catch {
      return fail({ status: 400, message: 'invalid JSON body' });
    }
    const body = entry.body;
    entry.stream = body['stream'] === true;
    if (this.opts.apiKey !== undefined && headers['authorization'] !== `Bearer ${this.opts.apiKey}`) {
      return fail({ status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' });
    }
    if (this.opts.models && !this.opts.models.includes(String(body['model']))) {
      return fail({ status: 404, message: `The model \`${String(body['model'])}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', code: 'model_not_found' });
    }
    if (this.opts.rejectStreamOptions && body['stream_options'] !== undefined) {
      return fail({ status: 400, message: "Unrecognized request argument supplied: stream_options", code: null });
    }
    const msgs = body['messages'];
    if (typeof body['model'] !== 'string' || !Array.isArray(msgs) || msgs.length === 0) {
      return fail({ status: 400, message: 'model and a non-empty messages list are required' });
    }
    const toolProblem = validateToolRequest(body);
    if (toolProblem) return fail({ status: 400, message: toolProblem.message, type: 'invalid_request_error', code: toolProblem.code, param: toolProblem.param });
    const received = receiveImages(body);
    if ('problem' in received) return fail({ status: 400, message: received.problem, type: 'invalid_request_error' });
    entry.images = received.images;
    if (this.opts.noVision && received.images.length) {
      // llama.cpp's body: its own `code` (the status) and a `type` that follows the status.
      const status = this.opts.noVision === true ? 500 : this.opts.noVision.status;
      const type = status >= 500 ? 'server_error' : 'invalid_request_error';
      return fail({ status, body: { error: { code: status, message: NO_VISION_MESSAGE, type } } });
    }

    const perMessage = this.opts.templateTokens ?? 0;
    const toolTokens = body['tools'] ? tokens(JSON.stringify(body['tools'])) : 0;
    entry.promptTokens = (msgs as Array<{ content?: unknown; tool_calls?: unknown }>).reduce(
      (n, m) => n + perMessage + tokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')) + (m.tool_calls ? tokens(JSON.stringify(m.tool_calls)) : 0),
      toolTokens,
    );
    if (this.opts.nCtx !== undefined && entry.promptTokens >= this.opts.nCtx) {
      // llama.cpp's answer, body and all (server.cpp, ERROR_TYPE_EXCEED_CONTEXT_SIZE).
      entry.status = 400;
      entry.overflow = true;
      const n = this.opts.nCtx;
      const json = JSON.stringify({ error: { code: 400, message: `request (${entry.promptTokens} tokens) exceeds the available context size (${n} tokens)`, type: 'exceed_context_size_error', n_prompt_tokens: entry.promptTokens, n_ctx: n } });
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(json);
      return;
    }
    const answer = this.queued.length ? this.queued.shift()! : await this.reply(entry, entry.index);
    if (typeof answer === 'object' && 'delayMs' in answer && answer.delayMs) {
      if (await delay(answer.delayMs, res)) {
        entry.status = 499;
        return;
      }
    }
    if (isFailure(answer)) return fail(answer);
    const r: OpenAiReply = typeof answer === 'string' ? { text: answer } : answer;
    if (r.hang === 'headers' || (r.hang === 'body' && !entry.stream)) {
      entry.status = 499;
      await untilClosed(res);
      return;
    }
    // A repeated reply is built whole only for JSON answers; streams generate it piece by piece.
    const calls = r.toolCalls ?? [];
    const text = r.repeat && !entry.stream ? r.repeat.piece.repeat(r.repeat.times) : (r.text ?? (calls.length ? '' : 'ok'));
    const callTokens = calls.reduce((n, c) => n + tokens(c.name + argumentsText(c)), 0);
    const completionTokens = (r.repeat ? tokens(r.repeat.piece) * r.repeat.times : tokens(text)) + callTokens;
    const style = r.toolCallStyle ?? 'split';
    const finishReason = r.finishReason ?? (calls.length && (style === 'split' || !entry.stream) ? 'tool_calls' : 'stop');
    const model = r.model ?? String(body['model']);
    const promptTokens = entry.promptTokens;
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      ...(this.opts.cachedTokens ? { prompt_tokens_details: { cached_tokens: this.opts.cachedTokens } } : {}),
    };
    const reportUsage = this.opts.reportUsage !== false;
    const id = `chatcmpl-fake-${entry.index}`;
    const created = 1_700_000_000;
    entry.status = 200;

    if (!entry.stream) {
      const json = JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: calls.length && !text ? null : text,
              ...(r.reasoning ? { reasoning_content: r.reasoning } : {}),
              ...(calls.length ? { tool_calls: messageToolCalls(calls, entry.index) } : {}),
            },
            finish_reason: finishReason,
            logprobs: null,
          },
        ],
        ...(reportUsage ? { usage } : {}),
      });
      entry.bytesSent += Buffer.byteLength(json);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(json);
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const includeUsage = reportUsage && (body['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage === true;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: 'chat.completion.chunk', created, model, choices, ...extra });
    const send = async (data: unknown): Promise<boolean> => {
      if (res.destroyed || res.writableEnded) return false;
      const line = `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
      entry.bytesSent += Buffer.byteLength(line);
      // Back-pressure: wait until the client read what was sent, as a real server's socket would.
      if (!res.write(line) && !(await drained(res))) return false;
      if (r.chunkDelayMs) return !(await delay(r.chunkDelayMs, res));
      return true;
    };
    if (!(await send(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])))) return;
    if (r.hang === 'body') {
      await untilClosed(res);
      return;
    }
    for (const piece of r.reasoning ? (r.reasoning.match(/\S+\s*|\s+/g) ?? []) : []) {
      if (!(await send(chunk([{ index: 0, delta: { reasoning_content: piece }, finish_reason: null }])))) return;
    }
    if (r.repeat) {
      for (let i = 0; i < r.repeat.times; i++) {
        if (!(await send(chunk([{ index: 0, delta: { content: r.repeat.piece }, finish_reason: null }])))) return;
      }
    }
    const pieces = r.repeat ? [] : (r.chunks ?? (text.match(/\S+\s*|\s+/g) ?? []));
    for (let i = 0; i < pieces.length; i++) {
      if (r.stallAfter !== undefined && i >= r.stallAfter) {
        await untilClosed(res);
        return;
      }
      if (r.streamErrorAfter !== undefined && i >= r.streamErrorAfter) {
        await send({ error: { message: 'upstream model crashed', type: 'server_error', code: null } });
        res.end();
        return;
      }
      if (!(await send(chunk([{ index: 0, delta: { content: pieces[i] }, finish_reason: null }])))) return;
    }
    const deltas = toolCallDeltas(calls, entry.index, { style, omitIds: r.omitToolCallIds, omitIndex: r.omitToolCallIndex });
    // Whole calls come in the chunk that also ends the reply, the hardest case for a client.
    const last = style === 'whole' ? deltas.pop() : undefined;
    for (const toolCalls of deltas) {
      if (!(await send(chunk([{ index: 0, delta: { tool_calls: toolCalls }, finish_reason: null }])))) return;
    }
    if (!(await send(chunk([{ index: 0, delta: last ? { tool_calls: last } : {}, finish_reason: finishReason }])))) return;
    if (includeUsage && !(await send(chunk([], { usage })))) return;
    await send('[DONE]');
    res.end();
  }

  private sendError(res: http.ServerResponse, f: OpenAiFailure): void {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(f.status, { 'content-type': 'application/json', ...(f.headers ?? {}) });
    res.end(JSON.stringify(f.body !== undefined ? f.body : { error: { message: f.message ?? `error ${f.status}`, type: f.type ?? 'invalid_request_error', param: f.param ?? null, code: f.code ?? null } }));
  }
}

/** Resolve once the client has gone away. */
function untilClosed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) resolve();
    else res.once('close', () => resolve());
  });
}

/** Resolve true when the socket drained, false when the client went away first. */
function drained(res: http.ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = () => {
      res.off('close', onClose);
      resolve(true);
    };
    const onClose = () => {
      res.off('drain', onDrain);
      resolve(false);
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

function delay(ms: number, res: http.ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(t);
      resolve(true);
    };
    const t = setTimeout(() => {
      res.off('close', onClose);
      resolve(res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

export async function startFakeOpenAi(opts: FakeOpenAiOptions = {}): Promise<FakeOpenAiServer> {
  return new FakeOpenAiServer(opts).start();
}
