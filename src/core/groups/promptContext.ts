/**
 * "What did this agent see?" for one reply: its prompt rebuilt from the log by the reference the
 * reply carries (see session/promptRef.ts) — the observations by seq, the digest line and a cut at
 * the sizes the fit chose, the history from the agent's own earlier turns (each an entry of the
 * log with its own reference), the summary from the entry that carries its text, the system
 * prefix from the agent and the group as they are now. Each part is checked against the hash of
 * what was sent, so the answer says which parts are exact.
 */
import type { Store } from '../ports.js';
import type { AgentDef, PromptRef, TranscriptEntry } from '../types.js';
import { UserError } from '../errors.js';
import { buildSystemPrompt, PASS_TOKEN } from '../session/prompt.js';
import { reactToken } from '../text/reactToken.js';
import { historyHash, partHash, rebuildUserTurn, sentSummary, shownText } from '../session/promptRef.js';
import { isObservable } from './groupReads.js';
import { seqOfId } from './evolve.js';
import type { HistoryMessage, PromptContext, SeenEntry } from './promptContextView.js';

export type { HistoryMessage, PromptContext, SeenEntry } from './promptContextView.js';

/** Entries read per page while collecting a range or walking back. */
const PAGE = 500;

export interface PromptContextDeps {
  store: Store;
  agent(id: string): AgentDef | undefined;
  /** The group's title and members now (for the system prefix). */
  group: { id: string; title: string; participants: readonly string[] };
}

/** The prompt reference a turn's entry carries: a reply's `meta.prompt`, a pass or reaction line's `decision.prompt`. */
function refOf(e: TranscriptEntry): PromptRef | undefined {
  return e.kind === 'agent' ? e.meta?.prompt : e.decision?.prompt;
}

/** The turns of `agentId` that entered its history: its replies, its pass lines and its reaction lines. */
function isTurnOf(e: TranscriptEntry, agentId: string): boolean {
  return (e.kind === 'agent' && e.agentId === agentId) || (e.kind === 'decision' && (e.decision?.type === 'pass' || e.decision?.type === 'react') && e.decision.agentId === agentId);
}

/** What the agent's history holds for one of its turns. */
function turnText(e: TranscriptEntry): string {
  if (e.kind === 'agent') return e.text;
  return e.decision?.type === 'react' && e.decision.emoji ? reactToken(e.decision.emoji) : PASS_TOKEN;
}

export async function promptContext(d: PromptContextDeps, entryId: string): Promise<PromptContext> {
  const groupId = d.group.id;
  const seq = seqOfId(entryId);
  const [entry] = Number.isSafeInteger(seq) && seq > 0 ? await d.store.readEntries(groupId, { afterSeq: seq - 1, limit: 1 }) : [];
  if (!entry || entry.id !== entryId) throw new UserError(`no message "${entryId}" in group "${groupId}"`, 'unknown_entry', 404);
  if (entry.kind !== 'agent' || !entry.agentId) throw new UserError('only an agent reply has a prompt to show', 'not_agent_reply', 400);
  const ref = entry.meta?.prompt;
  if (!ref) throw new UserError('what the agent saw was not recorded for older replies', 'not_recorded', 410);
  const agentId = entry.agentId;
  const read = (from: number, to: number) => readRange(d.store, groupId, from, to);

  const seen = await observed(ref, agentId, read);
  const full = seen.shown.map((e, i): SeenEntry => {
    const cut = i === seen.shown.length - 1 && ref.cutTo !== undefined;
    const s = cut ? shownText(e, ref.cutTo) : e;
    return { id: e.id, seq: e.seq, ts: e.ts, kind: e.kind, authorName: e.authorName, ...(e.agentId ? { agentId: e.agentId } : {}), text: s.text, ...(cut ? { cut: true as const } : {}) };
  });

  const history = await historyOf(d.store, groupId, entry, ref.history, read);
  const summaryText = ref.summary ? await summaryOf(d.store, groupId, ref.summary) : null;
  const summary = ref.summary ? { text: summaryText === null ? null : sentSummary(summaryText, ref.summary.cutTo), cut: ref.summary.cutTo !== undefined } : null;

  const agent = d.agent(agentId);
  const participants = d.group.participants.map((p) => d.agent(p)).filter((a): a is AgentDef => !!a);
  const system = agent ? buildSystemPrompt(agent, { title: d.group.title, participants, handles: () => [] }) : '';
  const historyKnown = history.every((m) => m.content !== null);
  return {
    entryId,
    agent: { id: agentId, name: agent?.name ?? entry.authorName },
    model: ref.model,
    system: { text: system, sameAsSent: partHash(system) === ref.hashes.system },
    summary,
    history,
    observations: {
      full,
      folded: { count: ref.folded?.count ?? 0, from: ref.folded?.from ?? null, to: ref.folded?.to ?? null, omitted: ref.omitted ?? 0, digest: seen.digest },
    },
    ask: ref.ask,
    window: ref.window,
    exact: {
      system: partHash(system) === ref.hashes.system,
      summary: !ref.summary || (summaryText !== null && partHash(summaryText) === ref.summary.hash),
      history: historyKnown && historyHash(history as Array<{ role: string; content: string }>) === ref.hashes.history,
      observations: seen.userTurn !== null && partHash(seen.userTurn) === ref.hashes.user,
    },
  };
}

