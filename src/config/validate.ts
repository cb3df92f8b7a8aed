/**
 * Every mistake of a config in one run. The schema check stops short of the rules across keys
 * (rules.ts) when any value is wrong, so a file with a misspelt key and a missing bot token used
 * to show the first, then the second only once the first was fixed. Here the values the schema
 * refused are set aside (an unknown key dropped, a malformed optional value left to its default)
 * and the rest is checked again, so the rules see everything that was written correctly.
 */
import type { z } from 'zod';
import { formatIssues } from './issues.js';
import { refineConfig, type ConfigProblem } from './rules.js';
import { configSchema, type ChorusConfig } from './schema.js';

/** What running for real asks of a config beyond its shape (`check` and `start`, not a test's config). */
export interface LiveRules {
  /** A chat platform may not get the canned replies unless `llm.provider: scripted` says so. */
  requireModel?: boolean;
}

export type Validated = { ok: true; config: ChorusConfig } | { ok: false; problems: ConfigProblem[] };

/** How many times values are set aside before giving up on reaching the rules. */
const ROUNDS = 3;

export function validateConfig(input: unknown, live: LiveRules = {}): Validated {
  const problems: ConfigProblem[] = [];
  let current = input;
  for (let round = 0; round <= ROUNDS; round++) {
    const parsed = configSchema.safeParse(current, { reportInput: true });
    if (parsed.success) {
      const rules = [...refineConfig(parsed.data), ...liveProblems(parsed.data, live)];
      problems.push(...rules.filter((p) => !problems.some((q) => related(p.path, q.path))));
      return problems.length === 0 ? { ok: true, config: parsed.data } : { ok: false, problems };
    }
    // A value set aside can make its neighbour's rule speak again (an either-or of two keys): the
    // same message is the same mistake.
    const fresh = formatIssues(parsed.error.issues, [], configSchema).filter(
      (p) => !problems.some((q) => related(p.path, q.path) || q.message === p.message),
    );
    problems.push(...fresh);
    const next = structuredClone(current);
    // Nothing more could be set aside (a required value is missing, an item of a list is wrong):
    // the rules would only guess, so what was found is the answer.
    if (!setAside(next, parsed.error.issues)) break;
    current = next;
  }
  return { ok: false, problems };
}

/**
 * A channel that reaches real people with no model behind it would post canned demo lines into a
 * real chat. The built-in demo (web only) and a config that asks for them keep them.
 */
function liveProblems(cfg: ChorusConfig, live: LiveRules): ConfigProblem[] {
  if (!live.requireModel || cfg.llm.provider !== 'anthropic' || cfg.llm.api_key) return [];
  const channels = (['telegram', 'discord'] as const).filter((c) => cfg.channels[c].enabled);
  if (channels.length === 0) return [];
  return [
    {
      path: 'llm.api_key',
      message:
        `required when channels.${channels[0]}.enabled: without a model key the agents would post canned demo replies ` +
        'into a real chat (set ANTHROPIC_API_KEY or llm.api_key; or llm.provider: openai with base_url for a local model; ' +
        'or write llm.provider: scripted to use the canned replies on purpose)',
    },
  ];
}

/** Two problem paths about the same value (one inside the other, or the same). */
function related(a: string, b: string): boolean {
  const inside = (x: string, y: string) => x === y || x.startsWith(`${y}.`) || x.startsWith(`${y}[`);
  return inside(a, b) || inside(b, a);
}

/** Removes what the issues point at from `data` (object keys only); false when nothing could be. */
function setAside(data: unknown, issues: ReadonlyArray<z.core.$ZodIssue>): boolean {
  let changed = false;
  for (const issue of issues) {
    const paths = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k]) : [issue.path];
    for (const path of paths) changed = removeAt(data, path) || changed;
  }
  return changed;
}

function removeAt(data: unknown, path: ReadonlyArray<PropertyKey>): boolean {
  let node = data;
  for (const seg of path.slice(0, -1)) {
    if (node === null || typeof node !== 'object') return false;
    node = (node as Record<PropertyKey, unknown>)[seg];
  }
  const last = path[path.length - 1];
  if (last === undefined || typeof last === 'number' || node === null || typeof node !== 'object' || Array.isArray(node)) return false;
  const obj = node as Record<PropertyKey, unknown>;
  if (!(last in obj) || obj[last] === undefined) return false;
  delete obj[last];
  return true;
}
