// Reactions under people's and agents' messages: each emoji used so far with its count, this
// reader's own highlighted (aria-pressed), who reacted in the label and tooltip. A click on one
// toggles this browser's reaction (POST / DELETE); "Add a reaction" opens a picker of common emoji
// (emojipicker.js, fetched the first time it opens). The server answers with the message's whole
// list, and every open page hears of each change as an `edited` event (feed.applyEdit → sync).
// Whose reaction is whose goes by `byKey`: this browser's own is its client tag (identity.js).
// Refusals (too fast, too many emoji) show for a moment under the message.
import { api } from './api.js';
import { h } from './dom.js';
import { visibleName } from './entryview.js';
import { ensureName, isOwnReaction } from './identity.js';
import { openGroup, state, webWritable } from './state.js';

/** Names a label spells out before it counts the rest ("and 3 others"). */
const MAX_NAMES = 8;

/** The emoji of `list` in the order first used, each with its count, whether this reader is among them and the others' names. */
export function summarize(list) {
  const out = new Map();
  for (const r of Array.isArray(list) ? list : []) {
    if (!r || typeof r.emoji !== 'string' || !r.emoji) continue;
    let g = out.get(r.emoji);
    if (!g) out.set(r.emoji, (g = { emoji: r.emoji, count: 0, mine: false, names: [] }));
    g.count++;
    if (isOwnReaction(r)) g.mine = true;
    else g.names.push(visibleName(r.by));
  }
  return [...out.values()];
}

