/**
 * Redaction: any fragment of a secret of 8 or more characters — a prefix a
 * provider echoes back ("sk-PROBE-SECR***"), a middle, a tail, its JSON or URL form — is removed
 * from error messages, from every log line written through the app's pino logger, and never
 * reaches a chat notice.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { redact, toLlmError } from '../../src/llm/errors.js';
import { addLogSecrets, createLogger } from '../../src/logger.js';
import { MIN_FRAGMENT, Redactor, configSecrets } from '../../src/redact.js';
import { startFakeOpenAi, type FakeOpenAiServer } from '../fakes/openai/index.js';
import { MemoryStore } from '../helpers/memory-store.js';

const KEY = 'sk-PROBE-SECRET-KEY-0123456789abcdef';

/** Every window of MIN_FRAGMENT characters of `secret` that survives in `text`. */
function leaks(text: string, secret: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + MIN_FRAGMENT <= secret.length; i++) {
    const w = secret.slice(i, i + MIN_FRAGMENT);
    if (text.includes(w)) out.push(w);
  }
  return out;
}

describe('redact', () => {
  it('removes prefixes, middles, tails and masked echoes of a secret', () => {
    const cases = [
      `401 invalid x-api-key: ${KEY.slice(0, 13)}***`, // the probe's "sk-PROBE-SECR***"
      `key ${KEY.slice(0, 8)}... rejected`, // the shortest fragment that counts
      `ends with ...${KEY.slice(-10)}`,
      `middle ${KEY.slice(9, 22)} seen`,
      `full ${KEY} and again ${KEY}`,
      `masked ${KEY.slice(0, 12)}${'*'.repeat(10)}${KEY.slice(-8)}`,
      `glued${KEY.slice(3, 20)}text`,
    ];
    for (const text of cases) {
      const out = redact(text, [KEY]);
      expect(leaks(out, KEY), text).toEqual([]);
      expect(out, text).toContain('***');
    }
    expect(redact(`401 invalid x-api-key: ${KEY.slice(0, 13)}***`, [KEY])).toBe('401 invalid x-api-key: ******');
  });

  it('keeps text that shares fewer than 8 characters with a secret, and text without secrets, unchanged', () => {
    expect(redact('sk-PROB is short', [KEY])).toBe('sk-PROB is short');
    expect(redact('nothing to see here', [KEY, null, undefined, ''])).toBe('nothing to see here');
    expect(redact('', [KEY])).toBe('');
  });

  it('covers the JSON and URL forms of a secret, several secrets at once, and short whole secrets', () => {
    const odd = 'tok/with+slash="quote"\\x';
    expect(leaks(redact(JSON.stringify({ msg: `echo ${odd.slice(2, 19)}` }), [odd]), JSON.stringify(odd).slice(1, -1))).toEqual([]);
    const inUrl = `GET /bot${encodeURIComponent(odd)}/getMe`;
    expect(leaks(redact(inUrl, [odd]), encodeURIComponent(odd))).toEqual([]);
    const two = redact(`a=${KEY.slice(5, 15)} b=web-SECRET-token-5151`, [KEY, 'web-SECRET-token-5151']);
    expect(leaks(two, KEY)).toEqual([]);
    expect(two).not.toContain('SECRET-t');
    expect(redact('pin 12345 ok', ['12345'])).toBe('pin *** ok');
  });

  it("keeps a Telegram bot's public numeric id but removes the token's secret part", () => {
    const token = '7123456789:AAH-telegram-SECRET-part-x1';
    const out = redact(`bot 7123456789 failed: ${token.slice(0, 24)}…`, [token]);
    expect(out).toContain('bot 7123456789 failed');
    expect(leaks(out, token.slice(11))).toEqual([]);
  });

  it('leaves no 8-character window of a secret in any text that embeds fragments of it (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 8, maxLength: 40 }).filter((s) => s.trim().length >= 8),
        fc.array(fc.tuple(fc.string({ maxLength: 12 }), fc.nat(), fc.nat()), { maxLength: 5 }),
        (secret, parts) => {
          const s = secret.trim();
          const text = parts.map(([noise, a, b]) => {
            const start = a % s.length;
            const len = MIN_FRAGMENT + (b % Math.max(1, s.length - MIN_FRAGMENT + 1));
            return noise + s.slice(start, start + len);
          }).join('');
          expect(leaks(new Redactor([s]).redact(text), s)).toEqual([]);
        },
      ),
      { seed: 9, numRuns: Number(process.env.FC_RUNS ?? 500) },
    );
  });

  it('stays linear in the text', () => {
    const r = new Redactor([KEY]);
    const time = (s: string) => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        r.redact(s);
        best = Math.min(best, performance.now() - t0);
      }
      return best;
    };
    const unit = KEY.slice(0, 9) + 'x';
    // Best of a few tries: quadratic growth gives 16 every time, a pause of a busy machine only once.
    let ratio = Infinity;
    for (let i = 0; i < 5 && ratio >= 8; i++) ratio = Math.min(ratio, time(unit.repeat(40_000)) / Math.max(time(unit.repeat(10_000)), 0.05));
    expect(ratio).toBeLessThan(8);
  });

  it('a provider error quoting part of the key becomes an LlmError without it', () => {
    const err = Object.assign(new Error(`401 Incorrect API key provided: ${KEY.slice(0, 13)}***. You can find your API key at ...`), { status: 401 });
    const e = toLlmError(err, { provider: 'OpenAI-compatible endpoint', secrets: [KEY] });
    expect(e.code).toBe('auth');
    expect(leaks(e.message, KEY)).toEqual([]);
  });
});

