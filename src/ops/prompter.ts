/**
 * Questions on a terminal, one line per answer. Lines are read through readline's async iterator,
 * which keeps the lines that arrive before a question is asked: answers piped in all at once (a
 * script, a test) are each taken by their own question instead of being dropped.
 */
import { createInterface, type Interface } from 'node:readline';

export class Prompter {
  private readonly rl: Interface;
  private readonly lines: AsyncIterator<string>;

  constructor(
    input: NodeJS.ReadableStream,
    private readonly write: (line: string) => void,
  ) {
    this.rl = createInterface({ input, terminal: false });
    this.lines = this.rl[Symbol.asyncIterator]();
  }

  /** The answer, trimmed; an input that ended answers nothing more, so asking again is an error. */
  async line(question: string): Promise<string> {
    this.write(question);
    const next = await this.lines.next();
    if (next.done) throw new Error('chorus init: the input ended before every question was answered (use --yes with flags in scripts)');
    return next.value.trim();
  }

  async yesNo(question: string, byDefault: boolean): Promise<boolean> {
    for (;;) {
      const answer = (await this.line(`${question} ${byDefault ? '[Y/n]' : '[y/N]'}`)).toLowerCase();
      if (answer === '') return byDefault;
      if (answer === 'y' || answer === 'yes') return true;
      if (answer === 'n' || answer === 'no') return false;
    }
  }

  close(): void {
    this.rl.close();
  }
}
