/**
 * Bytes the process may hold at once for one purpose (the files of uploads being checked and
 * kept), shared by everyone who asks. A request waits, in the order asked, until what is held and
 * it fit under the cap; one larger than the cap waits until nothing else is held and then runs
 * alone, so no file is refused for it and the cap is passed by at most one file.
 */
export class ByteBudget {
  private held = 0;
  private readonly waiting: Array<{ bytes: number; go: () => void }> = [];
  /** The most held at once so far (read by tests and metrics). */
  peak = 0;

  constructor(readonly cap: number) {}

  /** Resolves when `bytes` may be held; call the returned function once they are let go. */
  async take(bytes: number): Promise<() => void> {
    if (this.waiting.length > 0 || !this.fits(bytes)) {
      await new Promise<void>((go) => this.waiting.push({ bytes, go }));
    } else this.hold(bytes);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.held -= bytes;
      this.next();
    };
  }

  get inUse(): number {
    return this.held;
  }

  private fits(bytes: number): boolean {
    return this.held === 0 || this.held + bytes <= this.cap;
  }

  private hold(bytes: number): void {
    this.held += bytes;
    this.peak = Math.max(this.peak, this.held);
  }

  /** Let the waiting in, first come first served: one that does not fit holds the rest back. */
  private next(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.bytes)) {
      const w = this.waiting.shift()!;
      this.hold(w.bytes);
      w.go();
    }
  }
}
