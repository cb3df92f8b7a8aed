/**
 * # Fake Anthropic Messages API
 *
 * An HTTP server on 127.0.0.1 (random port) that the real `@anthropic-ai/sdk` talks to through
 * `baseURL`. It serves `POST /v1/messages`, JSON or Server-Sent Events (`stream: true`), with the
 * event sequence of the real API:
 *
 *   message_start (usage) → [thinking blocks] → content_block_start → ping →
 *   content_block_delta (text_delta) … → content_block_stop → message_delta (stop_reason, usage) →
 *   message_stop
 *
 * A reply may think first (`thinking`, `redactedThinking`): `thinking` / `redacted_thinking`
 * blocks with `thinking_delta` and `signature_delta` events, before the text block. It may call
 * tools after its text (`toolCalls`, or `callTool(name, input)`): `tool_use` blocks with their
 * arguments split over several `input_json_delta` events, and `stop_reason: 'tool_use'` (see
 * `./tools.ts`). The API's checks of `tools`, `tool_choice` and of `tool_use` / `tool_result`
 * pairs in the messages answer 400 `invalid_request_error` like the real ones.
 *
 * Files (`./files.ts`): `image` and `document` blocks are decoded and logged per request
 * (`files`: media type, SHA-256, size) after the API's cheap checks (media type, base64, the bytes
 * matching the claimed type, 5 MB per image), each refusal a 400 `invalid_request_error`.
 *
 * Errors use Anthropic's body shape `{type: 'error', error: {type, message}}` with the real
 * statuses (400 invalid_request_error, 401 authentication_error, 429 rate_limit_error with
 * `retry-after`, 500 api_error, 529 overloaded_error) and, mid-stream, an `event: error`.
 *
 * ## Cache model
 *
 * Implemented in `./cache.ts`, following the documented prompt-caching rules:
 *
 * - **Blocks.** A request is flattened into content blocks in hashing order: `tools`, then
 *   `system` (a string counts as one text block), then each message's content blocks (string
 *   content counts as one text block). A block's identity is its JSON without `cache_control`
 *   (plus its role), so moving a marker never changes what is cached. Changing the tools changes
 *   every entry; changing `tool_choice` (absent counts as `auto`) changes the entries that end in
 *   the messages only, as documented.
 * - **Entries.** A block with `cache_control` is a breakpoint. An entry is the exact prefix
 *   (model + every block up to and including the breakpoint), stored under a cumulative hash.
 *   A top-level `cache_control` (automatic caching) marks the last block. More than 4
 *   breakpoints → 400.
 * - **Minimum length.** A prefix shorter than the model's minimum is never written: 1024 tokens
 *   for Sonnet/Opus, 2048 for Haiku (override with `minCacheTokens`). Tokens are estimated as
 *   `ceil(chars / 4)` per text block.
 * - **Reads and the lookback.** At every breakpoint the server checks the boundary itself and up
 *   to 20 block boundaries before it for a live entry (the documented lookback); the longest
 *   match over all breakpoints is read. That is how turn N+1 of a conversation (which appends an
 *   assistant and a user block behind turn N's breakpoint) reads turn N's entry. An entry more
 *   than 20 blocks before every breakpoint is not found.
 * - **Writes.** Entries are written only at breakpoints, for every breakpoint past the read point
 *   whose prefix reaches the minimum. `cache_creation_input_tokens` is the span from the read
 *   point to the last written breakpoint.
 * - **Usage adds up.** `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` =
 *   the request's total estimate, which is every block plus 3 tokens of per-request overhead that
 *   is never cacheable. `output_tokens` is the estimate of the reply text.
 * - **TTL.** Entries live 5 minutes (`ttl: '1h'` → one hour) on the injected clock (`now`); a
 *   read refreshes the lifetime of the entry read and of the shorter live entries it contains
 *   (the system-prefix entry stays warm while the conversation entry is being read). Caches are
 *   per model.
 *
 * ## Scripting
 *
 * `queue(...)` answers the next requests in order; when the queue is empty `reply(req, n)` (a
 * function of the parsed request) decides, by default the text `"ok"`. An answer is a string (the
 * reply text), a {@link FakeReply} (text, chunking, delays, a mid-stream error), or a
 * {@link FakeFailure} (HTTP error with status, type, message and headers). Every request is kept
 * in `requests` with its headers, body and the cache outcome, for assertions.
 *
 * Runaway models: `hang: 'headers'` never answers, `hang: 'body'` starts the stream
 * and falls silent — both until the client goes away; `repeat` streams one piece many times (a
 * 10 MB reply without holding 10 MB), honouring socket back-pressure. Each logged request says
 * how many body bytes were written (`bytesSent`) and whether the client closed the connection
 * before the fake had finished (`closedEarly`); `open` counts responses still in progress.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CacheRequestError, PromptCache, defaultMinCacheTokens, estimateTokens, type CacheOutcome } from './cache.js';
import { receiveFiles, type ReceivedFile } from './files.js';
import { toolCallId, toolCallJson, toolJsonPieces, validateToolBlocks, validateTools, type FakeToolCall } from './tools.js';

export * from './cache.js';
export * from './files.js';
export * from './tools.js';

/** A successful answer. */
export interface FakeReply {
  text?: string;
  /** How the text is cut into `text_delta` events (default: one piece per word). */
  chunks?: string[];
  stopReason?: string;
  /** Override the output token count (default: estimate of the text). */
  outputTokens?: number;
  /** The model reported back (default: the requested one). */
  model?: string;
  /** Wait this long before answering at all (headers included). */
  delayMs?: number;
  /** Wait this long between SSE events. */
  chunkDelayMs?: number;
  /** Send an `error` event after this many text deltas (streaming only). */
  streamErrorAfter?: number;
  /** Type of that error event (default overloaded_error). */
  streamErrorType?: string;
  /** Never finish: before the headers, or (streams) after `message_start`. Ends when the client leaves. */
  hang?: 'headers' | 'body';
  /** Stream `piece` this many times instead of `text` (generated lazily). */
  repeat?: { piece: string; times: number };
  /**
   * A `thinking` block before the text (for models that think by default): streamed as
   * `content_block_start` (thinking) → `thinking_delta` per word → `signature_delta` →
   * `content_block_stop`, each event `chunkDelayMs` apart; in JSON answers a `thinking` content
   * block. Counted in `output_tokens`, like the real API.
   */
  thinking?: string;
  /** A `redacted_thinking` block (opaque `data`) before everything else. */
  redactedThinking?: boolean;
  /**
   * Tool calls after the text (which defaults to none when there are calls), each a `tool_use`
   * block; `stopReason` defaults to `tool_use`. Their JSON counts in `output_tokens`.
   */
  toolCalls?: FakeToolCall[];
}

