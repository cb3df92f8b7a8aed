/**
 * Live equals replay, property-based.
 *
 * The core keeps each group in memory (GroupManager) and writes every change as one log record;
 * at start, and after a failed write, a group is rebuilt from its checkpoint and log, read back
 * through a Store. Both go through the one `evolve` (core/groups/evolve.ts): live, each change is
 * applied as it is made; on replay, the records are folded over the checkpoint. This test is the
 * guard that the two stay equal: it drives a real GroupRouter with random inputs and checks that
 *
 *  1. at rest, the group held in memory equals the group a fresh GroupManager rebuilds from the
 *     store (checkpoint + log, read through the real store), and
 *  2. after ANY record k (a simulated crash: the store kept records 1..k, with or without the
 *     newest checkpoint at or before k), the rebuilt group equals the group exactly as it was in
 *     memory the moment record k was committed — round progress included, and
 *  3. the transcript the store serves (its entry index, with the latest delivery outcomes) is the
 *     one the records carry, and its newest entries are the ones memory holds.
 *
 * on the in-memory test store, the file store (temp dir) and PostgreSQL (skipped with a message
 * when no server can run, unless CHORUS_REQUIRE_POSTGRES=1).
 *
 * Inputs: human messages with and without @mentions and @all, empty ones (refused with a notice),
 * commands (`/group config|mute|unmute|add|remove|reset`, as chat lines and as web-page
 * "ephemeral" commands), `/ask` with and without text, `/stop`, regenerate, Telegram-style
 * membership changes (joined/left; the last one leaving dissolves the group), the author editing or
 * deleting a message (a note for the agents, rewritten memories), people reacting to any entry and
 * taking reactions back (entries older than the in-memory tail too, and ones that take none),
 * duplicate deliveries
 * (the same platform id again, also two copies at once), messages sent while a round runs, and a
 * fake clock that moves (cooldowns, model-call time limits, a new UTC day for the budget). The
 * scripted model replies, passes, reacts with an emoji, mentions another agent (reactions), fails, returns an empty
 * reply, is cut at max_tokens, or holds its answer mid-stream until released (so messages batch,
 * `/stop` cuts a streaming reply, a clock jump times it out); summaries (small `history_turns`)
 * succeed or fail; checkpoints come every few records.
 *
 * Half the cases are rooms across chats (./live-equals-replay/rooms.ts): the web room with a
 * Telegram group and two Discord channels, declared in the config's `groups[].chats` or linked
 * during the case with the real `/group link` → code → `/group link <code>` (also too late, or
 * never used), left with `/group unlink` or the web panel; people and a foreign bot writing in any
 * chat of the room (replies to relayed copies, duplicates of them), editing and deleting there
 * (edits carried to the copies), a linked Telegram group migrating to a new id; and each chat's
 * platform (a FakeChannel) posting, failing in passing, refusing for good, or posting with the
 * answer lost, so each chat's delivery queue (ChatDelivery) records its own outcomes while the
 * others' copies stay pending. At the end the platforms work again and the queues deliver.
 *
 * How the live state is seen: `Tap` wraps the Store port (no change in src). GroupManager.commit
 * calls `store.append` synchronously, right after it has turned the pending changes into the
 * record, so at that moment memory is exactly "the state as of record k": Tap clones it then.
 *
 * Compared exactly (after a JSON round trip, so an `undefined` property equals an absent one, as
 * in every store): the head (title, chat, linked chats, participants, config, state: muted,
 * sticky, rrIndex, lastSpoke, repliedUpTo, usage, today, archived, edits still to carry, link
 * codes), nextSeq, the rounds, every session of the group
 * (history, cursor, summary, usage), the dedupe memory (keys in order, with their times), the
 * undelivered entries, and the newest transcript entries.
 *
 * Deliberately NOT compared (nothing else is normalised):
 *  - The transcript beyond the newest TRANSCRIPT_TAIL entries: memory keeps a tail of 64–96
 *    entries (it is trimmed in batches, and entries a waiting round refers to are kept); a rebuilt
 *    group reads exactly the newest 64. Older entries are checked through the store (3.) instead.
 *  - Runtime bookkeeping that is never persisted and has no durable counterpart: the record
 *    counter and pending changes (GroupManager's `Runtime`), the router's queues and rate limiter,
 *    the outbox's posted-id index, the rooms' delivery queues and posted index, the bot-pair
 *    budget, and the dedupe memory of chats without a group.
 *
 * What it found: when first written (over the hand-written replay the core had then), the stores'
 * read schema dropped `state.repliedUpTo` and `state.today`; and a waiting round's progress (its
 * plan, the voluntary candidates asked, the round-robin position) was held in memory but written
 * only with a later turn's outcome, so a checkpoint (taken from memory) and the log before it
 * disagreed. Since every change is a record's change, the crash comparison holds with no
 * exception for round progress.
 *
 * Entries are compared whole (the tail, the undelivered ones, and what the store serves), so
 * their `origin`, `copies` (each chat's outcome and ids) and `authorKind` are too. When the
 * rooms were added the property found no difference; cutting a copy's ids in the PostgreSQL
 * writer, or dropping a carried edit from memory without its record, each fail it at once.
 *
 * Run longer or reproduce: CHORUS_PBT_RUNS=<n> (per store), CHORUS_PBT_SEED=<seed> (fast-check
 * prints the seed and path of a failure); CHORUS_PBT_STATS=1 prints what the room cases'
 * records held (links, outcomes per chat, carried edits), to see the generators still reach them.
 */
