/**
 * Search over the whole history and the page around any message, through the web API, run
 * against each store (search-file.test.ts, search-postgres.test.ts): newest first, snippets that
 * mark the match as offsets (never markup), limit and cursor, one group or every group, notices,
 * decisions and commands never found, accents and case folded in any script, bad parameters
 * answered 400 and unknown groups 404.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports.js';
import type { GroupRecord } from '../../src/core/records.js';
import type { TranscriptEntry } from '../../src/core/types.js';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { HEAD, rec, type StoreFactory } from './store-contract.js';

const CONFIG = 'agents:\n  - { id: analyst, name: Analyst, persona: p }\nllm: { provider: scripted }\nchannels: { web: { port: 0 } }\n';

export function said(group: string, seq: number, text: string, extra: Partial<TranscriptEntry> = {}): TranscriptEntry {
  return { id: `${group}.${seq}`, seq, kind: 'human', ts: 10_000 + seq * 10, authorId: 'web:maya', authorName: 'Maya', text, ...extra };
}

const agent = (group: string, seq: number, text: string) => said(group, seq, text, { kind: 'agent', agentId: 'analyst', authorId: 'analyst', authorName: 'Analyst', delivery: 'posted' });

/** Write groups straight into a store: a head record, then one record per entry (many per tick). */
export async function writeGroups(store: Store, groups: Record<string, TranscriptEntry[]>): Promise<void> {
  await store.open();
  for (const [id, entries] of Object.entries(groups)) {
    await store.append(id, rec(1, { head: { ...HEAD, id, title: id.toUpperCase(), chatId: id } }));
    for (let from = 0; from < entries.length; from += 200) {
      await Promise.all(entries.slice(from, from + 200).map((e, k) => store.append(id, rec(from + k + 2, { entries: [e] }) as GroupRecord)));
    }
  }
  await store.close();
}

export async function startApp(store: Store): Promise<App> {
  const { config } = parseConfigText(CONFIG, 'test');
  const app = await createApp({ config, store, llm: new FakeLlm(), logger: silentLogger });
  await app.start();
  return app;
}

