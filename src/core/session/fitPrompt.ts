/**
 * Fitting one turn's prompt into a token budget, and what gives way when it does not fit.
 *
 * Assembly order and what gives way (the prompt reads: stable system prefix, summary, recent
 * history, then the mailbox and the ask): the prefix and the ask are always sent; the summary is
 * shortened only if nothing else is left; the mailbox keeps its newest observations — at least
 * the newest one, cut if it alone is too long — and the older ones are folded into one digest line
 * (digestLine.ts); history turns that do not fit are left out oldest first (they stay in the
 * session and the log). The mailbox may use up to 60% of the room, or more when the history needs less.
 */
import type { ChatTurn, TranscriptEntry } from '../types.js';
import { digestLine } from './digestLine.js';
import { buildUserTurn, observationLine, summaryBlock, type Ask } from './prompt.js';
import { PER_MESSAGE, PER_REQUEST, cutUnits, textUnits } from './tokenEstimate.js';
import { candidateFiles, historyFiles, takeNewest, type FileAllowance } from './promptFiles.js';
import type { PromptAttachment } from '../fileTypes.js';

/** Share of the room the mailbox may take when the history wants the rest. */
const MAILBOX_SHARE = 0.6;

/** Everything one turn's prompt is made of, before it is fitted. */
export interface PromptParts {
  system: string;
  summary: string | null;
  history: readonly ChatTurn[];
  observations: readonly TranscriptEntry[];
  /** Observations not even read (past the mailbox cap). */
  omitted: number;
  ask: Ask;
  /** Files the agent may be sent in full (see promptFiles.ts); absent: none, each file is its line. */
  files?: FileAllowance | undefined;
}

/** A prompt that fits, and what was left out to make it fit. */
export interface FittedPrompt {
  system: string;
  /** The summary block (heading + text), or null. */
  summary: string | null;
  /** History turns sent, then the user turn. */
  messages: ChatTurn[];
  /** The user turn as sent (what the session records). */
  userTurn: string;
  /** The files sent in full after the user turn's text (recorded with it in the session). */
  userFiles: PromptAttachment[];
  /** Ids of every file sent in full, history first, in the order sent. */
  files: string[];
  /** Their estimated tokens: not text, so left out when the units-per-token ratio is learned. */
  fileTokens: number;
  /** max_tokens for the reply. */
  maxTokens: number;
  /** Estimated prompt tokens. */
  estimatedTokens: number;
  /** The prompt budget it was fitted into. */
  budgetTokens: number;
  /** Observations shown in full (or cut), folded into the digest, and history turns left out. */
  shown: number;
  folded: number;
  droppedHistory: number;
  /** The newest observation had to be cut to fit. */
  cutObservation: boolean;
  /** When it was cut: the UTF-16 length of the start kept. */
  cutTo?: number | undefined;
  /** The size the digest line was built to (weight units), when there is one. */
  digestUnits?: number | undefined;
  /** UTF-8-free size measure of the prompt, for calibration: weight units sent. */
  units: number;
  messageCount: number;
}

/**
 * Fit `parts` into `budget` tokens, counting with `count` (template overhead included per call)
 * and `ratio` units per token (to cut texts). Pure; see the comment at the top for what gives way.
 */
