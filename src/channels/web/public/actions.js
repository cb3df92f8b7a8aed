// Message actions: a "⋯" button on every person's and agent's message opens a small menu —
// Reply, Ask <agent> again, Regenerate (an agent's latest reply). It works with the mouse, the
// keyboard (Enter or Space or ↓ opens it, arrows move, Escape closes and gives focus back) and
// touch (where there is no hover the button is always shown, with a finger-sized hit area).
// Regenerating adds another answer and keeps the first (the feed shows them as one bubble with
// ‹ 1/2 ›). A person's own messages (sent from this browser) can also be edited in place and
// deleted; the server checks that it is this browser's message either way.
import { api } from './api.js';
import { h } from './dom.js';
import { isOwn } from './identity.js';
import { agentOf, state } from './state.js';

export class MessageActions {
  /**
   * @param feed the Feed (its entries tell which reply is an agent's latest)
   * @param composer the Composer (Reply puts a "replying to" chip there)
   * @param notify shows a line to this reader only (errors of an action)
   */
  constructor({ feed, composer, notify }) {
    this.feed = feed;
    this.composer = composer;
    this.notify = notify;
    /** { wrap: the line holding the button, btn, menu } of the open menu, or null. */
    this.current = null;
    document.addEventListener('click', (ev) => {
      if (this.current && !this.current.menu.contains(ev.target) && !this.current.btn.contains(ev.target)) this.close(false);
    });
    // One pair of listeners for the whole feed, not two per message: a 10,000-message history
    // stays cheap to render.
    feed.list.addEventListener('click', (ev) => {
      const retry = ev.target.closest('.retry-btn');
      if (retry) {
        this.retry(retry);
        return;
      }
      const btn = ev.target.closest('.actions-btn');
      if (!btn) return;
      if (this.current && this.current.btn === btn) this.close(true);
      else this.open(btn.parentElement, btn, btn.closest('[data-entry-id]')?.dataset.entryId);
    });
    feed.list.addEventListener('keydown', (ev) => {
      const btn = ev.target.closest('.actions-btn');
      if (!btn || (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp')) return;
      ev.preventDefault();
      this.open(btn.parentElement, btn, btn.closest('[data-entry-id]')?.dataset.entryId, ev.key === 'ArrowUp' ? -1 : 0);
    });
  }

  /** The "⋯" button of one entry, or null for lines that have no actions (decisions, system lines). */
  control(e) {
    if (e.kind !== 'human' && e.kind !== 'agent') return null;
    const who = e.kind === 'agent' ? (agentOf(e.agentId) || { name: e.authorName }).name : e.authorName || 'someone';
    // Just a button per message (no wrapper, no listeners): the menu is built when it opens.
    const btn = h('button', { type: 'button', className: 'actions-btn', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
      'aria-label': `Actions for the message from ${who}`, text: '⋯' });
    return btn;
  }

  /** The menu items for an entry, from what the page knows now. */
  items(e) {
    const out = [];
    const g = state.detail;
    const members = g ? g.participants : [];
    if (e.kind === 'agent') {
      const agent = agentOf(e.agentId) || { id: e.agentId, name: e.authorName };
      out.push({ action: 'reply', label: `Reply to ${agent.name}`, run: () => this.reply(e) });
      if (members.includes(e.agentId)) {
        out.push({ action: 'ask-again', label: `Ask ${agent.name} again`, run: () => this.askAgain(e, agent) });
        // Regenerating one answer of a bubble of several asks for another after the newest of them.
        const newest = this.feed.entries.get(this.feed.newestAlternative(e.id)) || e;
        if (this.isLatestReply(newest)) out.push({ action: 'regenerate', label: 'Regenerate this reply', run: () => this.regenerate(newest, agent) });
      }
    } else {
      out.push({ action: 'reply', label: `Reply to ${e.authorName || 'this message'}`, run: () => this.reply(e) });
      if (e.kind === 'human' && !e.deleted && isOwn(e)) {
        out.push({ action: 'edit', label: 'Edit', run: () => this.edit(e) });
        out.push({ action: 'delete', label: 'Delete', run: () => this.remove(e) });
      }
    }
    return out;
  }

  /** Only an agent's newest reply can be regenerated (the server says the same with a 409). */
  isLatestReply(e) {
    for (const other of this.feed.entries.values()) {
      if (other.kind === 'agent' && other.agentId === e.agentId && other.seq > e.seq) return false;
    }
    return true;
  }

  open(wrap, btn, entryId, focusIndex = 0) {
    this.close(false);
    const e = this.feed.entries.get(entryId);
    if (!e) return;
    const menu = h('ul', { className: 'popup msg-menu', role: 'menu', 'aria-label': btn.getAttribute('aria-label') });
    for (const item of this.items(e)) {
      menu.append(h('li', { role: 'none' },
        h('button', { type: 'button', role: 'menuitem', className: 'pick menu-item', dataset: { action: item.action }, text: item.label,
          onclick: () => {
            this.close(false);
            item.run();
          } })));
    }
    menu.addEventListener('keydown', (ev) => this.onMenuKey(ev));
    wrap.append(menu);
    // Open downwards when there is no room above inside the feed (the first messages).
    const scroller = this.feed.scroller.getBoundingClientRect();
    const room = btn.getBoundingClientRect().top - scroller.top;
    menu.classList.toggle('down', room < menu.offsetHeight + 12);
    // Keep it inside the feed sideways: flip to the other edge of the button when it would stick out.
    let box = menu.getBoundingClientRect();
    if (box.right > scroller.right - 4) {
      menu.classList.add('end');
      box = menu.getBoundingClientRect();
    }
    if (box.left < scroller.left + 4) {
      menu.classList.remove('end');
      menu.classList.add('start');
    }
    btn.setAttribute('aria-expanded', 'true');
    wrap.closest('.msg')?.classList.add('menu-open');
    this.current = { wrap, btn, menu };
    menu.scrollIntoView({ block: 'nearest' });
    this.focusItem(focusIndex);
  }

  close(returnFocus) {
    const c = this.current;
    if (!c) return;
    this.current = null;
    c.menu.remove();
    c.btn.setAttribute('aria-expanded', 'false');
    c.wrap.closest('.msg')?.classList.remove('menu-open');
    if (returnFocus) c.btn.focus();
  }

  menuItems() {
    return this.current ? [...this.current.menu.querySelectorAll('[role="menuitem"]')] : [];
  }

  focusItem(index) {
    const items = this.menuItems();
    if (items.length === 0) return;
    items[((index % items.length) + items.length) % items.length].focus();
  }

  onMenuKey(ev) {
    const items = this.menuItems();
    const at = items.indexOf(document.activeElement);
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      this.focusItem(at + (ev.key === 'ArrowDown' ? 1 : -1));
    } else if (ev.key === 'Home' || ev.key === 'End') {
      ev.preventDefault();
      this.focusItem(ev.key === 'Home' ? 0 : -1);
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      this.close(true);
    } else if (ev.key === 'Tab') {
      this.close(false);
    }
  }

  reply(e) {
    this.composer.setReplyTo(e);
  }

  /** Edit in place: the text becomes a field with Save and Cancel (Escape cancels, Ctrl+Enter saves). */
  edit(e) {
    const li = this.feed.list.querySelector(`[data-entry-id="${CSS.escape(e.id)}"]`);
    const text = li && li.querySelector('.bubble > .text');
    if (!li || !text || li.querySelector('.edit-form')) return;
    const field = h('textarea', { className: 'edit-text', rows: 3, 'aria-label': 'Edit your message' });
    field.value = e.text;
    const done = (entry) => {
      form.remove();
      text.hidden = false;
      if (entry) this.feed.applyEdit({ id: entry.id, text: entry.text, editedAt: entry.editedAt });
    };
    const form = h('form', { className: 'edit-form' },
      field,
      h('div', { className: 'edit-buttons' },
        h('button', { type: 'submit', className: 'edit-save', text: 'Save' }),
        h('button', { type: 'button', className: 'edit-cancel', text: 'Cancel', onclick: () => done(null) })));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const value = field.value.trim();
      if (!value || value === e.text) return done(null);
      let saved = null;
      await this.send(async () => {
        saved = (await api('PATCH', this.entryPath(e), { text: value })).message;
      });
      if (saved) done(saved);
    });
    field.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        done(null);
      } else if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
    text.hidden = true;
    text.after(form);
    field.focus();
  }

  /** Delete after a confirmation: the message stays as a "message deleted" line. */
  async remove(e) {
    if (!window.confirm('Delete this message? Nobody will see its text any more, agents included.')) return;
    let gone = null;
    await this.send(async () => {
      gone = (await api('DELETE', this.entryPath(e))).message;
    });
    if (gone) this.feed.applyEdit({ id: gone.id, deleted: true, deletedAt: gone.deletedAt });
  }

  entryPath(e) {
    return `/api/groups/${encodeURIComponent(state.currentId)}/messages/${encodeURIComponent(e.id)}`;
  }

  /** `/ask <agent>` about the message this reply answered (the server finds it from `reply_to`). */
  async askAgain(e, agent) {
    await this.send(() => api('POST', `/api/groups/${encodeURIComponent(state.currentId)}/messages`, {
      text: `/ask ${agent.id}`,
      reply_to: e.id,
      author_name: this.composer.authorName(),
    }));
  }

  async regenerate(e) {
    await this.send(() => api('POST', `/api/groups/${encodeURIComponent(state.currentId)}/messages/${encodeURIComponent(e.id)}/regenerate`));
  }

  /**
   * Retry on a failure notice: the agent is asked again about the message it could not answer.
   * The button stays disabled once that worked (its answer, or a new notice, comes in the feed).
   */
  async retry(btn) {
    const id = btn.closest('[data-entry-id]')?.dataset.entryId;
    if (!id || btn.disabled) return;
    btn.disabled = true;
    let ok = false;
    await this.send(async () => {
      const out = await api('POST', `/api/groups/${encodeURIComponent(state.currentId)}/messages/${encodeURIComponent(id)}/retry`, { author_name: this.composer.authorName() || undefined });
      ok = true;
      return out;
    });
    if (ok) {
      btn.textContent = 'Asked again';
      btn.dataset.done = 'true';
    } else btn.disabled = false;
  }

  async send(call) {
    try {
      const out = await call();
      if (out && out.ephemeral) this.notify(out.ephemeral);
    } catch (err) {
      const ephemeral = err.data && err.data.ephemeral;
      this.notify(ephemeral || { kind: 'error', text: '⚠ ' + (err.message || 'That did not work.') });
    }
  }
}
