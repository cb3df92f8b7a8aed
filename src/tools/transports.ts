/**
 * The two ways to reach an MCP server, as SDK transports. stdio: Chorus starts the program with
 * the configured args, cwd and env on top of the SDK's small safe base (PATH, HOME, USER, ...),
 * so the daemon's own keys and tokens are not handed to it; its stderr is piped to the log.
 * Streamable HTTP: the configured headers go with every request.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Readable } from 'node:stream';
import type { ToolServerConfig } from './types.js';

export interface OpenedTransport {
  transport: Transport;
  /** The child's pid while it runs (stdio). */
  pid(): number | null;
  /** The child's stderr (stdio), to be read from before it starts so no early line is lost. */
  stderr: Readable | null;
}

export function openTransport(cfg: ToolServerConfig): OpenedTransport {
  if (cfg.url !== undefined) {
    const transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: { ...(cfg.headers ?? {}) } } });
    return { transport, pid: () => null, stderr: null };
  }
  const transport = new StdioClientTransport({
    command: cfg.command!,
    args: cfg.args ?? [],
    env: { ...(cfg.env ?? {}) },
    ...(cfg.cwd !== undefined ? { cwd: cfg.cwd } : {}),
    stderr: 'pipe',
  });
  return { transport, pid: () => transport.pid, stderr: transport.stderr as Readable | null };
}