export function fitPrompt(parts: PromptParts, budget: number, maxTokens: number, count: (text: string) => number, ratio: number): FittedPrompt {
  const { ask } = parts;
  let summary = summaryBlock(parts.summary);
  // The user turn's frame: headings and the ask, with an empty mailbox.
  const frame = count(buildUserTurn([], ask)) + PER_REQUEST;
  // Counted once: the system prefix is the longest text of most prompts.
  const systemTokens = count(parts.system);
  const fixed = systemTokens + frame;
  let summaryTokens = summary ? count(summary) : 0;
  let room = budget - fixed - summaryTokens;
  if (room < 0 && summary) {
    // Only the summary can still give way: keep its start.
    const keep = Math.max(0, Math.floor((summaryTokens + room - PER_MESSAGE) * ratio));
    summary = keep > 40 ? `${cutUnits(summary, keep)}…` : null;
    summaryTokens = summary ? count(summary) : 0;
    room = budget - fixed - summaryTokens;
  }
  room = Math.max(0, room);

  const history = parts.history;
  const historyTokens = history.map((t) => count(t.content));
  const historyTotal = historyTokens.reduce((a, b) => a + b, 0);
  const obs = parts.observations;
  const lineTokens = obs.map((e) => Math.ceil(textUnits(observationLine(e)) / ratio) + 1);
  const mailboxCap = Math.max(Math.floor(room * MAILBOX_SHARE), room - historyTotal);

  // Newest observations first, while they fit; room is kept for the digest line if some are left.
  const digestRoom = obs.length > 1 || parts.omitted > 0 ? Math.min(120, Math.floor(room * 0.15)) : 0;
  const cap = mailboxCap - digestRoom;
  let used = 0;
  let first = obs.length;
  while (first > 0 && used + lineTokens[first - 1]! <= cap) {
    used += lineTokens[first - 1]!;
    first--;
  }
  let shownEntries = obs.slice(first);
  let cutObservation = false;
  let cutTo: number | undefined;
  if (shownEntries.length === 0 && obs.length > 0) {
    // Even the newest does not fit: it is the one that matters most, so it is cut, not left out.
    const newest = obs[obs.length - 1]!;
    const frameUnits = textUnits(observationLine({ ...newest, text: '' })) + 80;
    const allowed = Math.max(0, Math.floor(cap * ratio) - frameUnits);
    const kept = cutUnits(newest.text, allowed);
    const rest = newest.text.length - kept.length;
    shownEntries = [{ ...newest, text: `${kept}… [${rest} more characters not shown]` }];
    used = Math.ceil(textUnits(observationLine(shownEntries[0]!)) / ratio) + 1;
    first = obs.length - 1;
    cutObservation = true;
    cutTo = kept.length;
  }
  const foldedEntries = obs.slice(0, first);
  const folded = foldedEntries.length;
  const digestUnits = folded + parts.omitted > 0 ? Math.max(0, Math.floor(Math.max(digestRoom, 20) * ratio)) : undefined;
  const digest = digestUnits !== undefined ? digestLine(foldedEntries, parts.omitted, digestUnits) : null;
  const userTurn = buildUserTurn(shownEntries, ask, parts.omitted + folded, digest);
  const userTokens = count(userTurn) + PER_REQUEST;
  // The newest files come before older history: what was just shared matters more than old turns.
  const max = parts.files?.max ?? 0;
  const newFiles = takeNewest(candidateFiles(shownEntries, parts.files), max, budget - systemTokens - summaryTokens - userTokens);

  // History: newest turns that still fit after the mailbox, left out oldest first.
  let left = budget - systemTokens - summaryTokens - userTokens - newFiles.tokens;
  let start = history.length;
  while (start > 0 && historyTokens[start - 1]! <= left) {
    left -= historyTokens[start - 1]!;
    start--;
  }
  // The history must start with a user turn (and alternate): leave out a leading assistant turn.
  while (start < history.length && history[start]!.role !== 'user') start++;
  // A kept history turn is sent again with its files while the allowance and the room last.
  const older = parts.files ? historyFiles(history.slice(start), max - newFiles.files.length, left) : { turns: history.slice(start).map(wordsOnly), tokens: 0, ids: [] };
  const user: ChatTurn = newFiles.files.length > 0 ? { role: 'user', content: userTurn, attachments: newFiles.files } : { role: 'user', content: userTurn };
  const messages: ChatTurn[] = [...older.turns, user];
  const estimatedTokens = systemTokens + summaryTokens + historyTokens.slice(start).reduce((n, t) => n + t, 0) + userTokens + newFiles.tokens + older.tokens;
  const units = textUnits(parts.system) + (summary ? textUnits(summary) : 0) + messages.reduce((n, m) => n + textUnits(m.content), 0);
  return {
    system: parts.system,
    summary,
    messages,
    userTurn,
    userFiles: newFiles.files,
    files: [...older.ids, ...newFiles.files.map((f) => f.id)],
    fileTokens: newFiles.tokens + older.tokens,
    maxTokens,
    estimatedTokens,
    budgetTokens: budget,
    shown: shownEntries.length,
    folded,
    droppedHistory: start,
    cutObservation,
    ...(cutTo !== undefined ? { cutTo } : {}),
    ...(digestUnits !== undefined ? { digestUnits } : {}),
    units,
    messageCount: messages.length + (summary ? 2 : 1),
  };
}

/** A history turn without its files (an agent that is sent none). */
function wordsOnly(t: ChatTurn): ChatTurn {
  return t.attachments ? { role: t.role, content: t.content } : t;
}
