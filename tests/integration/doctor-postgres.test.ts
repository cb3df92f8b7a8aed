/**
 * `chorus doctor` with `storage.kind: postgres`: it connects, reads the schema version,
 * tries a write inside a rolled-back transaction, and says what is wrong in one line with its fix —
 * an empty database, a read-only one, one of a newer Chorus, one it cannot reach — without
 * printing the password or changing anything.
 */
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { parseConfigText, type LoadedConfig } from '../../src/config/load.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { silentLogger } from '../helpers/logger.js';
import { testDatabase } from '../helpers/postgres.js';

const db = await testDatabase('doctor');
afterAll(async () => {
  await db?.drop().catch(() => undefined);
});

const PASSWORD = 'doctor-pw-5e1f9a3c';

function load(url: string): LoadedConfig {
  const yaml = `
storage: { kind: postgres, url: "${url}" }
llm: { provider: scripted }
agents:
  - { id: analyst, name: Analyst, persona: "numbers" }
channels: { web: { port: 0 } }
`;
  const r = parseConfigText(yaml, 'doctor-pg.yaml', {});
  return { config: r.config, source: 'doctor-pg.yaml', usedDefaults: false, missingEnv: r.missing, overrides: r.overrides, envFiles: [] };
}

async function doctor(url: string): Promise<string[]> {
  const lines: string[] = [];
  await runDoctor(load(url), (l) => lines.push(l));
  return lines;
}

describe.skipIf(!db)('chorus doctor: the PostgreSQL store', () => {
  it('says what it finds: no tables yet, then the schema and groups; a read-only or newer database fails; nothing is written', async () => {
    const u = new URL(db!.url);
    u.password = PASSWORD;
    const url = u.toString();
    const subject = `postgres ${u.hostname}:${u.port}${u.pathname}`;

    let lines = await doctor(url);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^✔ ${subject}: PostgreSQL \\d+.*no Chorus tables yet`)));
    expect(lines.some((l) => l.includes('data_dir'))).toBe(false);

    const store = new PostgresStore({ url: db!.url, logger: silentLogger });
    await store.open();
    await store.append('g', { v: 2, n: 1, ts: 1 });
    await store.close();
    lines = await doctor(url);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^✔ ${subject}: PostgreSQL .*schema version \\d+, 1 group\\(s\\)$`)));
    expect(lines.filter((l) => l.startsWith(`✘ ${subject}`))).toEqual([]);

    const admin = new pg.Client({ connectionString: db!.url });
    await admin.connect();
    try {
      // The write probe was rolled back.
      expect((await admin.query('SELECT * FROM chorus_probe')).rows).toEqual([]);
      const name = u.pathname.slice(1);
      await admin.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`);
      lines = await doctor(url);
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^✘ ${subject}: does not take writes \\(.*read-only transaction.*— fix: `)));
      await admin.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = off`);

      await admin.query(`INSERT INTO chorus_schema_migrations (version, name) VALUES (99, 'future')`);
      lines = await doctor(url);
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^✘ ${subject}: the database was written by a newer Chorus \\(schema version 99;`)));
      await admin.query('DELETE FROM chorus_schema_migrations WHERE version = 99');
    } finally {
      await admin.end();
    }

    const down = new URL(url);
    down.port = '1';
    const { code, findings } = await runDoctor(load(down.toString()), () => undefined);
    expect(code).toBe(1);
    expect(findings).toContainEqual(expect.objectContaining({ level: 'fail', subject: `postgres ${u.hostname}:1${u.pathname}`, text: expect.stringMatching(/^cannot connect/) }));
    expect(JSON.stringify(lines) + JSON.stringify(findings)).not.toContain(PASSWORD);
  });
});