/** A pino destination that keeps every line. */
function capture(): { stream: Writable & { write: (s: string) => boolean }; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  return { stream: stream as Writable & { write: (s: string) => boolean }, text: () => chunks.join('') };
}

describe('the pino logger the app uses', () => {
  it('removes fragments of secrets from messages, fields and nested errors, and keeps lines valid JSON', () => {
    const out = capture();
    const logger = createLogger('debug', out.stream, [KEY]);
    addLogSecrets(logger, ['web-SECRET-token-5151']);
    const child = logger.child({ part: 'llm' });
    child.error({ err: `Anthropic: 401 invalid x-api-key ${KEY.slice(0, 13)}***` }, 'agent could not reply');
    child.warn({ detail: { body: { message: `masked ${KEY.slice(4, 20)}` } } }, `echo ${KEY.slice(-12)}`);
    logger.info({ url: 'http://x/?token=web-SECRET-token-5151' }, 'request web-SECRET-tok');
    const text = out.text();
    expect(leaks(text, KEY)).toEqual([]);
    expect(leaks(text, 'web-SECRET-token-5151')).toEqual([]);
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(() => JSON.parse(l)).not.toThrow();
    expect(JSON.parse(lines[0]!).msg).toBe('agent could not reply');
  });
});

describe('end to end: a provider that echoes part of the key', () => {
  let fake: FakeOpenAiServer | undefined;
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    await fake?.close();
    app = undefined;
    fake = undefined;
  });

  it('neither the log nor the chat notice carries any fragment of it', async () => {
    // The endpoint refuses the key and quotes its first 13 characters, as the probe saw.
    fake = await startFakeOpenAi({ reply: () => ({ status: 401, message: `Incorrect API key provided: ${KEY.slice(0, 13)}***`, type: 'invalid_request_error', code: 'invalid_api_key' }) });
    const { config } = parseConfigText(
      `log_level: debug
llm: { provider: openai, api_key: "${KEY}", base_url: "${fake.url}", model: m, max_retries: 0, timeout_seconds: 5 }
agents:
  - { id: analyst, name: Analyst, persona: "You are Analyst." }
channels: { web: { port: 0, auth_token: "web-SECRET-token-5151" } }
groups:
  - { channel: web, chat_id: lobby, title: Lobby, participants: [analyst] }
`,
      'redact-e2e',
    );
    expect(configSecrets(config)).toEqual([KEY, 'web-SECRET-token-5151']);
    const out = capture();
    // The app's logger as main.ts makes it (no secrets yet): createApp teaches it the config's.
    const logger = createLogger('debug', out.stream);
    app = await createApp({ config, logger, store: new MemoryStore() });
    await app.start();
    const res = await fetch(`${app.webUrl}/api/groups/lobby/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer web-SECRET-token-5151', 'content-type': 'application/json' },
      body: JSON.stringify({ text: '@analyst hi', author_name: 'Maya' }),
    });
    expect(res.status).toBe(202);
    await app.router.idle();
    const transcript = await app.gateway.messages('lobby', { limit: 50 });
    const notice = transcript.find((e) => e.decision?.type === 'error' || /could not reply/.test(e.text));
    expect(notice, JSON.stringify(transcript)).toBeDefined();
    // A line that quotes the key outright, as a careless adapter might, is scrubbed too.
    logger.child({ channel: 'x' }).warn({ response: `key ${KEY.slice(2, 30)} refused` }, 'platform said no');
    await app.stop();
    app = undefined;
    const log = out.text();
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(log).toContain('platform said no');
    expect(log).toContain('***');
    expect(leaks(log, KEY)).toEqual([]);
    expect(leaks(log, 'web-SECRET-token-5151')).toEqual([]);
    for (const e of transcript) expect(leaks(e.text, KEY), e.text).toEqual([]);
  });
});
