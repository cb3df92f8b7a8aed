/**
 * `chorus check` and `chorus start` as a person meets them: every mistake of a file in one run,
 * each on its own line naming its key, and no way to put canned replies into a real chat by
 * forgetting the model key.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpUrlProblem } from '../../src/config/urls.js';
import { parseConfigText } from '../../src/config/load.js';

const root = resolve(import.meta.dirname, '../..');
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-check-all-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI on `yaml` with no model key in the environment. */
function chorus(command: 'check' | 'start', yaml: string) {
  const file = join(dir, 'config.yaml');
  writeFileSync(file, yaml);
  const env: NodeJS.ProcessEnv = { ...process.env, CHORUS_DATA_DIR: join(dir, 'data') };
  delete env.ANTHROPIC_API_KEY;
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/main.ts'), command, '--config', file], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const FIVE_MISTAKES = `
llm:
  provider: openai
  base_url: htp:/127.0.0.1:11434/v1
  modle: llama3
agents:
  - { id: analyst, name: Analyst, persona: numbers, telegram: { token: "" } }
  - { id: writer, name: Writer, persona: words, telegram: { token: "123:abc" } }
channels:
  web: { port: 99999 }
  telegram: { enabled: true }
groups:
  - { channel: web, chat_id: lobby, participants: [analyst, critic] }
`;

// Each case starts the CLI under tsx (several seconds each on a busy machine).
describe('chorus check', { timeout: 180_000 }, () => {
  it('prints all five mistakes of a file in one run, each naming its key, and exits 2', () => {
    const r = chorus('check', FIVE_MISTAKES);
    expect(r.code).toBe(2);
    const lines = r.err.split('\n').filter((l) => l.startsWith('  '));
    expect(lines).toEqual(
      expect.arrayContaining([
        '  llm.base_url: must start with http:// or https:// (got "htp:/127.0.0.1:11434/v1")',
        '  llm.modle: unknown key (did you mean "model"?)',
        '  channels.web.port: must be at most 65535',
        '  groups[0].participants[1]: unknown agent "critic" (known: analyst, writer)',
        '  agents[0].telegram.token: required when channels.telegram.enabled',
      ]),
    );
    expect(lines).toHaveLength(5);
    expect(r.out).not.toContain('is valid');
  });

  it('refuses a chat platform with no model key, in check and in start, unless the canned replies are asked for', () => {
    const yaml = 'agents:\n  - { id: analyst, name: Analyst, persona: p, telegram: { token: "123:abc" } }\nchannels:\n  telegram: { enabled: true }\n';
    for (const command of ['check', 'start'] as const) {
      const r = chorus(command, yaml);
      expect(r.code, `${command}: ${r.out}${r.err}`).toBe(2);
      expect(r.err).toMatch(/^ {2}llm\.api_key: required when channels\.telegram\.enabled: without a model key the agents would post canned demo replies/m);
    }
    const asked = chorus('check', `${yaml}llm: { provider: scripted }\n`);
    expect(asked.code).toBe(0);
    expect(asked.out).toContain('LLM: scripted');
    // The built-in demo (the web page only) still starts with no key at all.
    const demo = chorus('check', 'agents:\n  - { id: analyst, name: Analyst, persona: p }\n');
    expect(demo.code).toBe(0);
  });

  it('a config parsed for a test (not for a run) keeps the scripted fallback', () => {
    const yaml = 'agents:\n  - { id: a, name: A, persona: p, telegram: { token: "1:a" } }\nchannels: { telegram: { enabled: true } }\n';
    expect(parseConfigText(yaml, 'test', {}).config.channels.telegram.enabled).toBe(true);
  });
});

describe('web addresses', () => {
  it.each([
    ['htp:/127.0.0.1:11434/v1', /must start with http:\/\/ or https:\/\//],
    ['127.0.0.1:11434/v1', /must start with http:\/\/ or https:\/\//],
    ['ftp://example.com', /must start with http:\/\/ or https:\/\//],
    ['http:/127.0.0.1:11434', /must be http:\/\/host/],
    ['http://127.0.0.1:99999/v1', /not a valid address/],
    ['http://', /must be http:\/\/host/],
  ])('%s is refused with the reason', (text, reason) => {
    expect(httpUrlProblem(text)).toMatch(reason);
  });

  it.each(['http://127.0.0.1:11434/v1', 'https://api.anthropic.com', 'http://[::1]:8080', 'HTTPS://Example.com/x'])('%s is fine', (text) => {
    expect(httpUrlProblem(text)).toBeNull();
  });
});
