/**
 * The log's record and checkpoint schema, shared by both stores: what a store accepts when it
 * reads a record or a checkpoint back. Everything is validated before it reaches the core, so data
 * of the wrong shape is reported by name instead of crashing the daemon or being written over, and
 * data of a newer Chorus is refused whole rather than misread.
 */
import { z } from 'zod';
import type { GroupChange, GroupCheckpoint, GroupHead, GroupRecord, RoundRecord, SessionDelta } from '../core/records.js';
import { StoreFormatError } from '../core/errors.js';

export const RECORD_VERSION = 2;
export const CHECKPOINT_VERSION = 2;

const usage = z.object({
  calls: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  cacheWriteTokens: z.number(),
  costUsd: z.number(),
  unpricedCalls: z.number().optional(),
});

/** A file an entry carries (its bytes are kept apart, by id); loose so later fields survive a read. */
const attachment = z.looseObject({
  id: z.string(),
  name: z.string(),
  type: z.string(),
  size: z.number(),
  sha256: z.string(),
  width: z.number().optional(),
  height: z.number().optional(),
});

const chatTurn = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  // The files a user turn was sent with in full, and who shared each.
  attachments: z.array(attachment.extend({ from: z.string() })).optional(),
});

const reaction = z.object({ emoji: z.string(), by: z.string(), byKey: z.string(), at: z.number() });

// Rooms across chats: what the log keeps of linked chats, copies and edits still to carry. Checked,
// because the core walks them (a copy that is not an object would crash a replay); loose where a
// later Chorus may add fields that must survive a read.
const chatAddress = z.looseObject({ channel: z.enum(['telegram', 'discord', 'web']), chatId: z.string() });
const linkedChat = chatAddress.extend({ title: z.string().optional(), at: z.number() });
const relayedAuthor = z.looseObject({ name: z.string(), platform: z.enum(['telegram', 'discord', 'web']), kind: z.enum(['person', 'bot']), avatarUrl: z.string().optional() });
const postedBy = z.union([z.object({ agentId: z.string() }), z.object({ relayed: relayedAuthor }), z.object({ system: z.literal(true) })]);
const carryItem = z.looseObject({ seq: z.number(), chat: z.string(), ids: z.array(z.string()), by: postedBy, via: z.string().optional(), at: z.number(), text: z.string().optional(), deleted: z.literal(true).optional() });
const chatCopy = z.looseObject({ delivery: z.enum(['pending', 'posted', 'failed']), ids: z.array(z.string()).optional(), synced: z.number().optional(), via: z.string().optional() });
const linkCode = z.looseObject({ code: z.string(), until: z.number(), from: z.string() });

const entry = z.looseObject({
  id: z.string(),
  seq: z.number().int().positive(),
  kind: z.enum(['human', 'agent', 'system', 'decision', 'tool']),
  ts: z.number(),
  authorId: z.string(),
  authorName: z.string(),
  text: z.string(),
  // An undelivered entry in a checkpoint may carry reactions already.
  reactions: z.array(reaction).optional(),
  reactionOf: z.object({ id: z.string(), emoji: z.string(), by: z.string() }).optional(),
  attachments: z.array(attachment).optional(),
  origin: chatAddress.optional(),
  copies: z.record(z.string(), chatCopy).optional(),
});

const dayUsage = z.looseObject({
  day: z.string(),
  tokens: z.number(),
  costUsd: z.number(),
  costUnknown: z.boolean(),
  warned: z.boolean(),
  refused: z.boolean(),
});

// Loose, like the head around it: a state field this schema does not list must survive a read,
// not be dropped silently (replay must give back the state that was written).
const state = z.looseObject({
  muted: z.array(z.string()),
  lastSpoke: z.record(z.string(), z.number()),
  sticky: z.string().nullable(),
  rrIndex: z.number(),
  archived: z.boolean(),
  usage: z.record(z.string(), usage),
  repliedUpTo: z.record(z.string(), z.number()).optional(),
  today: dayUsage.optional(),
  tools: z.array(z.lazy(() => toolCall)).optional(),
  carry: z.array(carryItem).optional(),
  linkCodes: z.array(linkCode).optional(),
});

const toolOutcome = z.enum(['ok', 'error', 'timeout', 'unavailable', 'denied', 'interrupted', 'cancelled']);