import type { Attachment } from '../../src/core/fileTypes.js';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';
import { agentsFromConfig } from '../../src/app.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import { parseConfigText } from '../../src/config/load.js';
import { LlmError, UserError } from '../../src/core/errors.js';
import { GroupManager } from '../../src/core/groups/GroupManager.js';
import { TRANSCRIPT_TAIL } from '../../src/core/groups/evolve.js';
import type { LlmProvider, LlmRequest, LlmResponse, Store, StoredGroup } from '../../src/core/ports.js';
import type { GroupCheckpoint, GroupHead, GroupRecord, RoundRecord, SessionDoc } from '../../src/core/records.js';
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import type { AgentDef, GroupConfig, InboundMessage, TranscriptEntry } from '../../src/core/types.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { silentLogger } from '../helpers/logger.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { testDatabase } from '../helpers/postgres.js';
import { RoomWorld, roomCaseArb, roomInputArb, roomTally, tally, type RoomCase, type RoomInput } from './live-equals-replay/rooms.js';

const SEED = Number(process.env.CHORUS_PBT_SEED ?? 20_260_101);
const RUNS = process.env.CHORUS_PBT_RUNS ? Number(process.env.CHORUS_PBT_RUNS) : null;

const AGENT_IDS = ['analyst', 'writer', 'critic'] as const;
type AgentId = (typeof AGENT_IDS)[number];
const YAML = `
agents:
  - { id: analyst, name: Analyst, persona: "You analyse numbers." }
  - { id: writer, name: Writer, persona: "You write prose." }
  - { id: critic, name: Critic, persona: "You critique ideas." }
llm: { provider: scripted }
`;
const { config: CONFIG } = parseConfigText(YAML, 'test');

// ---------------------------------------------------------------------------------------------
// The model: per agent a script of outcomes, used in order (cycling)

type TurnPlan = 'reply' | 'mention' | 'pass' | 'react' | 'fail' | 'empty' | 'cut' | 'hold';
type SummaryPlan = 'ok' | 'fail';

interface Script {
  turns: Record<AgentId, TurnPlan[]>;
  summaries: SummaryPlan[];
  selector: string[];
}

class ScriptLlm implements LlmProvider {
  readonly name = 'script';
  /** complete() calls not yet returned. */
  active = 0;
  /** Calls holding their answer until released. */
  readonly held = new Set<() => void>();
  /** False while the run drains: nothing holds any more. */
  holding = true;
  private readonly turnCalls = new Map<string, number>();
  private summaryCalls = 0;
  private selectorCalls = 0;

  constructor(private readonly script: Script) {}

  release(): void {
    for (const r of [...this.held]) r();
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    this.active++;
    try {
      return await this.answer(req);
    } finally {
      this.active--;
    }
  }

  private async answer(req: LlmRequest): Promise<LlmResponse> {
    if (req.purpose === 'summary') {
      const n = this.summaryCalls++;
      if (this.script.summaries[n % this.script.summaries.length] === 'fail') throw new LlmError('summary model overloaded', 'overloaded', true);
      return this.res(req, `summary ${n}: they talked`, n);
    }
    if (req.purpose === 'selector') {
      const n = this.selectorCalls++;
      return this.res(req, this.script.selector[n % this.script.selector.length]!, n);
    }
    const id = (req.agent?.id ?? 'analyst') as AgentId;
    const n = this.turnCalls.get(id) ?? 0;
    this.turnCalls.set(id, n + 1);
    const plans = this.script.turns[id];
    const plan = plans[n % plans.length]!;
    const other = AGENT_IDS[(AGENT_IDS.indexOf(id) + 1 + (n % 2)) % AGENT_IDS.length]!;
    switch (plan) {
      case 'reply':
        return this.res(req, `${id} answers (${n})`, n);
      case 'mention':
        return this.res(req, `@${other} what do you think? (${id} ${n})`, n);
      case 'pass':
        return this.res(req, '[PASS]', n);
      case 'react':
        // A voluntary turn reacts to the round's message (an edit and a note with the outcome); an addressed one answers with the emoji.
        return this.res(req, `[REACT ${n % 2 ? '🎉' : '👍'}]`, n);
      case 'empty':
        return this.res(req, '', n);
      case 'fail':
        throw new LlmError('model overloaded', 'overloaded', true);
      case 'cut':
        return { ...this.res(req, `${id} starts a long answer (${n}) and`, n), cut: 'max_tokens' };
      case 'hold': {
        const first = `${id} is thinking (${n})`;
        req.onDelta?.(first);
        req.onActivity?.();
        if (this.holding) {
          await new Promise<void>((resolve, reject) => {
            const done = () => {
              this.held.delete(done);
              req.signal?.removeEventListener('abort', aborted);
              resolve();
            };
            const aborted = () => {
              this.held.delete(done);
              reject(req.signal?.reason);
            };
            if (req.signal?.aborted) return aborted();
            req.signal?.addEventListener('abort', aborted, { once: true });
            this.held.add(done);
          });
        }
        return this.res(req, `${first}, and says so`, n);
      }
    }
  }

