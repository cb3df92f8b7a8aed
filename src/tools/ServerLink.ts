/**
 * One supervised connection to one MCP server. It connects, lists the tools (every page), follows
 * `notifications/tools/list_changed`, and when the connection ends — the process died, the HTTP
 * server stopped answering — it marks the server down with the reason and tries again after a
 * backoff (0.5 s doubling to 30 s by default; back to the start after a healthy minute). A server
 * that cannot be reached never stops anything else: its tools are just not offered meanwhile.
 *
 * stdio servers end their connection themselves when the process exits. An HTTP server has no
 * such signal: a transport error or a failed call makes the link ping it, and a failed ping drops
 * the connection so the same retry loop reconnects it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Clock, Logger } from '../core/ports.js';
import type { ToolCallResult } from '../core/toolPorts.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import { callTool, unavailable, type CallRequest } from './callTool.js';
import { connectFailure, describe } from './errors.js';
import { StderrLines, type StderrLimits, type StderrSink } from './stderrLines.js';
import { transportKind, whereOf } from './serverConfig.js';
import { openTransport, type OpenedTransport } from './transports.js';
import type { ListedTool, ServerState, ToolServerConfig, ToolServerStatus } from './types.js';

export interface ServerLinkOptions {
  name: string;
  config: ToolServerConfig;
  logger: Logger;
  clock: Clock;
  backoff: BackoffOptions;
  /** Limit of the initialize handshake and of each tools/list page. */
  connectTimeoutMs: number;
  stderrLimits?: StderrLimits | undefined;
  /** The tools offered changed: the server came up, went down or re-listed. */
  onChange(): void;
}

const CLIENT_INFO = { name: 'chorus', version: '1' };
/** An HTTP server that does not answer a ping in this time is taken for down. */
const PING_TIMEOUT_MS = 5000;
/** A server that keeps handing out cursors is not followed forever. */
const MAX_LIST_PAGES = 100;

interface Live {
  client: Client;
  opened: OpenedTransport;
  stderr: StderrLines | undefined;
}

export class ServerLink {
  readonly name: string;
  readonly kind: 'stdio' | 'http';
  private state: ServerState = 'connecting';
  private error: string | undefined;
  private listed: ListedTool[] = [];
  private restarts = 0;
  /** The connection being made or in use. */
  private live: Live | undefined;
  /** Set only while the server is up: calls go through it. */
  private upClient: Client | undefined;
  /** Why this side dropped the connection (a failed ping), for the down reason. */
  private dropReason: string | undefined;
  private checking = false;
  private relisting = false;
  private relistAgain = false;
  private stopping = false;
  private readonly stopSignal = new AbortController();
  private loop: Promise<void> | undefined;
  private firstAttempt: Promise<void> | undefined;
  readonly where: string;
  private readonly log: Logger;

  constructor(private readonly opts: ServerLinkOptions) {
    this.name = opts.name;
    this.kind = transportKind(opts.config);
    this.where = whereOf(opts.config);
    this.log = opts.logger.child({ server: opts.name });
  }

  /** Start supervising; resolves once the first attempt has succeeded or failed. */
  start(): Promise<void> {
    if (!this.firstAttempt) {
      let done!: () => void;
      this.firstAttempt = new Promise<void>((resolve) => (done = resolve));
      this.loop = this.run(done);
    }
    return this.firstAttempt;
  }

