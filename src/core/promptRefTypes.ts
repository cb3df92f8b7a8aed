/** What a reply records of the prompt it was made from (see session/promptRef.ts). */
/**
 * One turn's prompt by reference: enough to rebuild every part of it from the log, exactly, without
 * keeping a copy. Observations are named by seq (entries never change once written); the digest
 * line and a cut observation by the sizes the fit chose (its token ratio is learned in memory and
 * would not be the same later); the history by how many of the agent's own earlier turns were sent
 * (each turn is one entry of the agent, a reply or a pass line, carrying its own reference); the
 * summary by a hash, its text carried once per version. The hashes of the parts as sent let a
 * rebuild say whether it is exact.
 */
export interface PromptRef {
  v: 1;
  model: string;
  /** Seqs of the observations shown in full, oldest first. */
  shown: number[];
  /** The newest shown observation was cut to its first `cutTo` UTF-16 units. */
  cutTo?: number | undefined;
  /** Observations folded into the digest line: how many, the first and last seq. */
  folded?: { count: number; from: number; to: number } | undefined;
  /** Observations past the mailbox cap: counted in the digest line, never read. */
  omitted?: number | undefined;
  /** The size the digest line was built to (weight units). */
  digestUnits?: number | undefined;
  ask: PromptAsk;
  /** History messages sent: the agent's own earlier turns (a user and an assistant message each). */
  history: number;
  /** Ids of the files sent in full (images, PDFs, text files), in the order sent; their lines are in the text. */
  files?: string[] | undefined;
  /**
   * The running summary: its hash; its text on the first reply that used this version (since a
   * start), else `at`, the seq of the entry that carries it; `cutTo` when the fit shortened it.
   */
  summary?: { hash: string; text?: string | undefined; at?: number | undefined; cutTo?: number | undefined } | undefined;
  window: { contextTokens: number; budgetTokens: number; estimatedTokens: number; maxTokens: number };
  /** First 16 hex digits of the SHA-256 of each part as sent. */
  hashes: { system: string; history: string; user: string };
}

/** The ask of a turn as recorded (the prompt's `Ask`). */
export type PromptAsk =
  | { kind: 'addressed'; by?: string | null | undefined; how?: 'mention' | 'sticky' | 'rotation' | 'selected' | undefined }
  | { kind: 'voluntary'; react?: { by: string | null } | undefined }
  | { kind: 'reaction'; by: string }
  | { kind: 'forced'; lastHuman: { name: string; text: string | null } | null }
  | { kind: 'direct' };