  private res(req: LlmRequest, text: string, n: number): LlmResponse {
    return {
      text,
      model: req.model,
      usage: { inputTokens: 10 + (n % 5), outputTokens: Math.ceil(text.length / 4), cacheReadTokens: n % 3, cacheWriteTokens: 0 },
      // Priced and unpriced calls both (an unpriced one counts in `unpricedCalls`).
      costUsd: n % 3 === 0 ? null : 0.0001 * (n + 1),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs

type Input =
  | { k: 'say'; to: AgentId[]; all: boolean; empty: boolean; wait: boolean }
  | { k: 'burst'; count: number; to: AgentId[] }
  | { k: 'dup'; of: number; together: boolean }
  | { k: 'config'; key: string; value: string; ephemeral: boolean }
  | { k: 'mute' | 'unmute' | 'add' | 'remove'; agent: AgentId; ephemeral: boolean }
  | { k: 'reset'; agent: AgentId | null; ephemeral: boolean }
  | { k: 'ask'; agent: AgentId; text: boolean }
  | { k: 'stop' }
  | { k: 'regenerate' }
  | { k: 'release' }
  | { k: 'tick'; ms: number }
  | { k: 'join' | 'leave'; agent: AgentId }
  /** The author edits or deletes one of their messages still in memory (`of` picks which). */
  | { k: 'edit' | 'delete'; of: number }
  /** Someone adds (`on`) or takes back a reaction to any entry so far (`of` picks its seq). */
  | { k: 'react'; of: number; emoji: string; who: string; on: boolean };

const agentArb = fc.constantFrom(...AGENT_IDS);
/** True with probability `p` (in hundredths). */
const chance = (p: number) => fc.integer({ min: 0, max: 99 }).map((x) => x < p * 100);
const CONFIG_VALUES: Record<string, string[]> = {
  reply_strategy: ['hybrid', 'mention_only', 'round_robin', 'selector'],
  max_agent_turns_per_message: ['0', '1', '3'],
  max_depth: ['0', '1', '2'],
  cooldown_seconds: ['0', '0', '5', '60'],
  max_voluntary_responders: ['0', '1', '2', '3'],
  sticky: ['true', 'false'],
  last_speaker: ['analyst', 'writer', 'critic', 'none'],
  execution: ['sequential', 'parallel'],
  voluntary_execution: ['sequential', 'parallel'],
  history_turns: ['2', '4', '6'],
  'budget.daily_tokens': ['80', '400', 'none'],
  'budget.daily_usd': ['0.002', 'none'],
  agent_reply_timeout_seconds: ['5', '30'],
};
const configArb = fc
  .constantFrom(...Object.keys(CONFIG_VALUES))
  .chain((key) => fc.record({ k: fc.constant('config' as const), key: fc.constant(key), value: fc.constantFrom(...CONFIG_VALUES[key]!), ephemeral: fc.boolean() }));

const inputArb: fc.Arbitrary<Input> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ k: fc.constant('say' as const), to: fc.subarray([...AGENT_IDS]), all: chance(0.15), empty: chance(0.05), wait: chance(0.7) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('burst' as const), count: fc.integer({ min: 2, max: 12 }), to: fc.subarray([...AGENT_IDS], { maxLength: 1 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('dup' as const), of: fc.nat(40), together: fc.boolean() }) },
  { weight: 3, arbitrary: configArb },
  { weight: 2, arbitrary: fc.record({ k: fc.constantFrom('mute' as const, 'unmute' as const, 'add' as const, 'remove' as const), agent: agentArb, ephemeral: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('reset' as const), agent: fc.option(agentArb, { nil: null }), ephemeral: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('ask' as const), agent: agentArb, text: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ k: 'stop' as const }) },
  { weight: 1, arbitrary: fc.constant({ k: 'regenerate' as const }) },
  { weight: 2, arbitrary: fc.constant({ k: 'release' as const }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('tick' as const), ms: fc.constantFrom(1_000, 6_000, 45_000, 6 * 60_000, 25 * 3_600_000) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constantFrom('join' as const, 'leave' as const), agent: agentArb }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constantFrom('edit' as const, 'edit' as const, 'delete' as const), of: fc.nat(40) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('react' as const), of: fc.nat(200), emoji: fc.constantFrom('👍', '🎉', '👀'), who: fc.constantFrom('Maya', 'Sam'), on: chance(0.7) }) },
);