const toolCall = z.looseObject({
  id: z.string(),
  turn: z.string(),
  roundId: z.string(),
  agentId: z.string(),
  step: z.number().int().min(0),
  stepText: z.string(),
  callId: z.string(),
  name: z.string(),
  server: z.string(),
  tool: z.string(),
  input: z.record(z.string(), z.unknown()),
  readOnly: z.boolean(),
  idempotent: z.boolean(),
  approval: z.enum(['none', 'waiting', 'approved', 'denied', 'expired']),
  approvers: z.enum(['admins', 'anyone']).optional(),
  deadline: z.number().optional(),
  asked: z.literal(true).optional(),
  decidedBy: z.string().optional(),
  started: z.number().int().min(0),
  result: z.object({ outcome: toolOutcome, content: z.string(), bytes: z.number(), attachments: z.array(attachment).optional() }).optional(),
  at: z.number(),
});

const head = z.looseObject({
  id: z.string(),
  title: z.string(),
  channel: z.enum(['telegram', 'discord', 'web']),
  chatId: z.string(),
  links: z.array(linkedChat).optional(),
  participants: z.array(z.string()),
  // Keys are checked by the core against the current defaults; old files may lack new keys.
  config: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
  state,
});

const round = z.looseObject({
  id: z.string(),
  triggerIds: z.array(z.string()),
  addressed: z.array(z.string()),
  forced: z.boolean(),
  planned: z.boolean(),
  queue: z.array(z.looseObject({ agentId: z.string(), reason: z.string(), depth: z.number() })),
  asked: z.array(z.string()),
  capped: z.number(),
  voluntary: z.number(),
});

const session = z.object({
  groupId: z.string(),
  agentId: z.string(),
  history: z.array(chatTurn),
  cursor: z.number(),
  summary: z.string().nullable(),
  usage,
});

const sessionDelta = z.object({
  agentId: z.string(),
  reset: z.literal(true).optional(),
  drop: z.number().int().min(0).optional(),
  append: z.array(chatTurn).optional(),
  cursor: z.number(),
  summary: z.string().nullable(),
  usage,
});

// `chat`: the outcome of a copy in another chat of the room; absent: the home chat's post.
const delivery = z.object({ seq: z.number(), delivery: z.enum(['posted', 'failed']), postedIds: z.array(z.string()).optional(), chat: z.string().optional(), via: z.string().optional() });


// Each edit is an entry's whole edit state (records.ts): text, when it was edited, notes, reactions.
const edit = z.object({
  seq: z.number(),
  text: z.string().optional(),
  editedAt: z.number().optional(),
  deleted: z.literal(true).optional(),
  at: z.number(),
  notes: z.array(z.number()).optional(),
  reactions: z.array(reaction).optional(),
});

const usageOfCall = z.object({ inputTokens: z.number(), outputTokens: z.number(), cacheReadTokens: z.number(), cacheWriteTokens: z.number() });

const change = z.discriminatedUnion('t', [
  z.object({ t: z.literal('head'), head }),
  z.object({ t: z.literal('join'), agentId: z.string() }),
  z.object({ t: z.literal('leave'), agentId: z.string() }),
  z.object({ t: z.literal('config'), config: z.record(z.string(), z.unknown()) }),
  z.object({ t: z.literal('mute'), agentId: z.string(), muted: z.boolean() }),
  z.object({ t: z.literal('sticky'), agentId: z.string().nullable() }),
  z.object({ t: z.literal('rotation'), next: z.number().int().min(0) }),
  z.object({ t: z.literal('spoke'), agentId: z.string(), at: z.number(), seenUpTo: z.number().optional() }),
  z.object({ t: z.literal('usage'), key: z.string(), at: z.number(), usage: usageOfCall, costUsd: z.number().nullable().optional() }),
  z.object({ t: z.literal('budget-notice'), which: z.enum(['warned', 'refused']), at: z.number() }),
  z.object({ t: z.literal('archive') }),
  z.object({ t: z.literal('rekey'), chatId: z.string(), from: chatAddress.optional() }),
  z.object({ t: z.literal('link'), chat: linkedChat, code: z.string().optional() }),
  chatAddress.extend({ t: z.literal('unlink') }),
  z.object({ t: z.literal('link-code'), code: linkCode, at: z.number() }),
  z.object({ t: z.literal('carry'), items: z.array(carryItem) }),
  z.object({ t: z.literal('carried'), seq: z.number(), chat: z.string(), at: z.number() }),
  // A new round carries all of it, a change only what changed.
  z.object({ t: z.literal('round'), id: z.string(), set: round.partial() }),
  z.object({ t: z.literal('round-done'), id: z.string() }),
  sessionDelta.extend({ t: z.literal('session') }),
  z.object({ t: z.literal('seen'), key: z.string(), at: z.number() }),
  z.object({ t: z.literal('tool-call'), call: toolCall }),
  z.object({ t: z.literal('tool'), id: z.string(), set: toolCall.omit({ id: true }).partial() }),
  z.object({ t: z.literal('tools-done'), turn: z.string() }),
]);

