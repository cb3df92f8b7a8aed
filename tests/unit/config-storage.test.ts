/** `storage.kind: postgres` in the config: the URL is required, checked, read from the environment, and kept out of logs. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { configSecrets } from '../../src/redact.js';

const AGENT = `agents:\n  - { id: analyst, name: Analyst, persona: "numbers" }\n`;

function problems(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfigText(yaml, 'test.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('config: storage', () => {
  it('defaults to files and needs nothing; an empty url (unset ${DATABASE_URL:-}) counts as none', () => {
    const { config } = parseConfigText(`${AGENT}storage:\n  url: \${DATABASE_URL:-}\n`, 'test.yaml', {});
    expect(config.storage).toEqual({ kind: 'files', fsync: 'always', url: null });
  });

  it('postgres reads its url from the environment', () => {
    const { config } = parseConfigText(`${AGENT}storage:\n  kind: postgres\n  url: \${DATABASE_URL}\n`, 'test.yaml', { DATABASE_URL: 'postgres://chorus:s3cret-pw-value@db:5432/chorus' });
    expect(config.storage).toMatchObject({ kind: 'postgres', url: 'postgres://chorus:s3cret-pw-value@db:5432/chorus' });
    // The password (only) is a secret for the log redactor.
    expect(configSecrets(config)).toContain('s3cret-pw-value');
  });

  it('names storage.url when postgres has none, or one that is not a postgres URL', () => {
    expect(problems(`${AGENT}storage: { kind: postgres }\n`)).toEqual(['storage.url: required when storage.kind is "postgres" (e.g. url: ${DATABASE_URL})']);
    expect(problems(`${AGENT}storage: { kind: postgres, url: "mysql://x@y/z" }\n`)).toEqual([expect.stringMatching(/^storage\.url: must be a postgres:\/\/ or postgresql:\/\/ connection string/)]);
    expect(problems(`${AGENT}storage: { kind: mongo }\n`)).toEqual([expect.stringMatching(/^storage\.kind: .*files.*postgres/)]);
  });
});
