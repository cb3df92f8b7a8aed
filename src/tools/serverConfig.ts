/**
 * Reading one configured server without loading the MCP SDK (`chorus check` and a daemon without
 * tools never pay for it): which way it is reached, and where it is, for messages.
 */
import type { ToolServerConfig } from './types.js';

export function transportKind(cfg: ToolServerConfig): 'stdio' | 'http' {
  return cfg.url !== undefined ? 'http' : 'stdio';
}

/** The program and its arguments, or the URL without its query (it may hold a key). */
export function whereOf(cfg: ToolServerConfig): string {
  if (cfg.url === undefined) return [cfg.command!, ...(cfg.args ?? [])].join(' ');
  try {
    const u = new URL(cfg.url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return cfg.url;
  }
}
