/**
 * The built-in demo's first visit: its empty Lobby opens on three lines by its agents, recorded
 * once as their own messages; a restart on the same data folder adds nothing. Someone's own
 * config, or the built-in one with a model to answer, begins empty.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { ScriptedProvider } from '../../src/llm/ScriptedProvider.js';
import { silentLogger } from '../helpers/logger.js';

const dirs: string[] = [];
const apps: App[] = [];

afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function demoConfig(dir: string) {
  const env = { CHORUS_DATA_DIR: join(dir, 'data'), CHORUS_PORT: '0', CHORUS_LOG_LEVEL: 'silent' };
  const { config } = loadConfig(null, env, { cwd: dir });
  // The notes server is not what this is about: without it no child process starts.
  config.tools = {};
  return config;
}

async function started(dir: string, opts: { builtInDemo: boolean; withModel?: boolean }): Promise<App> {
  const model = opts.withModel ? { llm: new ScriptedProvider() } : {};
  const { builtInDemo } = opts;
  const app = await createApp({ config: demoConfig(dir), logger: silentLogger, builtInDemo, ...model });
  apps.push(app);
  await app.start();
  return app;
}

async function stopped(app: App): Promise<void> {
  apps.splice(apps.indexOf(app), 1);
  await app.stop();
}

const lobby = async (app: App) => {
  const entries = await app.gateway.messages('lobby', { limit: 50 });
  return entries.map((e) => ({ id: e.id, kind: e.kind, agentId: e.agentId, text: e.text }));
};

it("a fresh built-in demo room opens on its agents' welcome, once: a restart adds nothing", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-demo-welcome-'));
  dirs.push(dir);
  const first = await started(dir, { builtInDemo: true });
  const opening = await lobby(first);
  expect(opening.map((e) => [e.kind, e.agentId])).toEqual([
    ['agent', 'analyst'],
    ['agent', 'writer'],
    ['agent', 'critic'],
  ]);
  expect(opening[0]!.text).toContain("Chorus's built-in demo");
  expect(opening[1]!.text).toContain('@writer note that');
  await stopped(first);
  const again = await started(dir, { builtInDemo: true });
  expect(await lobby(again)).toEqual(opening);
});

it('begins empty without the built-in demo, or when a model answers', async () => {
  for (const opts of [{ builtInDemo: false }, { builtInDemo: true, withModel: true }]) {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-demo-welcome-'));
    dirs.push(dir);
    const app = await started(dir, opts);
    expect(await lobby(app), JSON.stringify(opts)).toEqual([]);
  }
});
