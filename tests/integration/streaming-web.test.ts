/**
 * A reply streamed by the Anthropic provider reaches a web client as SSE delta events,
 * and the final message matches what was streamed; the group's usage is visible over the API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { openSse, type SseConnection } from '../channels/web/sse-client.js';
import { silentLogger } from '../helpers/logger.js';

let fake: FakeAnthropicServer;
let app: App;
let dir: string;
let sse: SseConnection | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-stream-'));
  fake = await startFakeAnthropic({
    reply: () => ({ text: 'Revenue grew eight percent, margins held, and guidance was raised.', chunks: ['Revenue grew ', 'eight percent, ', 'margins held, ', 'and guidance ', 'was raised.'], chunkDelayMs: 5 }),
  });
  const { config } = parseConfigText(
    `
data_dir: ${dir}
log_level: silent
llm: { provider: anthropic, api_key: sk-ant-test-stream, base_url: "${fake.url}", model: claude-opus-4-5 }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write." }
channels: { web: { enabled: true, port: 0 } }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst, writer] }
`,
    'test',
    {},
  );
  app = await createApp({ config, logger: silentLogger });
  await app.start();
});

afterAll(async () => {
  sse?.close();
  await app?.stop();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('streams deltas over SSE and the final message equals their concatenation', async () => {
  sse = await openSse(`${app.webUrl}/api/groups/room/events`);
  const res = await fetch(`${app.webUrl}/api/groups/room/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: '@analyst how was the quarter?' }) });
  expect(res.status).toBe(202);
  const events = await sse.waitFor((evs) => evs.some((e) => e.event === 'message' && e.data.entry?.kind === 'agent'), 10_000);
  const deltas = events.filter((e) => e.event === 'delta').map((e) => e.data.text as string);
  expect(deltas.length).toBeGreaterThanOrEqual(3);
  const final = events.find((e) => e.event === 'message' && e.data.entry?.kind === 'agent')!.data.entry;
  expect(deltas.join('')).toBe(final.text);
  expect(final.text).toBe('Revenue grew eight percent, margins held, and guidance was raised.');
  // Typing went on before the first delta and off before the final message.
  const order = events.map((e) => (e.event === 'typing' ? `typing:${e.data.active}` : e.event)).filter((x) => x !== 'decision');
  expect(order.indexOf('typing:true')).toBeLessThan(order.indexOf('delta'));
  expect(order.lastIndexOf('typing:false')).toBeLessThan(order.lastIndexOf('message'));
  // The per-message figures and the group's usage are visible over the API.
  expect(final.meta.usage.outputTokens).toBeGreaterThan(0);
  const detail = (await (await fetch(`${app.webUrl}/api/groups/room`)).json()) as { group?: { usage: Record<string, { calls: number }> }; usage?: Record<string, { calls: number }> };
  const usage = detail.group?.usage ?? detail.usage;
  expect(usage?.analyst?.calls).toBe(1);
});
