/**
 * A delivery outcome applied to one entry — by `evolve` to the entries held in memory, and by the
 * stores to the entries they read back, so both give the same: the home chat's post (`delivery` / `postedIds`), or, with `chat`, that chat's copy
 * alone (`copies[chat]`), so an outcome of a copy never reads as the entry's home post.
 */
import type { DeliveryOutcome } from '../records.js';
import type { TranscriptEntry } from '../types.js';

export function applyOutcome(e: TranscriptEntry, d: DeliveryOutcome): void {
  if (d.chat) {
    // An outcome without ids keeps the ids an earlier one gave, and which identity posted them.
    const posted = { ...(d.postedIds ? { ids: d.postedIds } : {}), ...(d.via ? { via: d.via } : {}) };
    e.copies = { ...e.copies, [d.chat]: { ...e.copies?.[d.chat], delivery: d.delivery, ...posted } };
    return;
  }
  e.delivery = d.delivery;
  if (d.postedIds) e.postedIds = d.postedIds;
}
