/**
 * The README's example MCP server (examples/mcp/orders.mjs) works as documented, through the
 * real tool host: it runs offline, `lookup_order` is read-only (runs without approval) and
 * `cancel_order` is not (a person must approve it with `confirm: auto`), and a cancellation lands in
 * the order book file.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/tools/McpHub.js';
import { silentLogger } from '../helpers/logger.js';
import { never, tempDir, until } from './helpers.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe('examples/mcp/orders.mjs', () => {
  it('looks orders up without approval and cancels one when asked', async () => {
    const book = join(tempDir(cleanup), 'orders.json');
    const hub = new McpHub({
      servers: { orders: { command: 'node', args: [resolve('examples/mcp/orders.mjs')], env: { ORDERS_FILE: book }, cwd: process.cwd(), confirm: 'auto', approvers: 'admins' } },
      agents: [{ id: 'analyst', tools: ['orders'] }],
      logger: silentLogger,
    });
    cleanup.push(() => hub.stop());
    await hub.start();
    const tools = await until(() => (hub.toolsFor('analyst').length === 2 ? hub.toolsFor('analyst') : null), 'the example server to list its tools');
    expect(tools.map((t) => [t.tool, t.readOnly])).toEqual([
      ['cancel_order', false],
      ['lookup_order', true],
    ]);
    const call = (tool: string, input: Record<string, unknown>) => hub.call({ server: 'orders', tool, input, timeoutMs: 30_000, signal: never });
    expect(await call('lookup_order', { id: '1001' })).toMatchObject({ outcome: 'ok', content: 'Order 1001: Espresso machine, shipped, expected Thursday.' });
    expect(await call('cancel_order', { id: '1002' })).toMatchObject({ outcome: 'ok', content: 'Order 1002 (Coffee grinder) is cancelled.' });
    expect(await call('cancel_order', { id: '1003' })).toMatchObject({ outcome: 'error', content: 'Order 1003 was already delivered.' });
    expect(JSON.parse(readFileSync(book, 'utf8'))['1002'].status).toBe('cancelled');
    expect(await call('lookup_order', { id: '1002' })).toMatchObject({ outcome: 'ok', content: expect.stringContaining('cancelled') });
  }, 60_000);
});