/** A reply that calls one tool: `fake.queue(callTool('lookup', { q: 'AAPL' }, { text: 'Let me look.' }))`. */
export function callTool(name: string, input: Record<string, unknown> = {}, extra: FakeReply = {}): FakeReply {
  return { ...extra, toolCalls: [...(extra.toolCalls ?? []), { name, input }] };
}

/** An HTTP error answer. */
export interface FakeFailure {
  status: number;
  type: string;
  message?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export type FakeAnswer = string | FakeReply | FakeFailure;

/** One request as the fake saw it. */
export interface LoggedRequest {
  index: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  stream: boolean;
  /** HTTP status sent. */
  status: number;
  /** Response body bytes written so far. */
  bytesSent: number;
  /** The client closed the connection before the fake finished its answer. */
  closedEarly: boolean;
  /** Cache accounting, for answered (non-error) requests. */
  cache?: CacheOutcome;
  /** The image and document blocks of the request, decoded (see `./files.ts`), once it passed their checks. */
  files?: ReceivedFile[];
}

export interface FakeAnthropicOptions {
  /** Clock for cache TTLs (default `Date.now`). */
  now?: () => number;
  /** When set, requests must carry this key (`x-api-key` or `Authorization: Bearer`). */
  apiKey?: string;
  /** Put the received key into authentication error messages (a careless proxy), for redaction tests. */
  echoKeyInErrors?: boolean;
  /** Minimum cacheable prefix per model. */
  minCacheTokens?: (model: string) => number;
  /** Models this server serves; any other answers 404 `not_found_error`, as the real API does. Default: all. */
  models?: string[];
  /** Default answer when the queue is empty. */
  reply?: (req: LoggedRequest, index: number) => FakeAnswer | Promise<FakeAnswer>;
}

/** A clock tests can move by hand. */
export class ManualClock {
  constructor(public t = 1_700_000_000_000) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

function isFailure(a: FakeAnswer): a is FakeFailure {
  return typeof a === 'object' && 'status' in a && typeof (a as FakeFailure).status === 'number';
}

/** Split text into word-ish pieces so streams carry several deltas. */
export function defaultChunks(text: string): string[] {
  const pieces = text.match(/\S+\s*|\s+/g) ?? [];
  return pieces.length ? pieces : text ? [text] : [];
}

export class FakeAnthropicServer {
  readonly requests: LoggedRequest[] = [];
  readonly cache: PromptCache;
  private readonly queued: FakeAnswer[] = [];
  private server: http.Server | undefined;
  private port = 0;
  private inProgress = 0;
  reply: (req: LoggedRequest, index: number) => FakeAnswer | Promise<FakeAnswer>;