const turnPlanArb = fc.constantFrom<TurnPlan>('reply', 'reply', 'mention', 'pass', 'pass', 'react', 'fail', 'empty', 'cut', 'hold');
const scriptArb: fc.Arbitrary<Script> = fc.record({
  turns: fc.record({
    analyst: fc.array(turnPlanArb, { minLength: 1, maxLength: 6 }),
    writer: fc.array(turnPlanArb, { minLength: 1, maxLength: 6 }),
    critic: fc.array(turnPlanArb, { minLength: 1, maxLength: 6 }),
  }),
  summaries: fc.array(fc.constantFrom<SummaryPlan>('ok', 'ok', 'fail'), { minLength: 1, maxLength: 3 }),
  selector: fc.array(fc.constantFrom('@writer', '@analyst @critic', 'NONE'), { minLength: 1, maxLength: 3 }),
});

interface Case {
  /** A room across chats (./live-equals-replay/rooms.ts), or the web room alone. */
  room: RoomCase | null;
  participants: AgentId[];
  group: Partial<GroupConfig>;
  checkpointEvery: number;
  script: Script;
  inputs: Array<Input | RoomInput>;
  /** Where the simulated crashes are, as fractions of the records written (0 ≤ f < 1). */
  crashes: Array<{ at: number; checkpoint: boolean }>;
}

/** Half the cases are rooms across chats, whose inputs are mixed in with the others. */
const caseArb: fc.Arbitrary<Case> = fc.option(roomCaseArb, { freq: 2 }).chain((room) => caseOf(room, room ? fc.oneof({ weight: 3, arbitrary: inputArb }, { weight: 2, arbitrary: roomInputArb }) : inputArb));

const caseOf = (room: RoomCase | null, input: fc.Arbitrary<Input | RoomInput>): fc.Arbitrary<Case> => fc.record({
  room: fc.constant(room),
  participants: fc.subarray([...AGENT_IDS], { minLength: 1 }),
  group: fc.record({
    history_turns: fc.constantFrom(2, 4, 6),
    reply_strategy: fc.constantFrom('hybrid' as const, 'hybrid' as const, 'mention_only' as const, 'round_robin' as const),
    max_voluntary_responders: fc.constantFrom(1, 2, 3),
    voluntary_execution: fc.constantFrom('sequential' as const, 'parallel' as const),
    budget: fc.constantFrom({ daily_usd: null, daily_tokens: null }, { daily_usd: null, daily_tokens: null }, { daily_usd: null, daily_tokens: 150 }, { daily_usd: 0.003, daily_tokens: null }),
  }),
  checkpointEvery: fc.constantFrom(2, 3, 5, 8, 256),
  script: scriptArb,
  inputs: fc.array(input, { minLength: 5, maxLength: 40, size: 'medium' }),
  crashes: fc.array(fc.record({ at: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), checkpoint: fc.boolean() }), { minLength: 1, maxLength: 3 }),
});

// ---------------------------------------------------------------------------------------------
// The state compared

interface GroupStateSnapshot {
  head: GroupHead;
  nextSeq: number;
  rounds: RoundRecord[];
  /** Dedupe memory in its order (the oldest are pruned first), with the time each key was noted. */
  seen: Array<[string, number]>;
  undelivered: TranscriptEntry[];
  /** The newest TRANSCRIPT_TAIL entries held in memory. */
  tail: TranscriptEntry[];
  sessions: SessionDoc[];
}

function stateOf(gm: GroupManager, id: string): GroupStateSnapshot {
  const g = gm.get(id);
  if (!g) throw new Error(`group ${id} is not loaded`);
  // Test-only read of a private field (see the top of the file).
  const sessions = [...g.sessions.values()].sort((a, b) => a.agentId.localeCompare(b.agentId));
  const head: GroupHead = { id: g.id, title: g.title, channel: g.channel, chatId: g.chatId, dmAgentId: g.dmAgentId, links: g.links, participants: g.participants, config: g.config, createdAt: g.createdAt, state: g.state };
  // Through JSON: `undefined` properties are what a store drops, never a difference.
  return JSON.parse(JSON.stringify({ head, nextSeq: g.nextSeq, rounds: g.rounds, seen: [...g.seen], undelivered: g.undelivered, tail: g.transcript.slice(-TRANSCRIPT_TAIL), sessions })) as GroupStateSnapshot;
}

/** The paths where two JSON values differ (at most a few), with both values. */
function differences(a: unknown, b: unknown, path = '', out: string[] = []): string[] {
  if (out.length >= 6 || isDeepStrictEqual(a, b)) return out;
  const show = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v).slice(0, 400));
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) {
      out.push(`${path || '(top)'}: length ${a.length} (live) vs ${b.length} (rebuilt); live=${show(a)} rebuilt=${show(b)}`);
      return out;
    }
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k, out);
    return out;
  }
  out.push(`${path || '(top)'}: live=${show(a)} rebuilt=${show(b)}`);
  return out;
}

