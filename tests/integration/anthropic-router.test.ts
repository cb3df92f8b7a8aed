/**
 * The router with the real Anthropic provider against the fake Messages API: caching across a
 * session's turns, usage that persists across a restart, failures that become one notice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { CapturingLogger } from '../helpers/logger.js';

const KEY = 'sk-ant-test-router-SECRET-42';
const PERSONA = 'You are a meticulous analyst who explains figures in plain words. '.repeat(90);

/** The analyst's own calls: its persona opens the system prompt (others only quote its first line). */
function isAnalyst(body: Record<string, unknown>): boolean {
  const system = body.system as Array<{ text: string }> | undefined;
  return !!system?.[0]?.text.startsWith('You are a meticulous analyst');
}

function config(dir: string, url: string, extra = '') {
  return parseConfigText(
    `
data_dir: ${dir}
log_level: silent
llm: { provider: anthropic, api_key: ${KEY}, base_url: "${url}", model: claude-opus-4-5, summary_model: claude-haiku-4-5, max_retries: 1, timeout_seconds: 5 }
agents:
  - { id: analyst, name: Analyst, persona: "${PERSONA}" }
  - { id: writer, name: Writer, persona: "You write." }
group_defaults: { cooldown_seconds: 0 }
channels: { web: { enabled: false } }
${extra}
`,
    'test',
    {},
  ).config;
}

describe('router + Anthropic provider', () => {
  let fake: FakeAnthropicServer;
  let dir: string;
  const apps: App[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function boot(logger = new CapturingLogger()) {
    const channel = new FakeChannel('web');
    const app = await createApp({ config: config(dir, fake.url), channels: [channel], logger });
    apps.push(app);
    await app.start();
    const group = app.router.gateway.getGroup('room') ?? (await app.gateway.createGroup({ title: 'Room', participants: ['analyst', 'writer'], id: 'room' }));
    let n = 0;
    const say = async (text: string) => {
      await app.router.receive({ channel: 'web', chatId: group.chatId, messageId: `${Date.now()}-${++n}`, author: { id: 'u', name: 'Maya' }, text, ts: Date.now() });
      await app.router.idle();
    };
    return { app, channel, say, logger };
  }

  it('the second turn of a session reads the stable prefix from cache, and usage survives a restart', async () => {
    dir = mkdtempSync(join(tmpdir(), 'chorus-anth-'));
    fake = await startFakeAnthropic({ reply: () => 'Revenue grew 8%.' });
    const a = await boot();
    await a.say('@analyst first question');
    await a.say('@analyst second question');
    const calls = fake.messages().filter((r) => r.status === 200);
    expect(calls).toHaveLength(2);
    const body = calls[1]!.body as { system: Array<{ cache_control?: unknown }>; messages: Array<{ content: Array<{ cache_control?: unknown }> }> };
    expect(body.system[0]!.cache_control).toBeTruthy();
    expect(body.messages.at(-1)!.content.at(-1)!.cache_control).toBeTruthy();
    expect(calls[1]!.cache!.usage.cache_read_input_tokens).toBeGreaterThan(1000);
    const usage = a.app.router.gateway.getGroup('room')!.usage.analyst!;
    expect(usage.calls).toBe(2);
    expect(usage.cacheReadTokens).toBe(calls[1]!.cache!.usage.cache_read_input_tokens);
    expect(usage.costUsd).toBeGreaterThan(0);
    const meta = (await a.app.router.gateway.messages('room', { limit: 10 })).filter((e) => e.kind === 'agent').at(-1)!.meta!;
    expect(meta.usage.cacheReadTokens).toBe(calls[1]!.cache!.usage.cache_read_input_tokens);
    expect(meta.model).toBe('claude-opus-4-5');
    await a.app.stop();
    apps.length = 0;

    const b = await boot();
    await b.say('@analyst third');
    const after = b.app.router.gateway.getGroup('room')!.usage.analyst!;
    expect(after.calls).toBe(3);
    expect(after.inputTokens + after.cacheReadTokens + after.cacheWriteTokens).toBeGreaterThan(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens);
    await b.say('/group usage');
    expect(b.channel.texts(null).at(-1)).toMatch(/Analyst: 3 calls, .* from cache\), .* out, \$\d+\.\d{4}/);
  });

  it('a 429 then success is retried; a persistent 529 becomes one notice and the others answer', async () => {
    dir = mkdtempSync(join(tmpdir(), 'chorus-anth-'));
    fake = await startFakeAnthropic({
      reply: (req) => {
        return isAnalyst(req.body) ? { status: 529, type: 'overloaded_error', headers: { 'retry-after': '0' } } : 'Writer here.';
      },
    });
    fake.queue({ status: 429, type: 'rate_limit_error', headers: { 'retry-after': '0' } });
    const logger = new CapturingLogger();
    const a = await boot(logger);
    await a.say('@writer @analyst go');
    expect(a.channel.texts('writer')).toEqual(['Writer here.']);
    expect(a.channel.texts(null)).toEqual(['⚠ Analyst could not reply (model overloaded)']);
    const analystAttempts = fake.messages().filter((r) => isAnalyst(r.body));
    expect(analystAttempts).toHaveLength(2); // first try + max_retries: 1
    expect(logger.text()).not.toContain(KEY);
  });
});
