/**
 * A started server's stderr, line by line, into the log — bounded, because a child in a loop can
 * write faster than anyone reads: a line is cut at `maxLineChars`, and beyond `maxLines` lines
 * per `windowMs` the rest of the window is dropped (said once when it starts) and counted (said
 * when the next line comes in a new window).
 * The last line is kept: when the process dies it usually says why.
 */
import type { Readable } from 'node:stream';

export interface StderrLimits {
  maxLineChars: number;
  maxLines: number;
  windowMs: number;
}

export const DEFAULT_STDERR_LIMITS: StderrLimits = { maxLineChars: 2000, maxLines: 200, windowMs: 60_000 };

export interface StderrSink {
  line(text: string): void;
  /** The window's limit was reached: lines are dropped until it ends. */
  limitReached(): void;
  /** `count` lines were not logged in the window that just ended. */
  dropped(count: number): void;
}

export class StderrLines {
  private partial = '';
  /** The partial line grew past the limit: the rest of it is skipped. */
  private overlong = false;
  private windowStart = 0;
  private inWindow = 0;
  private droppedInWindow = 0;
  private lastLine: string | undefined;

  constructor(
    private readonly sink: StderrSink,
    private readonly now: () => number,
    private readonly limits: StderrLimits = DEFAULT_STDERR_LIMITS,
  ) {}

  /** Read `stream` until it ends; a last line without a newline is logged at the end. */
  attach(stream: Readable): void {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => this.write(chunk));
    stream.on('end', () => this.flush());
    // A broken pipe to a dead child is not worth more than its absence of lines.
    stream.on('error', () => this.flush());
  }

  /** The last line the process wrote, cut like the logged one. */
  get last(): string | undefined {
    return this.lastLine;
  }

  write(chunk: string): void {
    let rest = chunk;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      this.append(rest.slice(0, nl));
      this.emit();
      rest = rest.slice(nl + 1);
    }
    this.append(rest);
  }

  flush(): void {
    if (this.partial || this.overlong) this.emit();
  }

  private append(text: string): void {
    if (this.overlong) return;
    this.partial += text;
    if (this.partial.length > this.limits.maxLineChars) {
      this.partial = this.partial.slice(0, this.limits.maxLineChars);
      this.overlong = true;
    }
  }

  private emit(): void {
    const line = (this.overlong ? `${this.partial}…` : this.partial).replace(/\r$/, '');
    this.partial = '';
    this.overlong = false;
    if (!line.trim()) return;
    this.lastLine = line;
    const t = this.now();
    if (t - this.windowStart >= this.limits.windowMs) {
      if (this.droppedInWindow > 0) this.sink.dropped(this.droppedInWindow);
      this.windowStart = t;
      this.inWindow = 0;
      this.droppedInWindow = 0;
    }
    if (this.inWindow >= this.limits.maxLines) {
      if (this.droppedInWindow++ === 0) this.sink.limitReached();
      return;
    }
    this.inWindow++;
    this.sink.line(line);
  }
}
