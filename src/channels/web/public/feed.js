// The message feed of the open group: entries deduplicated by id and kept in seq order,
// streamed text while an agent writes, the typing line and the decision toggle. The passes of
// one round fold into a single line that opens on click, so an unaddressed message adds one
// quiet line instead of one per agent; failures and cap notices stay visible whatever the filter.
// How each entry looks is entryview.js. The feed follows new entries while the reader is at the
// bottom; a reader who scrolled up gets a "N new messages ↓" button instead of being pulled down.
// Entries of different days are separated by a date line; every time shows the full date on hover.
import { $, clear, h, show } from './dom.js';
import { DECISION_ICONS, dayData, markdownText, renderEntry, setTime, visibleName } from './entryview.js';
import { RepliesInFlight } from './inflight.js';
import { agentOf } from './state.js';
import { ToolViews } from './toolview.js';

export class Feed {
  constructor() {
    this.list = $('#messages');
    this.scroller = $('#feed');
    this.typingEl = $('#typing');
    this.stopBtn = $('#stop-round');
    /** Whether this page may stop the open group's round (a writable web group); set by app.js. */
    this.canStop = () => false;
    this.emptyEl = $('#feed-empty');
    this.entries = new Map();
    /** Streaming bubbles, the typing line and the Stop button (inflight.js). */
    this.live = new RepliesInFlight(this);
    /** Tool steps and requests for approval, and what became of each request (toolview.js). */
    this.tools = new ToolViews();
    this.lastSeq = 0;
    this.oldestSeq = null;
    /** roundId → the folded line holding that round's passes. */
    this.rounds = new Map();
    /**
     * Regenerated replies share one bubble: entry id → its group of alternatives (see
     * addAlternative), and the id of an earlier answer not loaded yet → the group waiting for it.
     */
    this.altOf = new Map();
    this.altWaiting = new Map();
    /** Seqs of the notes for the agents that were skipped: loaded, though never lines (jump.js). */
    this.noteSeqs = new Set();
    /** Entries of the batch `add` is placing that are not on screen yet. */
    this.unplaced = new Set();
    /** Changes drawn per entry id (applyEdit). */
    this.changes = new Map();
    /** Draws reactions and their "add" button (reactions.js); set by app.js. */
    this.reactions = null;
    /** Builds the "⋯" actions control of a message (actions.js); set by app.js. */
    this.actionsFor = () => null;
    /** Lines shown to this reader only, so each lands after the ones before it. */
    this.localCount = 0;
    /**
     * Whether new entries scroll into view. Kept from the reader's own scrolling rather than
     * measured when an entry arrives: by then the composer may have grown (a multi-line draft) or
     * shrunk (just sent), and the geometry would no longer say where the reader was.
     */
    this.following = true;
    /** Messages that arrived while the reader was scrolled up. */
    this.unseen = 0;
    this.newButton = h('button', { type: 'button', id: 'new-messages', className: 'new-messages', hidden: true, onclick: () => this.jumpToBottom() });
    this.scroller.append(this.newButton);
    this.scroller.addEventListener('scroll', () => {
      this.following = this.nearBottom();
      if (this.following) this.setUnseen(0);
    }, { passive: true });
    // The feed's box changes size when the composer grows or shrinks or the window is resized:
    // a reader who was following stays at the bottom.
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => {
        if (this.following) this.scrollToBottom();
      }).observe(this.scroller);
    }
  }

  reset() {
    for (const li of this.list.querySelectorAll('.msg.local')) clearInterval(li.timer);
    clear(this.list);
    this.entries.clear();
    this.live.reset();
    this.tools.reset();
    this.lastSeq = 0;
    this.oldestSeq = null;
    this.rounds.clear();
    this.altOf.clear();
    this.altWaiting.clear();
    this.unplaced.clear();
    this.noteSeqs.clear();
    this.changes.clear();
    this.following = true;
    this.setUnseen(0);
    this.updateEmpty();
  }

  /** Add entries (any order, duplicates ignored). Returns how many were new. */
  add(entries) {
    const follow = this.following;
    const newestBefore = this.lastSeq;
    let added = 0;
    let fresh = 0;
    let newer = false;
    // A page of older history is placed newest first, so each entry lands at the top of the list.
    const older = this.oldestSeq !== null && entries.every((e) => e && e.seq < this.oldestSeq);
    // Every entry of the batch is known before any is drawn: a reply drawn first can then tell
    // what else of the same page it relates to (the earlier answer to the same question).
    const batch = [];
    for (const e of older ? [...entries].sort((a, b) => b.seq - a.seq) : entries) {
      if (!e || typeof e.id !== 'string' || this.entries.has(e.id)) continue;
      // A note telling the agents of an edit or a reaction is no line for people: the message
      // says "edited" or shows the reaction.
      if (isNote(e)) {
        this.noteSeqs.add(e.seq);
        this.lastSeq = Math.max(this.lastSeq, e.seq);
        continue;
      }
      this.entries.set(e.id, e);
      this.unplaced.add(e.id);
      batch.push(e);
      // A decision on a request, or its step: the request (shown, or drawn later) says so.
      this.tools.note(e);
    }
    for (const e of batch) {
      this.unplaced.delete(e.id);
      // Only entries newer than what was shown are news: an older page of history is not.
      const news = e.seq > newestBefore;
      // A reply that streamed here keeps what its bubble rendered while it streamed.
      const streamed = news && e.kind === 'agent' && e.agentId && !e.decision ? this.live.take(e.agentId) : null;
      if (foldable(e)) this.addToRound(e);
      else if (e.kind === 'agent' && !e.decision && ((e.meta && e.meta.regenerates) || this.altWaiting.has(e.id))) this.addAlternative(e, renderEntry(this, e, streamed), news);
      else this.place(renderEntry(this, e, streamed), e.seq);
      if (news) {
        newer = true;
        if (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system' || (e.kind === 'tool' && e.tool && e.tool.outcome === 'waiting')) fresh++;
      }
      this.lastSeq = Math.max(this.lastSeq, e.seq);
      this.oldestSeq = this.oldestSeq === null ? e.seq : Math.min(this.oldestSeq, e.seq);
      // Only news ends a reply being written: an older page of history says nothing about it.
      if (news) this.endLive(e);
      added++;
    }
    this.updateEmpty();
    if (newer && follow) this.followToBottom();
    else if (fresh > 0 && !follow) this.setUnseen(this.unseen + fresh);
    return added;
  }

  /** Insert `el` (moving it if it is already in the list) and fix the day lines around it. */
  place(el, seq) {
    const oldNext = el.isConnected ? this.detach(el) : null;
    el.dataset.seq = String(seq);
    this.insert(el, seq);
    this.fixDay(el);
    this.fixDay(nextEntry(el));
    if (oldNext) this.fixDay(oldNext);
  }

  /** Take `el` and its day line out of the list; returns the entry that followed it. */
  detach(el) {
    const prev = el.previousElementSibling;
    if (prev && prev.classList.contains('day-separator')) prev.remove();
    const next = nextEntry(el);
    el.remove();
    return next;
  }

  /**
   * A date line sits right before an entry whose day differs from the entry above it (none above
   * the first entry shown). Day lines carry the seq of their entry, so the list stays sorted.
   */
  fixDay(el) {
    if (!el || !el.dataset.day) return;
    const before = el.previousElementSibling;
    const sep = before && before.classList.contains('day-separator') ? before : null;
    const prev = prevEntry(el);
    if (prev && prev.dataset.day && prev.dataset.day !== el.dataset.day) {
      // A plain list item (a role=separator is not allowed in a list, and would hide the date from screen readers).
      const line = sep || h('li', { className: 'day-separator' }, h('span'));
      line.dataset.seq = el.dataset.seq;
      line.firstChild.textContent = el.dataset.dayLabel || '';
      if (!sep) this.list.insertBefore(line, el);
    } else if (sep) sep.remove();
  }

  insert(el, seq) {
    // Keep seq order. Streaming bubbles (no seq) stay at the bottom; every other child has a seq
    // and they are sorted, so a binary search finds the place: live entries land last, a page of
    // older history lands first. An entry older than all shown (each of a page of history, added
    // newest first) goes first without the search: after every insert the browser walks the
    // list's children again to count and index them, a walk of thousands on a long history.
    const first = this.list.firstElementChild;
    if (!first || (first.dataset.seq !== undefined && seq <= Number(first.dataset.seq))) {
      this.list.insertBefore(el, first);
      return;
    }
    const children = this.list.children;
    let hi = children.length;
    while (hi > 0 && children[hi - 1].dataset.seq === undefined) hi--;
    let lo = 0;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (Number(children[mid].dataset.seq) < seq) lo = mid + 1;
      else hi = mid;
    }
    this.list.insertBefore(el, lo < children.length ? children[lo] : null);
  }

  /**
   * Put a pass into its round's folded line, creating the line at the first pass seen. Live
   * passes arriving later and passes from an older page of history join the same line; the line
   * sits at the seq of its earliest pass.
   */
  addToRound(e) {
    let r = this.rounds.get(e.roundId);
    if (!r) {
      const summary = h('button', { type: 'button', className: 'round-summary', 'aria-expanded': 'false', title: 'Show who passed' });
      const lines = h('ol', { className: 'round-lines', hidden: true });
      summary.addEventListener('click', () => {
        const open = lines.hidden;
        lines.hidden = !open;
        summary.setAttribute('aria-expanded', String(open));
        el.classList.toggle('open', open);
      });
      const time = h('time', { className: 'time' });
      const el = h('li', { className: 'msg decision decision-round', dataset: { seq: String(e.seq), roundId: e.roundId, decision: 'round' } },
        h('div', { className: 'round-head' }, summary, time), lines);
      r = { el, summary, lines, time, seq: e.seq };
      this.rounds.set(e.roundId, r);
      Object.assign(el.dataset, dayData(e.ts));
      this.place(el, e.seq);
    } else if (e.seq < r.seq) {
      r.seq = e.seq;
      Object.assign(r.el.dataset, dayData(e.ts));
      this.place(r.el, e.seq);
    }
    const line = renderEntry(this, e);
    const after = [...r.lines.children].find((c) => Number(c.dataset.seq) > e.seq) || null;
    r.lines.insertBefore(line, after);
    const members = [...r.lines.children].map((c) => this.entries.get(c.dataset.entryId)).filter(Boolean);
    const names = members.map((m) => {
      const agent = m.decision.agentId ? agentOf(m.decision.agentId) : null;
      return agent ? agent.name : visibleName(m.authorName);
    });
    r.summary.textContent = `${DECISION_ICONS.pass} ${names.join(', ')} passed`;
    r.el.dataset.count = String(members.length);
    const last = members.at(-1);
    setTime(r.time, last.ts);
  }

  /**
   * A regenerated reply (its meta says which reply it regenerates), or an earlier answer such a
   * reply was waiting for: the answers to one question share one bubble with ‹ 1/2 › to switch
   * between them. Nothing is removed: every alternative stays an entry of the feed, and only the
   * one shown is in the list, at the place of the first answer. A new alternative that arrives
   * live is shown at once; from history the newest is shown. Regenerating a regenerated reply
   * chains on (each names the one before), so the group follows the chain both ways, whichever
   * end of it is loaded first.
   */
  addAlternative(e, el, news) {
    const prev = e.meta && e.meta.regenerates;
    const prevShown = prev && this.entries.has(prev) && !this.unplaced.has(prev);
    let group = prevShown ? this.altOf.get(prev) : null;
    if (prevShown && !group) {
      // The earlier answer stood alone until now.
      group = { ids: [prev], els: new Map([[prev, this.elementOf(prev)]]), shown: prev, chosen: false };
      this.altOf.set(prev, group);
    }
    const waiting = this.altWaiting.get(e.id);
    this.altWaiting.delete(e.id);
    if (waiting && group && waiting !== group) {
      for (const id of waiting.ids) {
        group.ids.push(id);
        group.els.set(id, waiting.els.get(id));
        this.altOf.set(id, group);
      }
      if (waiting.chosen) Object.assign(group, { shown: waiting.shown, chosen: true });
      for (const [k, g] of this.altWaiting) if (g === waiting) this.altWaiting.set(k, group);
    } else if (waiting) group = waiting;
    if (!group) group = { ids: [], els: new Map(), shown: e.id, chosen: false };
    group.ids.push(e.id);
    group.els.set(e.id, el);
    this.altOf.set(e.id, group);
    group.ids.sort((a, b) => this.entries.get(a).seq - this.entries.get(b).seq);
    if (prev && !prevShown) this.altWaiting.set(prev, group);
    if (news) Object.assign(group, { shown: e.id, chosen: false });
    else if (!group.chosen) group.shown = group.ids.at(-1);
    this.layoutAlternatives(group);
    if (news && !this.following) flash(group.els.get(group.shown));
  }

  /** Show the chosen alternative of `group` at the place of its first answer, with its ‹ n/N › switch. */
  layoutAlternatives(group) {
    const first = this.entries.get(group.ids[0]);
    const shown = group.els.get(group.shown);
    for (const [id, el] of group.els) {
      el.querySelector('.alt-nav')?.remove();
      if (id !== group.shown && el.isConnected) {
        const next = this.detach(el);
        if (next) this.fixDay(next);
      }
    }
    if (group.ids.length > 1) shown.querySelector('.meta')?.append(this.altNav(group));
    // The day lines go by the place in the list, which is the first answer's.
    Object.assign(shown.dataset, dayData(first.ts));
    this.place(shown, first.seq);
  }

  altNav(group) {
    const at = group.ids.indexOf(group.shown);
    const go = (step) => () => {
      group.shown = group.ids[at + step];
      group.chosen = true;
      this.layoutAlternatives(group);
      // Keyboard focus stays on the same control of the answer now shown.
      const again = group.els.get(group.shown).querySelector(step < 0 ? '.alt-prev' : '.alt-next');
      if (again && !again.disabled) again.focus();
      else group.els.get(group.shown).querySelector('.alt-nav button:not([disabled])')?.focus();
    };
    return h('span', { className: 'alt-nav', role: 'group', 'aria-label': 'Answers to the same message' },
      h('button', { type: 'button', className: 'alt-prev', 'aria-label': 'Previous answer', title: 'Previous answer', text: '‹', disabled: at === 0, onclick: go(-1) }),
      h('span', { className: 'alt-count', text: `${at + 1}/${group.ids.length}` }),
      h('button', { type: 'button', className: 'alt-next', 'aria-label': 'Next answer', title: 'Next answer', text: '›', disabled: at === group.ids.length - 1, onclick: go(1) }));
  }

  /**
   * A message changed (a live `edited` event, or the answer to this reader's own change). An edit
   * or a deletion draws it again; an event without `text` (a reaction to a message never edited)
   * leaves the text as it is. `reactions`, when the event has them, is the message's whole list:
   * a change of reactions alone redraws only them, so the focus and what was open stay put.
   */
  applyEdit(ev) {
    const e = this.entries.get(ev.id);
    if (!e) return;
    this.changes.set(ev.id, this.changesOf(ev.id) + 1);
    const redraw = ev.deleted ? !e.deleted : typeof ev.text === 'string' && (ev.text !== e.text || ev.editedAt !== e.editedAt);
    if (ev.deleted) {
      // Its files go with its words (the server no longer serves them either).
      Object.assign(e, { text: '', deleted: true, deletedAt: ev.deletedAt });
      delete e.attachments;
    } else if (typeof ev.text === 'string') Object.assign(e, { text: ev.text, editedAt: ev.editedAt });
    if (Array.isArray(ev.reactions)) e.reactions = ev.reactions;
    const old = this.drawnElement(ev.id);
    if (!old) return;
    // Being edited here: drawn again once the form is gone (actions.js applies its answer then).
    if (old.querySelector('.edit-form') || (!redraw && !old.dataset.stale)) {
      if (redraw) old.dataset.stale = 'true';
      if (this.reactions) this.reactions.sync(old, e);
      return;
    }
    const fresh = renderEntry(this, e);
    const group = this.altOf.get(ev.id);
    if (old.isConnected) old.replaceWith(fresh);
    if (group) {
      group.els.set(ev.id, fresh);
      if (group.shown === ev.id) this.layoutAlternatives(group);
    }
  }

  /** How many changes of entry `id` were drawn: an answer older than the latest one is not (reactions.js). */
  changesOf(id) {
    return this.changes.get(id) || 0;
  }

  /** The list item drawn for entry `id`, shown or kept behind another answer of its bubble; or null. */
  drawnElement(id) {
    const group = this.altOf.get(id);
    if (group) return group.els.get(id) || null;
    return this.list.querySelector(`[data-entry-id="${CSS.escape(id)}"]`);
  }

  /** The newest of the answers that `id` is one of (itself when it was never regenerated). */
  newestAlternative(id) {
    const group = this.altOf.get(id);
    return group ? group.ids.at(-1) : id;
  }

  /** The list item of entry `id`, switching its bubble to it when it is an alternative not shown; or null. */
  elementOf(id) {
    const group = this.altOf.get(id);
    if (group && group.shown !== id) {
      group.shown = id;
      group.chosen = true;
      this.layoutAlternatives(group);
    }
    if (group) return group.els.get(id);
    return this.list.querySelector(`[data-entry-id="${CSS.escape(id)}"]`);
  }

  /** Markdown as a fragment (streamed text is rendered with it too). */
  text(value) {
    return markdownText(value);
  }

  setTyping(agentId, active) {
    this.live.setTyping(agentId, active);
  }

  /** An agent thinking over a turn nobody asked it for (it may pass: shown apart from typing). */
  setConsidering(agentId, active) {
    this.live.setConsidering(agentId, active);
  }

  renderTyping() {
    this.live.renderTyping();
  }

  /** A chunk of streamed text of one turn. */
  delta(ev) {
    this.live.delta(ev);
  }

  /** The server's replies in flight on (re)connecting (who types, each reply's text so far). */
  resume(snapshot) {
    this.live.resume(snapshot);
  }

  /**
   * A recorded reply or decision replaces its agent's bubble; a stop notice ends them all. A tool
   * step (or request) ends it too: what the model wrote before calling the tool is no entry, and
   * the turn's next model call streams into a bubble of its own.
   */
  endLive(e) {
    if ((e.kind === 'agent' || e.kind === 'tool') && e.agentId) this.live.end(e.agentId);
    if (e.decision && e.decision.agentId) this.live.end(e.decision.agentId);
    if (e.decision && e.decision.type === 'stopped') this.live.endAll();
  }

  /**
   * A line for this reader only (a command's answer, a refusal, an action's error): never stored,
   * not sent to anyone else, gone on reload, dismissible. It sits after the newest entry shown.
   * A refusal replaces the previous refusal line, so trying again does not stack them up.
   */
  addLocal({ text, kind, retryAfterSeconds, asked }) {
    if (kind === 'refusal') for (const old of this.list.querySelectorAll('.msg.local[data-kind="refusal"]')) old.remove();
    const seq = this.lastSeq + 1 - 1 / (++this.localCount + 2);
    const body = h('div', { className: 'text plain' });
    const li = h('li', { className: `msg local local-${kind}`, dataset: { kind } },
      h('div', { className: 'local-body' },
        h('div', { className: 'local-head' },
          h('span', { className: 'local-label', text: kind === 'refusal' ? 'Not sent · only you can see this' : 'Only you can see this' }),
          asked ? h('code', { className: 'local-asked', text: asked }) : null,
          h('button', { type: 'button', className: 'icon-btn local-dismiss', 'aria-label': 'Dismiss', title: 'Dismiss', text: '✕',
            onclick: () => {
              clearInterval(li.timer);
              li.remove();
              this.updateEmpty();
              $('#input').focus();
            } })),
        body));
    const m = typeof retryAfterSeconds === 'number' ? /try again in \d+ s/.exec(text) : null;
    if (m) {
      // Counts down to the moment the same message would be taken.
      const until = Date.now() + retryAfterSeconds * 1000;
      const wait = h('span', { className: 'retry-wait' });
      // Screen readers get the sentence once; the ticking copy is for the eyes only (the feed is
      // a live region, and a change every second would be read out every second).
      body.append(h('span', { className: 'sr-only', text }),
        h('span', { 'aria-hidden': 'true' }, text.slice(0, m.index), wait, text.slice(m.index + m[0].length)));
      const tick = () => {
        const left = Math.ceil((until - Date.now()) / 1000);
        wait.textContent = left > 0 ? `try again in ${left} s` : 'you can send it again now';
        li.dataset.waiting = String(left > 0);
        if (left <= 0) clearInterval(li.timer);
      };
      tick();
      li.timer = setInterval(tick, 1000);
    } else body.textContent = text;
    this.insert(li, seq);
    li.dataset.seq = String(seq);
    this.updateEmpty();
    if (this.following) this.followToBottom();
    else li.scrollIntoView({ block: 'nearest' });
    return li;
  }

  setDecisionsVisible(visible) {
    this.list.classList.toggle('hide-decisions', !visible);
  }

  nearBottom() {
    const el = this.scroller;
    return el.scrollHeight - el.scrollTop - el.clientHeight < 120;
  }

  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /**
   * A "New since you left" line before the first entry newer than `seq` (what the reader had seen
   * when they last had this group open), brought into view when the news is taller than the feed.
   * Its seq sits half-way below that entry's, so later inserts keep the list sorted around it.
   */
  markNewSince(seq) {
    let first = null;
    for (const e of this.entries.values()) if (e.seq > seq && (first === null || e.seq < first)) first = e.seq;
    if (first === null) return;
    const line = h('li', { className: 'new-since' }, h('span', { text: 'New since you left' }));
    this.insert(line, first - 0.5);
    line.dataset.seq = String(first - 0.5);
    const above = line.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    if (above < 0) {
      this.following = false;
      this.scroller.scrollTop = Math.max(0, this.scroller.scrollTop + above - 8);
    }
  }

  /** Scroll down now, and once more after the next layout (late size changes: fonts, composer). */
  followToBottom() {
    this.scrollToBottom();
    requestAnimationFrame(() => {
      if (this.following) this.scrollToBottom();
    });
  }

  jumpToBottom() {
    this.following = true;
    this.setUnseen(0);
    this.followToBottom();
  }

  setUnseen(n) {
    this.unseen = n;
    this.newButton.textContent = `${n} new message${n === 1 ? '' : 's'} ↓`;
    this.newButton.dataset.count = String(n);
    this.newButton.hidden = n === 0;
  }

  updateEmpty() {
    show(this.emptyEl, this.entries.size === 0 && this.live.size === 0 && !this.list.querySelector('.msg.local'));
  }
}

/** Outline an entry for a moment (a new answer that arrived out of the reader's view). */
function flash(el) {
  if (!el) return;
  el.classList.add('flash');
  setTimeout(() => el.classList.remove('flash'), 1200);
}

/** A note for the agents about another message (its edit, a reaction to it): never a line. */
export function isNote(e) {
  return Boolean(e && (e.editOf || e.reactionOf));
}

/** A pass that belongs to a round: these fold together. Other decisions stand alone. */
function foldable(e) {
  return e.kind === 'decision' && e.decision && e.decision.type === 'pass' && typeof e.roundId === 'string' && e.roundId !== '';
}

/** The entry after / before `el` in the list, skipping day lines; null at either end or at a stream. */
function nextEntry(el) {
  let n = el.nextElementSibling;
  while (n && isMarker(n)) n = n.nextElementSibling;
  return n && n.dataset.seq !== undefined ? n : null;
}

function prevEntry(el) {
  let n = el.previousElementSibling;
  while (n && isMarker(n)) n = n.previousElementSibling;
  return n || null;
}

/** Lines that are not entries: date lines, the "new since you left" line, lines for this reader only. */
function isMarker(n) {
  return n.classList.contains('day-separator') || n.classList.contains('new-since') || n.classList.contains('local');
}
