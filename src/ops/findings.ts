/**
 * What `chorus doctor` found, one finding per line: a mark, what was checked, what is true, and
 * for anything wrong the fix. Kept free of any check so every check module shares one shape.
 */

/** ok: works. warn: works, but worth fixing. fail: will not work. info: context, no verdict. */
export type FindingLevel = 'ok' | 'warn' | 'fail' | 'info';

export interface Finding {
  level: FindingLevel;
  /** What was checked, e.g. `telegram analyst`, `model claude-sonnet-4-5`, `port 8787`. */
  subject: string;
  /** What is true, in one sentence. */
  text: string;
  /** What to do about it (warn and fail). */
  fix?: string | undefined;
}

const MARKS: Record<FindingLevel, string> = { ok: '✔', warn: '!', fail: '✘', info: '·' };

/** One line, the fix on the same line so a grep for the subject shows what to do. */
export function formatFinding(f: Finding): string {
  return `${MARKS[f.level]} ${f.subject}: ${f.text}${f.fix ? ` — fix: ${f.fix}` : ''}`;
}

export const ok = (subject: string, text: string): Finding => ({ level: 'ok', subject, text });
export const info = (subject: string, text: string): Finding => ({ level: 'info', subject, text });
export const warn = (subject: string, text: string, fix: string): Finding => ({ level: 'warn', subject, text, fix });
export const fail = (subject: string, text: string, fix: string): Finding => ({ level: 'fail', subject, text, fix });
