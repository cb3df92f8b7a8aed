/**
 * Environment values in the config. `${VAR}` is replaced after the YAML is
 * parsed and only in string values, so a value is never read as YAML; `CHORUS_*` overrides;
 * `.env` files; relative paths from the config file's folder.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadRunConfig, parseConfigText } from '../../src/config/load.js';

const AGENT = 'agents:\n  - { id: analyst, name: Analyst, persona: "numbers" }\n';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'chorus-config-env-'));
  dirs.push(d);
  return d;
}

function problems(yaml: string, env: Record<string, string>): string[] {
  try {
    parseConfigText(yaml, 'test.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('${VAR} is replaced after parsing, in string values only', () => {
  it('a value with " #" keeps its tail (it is not a YAML comment)', () => {
    const { config } = parseConfigText(AGENT + 'llm: { api_key: ${MY_KEY} }\n', 't', { MY_KEY: 'abc #tail' });
    expect(config.llm.api_key).toBe('abc #tail');
  });

  it('quotes, colons and braces in a value stay text', () => {
    const value = `it's "quoted": {a: 1}, [b] & *c`;
    const { config } = parseConfigText(AGENT + 'llm:\n  api_key: "${MY_KEY}"\n  model: ${MY_KEY}\n', 't', { MY_KEY: value });
    expect(config.llm.api_key).toBe(value);
    expect(config.llm.model).toBe(value);
  });

  it('digits in a string field stay the string "123"', () => {
    const { config } = parseConfigText(AGENT + 'llm: { api_key: ${MY_KEY}, model: "${MY_KEY}" }\n', 't', { MY_KEY: '123' });
    expect(config.llm.api_key).toBe('123');
    expect(config.llm.model).toBe('123');
  });

  it('a number field takes a reference: the text is converted where the schema wants a number', () => {
    const { config } = parseConfigText(AGENT + 'channels: { web: { port: ${PORT} } }\nllm: { timeout_seconds: "${T}" }\n', 't', { PORT: '9123', T: '2.5' });
    expect(config.channels.web.port).toBe(9123);
    expect(config.llm.timeout_seconds).toBe(2.5);
  });

  it('true/false fields take a reference too', () => {
    const { config } = parseConfigText(AGENT + 'group_defaults: { sticky: ${STICKY} }\n', 't', { STICKY: 'true' });
    expect(config.group_defaults.sticky).toBe(true);
  });

  it('a reference that is not a number where one is needed is a readable error', () => {
    expect(problems(AGENT + 'channels: { web: { port: ${PORT} } }\n', { PORT: 'eighty' })).toEqual(['channels.web.port: expected number, got "eighty"']);
  });

  it('a value with newlines cannot add keys', () => {
    const evil = 'x\ndata_dir: /evil\nlog_level: debug\nchannels: { web: { host: 0.0.0.0 } }';
    const { config } = parseConfigText(AGENT + 'llm:\n  api_key: ${MY_KEY}\n', 't', { MY_KEY: evil });
    expect(config.llm.api_key).toBe(evil);
    expect(config.data_dir).toBe('./data');
    expect(config.log_level).toBe('info');
    expect(config.channels.web.host).toBe('127.0.0.1');
  });

  it('a value in a flow mapping may hold YAML flow characters', () => {
    const yaml = 'agents:\n  - { id: a, name: A, persona: ${PERSONA}, telegram: { token: ${TG} } }\nchannels: { telegram: { enabled: true } }\n';
    const { config } = parseConfigText(yaml, 't', { PERSONA: 'terse, {curt}] & #blunt', TG: '123456:ABC' });
    expect(config.agents[0]!.persona).toBe('terse, {curt}] & #blunt');
    expect(config.agents[0]!.telegram!.token).toBe('123456:ABC');
  });

  it('defaults, several references in one value, and $${ as a literal', () => {
    const { config } = parseConfigText(AGENT + 'llm: { model: "${A:-m}-${B}", api_key: "$${NOT_A_VAR}" }\n', 't', { B: 'x' });
    expect(config.llm.model).toBe('m-x');
    expect(config.llm.api_key).toBe('${NOT_A_VAR}');
  });

  it('references in comments and in keys are left alone and never reported missing', () => {
    const r = parseConfigText(`# set \${DOC_ONLY}\n${AGENT}llm: { model: x }  # or \${ALSO_DOC}\n`, 't', {});
    expect(r.missing).toEqual([]);
    expect(problems(AGENT + '${KEY}: 1\n', { KEY: 'data_dir' })).toEqual(['${KEY}: unknown key']);
  });

  it('an unset variable without default is named next to the problem it causes', () => {
    expect(problems(AGENT + 'data_dir: ${NOPE}\n', {})).toEqual(['data_dir: must not be empty', '(environment): not set: NOPE']);
  });

  it('YAML errors after a reference give the column in the file, not in the rewritten text', () => {
    // The stray `}` is reported where it is in the file: the same column as with a literal of the
    // reference's length in its place.
    const withRef = problems('llm: { model: ${SOME_LONG_VARIABLE_NAME} } }\n', {});
    const literal = problems(`llm: { model: ${'x'.repeat('${SOME_LONG_VARIABLE_NAME}'.length)} } }\n`, {});
    expect(withRef).toHaveLength(1);
    expect(withRef[0]).toMatch(/^line 1, column \d+: /);
    expect(withRef).toEqual(literal);
  });
});

describe('CHORUS_* overrides', () => {
  it('port, host, token, data_dir and log level win over the file', () => {
    const { config, overrides } = parseConfigText(AGENT + 'log_level: warn\nchannels: { web: { port: 1, host: 127.0.0.1 } }\n', 't', {
      CHORUS_PORT: '8999',
      CHORUS_HOST: '0.0.0.0',
      CHORUS_WEB_TOKEN: 'tok #1',
      CHORUS_DATA_DIR: '/srv/chorus',
      CHORUS_LOG_LEVEL: 'debug',
    });
    expect(config.channels.web).toMatchObject({ port: 8999, host: '0.0.0.0', auth_token: 'tok #1' });
    expect(config.data_dir).toBe('/srv/chorus');
    expect(config.log_level).toBe('debug');
    expect(overrides.sort()).toEqual(['CHORUS_DATA_DIR', 'CHORUS_HOST', 'CHORUS_LOG_LEVEL', 'CHORUS_PORT', 'CHORUS_WEB_TOKEN']);
  });

  it('an empty variable does not override', () => {
    const { config, overrides } = parseConfigText(AGENT + 'channels: { web: { port: 1234 } }\n', 't', { CHORUS_PORT: '' });
    expect(config.channels.web.port).toBe(1234);
    expect(overrides).toEqual([]);
  });

  it('a bad override names the variable; a public host without a token says which variable to set', () => {
    expect(problems(AGENT, { CHORUS_PORT: 'http' })).toEqual(['channels.web.port: expected number, got "http" (value from CHORUS_PORT)']);
    expect(problems(AGENT, { CHORUS_HOST: '0.0.0.0' })).toEqual([
      'channels.web.host: refusing to listen on 0.0.0.0 without channels.web.auth_token; set a token or use 127.0.0.1 (value from CHORUS_HOST; set CHORUS_WEB_TOKEN to a long random token)',
    ]);
  });
});

describe('relative paths and .env files', () => {
  it('data_dir in a file is relative to the file; the built-in demo keeps ./data in the working directory', () => {
    const dir = tmp();
    mkdirSync(join(dir, 'etc'));
    writeFileSync(join(dir, 'etc', 'chorus.yaml'), AGENT + 'data_dir: ./state\n');
    expect(loadConfig(join(dir, 'etc', 'chorus.yaml'), {}, { cwd: '/somewhere/else' }).config.data_dir).toBe(join(dir, 'etc', 'state'));
    writeFileSync(join(dir, 'abs.yaml'), AGENT + 'data_dir: /var/lib/chorus\n');
    expect(loadConfig(join(dir, 'abs.yaml'), {}, { cwd: dir }).config.data_dir).toBe('/var/lib/chorus');
    expect(loadConfig(null, {}, { cwd: dir }).config.data_dir).toBe(join(dir, 'data'));
    // A path typed in the shell is relative to the shell's directory.
    expect(loadConfig(join(dir, 'etc', 'chorus.yaml'), { CHORUS_DATA_DIR: 'here' }, { cwd: '/run' }).config.data_dir).toBe('/run/here');
  });

  it('.env next to the config, then in the working directory; the real environment wins', () => {
    const cwd = tmp();
    const confDir = join(cwd, 'conf');
    mkdirSync(confDir);
    writeFileSync(join(confDir, 'chorus.yaml'), AGENT + 'llm: { api_key: ${MY_KEY}, model: ${MODEL}, summary_model: ${SUMMARY} }\n');
    writeFileSync(join(confDir, '.env'), "MY_KEY='abc #tail'\nMODEL=from-config-dir\n");
    writeFileSync(join(cwd, '.env'), 'MODEL=from-cwd\nSUMMARY=cwd-summary\nCHORUS_CONFIG=conf/chorus.yaml\n');
    const loaded = loadRunConfig({ env: { SUMMARY: 'real-env' }, cwd });
    expect(loaded.source).toBe(join(confDir, 'chorus.yaml'));
    expect(loaded.config.llm).toMatchObject({ api_key: 'abc #tail', model: 'from-config-dir', summary_model: 'real-env' });
    expect(loaded.envFiles).toEqual([join(confDir, '.env'), join(cwd, '.env')]);
  });

  it('no .env is fine; the demo config reads one from the working directory', () => {
    const cwd = tmp();
    expect(loadRunConfig({ env: {}, cwd }).envFiles).toEqual([]);
    writeFileSync(join(cwd, '.env'), 'CHORUS_PORT=8111\n');
    const loaded = loadRunConfig({ env: {}, cwd });
    expect(loaded.usedDefaults).toBe(true);
    expect(loaded.config.channels.web.port).toBe(8111);
  });
});
