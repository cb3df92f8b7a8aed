/**
 * Rules of the `tools:` section and of `agents[].tools` that the schema alone cannot say: a
 * server is reached exactly one way, its name is usable in a model-facing tool name, and every
 * agent entry names a configured server. Whether a `server.tool` entry names a tool the server
 * really has is only known once the server answers (the tool host warns then; `chorus doctor` too).
 */
import type { ChorusConfig } from './schema.js';

/** Letters, digits, `_` and `-`: a server's name starts every model-facing name of its tools. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Problems as rules.ts reports them (typed here by shape: rules.ts imports this file). */
export function toolProblems(cfg: ChorusConfig): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  for (const [name, s] of Object.entries(cfg.tools)) {
    const at = `tools.${name}`;
    if (!SERVER_NAME.test(name)) {
      out.push({ path: at, message: 'a server name may use only letters, digits, _ and - (at most 64 characters)' });
      continue;
    }
    if (s.command === undefined && s.url === undefined) {
      out.push({ path: at, message: 'needs "command" (a program Chorus starts and speaks to over stdio) or "url" (a Streamable HTTP server)' });
      continue;
    }
    if (s.command !== undefined && s.url !== undefined) {
      out.push({ path: at, message: 'has both "command" and "url"; a server is reached one way, keep one' });
      continue;
    }
    if (s.url !== undefined) {
      for (const key of ['args', 'env', 'cwd'] as const) {
        if (s[key] !== undefined) out.push({ path: `${at}.${key}`, message: 'only for a server started by "command"; this one is reached by "url"' });
      }
      if (!/^https?:\/\//i.test(s.url)) out.push({ path: `${at}.url`, message: 'must be an http:// or https:// URL (MCP Streamable HTTP)' });
    } else if (s.headers !== undefined) {
      out.push({ path: `${at}.headers`, message: 'only for a server reached by "url"; give a started program its secrets through "env"' });
    }
  }
  const known = Object.keys(cfg.tools);
  cfg.agents.forEach((a, i) => {
    (a.tools ?? []).forEach((entry, k) => {
      const server = entry.split('.')[0]!;
      if (cfg.tools[server] !== undefined) return;
      const list = known.length ? `known: ${known.join(', ')}` : 'no server is configured under tools:';
      out.push({ path: `agents[${i}].tools[${k}]`, message: `no MCP server "${server}" in tools (${list})` });
    });
  });
  return out;
}
