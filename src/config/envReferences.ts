/**
 * `${VAR}` references in the config file. They are masked before the YAML is parsed and put back
 * only into the parsed string values (see load.ts), so a value from the environment is never read
 * as YAML; this file holds the reference syntax, its replacement, and the masking.
 */
import { randomBytes } from 'node:crypto';

const REFERENCE = /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}\n]*))?\}/g;

/**
 * Replace `${VAR}` and `${VAR:-default}` in one string value. An unset or empty variable takes
 * the default, else becomes "" and is reported in `missing`. `$${` escapes a literal `${`.
 */
export function substituteEnv(text: string, env: NodeJS.ProcessEnv): { text: string; missing: string[] } {
  const missing: string[] = [];
  const out = text.replace(REFERENCE, (whole, escape: string, name: string, fallback: string | undefined) => {
    if (escape) return whole.slice(1);
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  return { text: out, missing };
}

/**
 * The file's text with every reference swapped for a placeholder that is a plain word in any YAML
 * context (flow mappings, quotes, block scalars), so references never change how the YAML parses
 * and their values can be put back into the parsed strings. Columns are mapped back for errors.
 */
export class MaskedReferences {
  readonly text: string;
  private readonly refs: string[] = [];
  private readonly tag = `CHORUSREF${randomBytes(6).toString('hex')}N`;
  private readonly pattern = new RegExp(`${this.tag}(\\d+)X`, 'g');
  /** Per line: where a placeholder ends in the masked line and how much longer it is than the reference. */
  private readonly shifts = new Map<number, Array<{ end: number; delta: number }>>();

  constructor(raw: string) {
    this.text = raw
      .split('\n')
      .map((line, i) => {
        const shifts: Array<{ end: number; delta: number }> = [];
        let grow = 0;
        const masked = line.replace(REFERENCE, (whole: string, _e: string, _n: string, _f: string, offset: number) => {
          const placeholder = `${this.tag}${this.refs.length}X`;
          this.refs.push(whole);
          grow += placeholder.length - whole.length;
          shifts.push({ end: offset + grow + whole.length, delta: grow });
          return placeholder;
        });
        if (shifts.length) this.shifts.set(i + 1, shifts);
        return masked;
      })
      .join('\n');
  }

  /** Does this parsed string hold a reference? */
  has(value: string): boolean {
    this.pattern.lastIndex = 0;
    return this.pattern.test(value);
  }

  /** The parsed string with its references as written (for keys and error messages). */
  original(value: string): string {
    return value.replace(this.pattern, (_m, i: string) => this.refs[Number(i)]!);
  }

  /** The parsed string with its references replaced from `env`. */
  substitute(value: string, env: NodeJS.ProcessEnv, missing: string[]): string {
    return value.replace(this.pattern, (_m, i: string) => {
      const r = substituteEnv(this.refs[Number(i)]!, env);
      missing.push(...r.missing);
      return r.text;
    });
  }

  /** A 1-based column of the masked text as a column of the file. */
  column(line: number, col: number): number {
    let delta = 0;
    for (const s of this.shifts.get(line) ?? []) if (s.end <= col - 1) delta = s.delta;
    return col - delta;
  }
}
