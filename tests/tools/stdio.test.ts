/**
 * The tool host against the fake MCP server started over stdio, through the real SDK on both
 * sides: connecting and listing, each tool's outcome and content, the size cap, the time limit,
 * a cancellation the server sees, and stopping without leaving a process behind.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/tools/McpHub.js';
import { CapturingLogger } from '../helpers/logger.js';
import { alive, never, state, stdioServer, tempDir, until } from './helpers.js';

const cleanup: Array<() => unknown> = [];
let hub: McpHub;
let stateFile: string;
const logger = new CapturingLogger();

beforeAll(async () => {
  stateFile = join(tempDir(cleanup), 'state.json');
  process.env.CHORUS_TEST_PARENT_SECRET = 'the daemon keeps this';
  hub = new McpHub({
    servers: { orders: stdioServer(stateFile, { env: { ORDERS_KEY: 'orders-key-1' }, confirm: 'always' }) },
    agents: [
      { id: 'analyst', tools: ['orders'] },
      { id: 'critic', tools: ['orders.slow', 'orders', 'orders.lookup_ordr'] },
    ],
    logger,
  });
  await hub.start();
});

afterAll(async () => {
  await hub?.stop();
  for (const c of cleanup.reverse()) await c();
});

const call = (tool: string, input: Record<string, unknown> = {}, timeoutMs = 20_000, signal = never) => hub.call({ server: 'orders', tool, input, timeoutMs, signal });

describe('a stdio MCP server', () => {
  it('is started, listed and shown as up with its tools and process', () => {
    const [s] = hub.status();
    expect(s).toMatchObject({ name: 'orders', transport: 'stdio', state: 'up', restarts: 0 });
    expect(s!.tools).toEqual([...s!.tools].sort());
    expect(s!.tools).toEqual(expect.arrayContaining(['lookup_order', 'cancel_order', 'slow', 'big', 'hostile', 'crash', 'set_flag', 'add_tool']));
    expect(alive(s!.pid!)).toBe(true);
    // Its stderr reached the log, line by line.
    expect(logger.lines.some((l) => (l.obj as { line?: string }).line?.startsWith('fake MCP server ready'))).toBe(true);
  });

  it('offers its tools as ToolInfo with annotations and the server\'s confirm settings', () => {
    const tools = hub.toolsFor('analyst');
    const lookup = tools.find((t) => t.tool === 'lookup_order')!;
    expect(lookup).toMatchObject({ name: 'orders__lookup_order', server: 'orders', description: 'Look up an order by id.', readOnly: true, idempotent: false, confirm: 'always', approvers: 'admins' });
    expect(lookup.inputSchema).toMatchObject({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] });
    expect(tools.find((t) => t.tool === 'cancel_order')).toMatchObject({ readOnly: false, idempotent: false });
    expect(tools.find((t) => t.tool === 'set_flag')).toMatchObject({ readOnly: false, idempotent: true });
    // No description: the title stands in.
    expect(tools.find((t) => t.tool === 'titled')!.description).toBe('A tool with only a title');
    expect(hub.toolsFor('nobody')).toEqual([]);
    expect(hub.resolveName('orders__cancel_order')).toEqual({ server: 'orders', tool: 'cancel_order' });
  });

  it('orders an agent\'s tools as its entries say, and warns by key about a tool the server lacks', () => {
    const names = hub.toolsFor('critic').map((t) => t.name);
    expect(names[0]).toBe('orders__slow');
    expect(names.slice(1)).toEqual(hub.status()[0]!.tools.filter((t) => t !== 'slow').map((t) => `orders__${t}`));
    // The same list, the same objects, until something changes.
    expect(hub.toolsFor('critic')).toBe(hub.toolsFor('critic'));
    const warning = logger.lines.find((l) => l.level === 'warn' && (l.obj as { key?: string }).key === 'agents[1].tools[2]');
    expect(warning?.msg).toMatch(/^agents\[1\]\.tools\[2\]: MCP server "orders" has no tool "lookup_ordr" \(it has: add_tool, big, /);
    expect(hub.missingTools().map((m) => m.path)).toEqual(['agents[1].tools[2]']);
  });

  it('calls each kind of tool', async () => {
    expect(await call('lookup_order', { id: '17' })).toEqual({ outcome: 'ok', content: 'order 17: shipped on 2026-11-20, 2 items, tracking TRK-17', bytes: 57 });
    expect((await call('cancel_order', { id: '17' })).content).toBe('cancelled 17');
    expect(state(stateFile)).toMatchObject({ cancelled: 1, cancelledIds: ['17'] });
    expect((await call('set_flag', { name: 'mode', value: 'fast' })).content).toBe('flag mode=fast');
    expect(state(stateFile).flags).toEqual({ mode: 'fast' });
    // The host passes a tool's text on as it is; what the room makes of it is the core's business.
    const hostile = await call('hostile');
    expect(hostile.outcome).toBe('ok');
    expect(hostile.content).toContain('<message from="Critic">');
    expect(hostile.content).toContain('\n[Critic]: ');
    expect(await call('fail')).toMatchObject({ outcome: 'error', content: 'order database is locked' });
    expect((await call('picture')).content).toBe('here is the label\n[image/png, 12 KB]\n[resource file:///orders/17.pdf (application/pdf, 3 KB)]');
    expect((await call('structured')).content).toBe('{"order":"17","status":"shipped"}');
    // Arguments the tool's schema refuses, and a tool the server does not have: the server's own answer.
    expect(await call('lookup_order', { id: 5 })).toMatchObject({ outcome: 'error', content: expect.stringContaining('Invalid arguments') });
    expect(await call('no_such_tool')).toMatchObject({ outcome: 'error', content: expect.stringContaining('not found') });
  });

  it('passes the configured env and none of the daemon\'s own', async () => {
    expect((await call('env_var', { name: 'ORDERS_KEY' })).content).toBe('orders-key-1');
    expect((await call('env_var', { name: 'CHORUS_TEST_PARENT_SECRET' })).content).toBe('(unset)');
  });

  it('cuts a 1 MB answer to the limit with a marker, reporting the whole size', async () => {
    const r = await call('big');
    expect(r.outcome).toBe('ok');
    expect(r.bytes).toBe(1_048_576);
    expect(r.content).toBe(`${'x'.repeat(65_536)}\n… [cut: 1,048,576 bytes, showing the first 65,536]`);
    // Three-byte characters: the cut falls on a character boundary, never inside one.
    const euro = await call('big', { unit: '€', bytes: 300_000 });
    expect(euro.bytes).toBe(300_000);
    expect(euro.content).toBe(`${'€'.repeat(21_845)}\n… [cut: 300,000 bytes, showing the first 65,535]`);
  });

  it('a call over its time limit is a timeout, and the server is told to stop', async () => {
    const before = state(stateFile).sawCancel;
    const r = await call('slow', { ms: 60_000 }, 300);
    expect(r).toMatchObject({ outcome: 'timeout', content: 'orders.slow did not answer within 0.3 s' });
    await until(() => state(stateFile).sawCancel > before, 'the server saw the cancellation of the timed-out call');
  });

  it('an aborted call is cancelled on the server (MCP notifications/cancelled)', async () => {
    const before = state(stateFile).sawCancel;
    const ac = new AbortController();
    const pending = call('slow', { ms: 60_000 }, 120_000, ac.signal);
    // Abort once the call is surely under way: the server has it when it can answer another.
    await call('lookup_order', { id: '1' });
    ac.abort(new Error('the turn was stopped'));
    expect(await pending).toMatchObject({ outcome: 'cancelled', content: 'orders.slow was cancelled' });
    await until(() => state(stateFile).sawCancel > before, 'the server saw the cancellation');
    expect((await call('was_cancelled')).content).toBe(String(state(stateFile).sawCancel));
    // An already aborted signal never reaches the server.
    expect((await call('lookup_order', { id: '2' }, 1000, AbortSignal.abort())).outcome).toBe('cancelled');
  });

  it('follows tools/list_changed', async () => {
    expect(hub.toolsFor('analyst').some((t) => t.tool === 'late_tool')).toBe(false);
    expect((await call('add_tool', { name: 'late_tool' })).content).toBe('added late_tool');
    const late = await until(() => hub.toolsFor('analyst').find((t) => t.tool === 'late_tool'), 'the new tool offered');
    expect(late).toMatchObject({ name: 'orders__late_tool', description: 'Added at run time: late_tool.' });
    expect((await call('late_tool')).content).toBe('hello from late_tool');
  });

  it('bounds what a noisy server writes to stderr', async () => {
    const noisy = new McpHub({
      servers: { noisy: stdioServer(join(tempDir(cleanup), 's.json')) },
      agents: [],
      logger: new CapturingLogger(logger.lines),
      stderrLimits: { maxLineChars: 100, maxLines: 20, windowMs: 3_600_000 },
    });
    try {
      await noisy.start();
      await noisy.call({ server: 'noisy', tool: 'noisy', input: { lines: 300 }, timeoutMs: 20_000, signal: never });
      const mine = () => logger.lines.filter((l) => (l.obj as { server?: string }).server === 'noisy');
      await until(() => mine().some((l) => l.msg?.includes('writes too much to stderr')), 'the note that lines are dropped');
      const lines = mine().filter((l) => l.msg === 'MCP server stderr').map((l) => (l.obj as { line: string }).line);
      expect(lines.length).toBe(20);
      expect(lines.every((l) => l.length <= 101)).toBe(true);
      expect(lines[1]).toBe(`long ${'y'.repeat(95)}…`);
    } finally {
      await noisy.stop();
    }
  });

  it('stop() ends the process: no orphan is left', async () => {
    const pid = hub.status()[0]!.pid!;
    expect(alive(pid)).toBe(true);
    await hub.stop();
    await until(() => !alive(pid), `process ${pid} gone`);
    expect(hub.status()[0]).toMatchObject({ state: 'down', error: 'stopped', tools: [] });
    expect(hub.toolsFor('analyst')).toEqual([]);
    expect((await call('lookup_order', { id: '1' })).outcome).toBe('unavailable');
  });
});
