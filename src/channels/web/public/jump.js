// Jumping the feed to any message, however far back: a search result, or the message a reply
// refers to. A message already shown is scrolled to; otherwise the page of history around it is
// loaded into the feed (which keeps entries in seq order), and a "Show newer messages" line marks
// each hole left between what is loaded, filling it a page at a time when clicked.
import { api } from './api.js';
import { $, h, show } from './dom.js';

const AROUND = 50;

/** Scroll entry `id` into view and highlight it briefly; false when it is not in the feed. */
export function reveal(feed, id) {
  // An answer kept behind another one of the same bubble is switched to first.
  const el = feed.elementOf(id);
  if (!el || !el.isConnected) return false;
  feed.following = false;
  el.scrollIntoView({ block: 'center' });
  for (const old of feed.list.querySelectorAll('.msg.jumped')) old.classList.remove('jumped');
  el.classList.add('jumped');
  clearTimeout(el.jumpTimer);
  el.jumpTimer = setTimeout(() => el.classList.remove('jumped'), 2500);
  return true;
}

/**
 * Bring entry `id` of group `groupId` (the open one) into view, loading the page around it when
 * it is not shown. `isCurrent()` says whether that group is still the open one when the page comes.
 */
export async function jumpTo(feed, groupId, id, isCurrent) {
  if (reveal(feed, id)) return true;
  const seq = Number(id.slice(id.lastIndexOf('.') + 1));
  if (!Number.isSafeInteger(seq) || seq < 1) return false;
  const page = await api('GET', `/api/groups/${encodeURIComponent(groupId)}/messages?around=${seq}&limit=${AROUND}`);
  if (!isCurrent()) return false;
  const oldest = feed.oldestSeq;
  feed.add(page.messages);
  // The page reaches further back than anything shown: "Load earlier" goes on from it.
  if (page.messages.length > 0 && (oldest === null || page.messages[0].seq <= oldest)) show($('#load-older'), page.hasMore);
  markGaps(feed, groupId, isCurrent);
  return reveal(feed, id);
}

/** A "Show newer messages" line after every loaded entry whose next seq is not loaded. */
export function markGaps(feed, groupId, isCurrent) {
  for (const old of feed.list.querySelectorAll('li.gap')) old.remove();
  // Notes for the agents are loaded too, never drawn: no hole where one sits.
  const seqs = [...feed.entries.values()].map((e) => e.seq).concat([...feed.noteSeqs]).sort((a, b) => a - b);
  for (let i = 0; i + 1 < seqs.length; i++) {
    const after = seqs[i];
    if (seqs[i + 1] <= after + 1) continue;
    const btn = h('button', { type: 'button', className: 'btn btn-small', text: 'Show newer messages' });
    // 'local': the feed treats it as a line between entries (no day of its own), like its other markers.
    const li = h('li', { className: 'gap local' }, btn);
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        // A page starting right after the hole's top: `around` its middle.
        const page = await api('GET', `/api/groups/${encodeURIComponent(groupId)}/messages?around=${after + AROUND}&limit=${AROUND * 2}`);
        if (!isCurrent()) return;
        feed.add(page.messages);
      } finally {
        btn.disabled = false;
      }
      markGaps(feed, groupId, isCurrent);
    });
    // Between the two entries; the list stays sorted by seq.
    li.dataset.seq = String(after + 0.75);
    feed.insert(li, after + 0.75);
  }
}
