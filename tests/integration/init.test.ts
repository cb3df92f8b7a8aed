/**
 * `chorus init` against the fake Bot API and the fake model servers, through the real clients
 * (grammY's getMe, the Anthropic and OpenAI SDKs' model lists): the config it writes is one `check`
 * accepts and `start` runs with, the secrets sit in a private `.env`, a refused token writes
 * nothing, and files that exist are never replaced unless asked.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runInit } from '../../src/ops/init.js';
import { startFakeAnthropic } from '../fakes/anthropic/index.js';
import { startFakeOpenAi } from '../fakes/openai/index.js';
import { FakeTelegram } from '../fakes/telegram/FakeTelegram.js';
import { killAll, ROOT, startDaemon } from '../reliability/daemon.js';

const TOKENS = { analyst: '111111:AAA-init-analyst', writer: '222222:BBB-init-writer' };

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
  killAll();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-init-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `chorus init` in-process; `answers` are the lines a person would type. */
async function init(dir: string, argv: string[], answers: string[] = []) {
  const input = new PassThrough();
  input.end(answers.map((a) => `${a}\n`).join(''));
  const out: string[] = [];
  const code = await runInit(argv, { input, write: (...l) => out.push(...l), cwd: dir });
  return { code, out: out.join('\n') };
}

/** The CLI's own `check` of the written file (its .env beside it), as a person would run it. */
function check(configPath: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/main.ts'), 'check', '--config', configPath], { cwd: ROOT, env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('chorus init', { timeout: 180_000 }, () => {
  it('with flags: checks the bots and the model, writes a config that check accepts and start runs', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    tg.addBot({ token: TOKENS.analyst, username: 'init_analyst_bot', firstName: 'Analyst' });
    tg.addBot({ token: TOKENS.writer, username: 'init_writer_bot', firstName: 'Writer', canReadAll: false });
    const model = await startFakeAnthropic({ apiKey: 'sk-ant-init-key', models: ['claude-sonnet-5-5', 'claude-haiku-5-5'] });
    cleanup.push(() => model.close());
    const dir = tempDir();
    const r = await init(dir, [
      '--yes',
      ...['--telegram', `analyst=${TOKENS.analyst}`, '--telegram', `writer=${TOKENS.writer}`, '--telegram-api-root', tg.apiRoot],
      ...['--llm', 'anthropic', '--api-key', 'sk-ant-init-key', '--base-url', model.url, '--port', '0'],
    ]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('✔ telegram analyst: @init_analyst_bot (Analyst); privacy mode off');
    expect(r.out).toMatch(/✔ telegram writer: @init_writer_bot \(Writer\); privacy mode ON: .*\/setprivacy/);
    expect(r.out).toContain('✔ model: the key works; 2 model(s) available');
    // Written outside Chorus's folder: the next command names the launcher and the file.
    expect(r.out).toContain(`Next:\n  node ${join(ROOT, 'bin', 'chorus.js')} start --config ${join(dir, 'config.yaml')}`);

    const config = readFileSync(join(dir, 'config.yaml'), 'utf8');
    const env = readFileSync(join(dir, '.env'), 'utf8');
    // The secrets are in .env only, and only its owner may read it.
    for (const secret of [TOKENS.analyst, TOKENS.writer, 'sk-ant-init-key']) {
      expect(config).not.toContain(secret);
      expect(env).toContain(secret);
    }
    expect(statSync(join(dir, '.env')).mode & 0o077).toBe(0);

    const checked = await check(join(dir, 'config.yaml'));
    expect(checked.code, checked.out).toBe(0);
    expect(checked.out).toContain('telegram: 2 bot(s)');

    // It runs: both bots poll the fake Bot API, and the page's API answers.
    const daemon = await startDaemon(join(dir, 'config.yaml'), { CHORUS_DATA_DIR: join(dir, 'data') });
    let ready: { status: number; body: string } = { status: 0, body: '' };
    for (let i = 0; i < 200 && ready.status !== 200; i++) {
      const res = await fetch(`${daemon.url}/readyz`);
      ready = { status: res.status, body: await res.text() };
      if (ready.status !== 200) await new Promise((w) => setTimeout(w, 100));
    }
    expect(ready.status, ready.body).toBe(200);
    expect(tg.calls.some((c) => c.method === 'getUpdates' && c.bot === 'init_writer_bot')).toBe(true);
  });

  it('asks, checks each answer, asks again when Telegram refuses a token, and lists a local server’s models', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    tg.addBot({ token: TOKENS.analyst, username: 'init_analyst_bot', firstName: 'Analyst' });
    const llm = await startFakeOpenAi({ models: ['llama3.1:8b', 'qwen3:4b'] });
    cleanup.push(() => llm.close());
    const dir = tempDir();
    const answers = [
      'y', // Telegram
      '999:not-a-known-bot', // Analyst: refused …
      TOKENS.analyst, // … then right
      '', // Writer: off Telegram
      '', // Critic: off Telegram
      'n', // Discord
      '2', // a local server
      'htp:/127.0.0.1', // a typo: refused with the reason
      '2',
      llm.url,
      '', // no key
      '2', // qwen3:4b
    ];
    const r = await init(dir, ['--telegram-api-root', tg.apiRoot], answers);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/✘ Telegram refused it \(401: Unauthorized\); try again/);
    expect(r.out).toContain('✘ the address must start with http:// or https://');
    expect(r.out).toMatch(/1\) llama3\.1:8b\n {4}2\) qwen3:4b/);
    const config = readFileSync(join(dir, 'config.yaml'), 'utf8');
    expect(config).toContain('model: "qwen3:4b"');
    expect(config).toContain('TELEGRAM_TOKEN_ANALYST');
    expect(config).not.toContain('TELEGRAM_TOKEN_WRITER');
    const checked = await check(join(dir, 'config.yaml'));
    expect(checked.code, checked.out).toBe(0);
  });

  it('a refused token or key writes nothing; files that exist are kept unless --force', async () => {
    const tg = await FakeTelegram.start();
    cleanup.push(() => tg.close());
    const dir = tempDir();
    const refused = await init(dir, ['--yes', '--telegram', `analyst=${TOKENS.analyst}`, '--telegram-api-root', tg.apiRoot, '--llm', 'scripted']);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain('✘ --telegram analyst: Telegram refused it');
    expect(existsSync(join(dir, 'config.yaml'))).toBe(false);
    expect(existsSync(join(dir, '.env'))).toBe(false);

    writeFileSync(join(dir, 'config.yaml'), '# mine\n');
    const kept = await init(dir, ['--yes', '--llm', 'scripted']);
    expect(kept.code).toBe(2);
    expect(kept.out).toMatch(/already exist.*--force/);
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).toBe('# mine\n');
    const declined = await init(dir, ['--llm', 'scripted'], ['n']);
    expect(declined.code).toBe(2);
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).toBe('# mine\n');
    const forced = await init(dir, ['--yes', '--force', '--llm', 'scripted']);
    expect(forced.code).toBe(0);
    expect(readFileSync(join(dir, 'config.yaml'), 'utf8')).toContain('provider: scripted');
  });
});
