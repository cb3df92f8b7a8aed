/** Validation of `/group config` and `PATCH /api/groups/:id/config` against the file's schema. */
import type { ConfigValidator } from '../core/types.js';
import { formatIssues } from './issues.js';
import { groupConfigSchema } from './schema.js';

const patchSchema = groupConfigSchema.partial().strict();
const KEYS = Object.keys(groupConfigSchema.shape);

export const validateGroupConfig: ConfigValidator = (patch) => {
  const unknown = Object.keys(patch).filter((k) => !KEYS.includes(k));
  if (unknown.length > 0) return { ok: false, problems: unknown.map((k) => `${k}: unknown setting (settings: ${KEYS.join(', ')})`) };
  // Only keys actually given: zod defaults must not fill in the others.
  const parsed = patchSchema.safeParse(patch, { reportInput: true });
  if (!parsed.success) return { ok: false, problems: formatIssues(parsed.error.issues).map((p) => `${p.path}: ${p.message}`) };
  const value = Object.fromEntries(Object.keys(patch).map((k) => [k, (parsed.data as Record<string, unknown>)[k]]));
  return { ok: true, value };
};