/** Every entry the records carry, with the latest delivery outcome: what the store must serve. */
function transcriptOf(records: readonly GroupRecord[]): TranscriptEntry[] {
  const out = new Map<number, TranscriptEntry>();
  for (const rec of records) {
    for (const e of rec.entries ?? []) out.set(e.seq, structuredClone(e));
    for (const d of rec.delivery ?? []) {
      const e = out.get(d.seq);
      if (!e) continue;
      // A copy's outcome in another chat of a room (an outcome without ids keeps the copy's ids).
      if (d.chat) e.copies = { ...e.copies, [d.chat]: { ...e.copies?.[d.chat], delivery: d.delivery, ...(d.postedIds ? { ids: d.postedIds } : {}) } };
      else Object.assign(e, { delivery: d.delivery }, d.postedIds ? { postedIds: d.postedIds } : {});
    }
    // Written out here rather than with applyEntryEdit, so the stores are checked against the records.
    for (const ed of rec.edits ?? []) {
      const e = out.get(ed.seq);
      if (!e) continue;
      // Each edit is the entry's whole edit state: the text and when it changed, notes, reactions.
      if (ed.deleted) Object.assign(e, { text: '', deleted: true, deletedAt: ed.at });
      else if (ed.text !== undefined) e.text = ed.text;
      const editedAt = ed.deleted ? undefined : (ed.editedAt ?? (ed.text !== undefined ? ed.at : undefined));
      if (editedAt === undefined) delete e.editedAt;
      else e.editedAt = editedAt;
      if (ed.notes?.length) e.editNotes = [...ed.notes];
      if (ed.reactions?.length) e.reactions = structuredClone(ed.reactions);
      else delete e.reactions;
    }
  }
  return JSON.parse(JSON.stringify([...out.values()].sort((a, b) => a.seq - b.seq))) as TranscriptEntry[];
}

async function readAll(store: Store, id: string): Promise<TranscriptEntry[]> {
  const out: TranscriptEntry[] = [];
  for (let after = 0; ; ) {
    const page = await store.readEntries(id, { afterSeq: after, limit: 500 });
    if (page.length === 0) break;
    out.push(...page);
    after = page.at(-1)!.seq;
  }
  return JSON.parse(JSON.stringify(out)) as TranscriptEntry[];
}

// ---------------------------------------------------------------------------------------------
// The stores

/** Where one group's data lives; `open()` is a Store over it as a fresh process opens it. */
interface Place {
  open(): Store;
  dispose(): Promise<void>;
}

interface StoreKind {
  name: string;
  /** An empty place for group `id` (`crash`: for a rebuild from the first k records). */
  place(id: string, crash: boolean): Place;
  /** Crash points checked per case: the generated ones, then evenly spread ones. */
  crashPoints: number;
  runs: number;
}

function closing(make: () => Store, cleanup: () => Promise<void> = async () => undefined): Place {
  const opened: Store[] = [];
  return {
    open() {
      const s = make();
      opened.push(s);
      return s;
    },
    async dispose() {
      for (const s of opened) await s.close().catch(() => undefined);
      await cleanup();
    },
  };
}

const memoryKind: StoreKind = {
  name: 'memory store',
  crashPoints: 12,
  runs: 60,
  place() {
    // One MemoryStore is the "disk"; a reopen is a new instance over the same lines.
    const disk = new MemoryStore();
    return closing(() => {
      const s = new MemoryStore();
      (s as unknown as { logs: Map<string, string[]> }).logs = disk.logs;
      (s as unknown as { checkpoints: Map<string, string> }).checkpoints = disk.checkpoints;
      return s;
    });
  },
};

