/**
 * The web feed channel: an HTTP server with the JSON API, Server-Sent Events and the
 * page. Unlike Telegram and Discord, the web feed has no platform to post to: the router already
 * records every reply in the transcript and emits it as a live event, which the page receives
 * over SSE. So posting just hands back ids, and typing is shown from the router's typing events.
 */
import { randomUUID } from 'node:crypto';
import type { RelayedAuthor } from '../../core/roomTypes.js';
import type { Server } from 'node:http';
import type { ChorusConfig } from '../../config/schema.js';
import { WEB_CONNECTION_DEFAULTS } from '../../config/schema.js';
import { isLoopback } from '../../config/rules.js';
import type { Channel, ChannelCapabilities, ChannelHost, Logger, PostedMessage } from '../../core/ports.js';
import { splitMessage } from '../../core/text/split.js';
import type { ToolServersStatus } from '../../core/readModels.js';
import type { AgentDef, ChatRef } from '../../core/types.js';
import { DEFAULT_MAX_MESSAGE_CHARS, registerApiRoutes } from './api.js';
import { TokenAuth } from './auth.js';
import { InFlightReplies } from './inflight.js';
import { WebMetrics, gatewayMetrics } from './metrics.js';
import type { HttpMounts } from './mounts.js';
import { Router } from './router.js';
import { originOf } from './sameOrigin.js';
import { createWebServer, serverUrl } from './server.js';
import { SseHub } from './sse.js';
import { StaticFiles, findPublicDir } from './static.js';

type WebConfig = ChorusConfig['channels']['web'];
/** The connection limits may be left out when the channel is built by hand (tests): defaults apply. */
type WebConfigInput = Omit<WebConfig, keyof typeof WEB_CONNECTION_DEFAULTS> & Partial<Pick<WebConfig, keyof typeof WEB_CONNECTION_DEFAULTS>>;

export interface WebChannelOptions {
  config: WebConfigInput;
  logger: Logger;
  agents: AgentDef[];
  /** Group handles from the config, offered by `@`-autocomplete. */
  aliases?: Record<string, string[]> | undefined;
  /** `limits.max_message_chars`: the page counts against it before Send (the router enforces it). */
  maxMessageChars?: number | undefined;
  /** Prometheus text of the whole app; the channel appends its own HTTP/SSE figures. */
  metrics?: (() => string | Promise<string>) | undefined;
  /** SSE heartbeat interval (tests shorten it). */
  heartbeatMs?: number | undefined;
  /** Reconnect delay suggested to browsers, in ms. */
  sseRetryMs?: number | undefined;
  /** Unsent SSE output at which a client is cut at once (tests raise it to watch the heartbeat cut). */
  sseMaxBufferedBytes?: number | undefined;
  /** Paths other channels serve on this server (the Telegram webhook endpoints). */
  mounts?: HttpMounts | undefined;
  /** The MCP tool servers' state for `/readyz` (they live beside the core, not in its readiness). */
  toolServers?: (() => ToolServersStatus | undefined) | undefined;
  /**
   * Public URLs this server is reached under through a reverse proxy (the Telegram webhook's base
   * URL): a page there is this server's own, whatever Host the proxy passes on.
   */
  publicUrls?: ReadonlyArray<string | null | undefined> | undefined;
}

export class WebChannel implements Channel {
  readonly kind = 'web' as const;
  readonly capabilities: ChannelCapabilities = { maxMessageLength: 16000 };

  private server: Server | null = null;
  private hub: SseHub | null = null;
  /** Ends the subscription that keeps the replies in flight (for pages that connect mid-reply). */
  private untrack: (() => void) | null = null;
  private host: ChannelHost | null = null;
  private listeningUrl: string | null = null;
  private readonly webMetrics = new WebMetrics();
  private readonly files: StaticFiles;
  private readonly log: Logger;

  constructor(private readonly opts: WebChannelOptions) {
    this.log = opts.logger.child({ channel: 'web' });
    const dir = findPublicDir();
    if (!dir) this.log.warn({}, 'web: page files (public/) not found; serving the API only');
    this.files = new StaticFiles(dir);
  }

  /** Base URL once listening, e.g. `http://127.0.0.1:8787`. */
  get url(): string | undefined {
    return this.listeningUrl ?? undefined;
  }

  /** Open TCP connections to the server, every kind (for tests: slow clients must be gone). */
  async openConnections(): Promise<number> {
    const server = this.server;
    if (!server) return 0;
    return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  }

  /** Connected SSE clients (for tests and metrics). */
  get sseClientCount(): number {
    return this.hub?.clientCount ?? 0;
  }

