/**
 * Streamed text (delta events) arrives before the router knows whether a reply is a pass. The
 * literal `[PASS]` token must never reach a channel — nor `[REACT 👍]`, whose possible start
 * (`[REA`) is held back the same way — and nothing streamed may turn out to be a pass. The filter runs the same scrubber as the posted reply (passScrubber.ts): tokens
 * are removed wherever they are (also split across chunks, nested, full-width or zero-width),
 * the lead-in is held until it is known to be text, and, where a trailing token could still make
 * the turn a pass, text is held until that can no longer happen.
 */
import { PassScrubber, type ScrubOptions, type ScrubVerdict } from './passScrubber.js';

export interface PassStreamFilter {
  /** Feed a chunk; the text to stream now, or null. */
  (chunk: string): string | null;
  /** End of the model's stream: the verdict and the text still to stream (null for none). */
  end(): { verdict: ScrubVerdict; rest: string | null };
  /** Whether any text was released. */
  readonly streamed: boolean;
}

/**
 * A filter for one turn's stream. Options as for the scrubber; by default no text is held for the
 * trailing-token rule (`fillerMax: 0`): the router passes the real setting.
 */
export function passStreamFilter(opts: ScrubOptions = {}): PassStreamFilter {
  const scrubber = new PassScrubber({ fillerMax: 0, ...opts });
  const filter = ((chunk: string) => scrubber.push(chunk) || null) as PassStreamFilter;
  filter.end = () => {
    const verdict = scrubber.finish();
    return { verdict, rest: scrubber.rest() || null };
  };
  Object.defineProperty(filter, 'streamed', { get: () => scrubber.streamed });
  return filter;
}
