/**
 * The tool servers' part of `/readyz`: each server's state, and `degraded` while any is not up.
 * It never makes Chorus unready — agents still answer, without that server's tools — which is why
 * it sits beside the readiness the core computes rather than inside it.
 */
import type { ToolServersStatus } from '../core/readModels.js';
import type { ToolServerStatus } from './types.js';

/** Undefined when no server is configured (then `/readyz` says nothing about tools). */
export function toolsReadiness(servers: readonly ToolServerStatus[]): ToolServersStatus | undefined {
  if (servers.length === 0) return undefined;
  const out: ToolServersStatus['servers'] = {};
  for (const s of servers) {
    out[s.name] = { ok: s.state === 'up', state: s.state, transport: s.transport, ...(s.error && s.state !== 'up' ? { error: s.error } : {}), tools: s.tools.length, restarts: s.restarts };
  }
  const ok = Object.values(out).every((s) => s.ok);
  return { ok, state: ok ? 'ready' : 'degraded', servers: out };
}