/** "You, Maya and Analyst reacted with 👍": a reaction's accessible name and tooltip. */
export function reactionLabel(g) {
  const names = g.mine ? ['You', ...g.names] : g.names;
  let who = names[0] || 'Someone';
  if (names.length > MAX_NAMES) who = `${names.slice(0, MAX_NAMES - 1).join(', ')} and ${names.length - MAX_NAMES + 1} others`;
  else if (names.length > 1) who = `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  return `${who} reacted with ${g.emoji}`;
}

export class Reactions {
  /** @param feed the Feed: its list (clicks), its entries and how it draws a change (applyEdit). */
  constructor({ feed }) {
    this.feed = feed;
    /** `entryId\nemoji` of the changes on their way to the server. */
    this.pending = new Set();
    /** The open picker ({ opener, close }), or null. */
    this.picker = null;
    this.pickerModule = null;
    // One listener for the whole feed, as for the actions menu.
    feed.list.addEventListener('click', (ev) => {
      const t = ev.target instanceof Element ? ev.target : null;
      const chip = t && t.closest('.reaction');
      if (chip) this.toggle(chip);
      const add = !chip && t && t.closest('.react-add');
      if (add) this.openPicker(add);
    });
  }

  /** The "add a reaction" button of a message's line. */
  addButton() {
    return h('button', { type: 'button', className: 'react-add', 'aria-haspopup': 'dialog', 'aria-expanded': 'false', 'aria-label': 'Add a reaction', title: 'Add a reaction', text: '☺+' });
  }

  /** The reactions under a message, or null while it has none. */
  bar(e) {
    const groups = summarize(e.reactions);
    if (groups.length === 0) return null;
    const bar = h('div', { className: 'reactions', role: 'group', 'aria-label': 'Reactions' });
    this.fill(bar, groups);
    return bar;
  }

  /** Draw `e`'s reactions again in its list item `li`, keeping the other buttons (and the focus) where they are. */
  sync(li, e) {
    const bubble = li.querySelector('.bubble');
    if (!bubble || !li.querySelector('.meta .react-add')) return;
    const groups = summarize(e.reactions);
    const bar = bubble.querySelector(':scope > .reactions');
    if (groups.length === 0) {
      if (!bar) return;
      const focused = bar.contains(document.activeElement);
      bar.remove();
      if (focused) li.querySelector('.meta .react-add').focus();
    } else if (!bar) bubble.insertBefore(this.bar(e), bubble.querySelector(':scope > .reaction-note, :scope > .details'));
    else this.fill(bar, groups);
    this.keepFollowing();
  }

  /** A line grew or shrank: a reader following the newest messages stays at the bottom. */
  keepFollowing() {
    if (this.feed.following) this.feed.followToBottom();
  }

  /** Make `bar` hold one button per emoji of `groups`, in order, then its own "add" button. */
  fill(bar, groups) {
    const focused = bar.contains(document.activeElement) ? document.activeElement : null;
    const old = new Map([...bar.querySelectorAll(':scope > .reaction')].map((b) => [b.dataset.emoji, b]));
    let next = bar.firstChild;
    for (const g of groups) {
      let b = old.get(g.emoji);
      old.delete(g.emoji);
      if (!b) b = h('button', { type: 'button', className: 'reaction', dataset: { emoji: g.emoji } }, h('span', { className: 'reaction-emoji', text: g.emoji }), h('span', { className: 'reaction-count' }));
      const label = reactionLabel(g);
      b.setAttribute('aria-pressed', String(g.mine));
      // The name starts with what the button shows, then says who.
      b.setAttribute('aria-label', `${g.emoji} ${g.count}: ${label}`);
      b.title = label;
      b.lastChild.textContent = String(g.count);
      if (b === next) next = next.nextSibling;
      else bar.insertBefore(b, next);
    }
    for (const b of old.values()) b.remove();
    let add = bar.querySelector(':scope > .react-add');
    if (!add) bar.append((add = this.addButton()));
    // A button moved or taken away while focused: the focus stays with it, or goes to "add".
    if (focused && document.activeElement !== focused) (focused.isConnected ? focused : add).focus();
  }

  /** Whether this page may react in the open group: one it may write to (state.js). */
  writable() {
    return webWritable(openGroup());
  }

  toggle(chip) {
    const id = chip.closest('[data-entry-id]')?.dataset.entryId;
    if (id && chip.dataset.emoji) this.react(id, chip.dataset.emoji, chip.getAttribute('aria-pressed') !== 'true');
  }

  /** Add (`on`) or take back this browser's `emoji` on entry `id` of the open group. */
  async react(id, emoji, on) {
    const groupId = state.currentId;
    const key = `${id}\n${emoji}`;
    if (!groupId || this.pending.has(key)) return;
    if (!this.writable()) {
      this.note(id, '⚠ Reactions can be added in web rooms only.');
      return;
    }
    this.pending.add(key);
    try {
      const name = await ensureName();
      if (!name) return;
      const before = this.feed.changesOf(id);
      const path = `/api/groups/${encodeURIComponent(groupId)}/messages/${encodeURIComponent(id)}/reactions`;
      const { message } = await api(on ? 'POST' : 'DELETE', path, { emoji, author_name: name });
      // The live event may have drawn it already, or a newer change since: the answer is drawn
      // only when no change of the message came meanwhile (the stream brings each in order).
      if (state.currentId === groupId && message && this.feed.changesOf(id) === before) this.feed.applyEdit({ id, reactions: message.reactions || [] });
    } catch (err) {
      if (state.currentId === groupId) this.refused(id, err);
    } finally {
      this.pending.delete(key);
    }
  }

  /** A refusal under the message for a moment: too fast (with the time to wait), too many emoji, not one emoji. */
  refused(id, err) {
    const body = (err && err.data && err.data.error) || {};
    const wait = Number(body.retryAfterSeconds);
    if (err && err.status === 429 && wait > 0) {
      this.note(id, null, wait);
      return;
    }
    const why = String((err && err.message) || 'that did not work');
    this.note(id, `⚠ Could not react: ${why}.`);
  }

  /** Show `text` under message `id` for a few seconds; with `wait`, "try again in N s", counting down. */
  note(id, text, wait = 0) {
    const bubble = this.feed.drawnElement(id)?.querySelector('.bubble');
    if (!bubble) return;
    bubble.querySelector(':scope > .reaction-note')?.remove();
    const el = h('p', { className: 'reaction-note', role: 'status' });
    bubble.insertBefore(el, bubble.querySelector(':scope > .details'));
    this.keepFollowing();
    if (!wait) {
      el.textContent = text;
      setTimeout(() => el.remove(), 6000);
      return;
    }
    // Read out once; the ticking copy is for the eyes only.
    const until = Date.now() + wait * 1000;
    const left = h('span');
    el.append(h('span', { className: 'sr-only', text: `Too many reactions: try again in ${wait} seconds.` }),
      h('span', { 'aria-hidden': 'true' }, '⚠ Too many reactions: try again in ', left, ' s'));
    const tick = () => {
      const s = Math.ceil((until - Date.now()) / 1000);
      if (s <= 0 || !el.isConnected) {
        clearInterval(timer);
        el.remove();
      } else left.textContent = String(s);
    };
    const timer = setInterval(tick, 1000);
    tick();
  }

  /** Open the picker under `btn` (or close it when it is the one open). */
  async openPicker(btn) {
    const open = this.picker;
    if (open) open.close(open.opener === btn);
    if (open && open.opener === btn) return;
    const id = btn.closest('[data-entry-id]')?.dataset.entryId;
    if (!id) return;
    if (!this.writable()) {
      this.note(id, '⚠ Reactions can be added in web rooms only.');
      return;
    }
    let mod;
    try {
      mod = await (this.pickerModule ??= import('./emojipicker.js'));
    } catch {
      this.pickerModule = null;
      this.note(id, '⚠ Could not load the emoji picker.');
      return;
    }
    if (!btn.isConnected || this.picker) return;
    this.picker = mod.openPicker({
      h,
      opener: btn,
      scroller: this.feed.scroller,
      onPick: (emoji) => this.react(id, emoji, true),
      onClose: () => {
        this.picker = null;
      },
    });
  }
}
