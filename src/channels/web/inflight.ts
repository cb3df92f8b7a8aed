/**
 * Replies being written right now, kept from the live events so a page that connects or reloads
 * while an agent writes is told the text so far (and who is typing) before the next chunk. Without
 * it a reload showed the reply from the middle on, with no typing line and no Stop button.
 *
 * Memory only, and bounded: a reply is dropped once it is recorded (its message or decision
 * event, or a tool step of its agent), when its round is stopped, or when it has gone quiet; each reply keeps at most
 * `maxChars` characters (replies are bounded far below that by `llm.max_reply_bytes`: one
 * that outgrows it is simply no longer offered), and at most `maxReplies` are kept in all, the
 * ones quiet longest going first.
 */
import type { GatewayEvent } from '../../core/readModels.js';
import { BoundedSet } from '../../core/lib/BoundedMap.js';

/** What a page is sent on connecting: who is typing or considering, and the text so far of each reply in flight. */
export interface InFlightSnapshot {
  typing: string[];
  considering: string[];
  streams: Array<{ turnId: string; agentId: string; text: string }>;
}

export interface InFlightLimits {
  maxChars: number;
  maxReplies: number;
  /** A reply that has had no chunk for this long, with its agent no longer typing, is dropped. */
  quietMs: number;
  /** A reply with no chunk for this long is dropped whatever the typing says (a lost event). */
  staleMs: number;
}

const DEFAULT_LIMITS: InFlightLimits = { maxChars: 512 * 1024, maxReplies: 256, quietMs: 30_000, staleMs: 15 * 60_000 };

interface Reply {
  groupId: string;
  agentId: string;
  text: string;
  lastAt: number;
}

export class InFlightReplies {
  /** turnId → reply (turn ids name their round, so they are unique across groups too). */
  private readonly replies = new Map<string, Reply>();
  /** groupId → agents typing there. */
  private readonly typing = new Map<string, Set<string>>();
  /** groupId → agents thinking over a turn nobody asked them for. */
  private readonly considering = new Map<string, Set<string>>();
  /** turnIds whose reply outgrew `maxChars`: not offered again, and not restarted by later chunks. */
  private readonly overgrown: BoundedSet<string>;
  private readonly limits: InFlightLimits;

  constructor(
    limits: Partial<InFlightLimits> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.overgrown = new BoundedSet(this.limits.maxReplies);
  }

  /** Number of replies kept (tests, metrics). */
  get size(): number {
    return this.replies.size;
  }

  observe(ev: GatewayEvent): void {
    switch (ev.type) {
      case 'delta':
        return this.delta(ev.groupId, ev.agentId, ev.turnId, ev.text);
      case 'typing':
        return toggle(this.typing, ev.groupId, ev.agentId, ev.active);
      case 'considering':
        return toggle(this.considering, ev.groupId, ev.agentId, ev.active);
      case 'message':
      case 'decision': {
        const e = ev.entry;
        // A tool step or request ends what the agent was writing: the turn's next model call streams afresh.
        if ((e.kind === 'agent' || e.kind === 'tool') && e.agentId) this.end(ev.groupId, (r) => r.agentId === e.agentId);
        if (e.decision?.agentId) this.end(ev.groupId, (r) => r.agentId === e.decision!.agentId);
        if (e.decision?.type === 'stopped') this.end(ev.groupId, () => true);
        return;
      }
      case 'group':
        if (ev.action === 'dissolved') {
          this.end(ev.groupId, () => true);
          this.typing.delete(ev.groupId);
          this.considering.delete(ev.groupId);
        }
        return;
      default:
        return;
    }
  }

  /** Every group where an agent is typing now, and who (for the sidebar of a page that connects). */
  typingEverywhere(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [groupId, set] of this.typing) if (set.size > 0) out[groupId] = [...set];
    return out;
  }

  snapshot(groupId: string): InFlightSnapshot {
    this.prune();
    const streams: InFlightSnapshot['streams'] = [];
    for (const [turnId, r] of this.replies) if (r.groupId === groupId) streams.push({ turnId, agentId: r.agentId, text: r.text });
    return { typing: [...(this.typing.get(groupId) ?? [])], considering: [...(this.considering.get(groupId) ?? [])], streams };
  }

  private delta(groupId: string, agentId: string, turnId: string, text: string): void {
    if (this.overgrown.has(turnId)) return;
    let r = this.replies.get(turnId);
    if (!r) {
      this.prune();
      while (this.replies.size >= this.limits.maxReplies) this.replies.delete(this.replies.keys().next().value!);
      r = { groupId, agentId, text: '', lastAt: 0 };
      this.replies.set(turnId, r);
    }
    if (r.text.length + text.length > this.limits.maxChars) {
      this.replies.delete(turnId);
      // Remembered only while there are few (the oldest forgotten first); a reply this long is rare.
      this.overgrown.add(turnId);
      return;
    }
    r.text += text;
    r.lastAt = this.now();
    // Map order is insertion order: moving the reply to the end keeps the quietest first.
    this.replies.delete(turnId);
    this.replies.set(turnId, r);
  }

  private end(groupId: string, which: (r: Reply) => boolean): void {
    for (const [turnId, r] of this.replies) if (r.groupId === groupId && which(r)) this.replies.delete(turnId);
  }

  /** Drop the replies that went quiet (their end was never seen: a shutdown, a lost event). */
  private prune(): void {
    const now = this.now();
    for (const [turnId, r] of this.replies) {
      const quiet = now - r.lastAt;
      const typing = this.typing.get(r.groupId)?.has(r.agentId) ?? false;
      if (quiet > this.limits.staleMs || (!typing && quiet > this.limits.quietMs)) this.replies.delete(turnId);
    }
  }
}

/** Add or remove one agent in a group's set, keeping no empty sets. */
function toggle(sets: Map<string, Set<string>>, groupId: string, agentId: string, active: boolean): void {
  const set = sets.get(groupId) ?? new Set<string>();
  if (active) set.add(agentId);
  else set.delete(agentId);
  if (set.size > 0) sets.set(groupId, set);
  else sets.delete(groupId);
}
