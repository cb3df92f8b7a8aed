/**
 * Migration of a data directory written by Chorus 0.1 (tests/fixtures/v1-data, made by that
 * version's own code): nothing that survived on disk is lost, the old files are backed up, one log
 * line says what was migrated, agents keep their memory, and a crash half-way through migrates
 * again cleanly.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfigText } from '../../src/config/load.js';
import { createApp } from '../../src/app.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { CapturingLogger, silentLogger } from '../helpers/logger.js';
import { FakeLlm } from '../helpers/fake-llm.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'v1-data');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function copyFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-migrate-'));
  dirs.push(dir);
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

/** What the 0.1 files hold: the group tail plus every session backlog, by seq. */
function v1Entries(dir: string, group: string): Map<number, string> {
  const g = JSON.parse(readFileSync(join(dir, 'groups', `${group}.json`), 'utf8')) as { transcript: Array<{ seq: number; text: string }> };
  const out = new Map(g.transcript.map((e) => [e.seq, e.text]));
  const sdir = join(dir, 'sessions', group);
  for (const f of existsSync(sdir) ? readdirSync(sdir) : []) {
    const s = JSON.parse(readFileSync(join(sdir, f), 'utf8')) as { backlog?: Array<{ seq: number; text: string }> };
    for (const e of s.backlog ?? []) out.set(e.seq, e.text);
  }
  return out;
}

const YAML = (dataDir: string) => `
data_dir: ${JSON.stringify(dataDir)}
agents:
  - { id: analyst, name: Analyst, persona: "x" }
  - { id: writer, name: Writer, persona: "y" }
  - { id: critic, name: Critic, persona: "z" }
channels: { web: { port: 0 } }
group_defaults: { cooldown_seconds: 0 }
`;

async function allMessages(base: string, group: string): Promise<Array<{ seq: number; text: string }>> {
  const out: Array<{ seq: number; text: string }> = [];
  let before = '';
  for (;;) {
    const res = (await (await fetch(`${base}/api/groups/${group}/messages?limit=100${before}`)).json()) as { messages: Array<{ seq: number; text: string }> };
    if (res.messages.length === 0) return out;
    out.unshift(...res.messages);
    before = `&before=${res.messages[0]!.seq}`;
  }
}

describe('migration from Chorus 0.1', () => {
  it('keeps every entry that survived in the old files, backs them up, and says so once', async () => {
    const dir = copyFixture();
    const expected = v1Entries(dir, 'lobby');
    // The old files held the whole history of this group only together: tail + backlogs.
    expect(Math.min(...expected.keys())).toBe(1);
    expect(expected.size).toBe(320);
    const analystBefore = JSON.parse(readFileSync(join(dir, 'sessions', 'lobby', 'analyst.json'), 'utf8')) as { history: unknown[] };

    const logger = new CapturingLogger();
    const { config } = parseConfigText(YAML(dir), 't');
    const llm = new FakeLlm({ replies: { writer: 'caught up' } });
    const app = await createApp({ config, llm, logger, store: new FileStore({ dataDir: dir, fsync: 'always', logger }) });
    await app.start();
    try {
      const got = await allMessages(app.webUrl!, 'lobby');
      expect(got.map((e) => e.seq)).toEqual([...expected.keys()].sort((a, b) => a - b));
      expect(got.map((e) => e.text)).toEqual(got.map((e) => expected.get(e.seq)));
      expect((await allMessages(app.webUrl!, 'side')).filter((e) => e.text.startsWith('hello'))).toHaveLength(3);
      const migrated = logger.lines.filter((l) => l.msg?.includes('migrated data from format 1'));
      expect(migrated).toHaveLength(1);
      expect(migrated[0]!.obj).toMatchObject({ groups: 2, entries: 320 + 6, sessions: 4 });
      // The old files are kept, out of the way.
      const backup = readdirSync(dir).find((n) => n.startsWith('backup-v1-'))!;
      expect(readdirSync(join(dir, backup, 'groups')).sort()).toEqual(['lobby.json', 'side.json']);
      expect(readdirSync(join(dir, backup, 'sessions', 'lobby')).sort()).toEqual(['analyst.json', 'critic.json', 'writer.json']);
      expect(existsSync(join(dir, 'groups', 'lobby.json'))).toBe(false);
      // Agents keep their memory: the analyst's turns, and the silent writer's place in the story.
      expect(app.router.groups.session(app.router.groups.get('lobby')!, 'analyst').history).toHaveLength(analystBefore.history.length);
      await app.router.receive({ channel: 'web', chatId: 'lobby', messageId: 'after-1', author: { id: 'maya', name: 'Maya' }, text: '@writer catch up', ts: Date.now() });
      await app.router.idle();
      const prompt = llm.callsFor('writer')[0]!.messages.at(-1)!.content;
      expect(prompt).toContain('<message from="Maya" role="human">@analyst question 159</message>');
      expect(prompt).toMatch(/\(\d+ earlier messages not shown\)/);
    } finally {
      await app.stop();
    }

    // A second start finds nothing to migrate and the same history.
    const second = new CapturingLogger();
    const again = await createApp({ config, llm, logger: second, store: new FileStore({ dataDir: dir, fsync: 'always', logger: second }) });
    await again.start();
    try {
      expect(second.text()).not.toContain('migrated');
      expect((await allMessages(again.webUrl!, 'lobby')).length).toBe(320 + 2);
    } finally {
      await again.stop();
    }
  });

  it('a migration cut short by a crash is done again from the old files', async () => {
    const dir = copyFixture();
    // What a kill during step 3 leaves: a half-written temporary directory, old files in place.
    mkdirSync(join(dir, 'groups', '.lobby.migrating', 'log'), { recursive: true });
    const store = new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger });
    const { groups } = await store.open();
    expect(groups.map((g) => g.id).sort()).toEqual(['lobby', 'side']);
    expect(existsSync(join(dir, 'groups', '.lobby.migrating'))).toBe(false);
    let n = 0;
    for (let after = 0; ; ) {
      const page = await store.readEntries('lobby', { afterSeq: after, limit: 200 });
      if (!page.length) break;
      n += page.length;
      after = page.at(-1)!.seq;
    }
    expect(n).toBe(320);
    await store.close();
  });
});
