/**
 * Images a tool returns are kept like a person's upload: through the real MCP SDK over stdio, a
 * tool's PNG comes back as an attachment whose bytes are the tool's bytes, while the model still
 * reads a line; content that is not a file Chorus takes stays a line only.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/tools/McpHub.js';
import { FileKeeper } from '../../src/files/FileKeeper.js';
import { keepToolFiles } from '../../src/tools/toolFiles.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { samplePng, sha256 } from '../helpers/sample-files.js';
import { never, stdioServer, tempDir } from './helpers.js';

const cleanup: Array<() => unknown> = [];
const store = new MemoryStore();
let hub: McpHub;

beforeAll(async () => {
  hub = new McpHub({
    servers: { orders: stdioServer(join(tempDir(cleanup), 'state.json')) },
    agents: [{ id: 'analyst', tools: ['orders'] }],
    logger: silentLogger,
    files: new FileKeeper(store),
  });
  await hub.start();
});

afterAll(async () => {
  await hub?.stop();
  for (const c of cleanup.reverse()) await c();
});

describe('files from tools', () => {
  it('a PNG a tool returns is kept and named on the result; the model reads a line', async () => {
    const res = await hub.call({ server: 'orders', tool: 'chart', input: { width: 33 }, timeoutMs: 20_000, signal: never });
    expect(res.outcome).toBe('ok');
    expect(res.content).toContain('chart 33 px wide');
    expect(res.content).toContain('[image/png,');
    expect(res.attachments).toHaveLength(1);
    const [a] = res.attachments!;
    expect(a).toMatchObject({ type: 'image/png', name: 'orders.chart-1.png', sha256: sha256(samplePng(33, 10)) });
    expect(sha256(store.files.get(a!.id)!.bytes)).toBe(a!.sha256);
  });

  it('parts that are not files Chorus takes are not kept', async () => {
    const res = await hub.call({ server: 'orders', tool: 'picture', input: {}, timeoutMs: 20_000, signal: never });
    // The fake's "image" is 12 KB of 0x01 bytes and its PDF is zeros: neither is what it claims.
    expect(res.attachments).toBeUndefined();
    expect(res.content).toContain('[image/png, 12 KB]');
  });

  it('keeps at most the per-message number of files, and names a resource after its URI', async () => {
    const local = new MemoryStore();
    const keeper = new FileKeeper(local, { max_files_per_message: 2 });
    const logger = new CapturingLogger();
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');
    const parts = [
      { type: 'resource', resource: { uri: 'file:///reports/Q3%20sales.pdf', mimeType: 'application/pdf', blob: pdf.toString('base64') } },
      { type: 'image', mimeType: 'image/png', data: samplePng(4, 4, 1).toString('base64') },
      { type: 'image', mimeType: 'image/png', data: samplePng(4, 4, 2).toString('base64') },
    ];
    const kept = await keepToolFiles({ content: parts }, keeper, 'orders.report', logger);
    expect(kept.map((a) => a.name)).toEqual(['Q3 sales.pdf', 'orders.report-2.png']);
    expect(local.files.size).toBe(2);
  });
});
