/**
 * The tool host against the fake MCP server over Streamable HTTP (the SDK's server transport, in
 * this process): the configured header is what the server checks, a wrong token leaves the server
 * down with a reason that says so, list changes and pages are followed, and a server that goes
 * away is reported unavailable and reconnected on the backoff once it is back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/tools/McpHub.js';
import type { ToolServerConfig } from '../../src/tools/types.js';
import { startFakeHttpMcp, type FakeHttpMcp } from '../fakes/mcp/http.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';
import { never, until } from './helpers.js';

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function fake(opts: Parameters<typeof startFakeHttpMcp>[0] = {}): Promise<FakeHttpMcp> {
  const f = await startFakeHttpMcp(opts);
  cleanup.push(() => f.close());
  return f;
}

function hub(url: string, token: string | undefined, clock?: FakeClock): McpHub {
  const search: ToolServerConfig = { url, ...(token !== undefined ? { headers: { authorization: `Bearer ${token}` } } : {}), confirm: 'never', approvers: 'anyone' };
  const h = new McpHub({ servers: { search }, agents: [{ id: 'analyst', tools: ['search.lookup_order', 'search.slow'] }], logger: new CapturingLogger(), clock });
  cleanup.push(() => h.stop());
  return h;
}

const call = (h: McpHub, tool: string, input: Record<string, unknown> = {}) => h.call({ server: 'search', tool, input, timeoutMs: 20_000, signal: never });

describe('a Streamable HTTP MCP server', () => {
  it('is reached with the configured header and called', async () => {
    const f = await fake({ token: 'right-token' });
    const h = hub(f.url, 'right-token');
    await h.start();
    expect(h.status()[0]).toMatchObject({ name: 'search', transport: 'http', state: 'up', restarts: 0 });
    expect(h.toolsFor('analyst').map((t) => [t.name, t.confirm, t.approvers])).toEqual([
      ['search__lookup_order', 'never', 'anyone'],
      ['search__slow', 'never', 'anyone'],
    ]);
    expect(await call(h, 'lookup_order', { id: '9' })).toMatchObject({ outcome: 'ok', content: 'order 9: shipped on 2026-11-20, 2 items, tracking TRK-9' });
    expect(f.requests.unauthorized).toBe(0);
    expect(f.sessions).toBe(1);
    // Stopping ends the session on the server too.
    await h.stop();
    await until(() => f.sessions === 0, 'the session ended');
  });

  it('a wrong token leaves it down with a reason that says so', async () => {
    const f = await fake({ token: 'right-token' });
    const h = hub(f.url, 'wrong-token');
    await h.start();
    const s = h.status()[0]!;
    expect(s.state).toBe('down');
    expect(s.error).toBe(`${f.url} answered HTTP 401 (check tools.search.headers: the token may be wrong or missing): Error POSTing to endpoint: {"error":"invalid token"}`);
    expect(f.requests.unauthorized).toBeGreaterThan(0);
    expect(h.toolsFor('analyst')).toEqual([]);
    expect((await call(h, 'lookup_order', { id: '1' })).content).toBe(`the MCP server "search" is unavailable: ${s.error}`);
  });

  it('nobody listening: down, named by its address', async () => {
    const f = await fake();
    await f.down();
    const h = hub(f.url, undefined);
    await h.start();
    expect(h.status()[0]).toMatchObject({ state: 'down', error: `cannot reach ${f.url} (ECONNREFUSED)` });
  });

  it('follows list changes and pages over HTTP', async () => {
    const f = await fake({ pageSize: 4 });
    const h = hub(f.url, undefined);
    await h.start();
    // Every page was read.
    expect(h.status()[0]!.tools).toEqual(expect.arrayContaining(['lookup_order', 'titled', 'env_var', 'noisy']));
    expect(h.status()[0]!.tools.length).toBeGreaterThan(12);
    await call(h, 'add_tool', { name: 'web_search' });
    await until(() => h.status()[0]!.tools.includes('web_search'), 'the added tool listed');
  });

  it('a server that goes away is unavailable, then reconnected on the backoff', async () => {
    const clock = new FakeClock();
    const f = await fake();
    const h = hub(f.url, undefined, clock);
    await h.start();
    // The server's crash tool takes it down mid-call.
    expect((await call(h, 'crash')).outcome).toBe('unavailable');
    const r = await call(h, 'lookup_order', { id: '1' });
    expect(r.outcome).toBe('unavailable');
    expect(r.content).toMatch(/^the MCP server "search" is unavailable: /);
    await until(() => h.status()[0]!.state === 'down' && clock.waiting === 1, 'down, with a retry scheduled');
    expect(h.status()[0]!.error).toMatch(/cannot reach|closed/);
    await f.up();
    await clock.advance(500);
    await until(() => h.status()[0]!.state === 'up', 'reconnected');
    expect(h.status()[0]!.restarts).toBe(1);
    expect((await call(h, 'lookup_order', { id: '2' })).outcome).toBe('ok');
  });
});
