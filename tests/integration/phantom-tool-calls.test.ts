/**
 * A model whose only output is a call to a tool it was not offered: the real app with the real
 * Anthropic and OpenAI-compatible providers against their fakes. Nothing can run such a call, so
 * there is no answer: an addressed agent's turn fails with the usual short notice naming why (it
 * never just "passed"), a voluntary one passes quietly. The case where the agent has tools but
 * their MCP server is down (its tools are not in the request) is the same to the model.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { callTool as anthropicCall, startFakeAnthropic, type FakeAnthropicServer } from '../fakes/anthropic/index.js';
import { callTool as openAiCall, startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { CapturingLogger } from '../helpers/logger.js';

const NOTICE = '⚠ Analyst could not reply (it called a tool it cannot use)';

type Provider = 'anthropic' | 'openai';

/** A port nothing listens on: an MCP server that is down (restarting, not yet up). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('a reply that is only a call to a tool the agent was not offered', () => {
  let dir: string | undefined;
  let app: App | undefined;
  let anthropic: FakeAnthropicServer | undefined;
  let openai: FakeOpenAiServer | undefined;

  afterEach(async () => {
    await app?.stop();
    await anthropic?.close();
    await openai?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    app = anthropic = openai = dir = undefined;
  });

  /** The app with one provider whose fake answers every analyst turn with a call to `tool` (`get_weather`). */
  async function boot(provider: Provider, opts: { strategy?: string; toolsDown?: boolean; tool?: string } = {}) {
    const tool = opts.tool ?? 'get_weather';
    dir = mkdtempSync(join(tmpdir(), 'chorus-phantom-'));
    let llm: string;
    if (provider === 'anthropic') {
      anthropic = await startFakeAnthropic({ reply: (req) => (isAnalyst(req.body) ? anthropicCall(tool, { city: 'Oslo' }) : 'Writer here.') });
      llm = `{ provider: anthropic, api_key: sk-ant-phantom, base_url: "${anthropic.url}", model: claude-opus-4-5, max_retries: 0 }`;
    } else {
      openai = await startFakeOpenAi({ reply: (req) => (isAnalyst(req.body) ? openAiCall(tool, { city: 'Oslo' }) : 'Writer here.') });
      llm = `{ provider: openai, base_url: "${openai.url}", model: local-model, max_retries: 0 }`;
    }
    const tools = opts.toolsDown ? `tools:\n  weather: { url: "http://127.0.0.1:${await closedPort()}/mcp" }\n` : '';
    const yaml = `
data_dir: ${dir}
log_level: silent
llm: ${llm}
agents:
  - { id: analyst, name: Analyst, persona: "You are the analyst."${opts.toolsDown ? ', tools: [weather]' : ''} }
  - { id: writer, name: Writer, persona: "You write." }
group_defaults: { cooldown_seconds: 0, reply_strategy: ${opts.strategy ?? 'mention_only'} }
channels: { web: { enabled: false } }
${tools}`;
    const logger = new CapturingLogger();
    const channel = new FakeChannel('web');
    const a = await createApp({ config: parseConfigText(yaml, 'test', {}).config, channels: [channel], logger });
    app = a;
    await a.start();
    const group = await a.gateway.createGroup({ title: 'Room', participants: ['analyst', 'writer'], id: 'room' });
    let n = 0;
    const say = async (text: string) => {
      await a.router.receive({ channel: 'web', chatId: group.chatId, messageId: `m${++n}`, author: { id: 'maya', name: 'Maya' }, text, ts: Date.now() });
      await a.router.idle();
    };
    const transcript = (): TranscriptEntry[] => a.router.groups.get('room')!.transcript;
    return { channel, say, logger, transcript };
  }

  /** What the fake was asked for the analyst: whether the request offered any tools. */
  function analystRequests(): Array<Record<string, unknown>> {
    const all = anthropic ? anthropic.messages().map((r) => r.body) : openai!.requests.map((r) => r.body);
    return all.filter(isAnalyst);
  }

  for (const provider of ['anthropic', 'openai'] as const) {
    it(`${provider}: an addressed agent that only calls a tool it was not offered gets a notice, not a silent pass`, async () => {
      const w = await boot(provider);
      await w.say('@analyst what is the weather in Oslo?');
      expect(analystRequests()).toHaveLength(1);
      expect(analystRequests()[0]!.tools).toBeUndefined();
      expect(w.channel.texts(null)).toEqual([NOTICE]);
      expect(w.channel.texts('analyst')).toEqual([]);
      const lines = w.transcript().filter((e) => e.kind === 'decision').map((e) => e.text);
      expect(lines).not.toContain('Analyst passed');
      // The operator is told which tool the model asked for, and why nothing ran it.
      const warn = w.logger.lines.find((l) => l.level === 'warn' && /Analyst could not reply/.test(l.msg ?? ''));
      expect(warn?.msg).toContain('get_weather');
      // The others still answer, and the next message is answered as usual.
      await w.say('@writer and you?');
      expect(w.channel.texts('writer')).toEqual(['Writer here.']);
    });

    it(`${provider}: an agent whose MCP server is down is offered no tools; its call to one gives the notice`, async () => {
      const w = await boot(provider, { toolsDown: true });
      await w.say('@analyst what is the weather in Oslo?');
      expect(analystRequests()[0]!.tools).toBeUndefined();
      expect(w.channel.texts(null)).toEqual([NOTICE]);
    });

    if (provider === 'openai') {
      it('openai: a reply that is only a tool call without a name (nothing can run it) gives the notice too', async () => {
        const w = await boot(provider, { tool: '' });
        await w.say('@analyst what is the weather in Oslo?');
        expect(w.channel.texts(null)).toEqual([NOTICE]);
        const warn = w.logger.lines.find((l) => l.level === 'warn' && /Analyst could not reply/.test(l.msg ?? ''));
        expect(warn?.msg).toContain('a tool call that has no name');
      });
    }

    it(`${provider}: on a voluntary turn the same reply is a quiet pass: no notice`, async () => {
      const w = await boot(provider, { strategy: 'hybrid' });
      await w.say('the weather is lovely today');
      expect(analystRequests()).toHaveLength(1);
      expect(w.channel.texts(null)).toEqual([]);
      expect(w.transcript().filter((e) => e.kind === 'decision').map((e) => e.text)).toContain('Analyst passed');
    });
  }
});

/** The analyst's own calls: its persona opens the system prompt (a string for OpenAI, blocks for Anthropic). */
function isAnalyst(body: Record<string, unknown>): boolean {
  const system = body.system as Array<{ text: string }> | undefined;
  if (system) return system[0]?.text.startsWith('You are the analyst') ?? false;
  const messages = body.messages as Array<{ role: string; content: unknown }> | undefined;
  const first = messages?.find((m) => m.role === 'system')?.content;
  return typeof first === 'string' && first.startsWith('You are the analyst');
}