  /** Close the connection (the process is ended, no orphan left) and stop retrying. */
  async stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.stopSignal.abort();
      this.upClient = undefined;
      if (this.live) await this.close(this.live);
    }
    await this.loop;
    this.state = 'down';
    this.error = 'stopped';
  }

  /** The tools as last listed (kept while down, so model-facing names stay put). */
  get tools(): readonly ListedTool[] {
    return this.listed;
  }

  get up(): boolean {
    return this.upClient !== undefined;
  }

  status(): ToolServerStatus {
    const pid = this.kind === 'stdio' && this.live ? this.live.opened.pid() : null;
    return {
      name: this.name,
      transport: this.kind,
      state: this.state,
      ...(this.error ? { error: this.error } : {}),
      tools: this.state === 'up' ? this.listed.map((t) => t.name).sort() : [],
      restarts: this.restarts,
      ...(pid ? { pid } : {}),
    };
  }

  call(req: Omit<CallRequest, 'server'>): Promise<ToolCallResult> {
    const client = this.upClient;
    if (!client) {
      const why = this.state === 'connecting' ? (this.error ? `reconnecting after: ${this.error}` : 'still connecting') : (this.error ?? 'not connected');
      return Promise.resolve(unavailable(this.name, why));
    }
    return callTool(client, { server: this.name, ...req }, {
      downReason: () => this.error,
      transportFailed: () => this.check(client),
    });
  }

  private async run(firstDone: () => void): Promise<void> {
    const backoff = new Backoff(this.opts.backoff);
    for (let attempt = 0; !this.stopping; attempt++) {
      if (attempt > 0) this.restarts++;
      this.state = 'connecting';
      const connected = await this.connect();
      if (this.stopping) break;
      if (typeof connected === 'string') {
        this.markDown(connected);
      } else {
        const upAt = this.opts.clock.now();
        firstDone();
        await connected.ended;
        if (this.stopping) break;
        // The last stderr lines of a dying process arrive just after it closes.
        await new Promise((resolve) => setImmediate(resolve));
        if (this.opts.clock.now() - upAt >= this.opts.backoff.healthyMs) backoff.reset();
        this.markDown(this.dropReason ?? this.exitReason(connected.live));
      }
      firstDone();
      const delay = backoff.next();
      this.log.warn({ reason: this.error, retryInMs: delay, restarts: this.restarts }, `MCP server "${this.name}" is down: ${this.error}; next attempt in ${delay / 1000} s`);
      try {
        await this.opts.clock.sleep(delay, this.stopSignal.signal);
      } catch {
        break;
      }
    }
    firstDone();
  }

  /** One attempt: connected (and when it ends), or why not. */
  private async connect(): Promise<{ live: Live; ended: Promise<void> } | string> {
    const opened = openTransport(this.opts.config);
    const stderr = opened.stderr ? new StderrLines(this.stderrSink(), () => this.opts.clock.now(), this.opts.stderrLimits) : undefined;
    if (opened.stderr) stderr!.attach(opened.stderr);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const live: Live = { client, opened, stderr };
    let ended!: () => void;
    const endedP = new Promise<void>((resolve) => (ended = resolve));
    client.onclose = () => {
      // Calls in flight are failed right after this: give them the reason now.
      if (this.upClient === client) {
        this.upClient = undefined;
        if (!this.stopping) this.markDown(this.dropReason ?? this.exitReason(live));
      }
      ended();
    };
    client.onerror = (err) => {
      this.log.debug({ err: describe(err) }, 'MCP transport error');
      if (this.upClient === client) this.check(client);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.relist(client));
    this.dropReason = undefined;
    this.live = live;
    let listing = false;
    try {
      // Spawns the process synchronously, so a stop() from now on finds it to end.
      await client.connect(opened.transport, { timeout: this.opts.connectTimeoutMs });
      listing = true;
      const tools = await this.listAll(client);
      if (this.stopping) return 'stopped';
      this.listed = tools;
      this.upClient = client;
      this.state = 'up';
      this.error = undefined;
      this.log.info({ tools: tools.length, restarts: this.restarts }, `MCP server "${this.name}" is up: ${tools.length} tool(s)`);
      this.opts.onChange();
      return { live, ended: endedP };
    } catch (err) {
      await new Promise((resolve) => setImmediate(resolve));
      // A server that answers but cannot list its tools is of no use to an agent either; one whose
      // connection broke meanwhile is reported like any connection that broke.
      const answered = listing && client.transport !== undefined;
      const reason = answered ? `connected, but listing its tools failed: ${describe(err)}` : connectFailure(err, this, stderr?.last);
      await this.close(live);
      return reason;
    }
  }

  private stderrSink(): StderrSink {
    return {
      line: (line) => this.log.info({ line }, 'MCP server stderr'),
      limitReached: () => this.log.warn({}, `MCP server "${this.name}" writes too much to stderr; its further lines are dropped for a while`),
      dropped: (count) => this.log.warn({ count }, `MCP server "${this.name}": ${count} stderr line(s) were dropped`),
    };
  }

  private markDown(reason: string): void {
    const wasUp = this.state === 'up';
    this.state = 'down';
    this.error = reason;
    if (wasUp) this.opts.onChange();
  }

  private exitReason(live: Live): string {
    if (this.kind === 'http') return `the connection to ${this.where} closed`;
    const last = live.stderr?.last;
    return `the process exited${last ? `; its last stderr line: "${last.slice(0, 300)}"` : ''}`;
  }

  /** Every page of tools/list (a server may page its list with cursors). */
  private async listAll(client: Client): Promise<ListedTool[]> {
    const out: ListedTool[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const r = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.opts.connectTimeoutMs });
      for (const t of r.tools) {
        if (seen.has(t.name)) continue;
        seen.add(t.name);
        out.push(listedTool(t));
      }
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    return out;
  }

  /** tools/list_changed: list again; notifications that come meanwhile lead to one more listing. */
  private relist(client: Client): void {
    if (this.relisting) {
      this.relistAgain = true;
      return;
    }
    this.relisting = true;
    void (async () => {
      do {
        this.relistAgain = false;
        try {
          const tools = await this.listAll(client);
          if (client !== this.upClient) break;
          this.listed = tools;
          this.log.info({ tools: tools.length }, `MCP server "${this.name}" changed its tools: ${tools.length} now`);
          this.opts.onChange();
        } catch (err) {
          this.log.warn({ err: describe(err) }, `MCP server "${this.name}" announced new tools but listing them failed; the old list stays`);
        }
      } while (this.relistAgain && client === this.upClient);
      this.relisting = false;
    })();
  }

  /** Is an HTTP server still there? A failed ping drops the connection; the loop reconnects. */
  private check(client: Client): void {
    if (this.kind !== 'http' || this.checking || client !== this.upClient) return;
    this.checking = true;
    client
      .ping({ timeout: PING_TIMEOUT_MS })
      .then(
        () => undefined,
        (err: unknown) => {
          if (client !== this.upClient) return;
          this.dropReason = connectFailure(err, this, undefined);
          this.upClient = undefined;
          this.markDown(this.dropReason);
          return client.close().catch(() => undefined);
        },
      )
      .finally(() => (this.checking = false));
  }

  private async close(live: Live): Promise<void> {
    if (this.kind === 'http') {
      // Ask the server to end the session; a server that is gone is not waited for.
      const t = live.opened.transport as { terminateSession?: () => Promise<void>; sessionId?: string };
      if (t.sessionId && t.terminateSession) await Promise.race([t.terminateSession().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    // stdio: stdin is closed, then SIGTERM, then SIGKILL (the SDK's transport), so no child outlives us.
    await live.client.close().catch(() => undefined);
    if (this.live === live) this.live = undefined;
  }
}

function listedTool(t: Tool): ListedTool {
  const schema = t.inputSchema && typeof t.inputSchema === 'object' ? (t.inputSchema as Record<string, unknown>) : undefined;
  return {
    name: t.name,
    title: t.title ?? t.annotations?.title,
    description: t.description,
    inputSchema: schema ?? { type: 'object', properties: {} },
    readOnly: t.annotations?.readOnlyHint === true,
    idempotent: t.annotations?.idempotentHint === true,
  };
}