const fileKind: StoreKind = {
  name: 'file store',
  crashPoints: 3,
  runs: 40,
  place() {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-lr-'));
    return closing(
      () => new FileStore({ dataDir: dir, fsync: 'never', logger: silentLogger }),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
  },
};

function pgKind(live: pg.Pool, crash: pg.Pool): StoreKind {
  return {
    name: 'PostgreSQL store',
    crashPoints: 2,
    runs: 30,
    // A case's group lives in one database and a rebuild from its first k records in a second
    // one; each place's rows are removed once checked, so a store opened there finds that group
    // alone (and every case has its own group id besides).
    place(id, isCrash) {
      const pool = isCrash ? crash : live;
      return closing(
        () => new PostgresStore({ pool, logger: silentLogger }),
        async () => {
          for (const t of ['chorus_records', 'chorus_entries', 'chorus_checkpoints']) await pool.query(`DELETE FROM ${t} WHERE group_id = $1`, [id]);
          await pool.query('DELETE FROM chorus_groups WHERE id = $1', [id]);
        },
      );
    },
  };
}

/** A Store that passes everything through and notes, at each append, the record and the live state. */
class Tap implements Store {
  readonly records: GroupRecord[] = [];
  readonly states: GroupStateSnapshot[] = [];
  readonly checkpoints: GroupCheckpoint[] = [];
  snapshot: (() => GroupStateSnapshot) | null = null;

  constructor(
    private readonly inner: Store,
    private readonly id: string,
  ) {}

  open() {
    return this.inner.open();
  }
  append(groupId: string, record: GroupRecord): Promise<void> {
    if (groupId === this.id) {
      // GroupManager.commit calls this synchronously with the record just made: memory is now
      // exactly the state as of this record.
      this.records.push(structuredClone(record));
      this.states.push(this.snapshot!());
    }
    return this.inner.append(groupId, record);
  }
  reopen(groupId: string): Promise<StoredGroup> {
    return this.inner.reopen(groupId);
  }
  putFile(meta: Attachment, bytes: Uint8Array): Promise<void> {
    return this.inner.putFile(meta, bytes);
  }
  readFile(id: string) {
    return this.inner.readFile(id);
  }
  checkpoint(groupId: string, cp: GroupCheckpoint): Promise<void> {
    // Serialised by the store at once: a clone now is what it writes.
    if (groupId === this.id) this.checkpoints.push(structuredClone(cp));
    return this.inner.checkpoint(groupId, cp);
  }
  readEntries(groupId: string, range: { beforeSeq?: number | undefined; afterSeq?: number | undefined; limit: number }) {
    return this.inner.readEntries(groupId, range);
  }
  searchEntries(req: Parameters<Store['searchEntries']>[0]) {
    return this.inner.searchEntries(req);
  }
  checkWritable() {
    return this.inner.checkWritable();
  }
  health() {
    return this.inner.health();
  }
  flush() {
    return this.inner.flush();
  }
  close() {
    return this.inner.close();
  }
}

// ---------------------------------------------------------------------------------------------
// One case

let caseNo = 0;
const AGENTS: AgentDef[] = agentsFromConfig(CONFIG);
const AGENT_MAP: ReadonlyMap<string, AgentDef> = new Map(AGENTS.map((a) => [a.id, a]));

const turn = () => new Promise<void>((r) => setImmediate(r));

interface Rig {
  id: string;
  world: RoomWorld;
  quiesce(): Promise<boolean>;
  router: GroupRouter;
  llm: ScriptLlm;
  clock: FakeClock;
  tap: Tap;
  defaults: GroupConfig;
  sent: InboundMessage[];
  n: number;
}

/**
 * Wait until the router is idle, or stuck on something only the test moves: a held model answer,
 * or a cooldown sleeping on the fake clock (every model call in flight is held). True when idle.
 */
async function quiesce(r: Rig): Promise<boolean> {
  let idle = false;
  void r.router.idle().then(() => (idle = true));
  // A watchdog on the wall clock (nothing waits on it): a router that neither settles nor waits.
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    await turn();
    if (idle) return true;
    const blocked = r.llm.active === r.llm.held.size && (r.llm.held.size > 0 || r.clock.waiting > 0);
    if (!blocked) continue;
    // Let the writes already made land, then look again.
    await r.router.groups.settle();
    for (let i = 0; i < 5; i++) await turn();
    if (idle) return true;
    if (r.llm.active === r.llm.held.size && (r.llm.held.size > 0 || r.clock.waiting > 0)) return false;
  }
  throw new Error('the router neither became idle nor waited on the test');
}

function message(r: Rig, text: string, extra: Partial<InboundMessage> = {}): InboundMessage {
  return { channel: 'web', chatId: r.id, messageId: `m${++r.n}`, author: { id: 'maya', name: 'Maya' }, text, ts: r.clock.now(), clientTag: 'maya-browser', ...extra };
}

async function step(r: Rig, inp: Input | RoomInput): Promise<void> {
  const { router } = r;
  const send = (text: string, extra: Partial<InboundMessage> = {}) => router.handle({ kind: 'message', message: message(r, text, extra) });
  switch (inp.k) {
    case 'say': {
      const mentions = [...inp.to.map((a) => `@${a}`), ...(inp.all ? ['@all'] : [])].join(' ');
      const msg = message(r, inp.empty ? '   ' : `message ${r.n + 1} ${mentions}`.trim());
      r.sent.push(msg);
      await router.handle({ kind: 'message', message: msg });
      return;
    }
    case 'burst': {
      // Several people at once, nobody waiting for the agents: rounds queue up and are batched.
      const mention = inp.to.map((a) => ` @${a}`).join('');
      const msgs = Array.from({ length: inp.count }, () => message(r, `burst ${r.n + 1}${mention}`));
      r.sent.push(...msgs);
      await Promise.all(msgs.map((m) => router.handle({ kind: 'message', message: m })));
      return;
    }
    case 'dup': {
      const msg = r.sent.length ? r.sent[inp.of % r.sent.length]! : message(r, 'said twice');
      if (!r.sent.length) r.sent.push(msg);
      if (inp.together) await Promise.all([router.handle({ kind: 'message', message: { ...msg } }), router.handle({ kind: 'message', message: { ...msg } })]);
      else await router.handle({ kind: 'message', message: { ...msg } });
      return;
    }
    case 'config':
      await send(`/group config ${inp.key} ${inp.value}`, { ephemeral: inp.ephemeral });
      return;
    case 'mute':
    case 'unmute':
    case 'add':
    case 'remove':
      await send(`/group ${inp.k} ${inp.agent}`, { ephemeral: inp.ephemeral });
      return;
    case 'reset':
      await send(`/group reset${inp.agent ? ` ${inp.agent}` : ''}`, { ephemeral: inp.ephemeral });
      return;
    case 'ask':
      await send(inp.text ? `/ask ${inp.agent} what now?` : `/ask ${inp.agent}`);
      return;
    case 'stop':
      await send('/stop');
      return;
    case 'regenerate': {
      const g = router.groups.get(r.id);
      const latest = g?.transcript.filter((e) => e.kind === 'agent').at(-1);
      if (latest) await router.regenerate(r.id, latest.id);
      return;
    }
    case 'release':
      r.llm.release();
      return;
    case 'tick':
      await r.clock.advance(inp.ms);
      return;
    case 'edit':
    case 'delete': {
      const mine = router.groups.get(r.id)?.transcript.filter((e) => e.kind === 'human' && !e.deleted && !e.hiddenFromAgents) ?? [];
      const target = mine[inp.of % Math.max(1, mine.length)];
      if (!target) return;
      try {
        if (inp.k === 'edit') await router.gateway.editMessage!(r.id, target.id, { clientTag: 'maya-browser', text: `edited ${r.n++} ${target.text}`.slice(0, 200), maxChars: 8000 });
        else await router.gateway.deleteMessage!(r.id, target.id, { clientTag: 'maya-browser' });
      } catch (err) {
        if (!(err instanceof UserError)) throw err;
      }
      return;
    }
    case 'react': {
      const g = router.groups.get(r.id);
      if (!g || g.nextSeq <= 1) return;
      const seq = 1 + (inp.of % (g.nextSeq - 1));
      try {
        await router.gateway.react(r.id, `${r.id}.${seq}`, { emoji: inp.emoji, by: { key: `key-${inp.who}`, name: inp.who }, on: inp.on });
      } catch (err) {
        if (!(err instanceof UserError)) throw err;
      }
      return;
    }
    case 'join':
    case 'leave':
      try {
        await router.handle({ kind: 'membership', chat: { channel: 'web', chatId: r.id }, change: inp.k === 'join' ? { joined: [inp.agent], autoCreate: false } : { left: [inp.agent], autoCreate: false } });
      } catch (err) {
        if (!(err instanceof UserError)) throw err;
      }
      return;
    default:
      await r.world.step(r, inp);
  }
}

