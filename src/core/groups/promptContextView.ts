/**
 * The answer to "what did this agent see?" as the API gives it. Apart from the code that builds
 * it (promptContext.ts), so the ports can name it without importing the group machinery.
 */
import type { PromptAsk, PromptRef, TranscriptEntry } from '../types.js';

/** An observation as the page shows it. */
export interface SeenEntry {
  id: string;
  seq: number;
  ts: number;
  kind: TranscriptEntry['kind'];
  authorName: string;
  agentId?: string | undefined;
  text: string;
  /** Shown cut short: `text` is what the model read. */
  cut?: true | undefined;
}

/** One message of the history as sent, and the entry of the agent's turn it comes from. */
export interface HistoryMessage {
  role: 'user' | 'assistant';
  /** Null: the turn is older than this feature, its prompt was not recorded. */
  content: string | null;
  entryId: string;
}

export interface PromptContext {
  entryId: string;
  agent: { id: string; name: string };
  model: string;
  /** The agent's prompt prefix (persona and group section), as it would be built now. */
  system: { text: string; sameAsSent: boolean };
  /** The running summary as sent (null: there was none, or the fit left it out). */
  summary: { text: string | null; cut: boolean } | null;
  history: HistoryMessage[];
  observations: {
    full: SeenEntry[];
    folded: { count: number; from: number | null; to: number | null; omitted: number; digest: string | null };
  };
  ask: PromptAsk;
  window: PromptRef['window'];
  /** Which parts were rebuilt byte for byte (checked against the hashes of what was sent). */
  exact: { system: boolean; summary: boolean; history: boolean; observations: boolean };
}
