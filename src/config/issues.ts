/**
 * Zod's validation issues as config problems: one readable line per mistake, named by its key path
 * (`agents[1].telegram.token`), an unknown key with a suggestion of the keys allowed there.
 */
import type { z } from 'zod';
import { unknownKeyMessage } from './keyHints.js';
import type { ConfigProblem } from './rules.js';
import { keysAt } from './schemaWalk.js';

/** Zod path → `agents[1].telegram.token`. */
function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || '(root)';
}

/**
 * One readable problem per zod issue; unknown keys get one line each, with a suggestion taken
 * from the keys of `schema` (the schema the issues came from) at that place, if one is close.
 */
export function formatIssues(issues: ReadonlyArray<z.core.$ZodIssue>, prefix: ReadonlyArray<PropertyKey> = [], schema?: unknown): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys) out.push({ path: formatPath([...path, key]), message: unknownKeyMessage(key, issue.path, keysAt(schema, issue.path)) });
        break;
      case 'invalid_type':
        out.push({
          path: formatPath(path),
          message: issue.input === undefined ? 'required' : `expected ${issue.expected}, got ${describeValue(issue.input)}`,
        });
        break;
      case 'invalid_value':
        out.push({ path: formatPath(path), message: `must be one of: ${issue.values.map(String).join(', ')}` });
        break;
      case 'too_small':
        out.push({ path: formatPath(path), message: issue.origin === 'array' ? `needs at least ${String(issue.minimum)} item(s)` : issue.origin === 'string' ? 'must not be empty' : `must be at least ${String(issue.minimum)}` });
        break;
      case 'too_big':
        out.push({ path: formatPath(path), message: issue.origin === 'string' || issue.origin === 'array' ? `must have at most ${String(issue.maximum)} characters/items` : `must be at most ${String(issue.maximum)}` });
        break;
      case 'invalid_union':
        out.push({ path: formatPath(path), message: issue.input === undefined ? 'required' : `has an unexpected type (${describeValue(issue.input)})` });
        break;
      default:
        out.push({ path: formatPath(path), message: issue.message });
    }
  }
  return out;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `"${v.length > 30 ? v.slice(0, 30) + '…' : v}"`;
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${String(v)}`;
}