export const recordSchema = z.object({
  v: z.literal(RECORD_VERSION),
  n: z.number().int().positive(),
  ts: z.number(),
  entries: z.array(entry).optional(),
  delivery: z.array(delivery).optional(),
  edits: z.array(edit).optional(),
  changes: z.array(change).optional(),
});

/** Records as the first log format wrote them: the group's head whole, rounds whole, session deltas. */
const recordV1Schema = z.object({
  v: z.literal(1),
  n: z.number().int().positive(),
  ts: z.number(),
  entries: z.array(entry).optional(),
  delivery: z.array(delivery).optional(),
  head: head.optional(),
  rounds: z.array(round).optional(),
  roundsDone: z.array(z.string()).optional(),
  sessions: z.array(sessionDelta).optional(),
  seen: z.array(z.string()).optional(),
});

export const checkpointSchema = z.object({
  version: z.literal(CHECKPOINT_VERSION),
  n: z.number().int().min(0),
  head,
  nextSeq: z.number().int().positive(),
  rounds: z.array(round),
  sessions: z.array(session),
  seen: z.array(z.tuple([z.string(), z.number()])),
  undelivered: z.array(entry),
});

/** The first problem of a failed parse, as "path: message". */
export function firstIssue(err: z.ZodError): string {
  const i = err.issues[0];
  return i ? `${i.path.join('.') || '(top)'}: ${i.message}` : 'invalid';
}

/**
 * A record read back (`json`, parsed): the record, or why it is damaged (the caller names it and
 * skips it). Throws StoreFormatError for a record of a newer version; `where` names it
 * ("<file> line 3", "group g record 3"), `version` is where the store keeps it.
 */
export function parseRecord(json: unknown, where: string, version: unknown = (json as { v?: unknown } | null)?.v): { record: GroupRecord } | { problem: string } {
  if (typeof version === 'number' && version > RECORD_VERSION) throw new StoreFormatError(`${where} was written by a newer Chorus (record version ${version}); this version reads ${RECORD_VERSION}`);
  if (version === 1) {
    const old = recordV1Schema.safeParse(json);
    return old.success ? { record: upgradeV1(old.data as unknown as RecordV1) } : { problem: firstIssue(old.error) };
  }
  const res = recordSchema.safeParse(json);
  return res.success ? { record: res.data as unknown as GroupRecord } : { problem: firstIssue(res.error) };
}

interface RecordV1 {
  v: 1;
  n: number;
  ts: number;
  entries?: GroupRecord['entries'];
  delivery?: GroupRecord['delivery'];
  head?: GroupHead;
  rounds?: RoundRecord[];
  roundsDone?: string[];
  sessions?: SessionDelta[];
  seen?: string[];
}

/**
 * A record of the first format as the same change list: the head set whole, each round set whole,
 * finished rounds, session deltas and dedupe keys (as of the record's time), in the order that
 * format applied them.
 */
function upgradeV1(r: RecordV1): GroupRecord {
  const changes: GroupChange[] = [
    ...(r.head ? [{ t: 'head' as const, head: r.head }] : []),
    ...(r.seen ?? []).map((key) => ({ t: 'seen' as const, key, at: r.ts })),
    ...(r.rounds ?? []).map((round) => ({ t: 'round' as const, id: round.id, set: round })),
    ...(r.roundsDone ?? []).map((id) => ({ t: 'round-done' as const, id })),
    ...(r.sessions ?? []).map((d) => ({ t: 'session' as const, ...d })),
  ];
  return { v: 2, n: r.n, ts: r.ts, ...(r.entries ? { entries: r.entries } : {}), ...(r.delivery ? { delivery: r.delivery } : {}), ...(changes.length ? { changes } : {}) };
}

/** A checkpoint read back, as `parseRecord`. A damaged one is only a lost shortcut. */
export function parseCheckpoint(json: unknown, where: string, version: unknown = (json as { version?: unknown } | null)?.version): { checkpoint: GroupCheckpoint } | { problem: string } {
  if (typeof version === 'number' && version > CHECKPOINT_VERSION) throw new StoreFormatError(`${where} was written by a newer Chorus (checkpoint version ${version}); this version reads ${CHECKPOINT_VERSION}`);
  const res = checkpointSchema.safeParse(json);
  return res.success ? { checkpoint: res.data as unknown as GroupCheckpoint } : { problem: firstIssue(res.error) };
}
