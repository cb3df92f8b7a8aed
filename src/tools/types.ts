/**
 * Shapes of the MCP tool host shared by its parts and by ops: a server's state as operators see
 * it, a listed tool as the host keeps it, and the metrics it reports.
 */
import type { ToolCallResult, ToolHost } from '../core/toolPorts.js';

export type { ToolServerConfig } from '../config/toolsSchema.js';

/** `connecting`: first attempt or a retry under way; `up`: tools listed; `down`: waiting to retry. */
export type ServerState = 'connecting' | 'up' | 'down';

/** One server for `status()`, `chorus doctor`, `/readyz` and the metrics. */
export interface ToolServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: ServerState;
  /** Why it is not up (or why it went down last), in one line that names no secret. */
  error?: string | undefined;
  /** Its tools' own names, sorted; empty unless up. */
  tools: string[];
  /** Attempts after the first one: process restarts (stdio) or reconnections (HTTP). */
  restarts: number;
  /** The running process (stdio, while it runs). */
  pid?: number | undefined;
}

/** A tool as its server listed it, with what the host needs from it. */
export interface ListedTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
  idempotent: boolean;
}

/** Where the host reports each call (Prometheus in the daemon). */
export interface ToolMetrics {
  toolCall(r: { server: string; tool: string; outcome: ToolCallResult['outcome']; seconds: number }): void;
}

/** An agent's `server.tool` entry its server does not list (or whose server is not running). */
export interface MissingToolEntry {
  /** `agents[0].tools[1]`, as in config problems. */
  path: string;
  agent: string;
  entry: string;
  message: string;
}

/** What the app exposes: the core's port plus what operators look at. */
export interface ToolsRuntime extends ToolHost {
  status(): ToolServerStatus[];
  /** A model-facing tool name (`orders__lookup_order`) back to its server and tool. */
  resolveName(name: string): { server: string; tool: string } | undefined;
  missingTools(): MissingToolEntry[];
}

/** The tool host as the app holds it: the runtime plus its lifecycle. */
export interface ToolServers extends ToolsRuntime {
  /** Connect every server once (failures are retried in the background). */
  start(): Promise<void>;
  /** Close every connection and end every started process. */
  stop(): Promise<void>;
  /** A reloaded config's agents (their `tools` lists apply at once). */
  setAgents(agents: ReadonlyArray<{ id: string; tools?: readonly string[] | undefined }>): void;
}