/** Release everything, stop holding, and move the clock until the router is idle. */
async function drain(r: Rig): Promise<void> {
  r.llm.holding = false;
  for (let i = 0; i < 100; i++) {
    r.llm.release();
    if (await quiesce(r)) break;
    await r.clock.advance(10 * 60_000);
  }
  await r.router.idle();
  await r.world.deliverAll(r);
  await r.router.groups.settle();
  await r.tap.flush();
}

/** A fresh GroupManager rebuilds the group from `store` (as a start, or a reload, would). */
async function rebuild(store: Store, id: string, defaults: GroupConfig, now: number): Promise<GroupStateSnapshot | null> {
  const gm = new GroupManager(store, AGENT_MAP, defaults, () => now, silentLogger);
  await gm.load();
  return gm.get(id) ? stateOf(gm, id) : null;
}

function compare(what: string, live: GroupStateSnapshot, rebuilt: GroupStateSnapshot | null, problems: string[]): void {
  if (!rebuilt) {
    problems.push(`${what}: the group was not rebuilt at all`);
    return;
  }
  for (const d of differences(live, rebuilt)) problems.push(`${what}: ${d}`);
}

/** The store serves the transcript the records carry; memory's newest entries are its newest. */
function compareTranscript(what: string, served: TranscriptEntry[], records: readonly GroupRecord[], live: GroupStateSnapshot, problems: string[]): void {
  const expected = transcriptOf(records);
  for (const d of differences(expected, served)) problems.push(`${what}: transcript served by the store vs the records' entries: ${d.replace('(live)', '(records)').replace('live=', 'records=').replace('(rebuilt)', '(store)').replace('rebuilt=', 'store=')}`);
  const newest = served.slice(-TRANSCRIPT_TAIL);
  for (const d of differences(live.tail, newest)) problems.push(`${what}: newest transcript entries in memory vs served by the store: ${d}`);
}

/** Which records to crash after: the generated points first, then spread evenly; each at most once. */
function crashPoints(c: Case, N: number, count: number): Array<{ k: number; checkpoint: boolean }> {
  const out = new Map<number, boolean>();
  for (const x of c.crashes) if (out.size < count) out.set(1 + Math.floor(x.at * N), x.checkpoint);
  // The last record always; the rest spread over the log.
  if (out.size < count && !out.has(N)) out.set(N, true);
  for (let i = 0; out.size < Math.min(count, N) && i < N; i++) {
    const k = 1 + (Math.floor(((i + 0.5) * N) / count) % N);
    if (!out.has(k)) out.set(k, i % 2 === 0);
  }
  return [...out].map(([k, checkpoint]) => ({ k, checkpoint }));
}

