import type { Logger } from '../../src/core/ports.js';

export { silentLogger } from '../../src/core/silentLogger.js';

/** A Logger that keeps every line, for tests that assert on warnings or on absent secrets. */
export class CapturingLogger implements Logger {
  readonly lines: Array<{ level: string; obj: unknown; msg?: string | undefined }>;
  constructor(lines?: Array<{ level: string; obj: unknown; msg?: string | undefined }>, private readonly bindings: Record<string, unknown> = {}) {
    this.lines = lines ?? [];
  }
  private push(level: string, obj: object | string, msg?: string) {
    this.lines.push({ level, obj: typeof obj === 'object' ? { ...this.bindings, ...obj } : obj, msg });
  }
  debug(obj: object | string, msg?: string) { this.push('debug', obj, msg); }
  info(obj: object | string, msg?: string) { this.push('info', obj, msg); }
  warn(obj: object | string, msg?: string) { this.push('warn', obj, msg); }
  error(obj: object | string, msg?: string) { this.push('error', obj, msg); }
  child(b: Record<string, unknown>): Logger { return new CapturingLogger(this.lines, { ...this.bindings, ...b }); }
  /** Everything logged, as one string (for "contains" / "does not contain" checks). */
  text(): string {
    return this.lines.map((l) => `${l.level} ${typeof l.msg === 'string' ? l.msg : ''} ${JSON.stringify(l.obj)}`).join('\n');
  }
}
