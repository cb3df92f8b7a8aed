/**
 * `/stop` on the web: `POST /api/groups/:id/stop` and `/stop` typed in the composer,
 * against the real app (router, file store, web channel over HTTP, FakeLlm).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import { parseConfigText } from '../../../src/config/load.js';
import type { LlmRequest } from '../../../src/core/ports.js';
import type { TranscriptEntry } from '../../../src/core/types.js';
import { FakeLlm } from '../../helpers/fake-llm.js';
import { silentLogger } from '../../helpers/logger.js';

const POLL = { timeout: 15_000, interval: 25 };

describe('web API: /stop', () => {
  let app: App;
  let base: string;
  let dataDir: string;
  /** Writer's model never answers by itself: only a stop ends its call. */
  const hung: LlmRequest[] = [];
  const llm = new FakeLlm({
    replies: {
      writer: (req) => {
        hung.push(req);
        return new Promise<string>(() => undefined);
      },
      analyst: 'Analyst here',
    },
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chorus-stop-'));
    const yaml = `
data_dir: ${JSON.stringify(dataDir)}
log_level: silent
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
  - { id: writer, name: Writer, persona: "You are Writer." }
group_defaults: { cooldown_seconds: 0, reply_strategy: mention_only, agent_reply_timeout_seconds: 600 }
channels:
  web: { enabled: true, host: 127.0.0.1, port: 0 }
groups:
  - { channel: web, chat_id: room, title: Room, participants: [analyst, writer] }
`;
    const { config } = parseConfigText(yaml, 'test');
    app = await createApp({ config, llm, logger: silentLogger });
    await app.start();
    base = app.webUrl!;
  });

  afterAll(async () => {
    await app?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const post = (path: string, body?: Record<string, unknown>) =>
    fetch(`${base}${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : { method: 'POST' });
  const messages = async (): Promise<TranscriptEntry[]> => ((await (await fetch(`${base}/api/groups/room/messages?limit=500`)).json()) as { messages: TranscriptEntry[] }).messages;

  it('ends the running round and cancels its call; the notice names who stopped it', async () => {
    expect((await post('/api/groups/room/messages', { text: '@writer write me a novel', author_name: 'Maya' })).status).toBe(202);
    await expect.poll(() => hung.length, POLL).toBe(1);
    expect((await post('/api/groups/room/messages', { text: '@analyst and a summary', author_name: 'Maya' })).status).toBe(202);

    const res = await post('/api/groups/room/stop', { author_name: 'Sam' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ stopped: true, roundsDropped: 2, turnsDropped: 2 });
    expect(hung[0]!.signal?.aborted).toBe(true);
    await app.router.idle();
    const all = await messages();
    expect(all.filter((e) => e.kind === 'agent')).toHaveLength(0);
    expect(all.filter((e) => e.kind === 'human').map((e) => e.text)).toEqual(['@writer write me a novel', '@analyst and a summary']);
    expect(all.at(-1)!.text).toMatch(/^⏹ Stopped by Sam: 2 rounds were ended/);
    expect(all.at(-1)!.decision?.type).toBe('stopped');

    // The next message starts afresh.
    await post('/api/groups/room/messages', { text: '@analyst still there?', author_name: 'Maya' });
    await expect.poll(async () => (await messages()).filter((e) => e.kind === 'agent').length, POLL).toBe(1);
  });

  it('needs no body; "/stop" typed in the composer works too; bad input is a clear 4xx', async () => {
    await app.router.idle(); // the previous test's last round has finished
    const bare = await post('/api/groups/room/stop');
    expect(bare.status).toBe(200);
    expect(await bare.json()).toEqual({ stopped: true, roundsDropped: 0, turnsDropped: 0 });
    // No name given: "someone", never "You" (which every other reader would read as themselves).
    expect((await messages()).at(-1)!.text).toBe('⏹ Stopped by someone: nothing was running. Messages stay recorded; the next message starts afresh.');

    const typed = await post('/api/groups/room/messages', { text: '/stop', author_name: 'Lee' });
    expect(typed.status).toBe(202); // a command with nothing to answer the asker alone
    await expect.poll(async () => (await messages()).at(-1)!.text, POLL).toMatch(/^⏹ Stopped by Lee/);

    const unknown = await post('/api/groups/nope/stop');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_group');
    const badName = await post('/api/groups/room/stop', { author_name: 42 });
    expect(badName.status).toBe(400);
    const agentName = await post('/api/groups/room/stop', { author_name: 'Writer' });
    expect(agentName.status).toBe(400);
  });
});
