/**
 * `chorus status`: ask the running daemon's `/readyz` (with the web token when the config has one)
 * and print what it says, one line per part. Exit code 0 when ready (a tool server that is down
 * only degrades), 1 when not ready or when no daemon answers — so it fits a shell `&&`, a cron check or a container health check.
 */
import type { ChorusConfig } from '../config/schema.js';
import type { ChannelPartStatus, ChannelStatus, Readiness } from '../core/readModels.js';

export interface StatusOptions {
  /** Base URL of the daemon; default: the config's web host and port. */
  url?: string | undefined;
  /** Print the JSON body as it came. */
  json?: boolean | undefined;
  timeoutMs?: number | undefined;
}

/** The URL the daemon's web channel answers on, from the config (wildcard hosts → loopback). */
function daemonUrl(config: ChorusConfig): string {
  const { host, port } = config.channels.web;
  const h = host === '0.0.0.0' || host === '::' || host === '[::]' ? '127.0.0.1' : host;
  const shown = h.includes(':') && !h.startsWith('[') ? `[${h}]` : h;
  return `http://${shown}:${port}`;
}

type ReadyBody = Partial<Readiness> & { status?: string; ready?: boolean };

export async function runStatus(config: ChorusConfig, write: (line: string) => void, opts: StatusOptions = {}): Promise<number> {
  if (!opts.url && !config.channels.web.enabled) {
    write('✘ status asks the daemon over HTTP, but channels.web.enabled is false in this config. Fix: enable the web channel (it may stay on 127.0.0.1), or pass --url.');
    return 1;
  }
  const base = (opts.url ?? daemonUrl(config)).replace(/\/+$/, '');
  const token = config.channels.web.auth_token?.trim();
  let res: Response;
  try {
    res = await fetch(`${base}/readyz`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.name : String(err));
    write(`✘ no Chorus answers at ${base} (${cause}). Fix: start it with \`chorus start\`, or point --config / --url at the running one.`);
    return 1;
  }
  let body: ReadyBody;
  try {
    body = (await res.json()) as ReadyBody;
  } catch {
    write(`✘ ${base}/readyz answered HTTP ${res.status} without JSON: is that a Chorus?`);
    return 1;
  }
  if (opts.json) {
    write(JSON.stringify(body, null, 2));
    return res.status === 200 ? 0 : 1;
  }
  const ready = res.status === 200 && body.ready !== false;
  const degraded = ready && body.status === 'degraded';
  write(`Chorus at ${base}: ${ready ? (degraded ? 'READY, DEGRADED (a tool server is not up; agents answer without its tools)' : 'READY') : 'NOT READY'}`);
  if (!body.store || !body.channels) {
    write(
      token
        ? '  (no detail: the daemon did not accept the token of this config — is channels.web.auth_token the same as the running one?)'
        : '  (no detail: the daemon wants a token; set channels.web.auth_token, or CHORUS_WEB_TOKEN, as it has)',
    );
    return ready ? 0 : 1;
  }
  write(`  ${mark(body.store.ok)} store: ${body.store.ok ? 'writable' : `not writable — ${body.store.error ?? 'unknown error'}`}`);
  // Not a reason to be unready (every other group works), but nobody should miss it.
  for (const u of body.store.unreadableGroups ?? []) write(`  ! group ${u.group} is not loaded, its files are left untouched: ${u.problem}`);
  for (const [kind, ch] of Object.entries(body.channels) as Array<[string, ChannelStatus]>) {
    write(`  ${mark(ch.ok)} ${kind}${ch.state && ch.state !== 'ready' ? ` (${ch.state})` : ''}${ch.error ? `: ${ch.error}` : ''}`);
    for (const [id, part] of Object.entries(ch.bots ?? {})) write(partLine(id, part));
    for (const [id, part] of Object.entries(ch.channels ?? {})) write(partLine(id, part));
  }
  if (body.tools) {
    write(`  ${body.tools.ok ? '✔' : '!'} tool servers${body.tools.ok ? '' : ' (degraded)'}`);
    for (const [name, t] of Object.entries(body.tools.servers)) {
      write(`      ${mark(t.ok)} ${name} (${t.transport}): ${t.ok ? `up, ${t.tools} tool(s)` : `${t.state}${t.error ? ` — ${t.error}` : ''}`}${t.restarts ? `, ${t.restarts} restart(s)` : ''}`);
    }
  }
  return ready ? 0 : 1;
}

function mark(ok: boolean): string {
  return ok ? '✔' : '✘';
}

function partLine(id: string, p: ChannelPartStatus): string {
  const name = p.name ? ` ${p.name}` : '';
  const detail = p.ok ? (p.note ? ` — note: ${p.note}` : '') : `: ${p.error ?? p.state ?? 'not working'}`;
  return `      ${mark(p.ok)} ${id}${name}${detail}`;
}