type Reader = (from: number, to: number) => Promise<TranscriptEntry[]>;

/** The observations of one turn read back, and its user turn rebuilt (null when some are missing). */
async function observed(ref: PromptRef, agentId: string, read: Reader): Promise<{ shown: TranscriptEntry[]; folded: TranscriptEntry[]; digest: string | null; userTurn: string | null }> {
  const mine = (e: TranscriptEntry) => e.agentId !== agentId && isObservable(e);
  const wanted = new Set(ref.shown);
  const shown = ref.shown.length > 0 ? (await read(ref.shown[0]!, ref.shown.at(-1)!)).filter((e) => wanted.has(e.seq)) : [];
  // The folded ones are every observable entry of their range, as the mailbox had them.
  const folded = ref.folded ? (await read(ref.folded.from, ref.folded.to)).filter(mine) : [];
  const complete = shown.length === ref.shown.length && folded.length === (ref.folded?.count ?? 0);
  const { userTurn, digest } = rebuildUserTurn(ref, shown, folded);
  return { shown, folded, digest, userTurn: complete ? userTurn : null };
}

/**
 * The history sent with `entry`: the agent's last `count / 2` turns before it, each one entry of
 * the log (a reply, or a pass line). Exact because every turn appended to a session is written in
 * the same record as exactly one such entry, and nothing else writes one; a reset or a fold only
 * removes turns from the start, and the fit only leaves out the oldest, so the turns sent are
 * always the newest ones.
 */
async function historyOf(store: Store, groupId: string, entry: TranscriptEntry, count: number, read: Reader): Promise<HistoryMessage[]> {
  const agentId = entry.agentId!;
  const want = Math.ceil(count / 2);
  const turns: TranscriptEntry[] = [];
  for (let before = entry.seq; turns.length < want && before > 1; ) {
    const page = await store.readEntries(groupId, { beforeSeq: before, limit: PAGE });
    if (page.length === 0) break;
    for (let i = page.length - 1; i >= 0 && turns.length < want; i--) if (isTurnOf(page[i]!, agentId)) turns.unshift(page[i]!);
    before = page[0]!.seq;
  }
  const messages: HistoryMessage[] = [];
  for (const t of turns) {
    const ref = refOf(t);
    const user = ref ? (await observed(ref, agentId, read)).userTurn : null;
    messages.push({ role: 'user', content: user, entryId: t.id }, { role: 'assistant', content: turnText(t), entryId: t.id });
  }
  return messages.slice(-count || messages.length);
}

/** The summary's text: in the reference itself, or in the entry that carried this version. */
async function summaryOf(store: Store, groupId: string, s: NonNullable<PromptRef['summary']>): Promise<string | null> {
  if (s.text !== undefined) return s.text;
  if (s.at === undefined) return null;
  const [carrier] = await store.readEntries(groupId, { afterSeq: s.at - 1, limit: 1 });
  const text = carrier?.seq === s.at ? carrier.meta?.prompt?.summary?.text : undefined;
  return text !== undefined && partHash(text) === s.hash ? text : null;
}

/** Entries with seq in [from, to], oldest first. */
async function readRange(store: Store, groupId: string, from: number, to: number): Promise<TranscriptEntry[]> {
  const out: TranscriptEntry[] = [];
  for (let after = from - 1; after < to; ) {
    const page = await store.readEntries(groupId, { afterSeq: after, limit: Math.min(PAGE, to - after) });
    for (const e of page) if (e.seq <= to) out.push(e);
    if (page.length === 0 || page.at(-1)!.seq >= to) break;
    after = page.at(-1)!.seq;
  }
  return out;
}
