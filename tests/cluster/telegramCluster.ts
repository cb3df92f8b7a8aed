/**
 * A cluster of Chorus instances on one PostgreSQL database, each with the Telegram channel in
 * polling mode against one fake Bot API and the agents' bots given (web off, groups made when a
 * bot is added to a chat). Replies name the agent and the instance: "analyst here (a #1)".
 * `telegramCluster` sets the database, the fake and a directory up for a test file and takes them
 * (and every instance started) down after it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { FakeLlm } from '../helpers/fake-llm.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';
import { TOKENS, USERNAMES, agentDef, type AgentId } from '../channels/telegram/harness.js';

export interface TelegramCluster {
  /** Null without PostgreSQL (the test skips). */
  readonly db: TestDatabase | null;
  readonly fake: FakeTelegram;
  /** Start instance `id` (taken down after the file). */
  instance(id: string): Promise<App>;
}

/** `privacy`: the bots see a group message only when it addresses them (Telegram's privacy mode). */
export function telegramCluster(name: string, bots: readonly AgentId[], opts: { privacy?: boolean } = {}): TelegramCluster {
  let db: TestDatabase | null = null;
  let fake: FakeTelegram | undefined;
  let dir = '';
  const apps: App[] = [];
  beforeAll(async () => {
    db = await testDatabase(name);
    fake = await FakeTelegram.start();
    for (const id of bots) fake.addBot({ token: TOKENS[id], username: USERNAMES[id], firstName: agentDef(id).name, canReadAll: !opts.privacy });
    dir = await mkdtemp(join(tmpdir(), `chorus-${name}-`));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop().catch(() => undefined)));
    await fake?.close();
    await db?.drop().catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);
  return {
    get db() {
      return db;
    },
    get fake() {
      return fake!;
    },
    async instance(id) {
      const app = await telegramInstance({ id, dir, dbUrl: db!.url, apiRoot: fake!.apiRoot, bots });
      apps.push(app);
      return app;
    },
  };
}

async function telegramInstance(o: { id: string; dir: string; dbUrl: string; apiRoot: string; bots: readonly AgentId[] }): Promise<App> {
  const agents = o.bots.map((b) => `  - { id: ${b}, name: ${agentDef(b).name}, persona: "You are the ${b}.", telegram: { token: "${TOKENS[b]}" } }`).join('\n');
  const { config } = parseConfigText(
    `data_dir: ${JSON.stringify(join(o.dir, o.id))}
storage: { kind: postgres, url: "${o.dbUrl}" }
cluster: { instance_id: ${o.id}, lease_seconds: 2 }
llm: { provider: scripted }
agents:
${agents}
group_defaults: { cooldown_seconds: 0 }
channels:
  web: { enabled: false }
  telegram: { enabled: true, api_root: "${o.apiRoot}", auto_create_groups: true }
`,
    `${o.id}.yaml`,
    {},
  );
  const llm = new FakeLlm({ fallback: (req, n) => (req.mustReply ? `${req.agent?.id} here (${o.id} #${n})` : '[PASS]') });
  const app = await createApp({ config, llm, logger: silentLogger });
  await app.start();
  return app;
}