  async start(host: ChannelHost): Promise<void> {
    if (this.server) return;
    const { host: bindHost, port, auth_token } = this.opts.config;
    if (!auth_token?.trim() && !isLoopback(bindHost)) {
      throw new Error(
        `web channel: refusing to listen on ${bindHost} without channels.web.auth_token; set a token or use 127.0.0.1`,
      );
    }
    this.host = host;
    const cfg = { ...WEB_CONNECTION_DEFAULTS, ...this.opts.config };
    // Kept whether or not a page is connected: a reload must find the reply's start.
    const inFlight = new InFlightReplies();
    this.untrack = host.gateway.subscribe((ev) => inFlight.observe(ev));
    const hub = new SseHub({
      gateway: host.gateway,
      logger: this.log,
      heartbeatMs: this.opts.heartbeatMs ?? cfg.sse_heartbeat_seconds * 1000,
      retryMs: this.opts.sseRetryMs,
      metrics: this.webMetrics,
      maxBufferedBytes: this.opts.sseMaxBufferedBytes,
      inFlight: (groupId) => inFlight.snapshot(groupId),
      typingEverywhere: () => inFlight.typingEverywhere(),
    });
    const router = new Router();
    registerApiRoutes(router, {
      host: () => this.requireHost(),
      hub: () => hub,
      aliases: this.opts.aliases ?? {},
      maxMessageLength: this.capabilities.maxMessageLength,
      maxMessageChars: this.opts.maxMessageChars ?? DEFAULT_MAX_MESSAGE_CHARS,
    });
    const server = createWebServer({
      bindHost,
      router,
      auth: new TokenAuth(auth_token),
      files: this.files,
      logger: this.log,
      webMetrics: this.webMetrics,
      metricsText: async () => {
        this.webMetrics.sseClients = hub.clientCount;
        const app = this.opts.metrics ? await this.opts.metrics() : gatewayMetrics(this.requireHost().gateway);
        return app + (app.endsWith('\n') || app === '' ? '' : '\n') + this.webMetrics.text();
      },
      readiness: () => {
        const r = this.requireHost().gateway.readiness();
        const tools = this.opts.toolServers?.();
        return tools ? { ...r, tools } : r;
      },
      mounts: this.opts.mounts,
      publicOrigins: (this.opts.publicUrls ?? []).map(originOf).filter((o): o is string => o !== undefined),
      limits: {
        headersTimeoutMs: cfg.headers_timeout_seconds * 1000,
        requestTimeoutMs: cfg.request_timeout_seconds * 1000,
        idleTimeoutMs: cfg.idle_timeout_seconds * 1000,
        maxConnectionsPerAddress: cfg.max_connections_per_address,
      },
    });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        this.untrack?.();
        this.untrack = null;
        server.off('listening', onListening);
        const why = err.code === 'EADDRINUSE' ? `port ${port} is already in use` : err.code === 'EACCES' ? `no permission to use port ${port}` : err.message;
        reject(new Error(`web channel: cannot listen on ${bindHost}:${port}: ${why}`));
      };
      const onListening = () => {
        server.off('error', onError);
        resolve();
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen(port, bindHost);
    });
    server.on('error', (err) => this.log.error({ err: err.message }, 'web: server error'));
    this.server = server;
    this.hub = hub;
    this.listeningUrl = serverUrl(server, bindHost);
    this.log.info({ url: this.listeningUrl, auth: Boolean(auth_token?.trim()) }, 'web: listening');
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.untrack?.();
    this.untrack = null;
    this.hub?.closeAll();
    this.hub = null;
    this.listeningUrl = null;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** End every open SSE stream; browsers reconnect and resume (tests use this). */
  disconnectStreams(): void {
    this.hub?.closeAll();
  }

  async postAsAgent(_chat: ChatRef, _agent: AgentDef, text: string): Promise<PostedMessage> {
    return this.ids(text);
  }

  async postAsSystem(_chat: ChatRef, text: string): Promise<PostedMessage> {
    return this.ids(text);
  }

  /** The page shows every entry of a room from the transcript: nothing is relayed, edited or removed here. */
  async relay(_chat: ChatRef, _from: RelayedAuthor, text: string): Promise<PostedMessage> {
    return this.ids(text);
  }

  async editPosted(): Promise<void> {}

  async deletePosted(): Promise<void> {}

  /** The page shows reactions from the transcript (live over the event stream): nothing to post. */
  async react(): Promise<boolean> {
    return true;
  }

  startTyping(): () => void {
    return () => {};
  }

  async isAdmin(): Promise<boolean> {
    // Every API call is authenticated when a token is set; the holder of the token is the admin.
    return true;
  }

  warnings(): string[] {
    return [];
  }

  /** One id per chunk the text would be split into, like a platform would assign. */
  private ids(text: string): PostedMessage {
    const n = Math.max(1, splitMessage(text, this.capabilities.maxMessageLength).length);
    return { ids: Array.from({ length: n }, () => `web-${randomUUID()}`) };
  }

  private requireHost(): ChannelHost {
    if (!this.host) throw new Error('web channel is not started');
    return this.host;
  }
}