  constructor(private readonly opts: FakeAnthropicOptions = {}) {
    this.cache = new PromptCache(opts.now ?? Date.now, opts.minCacheTokens ?? defaultMinCacheTokens);
    this.reply = opts.reply ?? (() => 'ok');
  }

  /** Base URL to give the SDK (`baseURL`), e.g. `http://127.0.0.1:12345`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Responses still in progress (a hanging one counts until its client goes away). */
  get open(): number {
    return this.inProgress;
  }

  /** Answer the next requests with these, in order. */
  queue(...answers: FakeAnswer[]): this {
    this.queued.push(...answers);
    return this;
  }

  /** Every file the requests carried, in order (see `./files.ts`). */
  receivedFiles(): ReceivedFile[] {
    return this.requests.flatMap((r) => r.files ?? []);
  }

  /** Requests to `/v1/messages` only. */
  messages(): LoggedRequest[] {
    return this.requests.filter((r) => r.path === '/v1/messages');
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      this.inProgress++;
      res.once('close', () => this.inProgress--);
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) this.sendError(res, { status: 500, type: 'api_error', message: `fake crashed: ${String(err)}` });
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

  /** `GET /v1/models` as Anthropic answers it: the models this server serves, one page. */
  private listModels(headers: Record<string, string>, res: http.ServerResponse, fail: (f: FakeFailure) => void): void {
    const key = headers['x-api-key'] || /^Bearer\s+(.+)$/i.exec(headers['authorization'] ?? '')?.[1];
    if (this.opts.apiKey !== undefined && key !== this.opts.apiKey) return fail({ status: 401, type: 'authentication_error', message: 'invalid x-api-key' });
    const ids = this.opts.models ?? ['claude-sonnet-5-5', 'claude-haiku-5-5'];
    const data = ids.map((id) => ({ type: 'model', id, display_name: id, created_at: '2026-01-01T00:00:00Z' }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data, has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null }));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0]!;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
    let body: Record<string, unknown> = {};
    const entry: LoggedRequest = { index: this.requests.length, method: req.method ?? 'GET', path, headers, body, stream: false, status: 0, bytesSent: 0, closedEarly: false };
    this.requests.push(entry);
    res.once('close', () => {
      if (!res.writableFinished) entry.closedEarly = true;
    });
    const fail = (f: FakeFailure) => {
      entry.status = f.status;
      this.sendError(res, f);
    };

    if (req.method === 'GET' && path === '/v1/models') return this.listModels(headers, res, fail);
    if (req.method !== 'POST' || path !== '/v1/messages') return fail({ status: 404, type: 'not_found_error', message: `no route ${req.method} ${path}` });
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
      entry.body = body;
    } catch {
      return fail({ status: 400, type: 'invalid_request_error', message: 'body is not valid JSON' });
    }
    entry.stream = body['stream'] === true;

    // Older SDKs send `x-api-key`; current ones send the key as `Authorization: Bearer`.
    const bearer = /^Bearer\s+(.+)$/i.exec(headers['authorization'] ?? '')?.[1];
    const key = headers['x-api-key'] || bearer;
    if (this.opts.apiKey !== undefined && key !== this.opts.apiKey) {
      const shown = this.opts.echoKeyInErrors ? `: ${key ?? '(none)'}` : '';
      return fail({ status: 401, type: 'authentication_error', message: `invalid x-api-key${shown}` });
    }
    if (!headers['anthropic-version']) return fail({ status: 400, type: 'invalid_request_error', message: 'anthropic-version header is required' });
    if (this.opts.models && !this.opts.models.includes(String(body['model']))) return fail({ status: 404, type: 'not_found_error', message: `model: ${String(body['model'])}` });
    const problem = validate(body);
    if (problem) return fail({ status: 400, type: 'invalid_request_error', message: problem });
    const received = receiveFiles(body);
    if ('problem' in received) return fail({ status: 400, type: 'invalid_request_error', message: received.problem });
    entry.files = received.files;
    try {
      this.cache.validate(body);
    } catch (err) {
      if (err instanceof CacheRequestError) return fail({ status: 400, type: 'invalid_request_error', message: err.message });
      throw err;
    }