export async function get(app: App, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${app.webUrl}${path}`);
  return { status: res.status, body: await res.json() };
}

/** The snippet with its highlights shown as [brackets], to compare in one string. */
export function marked(r: { snippet: string; highlights: Array<[number, number]> }): string {
  let out = '';
  let at = 0;
  for (const [a, b] of r.highlights) {
    out += `${r.snippet.slice(at, a)}[${r.snippet.slice(a, b)}]`;
    at = b;
  }
  return out + r.snippet.slice(at);
}

export function searchContract(name: string, factory: StoreFactory): void {
  describe(`${name}: search and the page around a message`, () => {
    it('finds messages newest first with marked snippets, pages with limit and cursor, across groups, never notices, decisions or commands', async () => {
      const make = await factory.fresh();
      const g: TranscriptEntry[] = [
        said('g', 1, 'Shall we deploy the release on Friday?'),
        agent('g', 2, 'Deploying on a Friday is brave. I would **deploy** on Tuesday.'),
        said('g', 3, 'Deployment notice', { kind: 'system', authorId: 'system', authorName: 'Chorus' }),
        said('g', 4, 'deploy pass', { kind: 'decision', authorId: 'system', authorName: 'Chorus', hiddenFromAgents: true, decision: { type: 'pass', agentId: 'analyst' } }),
        said('g', 5, '/deploy now', { hiddenFromAgents: true }),
        said('g', 6, `${'Long preamble words. '.repeat(30)}then we deploy at dawn, ${'and more after. '.repeat(30)}`),
        said('g', 7, 'Nothing to see here'),
      ];
      // Group h talked later than g.
      const h: TranscriptEntry[] = [said('h', 1, 'A deploy in the other group too', { ts: 20_000 }), { ...agent('h', 2, 'Café au lait? Привет, Мир! ＡＢＣ'), ts: 20_010 }];
      await writeGroups(make(), { g, h });
      const app = await startApp(make());
      try {
        const one = await get(app, '/api/groups/g/search?q=deploy');
        expect(one.status).toBe(200);
        expect(one.body.results.map((r: any) => r.id)).toEqual(['g.6', 'g.2', 'g.1']);
        expect(one.body.cursor).toBeNull();
        const first = one.body.results[2];
        expect(first).toMatchObject({ groupId: 'g', groupTitle: 'G', seq: 1, kind: 'human', authorName: 'Maya', ts: 10_010 });
        expect(marked(first)).toBe('Shall we [deploy] the release on Friday?');
        expect(marked(one.body.results[1])).toBe('[Deploying] on a Friday is brave. I would **[deploy]** on Tuesday.');
        expect(one.body.results[1]).toMatchObject({ kind: 'agent', agentId: 'analyst' });
        // A long message: an excerpt around the match, cut at words, marked where it matched.
        const long = one.body.results[0];
        expect(long.snippet.length).toBeLessThan(200);
        expect(long.snippet.startsWith('…')).toBe(true);
        expect(long.snippet.endsWith('…')).toBe(true);
        expect(marked(long)).toContain('then we [deploy] at dawn');

        // Every word is required; each matches the start of a word.
        expect((await get(app, '/api/groups/g/search?q=friday%20depl')).body.results.map((r: any) => r.id)).toEqual(['g.2', 'g.1']);
        expect((await get(app, '/api/groups/g/search?q=eploy')).body.results).toEqual([]);
        expect((await get(app, '/api/groups/g/search?q=notice')).body.results).toEqual([]);
        expect((await get(app, '/api/groups/g/search?q=%3F%3F')).body).toEqual({ results: [], cursor: null });

        // Pages of one, following the cursor, give the same order.
        const seen: string[] = [];
        let cursor: string | null = '';
        for (let i = 0; i < 5 && cursor !== null; i++) {
          const page: { status: number; body: any } = await get(app, `/api/groups/g/search?q=deploy&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
          seen.push(...page.body.results.map((r: any) => r.id));
          cursor = page.body.cursor;
        }
        expect(seen).toEqual(['g.6', 'g.2', 'g.1']);
        expect(cursor).toBeNull();

        // Across groups: newest first by time, with each group's title.
        const all = await get(app, '/api/search?q=deploy&limit=2');
        expect(all.body.results.map((r: any) => [r.id, r.groupTitle])).toEqual([['h.1', 'H'], ['g.6', 'G']]);
        const rest = await get(app, `/api/search?q=deploy&limit=2&cursor=${all.body.cursor}`);
        expect(rest.body.results.map((r: any) => r.id)).toEqual(['g.2', 'g.1']);
        expect(rest.body.cursor).toBeNull();

        // Case and accents folded in any script, full-width forms too.
        for (const q of ['cafe', 'CAFÉ', 'привет', 'мир', 'abc', 'пРИВ']) {
          const r = await get(app, `/api/search?q=${encodeURIComponent(q)}`);
          expect(r.body.results.map((x: any) => x.id), q).toEqual(['h.2']);
        }
        expect(marked((await get(app, `/api/search?q=${encodeURIComponent('привет cafe')}`)).body.results[0])).toBe('[Café] au lait? [Привет], Мир! ＡＢＣ');
      } finally {
        await app.stop();
      }
    });

    it('answers 400 for a missing, empty or too long q, a bad limit or cursor, and 404 for an unknown group', async () => {
      const make = await factory.fresh();
      await writeGroups(make(), { g: [said('g', 1, 'hello')] });
      const app = await startApp(make());
      try {
        for (const path of ['/api/search', '/api/search?q=', '/api/search?q=%20%20', `/api/search?q=${'a'.repeat(201)}`, '/api/groups/g/search?q=hi&limit=0', '/api/groups/g/search?q=hi&limit=101', '/api/groups/g/search?q=hi&limit=x', '/api/search?q=hi&cursor=nope!', `/api/search?q=hi&cursor=${Buffer.from('[1,2]').toString('base64url')}`]) {
          const r = await get(app, path);
          expect(r.status, path).toBe(400);
          expect(r.body.error.code, path).toMatch(/^invalid_/);
        }
        const missing = await get(app, '/api/groups/nope/search?q=hello');
        expect(missing.status).toBe(404);
        expect(missing.body.error.message).toMatch(/nope/);
        expect((await get(app, `/api/groups/g/search?q=${'a'.repeat(200)}`)).status).toBe(200);
        expect((await get(app, '/api/groups/g/messages?around=0')).status).toBe(400);
        expect((await get(app, '/api/groups/g/messages?around=1&before=3')).status).toBe(400);
        expect((await get(app, '/api/groups/nope/messages?around=1')).status).toBe(404);
      } finally {
        await app.stop();
      }
    });

    it('GET …/messages?around= loads the page around any entry, with older and newer flags, and a word 1,000 back is found', async () => {
      const make = await factory.fresh();
      const entries = Array.from({ length: 1200 }, (_, i) => said('g', i + 1, i + 1 === 150 ? 'the needle is here' : `message number ${i + 1}`));
      await writeGroups(make(), { g: entries });
      const app = await startApp(make());
      try {
        const hit = await get(app, '/api/groups/g/search?q=needle');
        expect(hit.body.results.map((r: any) => r.seq)).toEqual([150]);
        const page = async (q: string) => (await get(app, `/api/groups/g/messages?${q}`)).body as { messages: Array<{ seq: number }>; hasMore: boolean; hasNewer: boolean };
        const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
        const mid = await page('around=150&limit=50');
        expect(mid.messages.map((m) => m.seq)).toEqual(range(126, 175));
        expect(mid).toMatchObject({ hasMore: true, hasNewer: true });
        const start = await page('around=3&limit=50');
        expect(start.messages.map((m) => m.seq)).toEqual(range(1, 28));
        expect(start).toMatchObject({ hasMore: false, hasNewer: true });
        // Near the newest: the older side fills the page.
        const end = await page('around=1195&limit=50');
        expect(end.messages.map((m) => m.seq)).toEqual(range(1151, 1200));
        expect(end).toMatchObject({ hasMore: true, hasNewer: false });
        const last = await page('around=1200&limit=1');
        expect(last.messages.map((m) => m.seq)).toEqual([1200]);
        expect(last).toMatchObject({ hasMore: true, hasNewer: false });
        const odd = await page('around=600&limit=5');
        expect(odd.messages.map((m) => m.seq)).toEqual(range(598, 602));
        // Paging on from the window: older with `before`, as ever.
        const older = await page('before=126&limit=25');
        expect(older.messages.map((m) => m.seq)).toEqual(range(101, 125));
      } finally {
        await app.stop();
      }
    });
  });
}
