/**
 * A store that cannot write (full disk, read-only data_dir), seen through the web API: every
 * change is refused with 503 and Retry-After, nothing of it is kept or answered later, /readyz
 * says why, and everything works again once the store does.
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { createApp } from '../../src/app.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';

const YAML = `
agents:
  - { id: analyst, name: Analyst, persona: "You analyse." }
  - { id: writer, name: Writer, persona: "You write." }
channels: { web: { port: 0 } }
groups:
  - { channel: web, chat_id: lobby, participants: [analyst, writer] }
`;

async function until<T>(f: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('a store that cannot write', () => {
  it('refuses with 503 + Retry-After, keeps nothing, reports it on /readyz, and recovers', async () => {
    const { config } = parseConfigText(YAML, 't');
    const store = new MemoryStore();
    const llm = new FakeLlm({ replies: { analyst: 'on it' } });
    const app = await createApp({ config, llm, logger: silentLogger, store });
    await app.start();
    const url = app.webUrl!;
    const post = (text: string, clientId?: string) =>
      fetch(`${url}/api/groups/lobby/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, author_name: 'Maya', ...(clientId ? { client_id: clientId } : {}) }) });
    try {
      expect((await post('@analyst before')).status).toBe(202);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      await app.router.idle();

      store.failWrites = 'EROFS: read-only file system';
      for (let i = 0; i < 3; i++) {
        const res = await post(`@analyst while read-only ${i}`, `c${i}`);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      }
      const created = await fetch(`${url}/api/groups`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'New', participants: ['writer'] }) });
      expect(created.status).toBe(503);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(JSON.stringify(await ready.json())).toContain('EROFS');
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      // The disk is writable again: the group comes back from what was durable.
      store.failWrites = null;
      const retried = await until(async () => {
        const res = await post('@analyst while read-only 0', 'c0');
        return res.status === 202 ? res : undefined;
      });
      expect(retried.status).toBe(202);
      await app.router.idle();
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const list = (await (await fetch(`${url}/api/groups/lobby/messages?limit=100`)).json()) as { messages: Array<{ text: string; kind: string }> };
      const humans = list.messages.filter((m) => m.kind === 'human').map((m) => m.text);
      // Refused messages left no trace; the one sent again is there once and was answered.
      expect(humans).toEqual(['@analyst before', '@analyst while read-only 0']);
      expect(list.messages.filter((m) => m.kind === 'agent')).toHaveLength(2);
      expect((await (await fetch(`${url}/api/groups`)).json() as { groups: Array<{ title: string }> }).groups.map((g) => g.title)).not.toContain('New');
    } finally {
      await app.stop();
    }
  });
});
