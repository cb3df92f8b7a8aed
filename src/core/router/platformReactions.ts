/**
 * People's reactions reported by a platform (Telegram `message_reaction`, Discord reaction events):
 * the platform names the message by its own id, so the entry it is has to be found — a person's
 * message by `platformMessageId`, an agent's or a notice by the ids its post got (`postedIds`) —
 * in memory first, then back through the log a page at a time, as far as `LOOKBACK` entries.
 */
import type { Logger } from '../ports.js';
import type { GatewayApi } from '../gatewayApi.js';
import type { GroupDoc } from '../records.js';
import type { PlatformReaction, TranscriptEntry } from '../types.js';
import { UserError, describeError } from '../errors.js';
import type { GroupManager } from '../groups/GroupManager.js';

/** How far back (entries) a reaction's message is looked for; older messages' reactions are not kept. */
export const LOOKBACK = 2000;
const PAGE = 200;

export interface PlatformReactionDeps {
  groups: GroupManager;
  gateway: GatewayApi;
  logger: Logger;
}

export async function platformReaction(d: PlatformReactionDeps, r: PlatformReaction): Promise<void> {
  const g = d.groups.find(r.channel, r.chatId, r.dmAgentId);
  if (!g || g.state.archived) return;
  const entry = await entryOfPost(d.groups, g, r.platformMessageId);
  if (!entry) {
    d.logger.debug({ group: g.id, message: r.platformMessageId }, 'a reaction on a message Chorus does not know (or older than it looks back); not kept');
    return;
  }
  try {
    await d.gateway.react(g.id, entry.id, { emoji: r.emoji, by: { key: `${r.channel}:${r.by.id}`, name: r.by.name }, on: r.on });
  } catch (err) {
    // A reaction Chorus does not take (a custom emoji, a flood past the rate limit, a deleted
    // message) is the platform's to show, not ours to keep; a store failure is the caller's.
    if (!(err instanceof UserError)) throw err;
    d.logger.debug({ group: g.id, entry: entry.id, emoji: r.emoji, err: describeError(err) }, 'reaction not kept');
  }
}

function isPost(e: TranscriptEntry, id: string): boolean {
  return e.platformMessageId === id || (e.postedIds?.includes(id) ?? false);
}

async function entryOfPost(groups: GroupManager, g: GroupDoc, id: string): Promise<TranscriptEntry | undefined> {
  const held = g.transcript.findLast((e) => isPost(e, id));
  if (held) return held;
  let before = g.transcript[0]?.seq;
  for (let looked = 0; before !== undefined && before > 1 && looked < LOOKBACK; looked += PAGE) {
    const page = await groups.page(g, { before, limit: PAGE });
    const found = page.entries.findLast((e) => isPost(e, id));
    if (found) return found;
    if (!page.hasMore || page.entries.length === 0) return undefined;
    before = page.entries[0]!.seq;
  }
  return undefined;
}
