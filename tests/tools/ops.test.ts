/**
 * The tool servers as operators see them, through the whole daemon: `chorus doctor` lists each
 * server's tools or why it cannot be reached and warns about agent entries a server lacks;
 * `/readyz` shows each server and a down one makes it degraded, not unready (`chorus status` says
 * so); `/metrics` has the up gauge, the call counter and the call time; the app starts the servers
 * and ends their processes when it stops.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText, type LoadedConfig } from '../../src/config/load.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { runStatus } from '../../src/ops/status.js';
import { startFakeHttpMcp } from '../fakes/mcp/http.js';
import { silentLogger } from '../helpers/logger.js';
import { FAKE_SERVER, alive, never, tempDir, until } from './helpers.js';

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A config with the fake over stdio (`orders`) and over HTTP with a wrong token (`search`). */
async function configYaml(dir: string): Promise<string> {
  const http = await startFakeHttpMcp({ token: 'right-token' });
  cleanup.push(() => http.close());
  const args = JSON.stringify(['--import', 'tsx', FAKE_SERVER, '--stdio', '--state', join(dir, 'state.json')]);
  return `
data_dir: ${JSON.stringify(join(dir, 'data'))}
llm: { provider: scripted }
channels: { web: { enabled: true, host: 127.0.0.1, port: 0 } }
tools:
  orders: { command: ${JSON.stringify(process.execPath)}, args: ${args}, cwd: ${JSON.stringify(process.cwd())} }
  search: { url: "${http.url}", headers: { authorization: "Bearer \${SEARCH_TOKEN}" } }
agents:
  - { id: analyst, name: Analyst, persona: p, tools: [orders, orders.lookup_ordr, search.web_search] }
`;
}

function loaded(yaml: string): LoadedConfig {
  const r = parseConfigText(yaml, 'tools-test.yaml', { SEARCH_TOKEN: 'wrong-token' });
  return { config: r.config, source: 'tools-test.yaml', usedDefaults: false, missingEnv: r.missing, overrides: r.overrides, envFiles: [] };
}

describe('tool servers for operators', () => {
  it('chorus doctor lists each server\'s tools or why it cannot reach it, and the entries a server lacks', async () => {
    const dir = tempDir(cleanup);
    const lines: string[] = [];
    const r = await runDoctor(loaded(await configYaml(dir)), (l) => lines.push(l));
    const about = (prefix: string) => lines.filter((l) => l.slice(2).startsWith(prefix));
    const orders = about('tool server orders:');
    expect(orders).toHaveLength(1);
    expect(orders[0]).toMatch(/^✔ tool server orders: started `.+server\.ts --stdio --state .+`; 1\d tool\(s\): add_tool, big, cancel_order, chart, crash, /);
    expect(about('tool server search:')).toEqual([
      expect.stringMatching(/^✘ tool server search: could not reach it: http:\/\/127\.0\.0\.1:\d+\/mcp answered HTTP 401 .*— fix: check tools\.search\.headers/),
    ]);
    // Only the server can say which tools it has: the entry it lacks is named by its key.
    expect(about('tools of agent analyst:')).toEqual([
      expect.stringMatching(/^! tools of agent analyst: agents\[0\]\.tools\[1\] "orders\.lookup_ordr": MCP server "orders" has no tool "lookup_ordr" \(it has: add_tool, .*\) — fix: /),
    ]);
    expect(r.code).toBe(1);
  });

  it('the app starts the servers; /readyz is degraded (not unready) with a server down; /metrics counts calls; stop ends the processes', async () => {
    const dir = tempDir(cleanup);
    const { config } = loaded(await configYaml(dir));
    const app: App = await createApp({ config, logger: silentLogger });
    cleanup.push(() => app.stop());
    await app.start();
    const url = app.webUrl!;

    const orders = app.tools.status().find((s) => s.name === 'orders')!;
    expect(orders.state).toBe('up');
    expect(app.tools.toolsFor('analyst').map((t) => t.name)).toContain('orders__lookup_order');
    expect(await app.tools.call({ server: 'orders', tool: 'lookup_order', input: { id: '3' }, timeoutMs: 20_000, signal: never })).toMatchObject({ outcome: 'ok' });
    expect((await app.tools.call({ server: 'search', tool: 'web_search', input: {}, timeoutMs: 20_000, signal: never })).outcome).toBe('unavailable');

    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; ready: boolean; tools: { ok: boolean; state: string; servers: Record<string, { ok: boolean; state: string; transport: string; tools: number; error?: string }> } };
    expect(body).toMatchObject({ status: 'degraded', ready: true, tools: { ok: false, state: 'degraded' } });
    expect(body.tools.servers.orders).toMatchObject({ ok: true, state: 'up', transport: 'stdio' });
    expect(body.tools.servers.orders!.tools).toBeGreaterThan(10);
    expect(body.tools.servers.search).toMatchObject({ ok: false, transport: 'http', tools: 0 });
    expect(body.tools.servers.search!.error).toContain('HTTP 401');
    // The token is never shown.
    expect(JSON.stringify(body)).not.toContain('wrong-token');

    const printed: string[] = [];
    expect(await runStatus(config, (l) => printed.push(l), { url })).toBe(0);
    expect(printed[0]).toBe(`Chorus at ${url}: READY, DEGRADED (a tool server is not up; agents answer without its tools)`);
    expect(printed).toContain('  ! tool servers (degraded)');
    expect(printed.some((l) => /^ {6}✔ orders \(stdio\): up, \d+ tool\(s\)$/.test(l))).toBe(true);
    expect(printed.some((l) => /^ {6}✘ search \(http\): (down|connecting) — .*HTTP 401/.test(l))).toBe(true);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('chorus_tool_server_up{server="orders"} 1');
    expect(metrics).toContain('chorus_tool_server_up{server="search"} 0');
    expect(metrics).toContain('chorus_tool_calls_total{server="orders",tool="lookup_order",outcome="ok"} 1');
    expect(metrics).toContain('chorus_tool_calls_total{server="search",tool="web_search",outcome="unavailable"} 1');
    expect(metrics).toMatch(/chorus_tool_call_duration_seconds_count\{server="orders",outcome="ok"\} 1/);

    await app.stop();
    await until(() => !alive(orders.pid!), 'the server process ended with the app');
  });
});