async function runCase(kind: StoreKind, c: Case): Promise<void> {
  const id = `lr-${process.pid}-${++caseNo}`;
  const places: Place[] = [];
  const place = (crash: boolean) => {
    const p = kind.place(id, crash);
    places.push(p);
    return p;
  };
  let router: GroupRouter | null = null;
  try {
    const livePlace = place(false);
    const tap = new Tap(livePlace.open(), id);
    const clock = new FakeClock();
    const llm = new ScriptLlm(c.script);
    const defaults: GroupConfig = { ...CONFIG.group_defaults, cooldown_seconds: 0, ...c.group };
    const world = new RoomWorld(id, c.room);
    router = new GroupRouter({
      agents: AGENTS,
      aliases: {},
      groupDefaults: defaults,
      limits: { user_messages_per_minute: 10_000, max_message_chars: 8000, reactions_per_minute: 10_000, bot_pair_events_per_minute: 2 },
      llm,
      llmSettings: { model: 'test-model', summaryModel: 'test-small', maxTokens: 256, maxConcurrency: 8, contextTokens: null, defaultContextTokens: 200_000 },
      validateConfig: validateGroupConfig,
      store: tap,
      clock,
      logger: silentLogger,
      checkpointEvery: c.checkpointEvery,
      // A room declared in the config with its other chats is made (and linked) at start.
      declaredGroups: world.declared(c.participants),
    });
    const groups = router.groups;
    tap.snapshot = () => stateOf(groups, id);
    for (const channel of world.channels()) router.addChannel(channel);
    await router.start();
    for (const channel of world.channels()) await channel.start(router);
    if (!groups.get(id)) await router.gateway.createGroup({ title: 'Room', participants: c.participants, id });
    const rig: Rig = { id, world, router, llm, clock, tap, defaults, sent: [], n: 0, quiesce: () => quiesce(rig) };

    for (const inp of c.inputs) {
      await step(rig, inp);
      // A message "sent while a round runs": the next input comes without waiting.
      if (!('wait' in inp && !inp.wait)) await quiesce(rig);
    }
    await drain(rig);

    const problems: string[] = [];
    const live = stateOf(groups, id);
    const N = tap.records.length;
    if (c.room) tally(tap.records);
    // At rest, memory is the state of the last record: nothing was changed without being written.
    for (const d of differences(live, tap.states[N - 1])) problems.push(`at rest vs as of the last record ${N}: ${d.replace('(rebuilt)', '(at the record)').replace('rebuilt=', 'at-record=')}`);

    // 1. A restart from the store as it is (checkpoint + log, through the real store).
    {
      const store = livePlace.open();
      compare(`restart after all ${N} records`, live, await rebuild(store, id, defaults, clock.now()), problems);
      compareTranscript(`restart after all ${N} records`, await readAll(store, id), tap.records, live, problems);
    }

    // 2. A crash after record k: the store kept records 1..k (and maybe the newest checkpoint ≤ k).
    for (const { k, checkpoint } of crashPoints(c, N, kind.crashPoints)) {
      const p = place(true);
      const writer = p.open();
      await writer.open();
      const records = tap.records.slice(0, k);
      await Promise.all(records.map((rec) => writer.append(id, structuredClone(rec))));
      const cp = checkpoint ? tap.checkpoints.filter((x) => x.n <= k).at(-1) : undefined;
      if (cp) await writer.checkpoint(id, structuredClone(cp));
      await writer.flush();
      const reader = p.open();
      const what = `crash after record ${k} of ${N}${cp ? ` (checkpoint at ${cp.n})` : ''}`;
      const atK = tap.states[k - 1]!;
      compare(what, atK, await rebuild(reader, id, defaults, records.at(-1)!.ts), problems);
      compareTranscript(what, await readAll(reader, id), records, atK, problems);
      await p.dispose();
      places.splice(places.indexOf(p), 1);
    }
    if (problems.length > 0) throw new Error(`live and replayed state differ (${kind.name}, group ${id}):\n  ${problems.join('\n  ')}`);
  } finally {
    await router?.stop().catch(() => undefined);
    for (const p of places) await p.dispose();
  }
}

function property(kind: StoreKind) {
  const runs = RUNS ?? kind.runs;
  return async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, (c) => runCase(kind, c)),
      { numRuns: runs, seed: SEED, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
    );
  };
}

// ---------------------------------------------------------------------------------------------

const db = await testDatabase('live_replay');
const crashDb = db ? await testDatabase('live_replay_crash') : null;
const pools: pg.Pool[] = [];
function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 4 });
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

afterAll(async () => {
  if (process.env.CHORUS_PBT_STATS) console.log(`room cases (seed ${SEED}): ${JSON.stringify(Object.fromEntries(roomTally))}`);
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  for (const d of [db, crashDb]) await d?.drop().catch(() => undefined);
});

describe('live state equals the state replayed from the log', () => {
  it('in-memory test store', property(memoryKind), 300_000);
  it('file store', property(fileKind), 300_000);
  it.skipIf(!db)(`PostgreSQL store${db ? '' : ' (skipped: no PostgreSQL server could run here)'}`, async () => {
    const kind = pgKind(pool(db!.url), pool(crashDb!.url));
    // Both databases get their tables before the first case.
    for (const url of [db!.url, crashDb!.url]) {
      const s = new PostgresStore({ url, logger: silentLogger });
      await s.open();
      await s.close();
    }
    await property(kind)();
  }, 300_000);
});
