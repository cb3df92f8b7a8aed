/**
 * Why a server could not be reached, in one line an operator can act on. The SDK and fetch throw
 * very different things (an McpError with a JSON-RPC code, a StreamableHTTPError with an HTTP
 * status, fetch's TypeError whose cause holds ECONNREFUSED, a spawn error); this says each plainly.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

export function connectFailure(err: unknown, server: { name: string; kind: 'stdio' | 'http'; where: string }, lastStderr: string | undefined): string {
  const { kind, where } = server;
  const said = lastStderr ? `; its last stderr line: "${lastStderr.slice(0, 300)}"` : '';
  if (err instanceof McpError) {
    if (err.code === ErrorCode.ConnectionClosed) return kind === 'stdio' ? `the process exited before it answered${said}` : `${where} closed the connection before it answered`;
    if (err.code === ErrorCode.RequestTimeout) return `no answer to initialize from ${where} in time${said}`;
    return `${where} refused to start a session: ${err.message}`;
  }
  if (err instanceof StreamableHTTPError && typeof err.code === 'number' && err.code > 0) {
    const hint = err.code === 401 || err.code === 403 ? ` (check tools.${server.name}.headers: the token may be wrong or missing)` : '';
    return `${where} answered HTTP ${err.code}${hint}: ${firstLine(err.message.replace(/^Streamable HTTP error: /, ''))}`;
  }
  const code = errorCode(err);
  if (kind === 'stdio') {
    if (code === 'ENOENT') return `cannot start "${where}": the program was not found (check command, cwd and PATH)`;
    if (code === 'EACCES') return `cannot start "${where}": permission denied`;
    return `cannot start "${where}": ${describe(err)}${said}`;
  }
  return code ? `cannot reach ${where} (${code})` : `cannot reach ${where}: ${describe(err)}`;
}

/** A system error code (ECONNREFUSED, ENOENT, ...), also from fetch's `cause`. */
function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && typeof e === 'object' && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

export function describe(err: unknown): string {
  return firstLine(err instanceof Error ? err.message : String(err));
}

function firstLine(s: string): string {
  const line = s.split('\n')[0]!.trim();
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}
