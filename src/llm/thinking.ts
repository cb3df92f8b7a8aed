/**
 * Thinking that arrives inline in the reply text: Qwen, DeepSeek-R1 and other models
 * served by llama.cpp or Ollama without a reasoning parser wrap their reasoning in
 * `<think>…</think>` at the start of the content. It is never reply text: not streamed, not
 * stored, not shown to other agents.
 *
 * Only a block at the very start of the reply counts (after whitespace, and again right after a
 * block, for models that think twice): that is where these models put it, and a reply that talks
 * *about* the tag later ("Qwen wraps its reasoning in <think> tags") must not lose the rest of
 * its text. The whitespace after a block is dropped too, so the reply starts with its first word.
 * A block that never closes (the model ran out of `max_tokens` while thinking) hides everything
 * after its opening tag: the reply is then empty, and the provider says why.
 *
 * Streaming-safe: a tag split across chunks (`<th` + `ink>`) is held back until it is complete or
 * clearly not a tag, so the text passed on is exactly what the final text will be.
 */

const OPEN = '<think>';
const CLOSE = '</think>';

export class ThinkFilter {
  /** Text held back: a possible opening tag (at the start), or a possible closing tag (inside). */
  private held = '';
  private state: 'start' | 'thinking' | 'text' = 'start';
  /** Just after a closed block: leading whitespace is dropped. */
  private afterBlock = false;
  /** At least one block was removed. */
  thought = false;
  /** The reply ended inside a block (it never closed). */
  unterminated = false;

  /** Feed one chunk; returns the visible text it releases (possibly ''). */
  push(chunk: string): string {
    if (this.state === 'text') return chunk;
    this.held += chunk;
    let out = '';
    for (;;) {
      if (this.state === 'thinking') {
        const end = this.held.indexOf(CLOSE);
        if (end < 0) {
          // Keep only what could be the start of the closing tag.
          this.held = this.held.slice(Math.max(0, this.held.length - (CLOSE.length - 1)));
          return out;
        }
        this.held = this.held.slice(end + CLOSE.length);
        this.state = 'start';
        this.afterBlock = true;
        continue;
      }
      if (this.state === 'start') {
        const lead = this.held.length - this.held.trimStart().length;
        const rest = this.held.slice(lead);
        if (rest.startsWith(OPEN)) {
          this.thought = true;
          this.state = 'thinking';
          this.held = rest.slice(OPEN.length);
          continue;
        }
        if (OPEN.startsWith(rest)) return out; // only whitespace, or a tag still arriving
        this.state = 'text';
        out += this.afterBlock ? rest : this.held;
        this.held = '';
        return out;
      }
      return out + this.take();
    }
  }

  /** The stream ended: release what was held back that turned out not to be a tag. */
  end(): string {
    if (this.state === 'thinking') {
      this.unterminated = true;
      this.held = '';
      return '';
    }
    if (this.state === 'start') {
      const text = this.afterBlock ? this.held.trimStart() : this.held;
      this.held = '';
      this.state = 'text';
      return text;
    }
    return this.take();
  }

  private take(): string {
    const t = this.held;
    this.held = '';
    return t;
  }
}

/** The visible part of a whole reply (not streamed). */
export function stripThinking(text: string): { text: string; thought: boolean; unterminated: boolean } {
  const f = new ThinkFilter();
  const out = f.push(text) + f.end();
  return { text: out, thought: f.thought, unterminated: f.unterminated };
}