    const answer = this.queued.length ? this.queued.shift()! : await this.reply(entry, entry.index);
    if (answer && typeof answer === 'object' && answer.delayMs) {
      const gone = await delay(answer.delayMs, res);
      if (gone) {
        entry.status = 499;
        return;
      }
    }
    if (isFailure(answer)) return fail(answer);

    const r: FakeReply = typeof answer === 'string' ? { text: answer } : answer;
    if (r.hang === 'headers' || (r.hang === 'body' && !entry.stream)) {
      entry.status = 499;
      await untilClosed(res);
      return;
    }
    const outcome = this.cache.account(body);
    entry.cache = outcome;
    entry.status = 200;
    // A repeated reply is built whole only for JSON answers; streams generate it piece by piece.
    const calls = r.toolCalls ?? [];
    const text = r.repeat ? (entry.stream ? r.repeat.piece : r.repeat.piece.repeat(r.repeat.times)) : (r.text ?? (calls.length ? '' : 'ok'));
    const model = r.model ?? String(body['model']);
    const callTokens = calls.reduce((n, c) => n + estimateTokens(c.name + toolCallJson(c)), 0);
    const outputTokens = r.outputTokens ?? (r.repeat ? estimateTokens(r.repeat.piece) * r.repeat.times : estimateTokens(text)) + (r.thinking ? estimateTokens(r.thinking) : 0) + callTokens;
    const REDACTED = { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj' };
    const thinkingBlocks = [...(r.redactedThinking ? [REDACTED] : []), ...(r.thinking ? [{ type: 'thinking', thinking: r.thinking, signature: 'sig_fake_thinking' }] : [])];
    const usage = { ...outcome.usage, output_tokens: outputTokens, service_tier: 'standard' };
    const id = `msg_fake_${entry.index}`;
    const stopReason = r.stopReason ?? (calls.length ? 'tool_use' : 'end_turn');
    const toolUse = calls.map((c, n) => ({ type: 'tool_use', id: toolCallId(c, entry.index, n), name: c.name, input: c.input ?? {} }));

    if (!entry.stream) {
      const json = JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [...thinkingBlocks, ...(text ? [{ type: 'text', text }] : []), ...toolUse],
        stop_reason: stopReason,
        stop_sequence: null,
        usage,
      });
      entry.bytesSent += Buffer.byteLength(json);
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_fake_${entry.index}` });
      res.end(json);
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_fake_${entry.index}` });
    const send = async (event: string, data: unknown): Promise<boolean> => {
      if (res.destroyed || res.writableEnded) return false;
      const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      entry.bytesSent += Buffer.byteLength(frame);
      // Back-pressure: wait until the client read what was sent, as a real server's socket would.
      if (!res.write(frame) && !(await drained(res))) return false;
      if (r.chunkDelayMs) return !(await delay(r.chunkDelayMs, res));
      return true;
    };
    const startUsage = { ...outcome.usage, output_tokens: 1, service_tier: 'standard' };
    if (!(await send('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }))) return;
    // Thinking comes first, each block with its own index; the text block follows them.
    let textIndex = 0;
    if (r.redactedThinking) {
      if (!(await send('content_block_start', { type: 'content_block_start', index: textIndex, content_block: REDACTED }))) return;
      if (!(await send('content_block_stop', { type: 'content_block_stop', index: textIndex }))) return;
      textIndex++;
    }
    if (r.thinking) {
      if (!(await send('content_block_start', { type: 'content_block_start', index: textIndex, content_block: { type: 'thinking', thinking: '', signature: '' } }))) return;
      for (const piece of defaultChunks(r.thinking)) {
        if (!(await send('content_block_delta', { type: 'content_block_delta', index: textIndex, delta: { type: 'thinking_delta', thinking: piece } }))) return;
      }
      if (!(await send('content_block_delta', { type: 'content_block_delta', index: textIndex, delta: { type: 'signature_delta', signature: 'sig_fake_thinking' } }))) return;
      if (!(await send('content_block_stop', { type: 'content_block_stop', index: textIndex }))) return;
      textIndex++;
    }
    if (text) {
      if (!(await send('content_block_start', { type: 'content_block_start', index: textIndex, content_block: { type: 'text', text: '' } }))) return;
    }
    if (!(await send('ping', { type: 'ping' }))) return;
    if (r.hang === 'body') {
      await untilClosed(res);
      return;
    }
    const pieces = r.repeat ? [] : text ? (r.chunks ?? defaultChunks(text)) : [];
    const count = r.repeat ? r.repeat.times : pieces.length;
    const pieceAt = (i: number): string => (r.repeat ? r.repeat.piece : pieces[i]!);
    for (let i = 0; i < count; i++) {
      if (r.streamErrorAfter !== undefined && i >= r.streamErrorAfter) break;
      if (!(await send('content_block_delta', { type: 'content_block_delta', index: textIndex, delta: { type: 'text_delta', text: pieceAt(i) } }))) return;
    }
    if (r.streamErrorAfter !== undefined) {
      const type = r.streamErrorType ?? 'overloaded_error';
      await send('error', { type: 'error', error: { type, message: type === 'overloaded_error' ? 'Overloaded' : 'stream failed' } });
      res.end();
      return;
    }
    if (text) {
      if (!(await send('content_block_stop', { type: 'content_block_stop', index: textIndex }))) return;
    }
    // Each tool call is a block of its own after the text, its arguments streamed in pieces.
    let index = textIndex + (text ? 1 : 0);
    for (const [n, c] of calls.entries()) {
      if (!(await send('content_block_start', { type: 'content_block_start', index, content_block: { ...toolUse[n]!, input: {} } }))) return;
      for (const piece of toolJsonPieces(c)) {
        if (!(await send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }))) return;
      }
      if (!(await send('content_block_stop', { type: 'content_block_stop', index }))) return;
      index++;
    }
    const { service_tier: _st, ...deltaUsage } = usage;
    if (!(await send('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: deltaUsage }))) return;
    await send('message_stop', { type: 'message_stop' });
    res.end();
  }

  private sendError(res: http.ServerResponse, f: FakeFailure): void {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(f.status, { 'content-type': 'application/json', ...(f.headers ?? {}) });
    res.end(JSON.stringify({ type: 'error', error: { type: f.type, message: f.message ?? f.type }, request_id: 'req_fake_error' }));
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

/** Resolve after `ms`, or early with `true` when the client went away. */
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

/** The request checks of the real API that matter for these tests. */
function validate(body: Record<string, unknown>): string | null {
  if (typeof body['model'] !== 'string' || !body['model']) return 'model: Field required';
  const mt = body['max_tokens'];
  if (typeof mt !== 'number' || !Number.isInteger(mt) || mt < 1) return 'max_tokens: Field required';
  const msgs = body['messages'];
  if (!Array.isArray(msgs) || msgs.length === 0) return 'messages: at least one message is required';
  for (const [i, m] of (msgs as Array<Record<string, unknown>>).entries()) {
    if (m['role'] !== 'user' && m['role'] !== 'assistant') return `messages.${i}.role: must be "user" or "assistant"`;
    const c = m['content'];
    const blocks = typeof c === 'string' ? [{ type: 'text', text: c }] : Array.isArray(c) ? (c as Array<Record<string, unknown>>) : null;
    if (!blocks) return `messages.${i}.content: must be a string or a list of blocks`;
    for (const b of blocks) {
      if (b['type'] === 'text' && (typeof b['text'] !== 'string' || b['text'] === '')) return `messages.${i}: text content blocks must be non-empty`;
    }
  }
  const toolProblem = validateTools(body) ?? validateToolBlocks(msgs as Array<Record<string, unknown>>);
  if (toolProblem) return toolProblem;
  const sys = body['system'];
  if (Array.isArray(sys)) {
    for (const b of sys as Array<Record<string, unknown>>) {
      if (b['type'] !== 'text' || typeof b['text'] !== 'string' || b['text'] === '') return 'system: text content blocks must be non-empty';
    }
  }
  return null;
}

/** Start a fake on a random port. */
export async function startFakeAnthropic(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropicServer> {
  return new FakeAnthropicServer(opts).start();
}
