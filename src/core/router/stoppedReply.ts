/**
 * A reply that `/stop` cuts while it streams keeps what its readers already saw: the text so far
 * is recorded as the agent's reply, ending in "…" and marked `cut: 'stopped'` (the shape of a
 * reply cut at max_tokens), instead of vanishing from under the reader's eyes.
 *
 * The entry is appended the moment the stop is signalled — synchronously, from the abort, which
 * `/stop` fires before it writes its notice — so it sits before the notice and becomes durable in
 * the notice's own record: one record, in the order things happened, and a page that gets the
 * notice already has the reply. The turn then hands it to the channel (`Recorder.deliverAppended`).
 * Nothing is kept when no text was shown, on shutdown, or when the group is no longer this
 * instance's to write (a lost lease stops its rounds too, and must not write).
 */
import type { GroupDoc } from '../records.js';
import type { TranscriptEntry } from '../types.js';
import type { NewEntry } from './Recorder.js';
import type { RoundDeps } from './RoundDeps.js';
import { TRAILING_CUT_MARKER } from './LlmGate.js';

export class StoppedReply {
  private text = '';
  private entry: TranscriptEntry | null = null;
  private readonly onStop = (): void => this.keep();

  /**
   * `build(text)` gives the entry for the text kept and records anything that goes with it in
   * the same record (the agent's turn in its session); called at most once, synchronously.
   */
  constructor(
    private readonly d: Pick<RoundDeps, 'groups' | 'shutdown'>,
    private readonly g: GroupDoc,
    private readonly stop: AbortSignal,
    private readonly build: (text: string) => NewEntry,
  ) {
    stop.addEventListener('abort', this.onStop, { once: true });
  }

  /** Text that was streamed to the readers. */
  add(text: string): void {
    this.text += text;
  }

  /** The entry kept when `/stop` came, or null. */
  get kept(): TranscriptEntry | null {
    return this.entry;
  }

  /** The turn is past the point a stop could cut it (or was cut): stop listening. */
  dispose(): void {
    this.stop.removeEventListener('abort', this.onStop);
  }

  private keep(): void {
    const text = this.text.trimEnd();
    if (text.trim() === '' || this.d.shutdown.aborted || !this.d.groups.usable(this.g)) return;
    this.entry = this.d.groups.append(this.g, this.build(text + TRAILING_CUT_MARKER));
  }
}
