/**
 * Supervision of stdio servers: a process that dies is reported down with its last words, calls
 * meanwhile are `unavailable`, it is started again after a backoff that doubles (0.5 s, 1 s, ...)
 * and starts over after a healthy minute, and a server that cannot start at all never stops the
 * others. The backoff runs on a fake clock, so the waits are checked exactly without timing anything.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/tools/McpHub.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CapturingLogger } from '../helpers/logger.js';
import { alive, never, stdioServer, tempDir, until } from './helpers.js';

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function hubWith(servers: ConstructorParameters<typeof McpHub>[0]['servers'], clock?: FakeClock, logger = new CapturingLogger()) {
  const hub = new McpHub({ servers, agents: [{ id: 'analyst', tools: Object.keys(servers) }], logger, clock });
  cleanup.push(() => hub.stop());
  return hub;
}

const call = (hub: McpHub, tool: string, input: Record<string, unknown> = {}) => hub.call({ server: 'orders', tool, input, timeoutMs: 20_000, signal: never });

describe('supervision', () => {
  it('a crashed server is unavailable, restarted with a doubling backoff, and works again', async () => {
    const clock = new FakeClock();
    const hub = hubWith({ orders: stdioServer(join(tempDir(cleanup), 's.json')) }, clock);
    await hub.start();
    const firstPid = hub.status()[0]!.pid!;

    const crashed = await call(hub, 'crash');
    expect(crashed.outcome).toBe('unavailable');
    expect(crashed.content).toMatch(/^the MCP server "orders" is unavailable: the process exited/);
    // Down, with the process' last words, waiting out the first backoff step.
    await until(() => clock.waiting === 1, 'the restart scheduled');
    expect(hub.status()[0]).toMatchObject({ state: 'down', error: 'the process exited; its last stderr line: "crashing on request"', tools: [], restarts: 0 });
    expect(hub.toolsFor('analyst')).toEqual([]);
    expect(await call(hub, 'lookup_order', { id: '1' })).toEqual({
      outcome: 'unavailable',
      content: 'the MCP server "orders" is unavailable: the process exited; its last stderr line: "crashing on request"',
      bytes: expect.any(Number),
    });
    await until(() => !alive(firstPid), 'the crashed process gone');

    // 0.5 s: not a moment earlier.
    await clock.advance(499);
    expect(hub.status()[0]!.state).toBe('down');
    await clock.advance(1);
    await until(() => hub.status()[0]!.state === 'up', 'restarted');
    expect(hub.status()[0]!.restarts).toBe(1);
    expect(hub.status()[0]!.pid).not.toBe(firstPid);
    expect((await call(hub, 'lookup_order', { id: '2' })).outcome).toBe('ok');
    expect(hub.toolsFor('analyst').length).toBeGreaterThan(5);

    // Dying again within the minute: the next wait is twice as long.
    await call(hub, 'crash');
    await until(() => clock.waiting === 1, 'the second restart scheduled');
    await clock.advance(999);
    expect(hub.status()[0]!.state).toBe('down');
    await clock.advance(1);
    await until(() => hub.status()[0]!.state === 'up', 'restarted again');
    expect(hub.status()[0]!.restarts).toBe(2);

    // After a healthy minute the backoff starts over at 0.5 s.
    await clock.advance(60_000);
    await call(hub, 'crash');
    await until(() => clock.waiting === 1, 'the third restart scheduled');
    await clock.advance(500);
    await until(() => hub.status()[0]!.state === 'up', 'restarted after a healthy minute');
    expect(hub.status()[0]!.restarts).toBe(3);
  });

  it('a server that cannot start is down with its reason, retried, and the others run', async () => {
    const clock = new FakeClock();
    const logger = new CapturingLogger();
    const hub = hubWith(
      {
        orders: stdioServer(join(tempDir(cleanup), 's.json')),
        broken: { command: process.execPath, args: ['-e', 'console.error("ORDERS_KEY is not set"); process.exit(2)'], confirm: 'auto', approvers: 'admins' },
        missing: { command: 'chorus-no-such-mcp-server', confirm: 'auto', approvers: 'admins' },
      },
      clock,
      logger,
    );
    await hub.start();
    const byName = Object.fromEntries(hub.status().map((s) => [s.name, s]));
    expect(byName.orders).toMatchObject({ state: 'up' });
    expect(byName.broken).toMatchObject({ state: 'down', error: 'the process exited before it answered; its last stderr line: "ORDERS_KEY is not set"', restarts: 0 });
    expect(byName.missing).toMatchObject({ state: 'down', error: 'cannot start "chorus-no-such-mcp-server": the program was not found (check command, cwd and PATH)' });
    expect(hub.toolsFor('analyst').every((t) => t.server === 'orders')).toBe(true);
    expect(logger.text()).toContain('MCP server "broken" is down: the process exited before it answered');
    // Both are tried again on the backoff.
    await until(() => clock.waiting === 2, 'retries scheduled');
    await clock.advance(500);
    await until(() => hub.status().filter((s) => s.name !== 'orders').every((s) => s.restarts === 1 && s.state === 'down'), 'second attempts failed');
    expect((await hub.call({ server: 'broken', tool: 'x', input: {}, timeoutMs: 1000, signal: never })).content).toMatch(/^the MCP server "broken" is unavailable: /);
    expect((await hub.call({ server: 'ghost', tool: 'x', input: {}, timeoutMs: 1000, signal: never })).outcome).toBe('unavailable');
  });

  it('stop() while a retry waits ends the wait and leaves nothing running', async () => {
    const clock = new FakeClock();
    const hub = hubWith({ orders: stdioServer(join(tempDir(cleanup), 's.json')) }, clock);
    await hub.start();
    await call(hub, 'crash');
    await until(() => clock.waiting === 1, 'the restart scheduled');
    await hub.stop();
    expect(clock.waiting).toBe(0);
    expect(hub.status()[0]).toMatchObject({ state: 'down', error: 'stopped' });
  });
});
