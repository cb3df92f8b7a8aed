/**
 * Web-only command answers with two instances on one database, over HTTP: a question
 * (`/help`, `/group list`) posted to the instance that does not run the group is answered by it,
 * to the asker alone (200 with `ephemeral`), and nothing is recorded or handed over; a command
 * that changes the group is handed over through the inbox, run by the owner, and its outcome comes
 * back to the asker in the same HTTP answer: the owner's refusal (200, `ephemeral`) or its
 * recorded line (202 `command` with the entry id).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

const TOKEN = 'web-cluster-commands-token-5b1e';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
let db: TestDatabase | null = null;
const apps: App[] = [];

beforeAll(async () => {
  db = await testDatabase('webcmds');
}, 120_000);

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop().catch(() => undefined)));
  await db?.drop().catch(() => undefined);
}, 60_000);

async function instance(id: string): Promise<App> {
  const { config } = parseConfigText(
    `storage: { kind: postgres, url: "${db!.url}" }
cluster: { instance_id: ${id}, lease_seconds: 3 }
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "You analyse." }
channels: { web: { host: 127.0.0.1, port: 0, auth_token: ${TOKEN} } }
group_defaults: { cooldown_seconds: 0 }
`,
    `${id}.yaml`,
    {},
  );
  const app = await createApp({ config, llm: new FakeLlm({ fallback: () => 'ok' }), logger: silentLogger });
  apps.push(app);
  await app.start();
  return app;
}

async function until(what: string, pred: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('web command answers on the instance that does not run the group (PostgreSQL)', () => {
  it('answers questions itself, hands changes over and returns the owner\'s answer', async (ctx) => {
    if (!db) return ctx.skip();
    const a = await instance('wa');
    await a.gateway.createGroup({ title: 'Planning', participants: ['analyst'], id: 'plan' });
    const b = await instance('wb');
    await until('b to list the group', () => b.gateway.listGroups().some((g) => g.id === 'plan'));
    expect(b.cluster!.owns('plan')).toBe(false);
    const post = (text: string, clientId: string) =>
      fetch(`${b.webUrl}/api/groups/plan/messages`, { method: 'POST', headers: AUTH, body: JSON.stringify({ text, client_id: clientId, author_name: 'Maya' }) });

    const help = await post('/help', 'c1');
    expect(help.status).toBe(200);
    const helpBody = (await help.json()) as { status: string; ephemeral?: { kind: string; text: string } };
    expect(helpBody.status).toBe('command');
    expect(helpBody.ephemeral?.kind).toBe('command');
    expect(helpBody.ephemeral?.text).toMatch(/\/group/);
    const list = await post('/group list', 'c2');
    expect(list.status).toBe(200);
    expect(((await list.json()) as { ephemeral?: { text: string } }).ephemeral?.text).toContain('Planning');

    // A refused change: the owner's reason reaches the asker (it is not stored anywhere).
    const bad = await post('/group config cooldown_seconds banana', 'c4');
    expect(bad.status).toBe(200);
    const badBody = (await bad.json()) as { status: string; ephemeral?: { kind: string; text: string } };
    expect(badBody.status).toBe('command');
    expect(badBody.ephemeral?.text).toMatch(/cooldown_seconds/);

    const change = await post('/group config cooldown_seconds 7', 'c3');
    expect(change.status).toBe(202);
    const changeBody = (await change.json()) as { status: string; entryId: string | null };
    expect(changeBody.status).toBe('command');
    expect(changeBody.entryId).toMatch(/^plan\.\d+$/);
    await until('the owner to apply the change', () => a.gateway.getGroup('plan')?.config.cooldown_seconds === 7);

    // The questions left nothing in the log; the change left its line.
    const entries = await a.gateway.messages('plan', { limit: 50 });
    expect(entries.map((e) => e.text)).not.toContain('/help');
    expect(entries.map((e) => e.text)).not.toContain('/group list');
    expect(entries.map((e) => e.text)).not.toContain('/group config cooldown_seconds banana');
    expect(entries.some((e) => e.text === '/group config cooldown_seconds 7')).toBe(true);
  }, 60_000);
});
