/**
 * Config loading under random mutations of config.example.yaml (fast-check): the result is a
 * valid config or a ConfigError whose problems are readable lines naming a key path — never
 * another exception, never "[object Object]" or a stack trace.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument, isMap, isSeq, type Document } from 'yaml';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { ROOT } from '../reliability/daemon.js';

const EXAMPLE = readFileSync(join(ROOT, 'config.example.yaml'), 'utf8');
const RUNS = Number(process.env.FC_RUNS ?? 250);
const ENV = { ANTHROPIC_API_KEY: '', CHORUS_WEB_TOKEN: '' };

/** Every path (list of keys/indices) to a node of the document. */
function paths(doc: Document): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [];
  const walk = (node: unknown, at: Array<string | number>) => {
    out.push(at);
    if (isMap(node)) for (const item of node.items) walk(item.value, [...at, String((item.key as { value?: unknown })?.value ?? item.key)]);
    else if (isSeq(node)) node.items.forEach((item, i) => walk(item, [...at, i]));
  };
  walk(doc.contents, []);
  return out.filter((p) => p.length > 0);
}

const weirdValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -1e6, max: 1e6 }),
  fc.double({ noNaN: false }),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', '${UNSET_VAR}', '${X:-fallback}', '../../etc', 'https://example.invalid', '0.0.0.0', '#zzz', 'all'),
  fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxKeys: 3 }),
);

type Mutation = { kind: 'set'; pick: number; value: unknown } | { kind: 'delete'; pick: number } | { kind: 'rename'; pick: number; name: string };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), pick: fc.nat(), value: weirdValue }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('rename' as const), pick: fc.nat(), name: fc.string({ minLength: 1, maxLength: 10 }) }),
);

/** Load and classify; anything but a config or a readable ConfigError fails the property. */
function loadOrReadableError(text: string): 'ok' | 'error' {
  try {
    parseConfigText(text, 'fuzz.yaml', ENV);
    return 'ok';
  } catch (err) {
    if (!(err instanceof ConfigError)) throw new Error(`not a ConfigError: ${String(err)}\n--- config ---\n${text}`);
    expect(err.problems.length).toBeGreaterThan(0);
    for (const p of err.problems) {
      expect(typeof p.path).toBe('string');
      expect(typeof p.message).toBe('string');
      expect(p.message.length).toBeGreaterThan(0);
      expect(`${p.path}: ${p.message}`).not.toMatch(/\[object Object\]|\n\s+at |undefined:/);
    }
    return 'error';
  }
}

describe('config loading (fuzz)', () => {
  it('the example itself loads', () => {
    expect(loadOrReadableError(EXAMPLE)).toBe('ok');
  });

  it('structural mutations give a config or a readable ConfigError', () => {
    const seen = { ok: 0, error: 0 };
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (mutations) => {
        const doc = parseDocument(EXAMPLE);
        for (const m of mutations) {
          const all = paths(doc);
          const path = all[m.pick % all.length]!;
          if (m.kind === 'set') doc.setIn(path, m.value);
          else if (m.kind === 'delete') doc.deleteIn(path);
          else if (typeof path.at(-1) === 'string') {
            const value = doc.getIn(path);
            doc.deleteIn(path);
            doc.setIn([...path.slice(0, -1), m.name], value);
          }
        }
        seen[loadOrReadableError(doc.toString())]++;
      }),
      { seed: 501, numRuns: RUNS },
    );
    expect(seen.error).toBeGreaterThan(0);
  });

  it('text-level damage gives a config or a readable ConfigError', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat({ max: 40 }), fc.string({ unit: 'grapheme', maxLength: 12 }), (at, cut, insert) => {
        const i = at % EXAMPLE.length;
        loadOrReadableError(EXAMPLE.slice(0, i) + insert + EXAMPLE.slice(i + cut));
      }),
      { seed: 502, numRuns: RUNS },
    );
  });
});
