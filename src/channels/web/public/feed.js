// The message feed of the open group: entries deduplicated by id and kept in seq order,
// streamed text while an agent writes, the typing line and the decision toggle. The passes of
// one round fold into a single line that opens on click, so an unaddressed message adds one
// quiet line instead of one per agent; failures and cap notices stay visible whatever the filter.
// Message text is Markdown (markdown.js). The feed follows new entries while the reader is at the
// bottom; a reader who scrolled up gets a "N new messages ↓" button instead of being pulled down.
// Entries of different days are separated by a date line; every time shows the full date on hover.
import { $, accentVars, avatar, clear, colorFor, formatCost, formatInt, formatMs, formatTime, h, show } from './dom.js';
import { isOwn, personColor } from './identity.js';
import { RepliesInFlight } from './inflight.js';
import { markdownReady, renderMarkdown } from './markdown.js';
import { messageBody } from './msgbody.js';
import { agentOf, handleColor } from './state.js';
import { seenRow } from './seen.js';

const DECISION_ICONS = { pass: '·', cooldown: '⏳', cap: '⛔', error: '⚠', muted: '🔇', depth: '↳', batch: '≡', selector: '🎯', stopped: '⏹' };
/** Bidi controls and invisible characters: names stored before the server cleaned them still show plainly. */
const NAME_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0]/g;

function visibleName(name) {
  return String(name || '').replace(NAME_CONTROLS, '').trim() || 'someone';
}

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
    this.lastSeq = 0;
    this.oldestSeq = null;
    /** roundId → the folded line holding that round's passes. */
    this.rounds = new Map();
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
    this.lastSeq = 0;
    this.oldestSeq = null;
    this.rounds.clear();
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
    for (const e of entries) {
      if (!e || typeof e.id !== 'string' || this.entries.has(e.id)) continue;
      this.entries.set(e.id, e);
      if (foldable(e)) this.addToRound(e);
      else this.place(this.renderEntry(e), e.seq);
      // Only entries newer than what was shown count: an older page of history is not news.
      if (e.seq > newestBefore) {
        newer = true;
        if (e.kind === 'human' || e.kind === 'agent' || e.kind === 'system') fresh++;
      }
      this.lastSeq = Math.max(this.lastSeq, e.seq);
      this.oldestSeq = this.oldestSeq === null ? e.seq : Math.min(this.oldestSeq, e.seq);
      // Only news ends a reply being written: an older page of history says nothing about it.
      if (e.seq > newestBefore) this.endLive(e);
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
    // older history lands first, and a 10,000-message scroll-back stays linear overall.
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
    const line = this.renderEntry(e);
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

  renderEntry(e) {
    const base = { dataset: { entryId: e.id, seq: String(e.seq), kind: e.kind, ...dayData(e.ts) } };
    if (e.kind === 'decision' || e.decision) return this.renderDecision(e, base);
    if (e.kind === 'system') {
      return h('li', { className: 'msg system', ...base },
        h('div', { className: 'system-body' }, h('span', { className: 'system-label', text: 'Chorus' }), this.body(e.text)),
        timeEl(e.ts));
    }
    if (e.kind === 'human') {
      // People are marked as people: no avatar or @handle, and a "person" tag, so a person who
      // calls themselves "Analyst" (on Telegram, say) never looks like the agent. This reader's
      // own messages (sent from this browser) sit on the right; everyone else's on the left, in a
      // colour of their own. The name is isolated (<bdi>) and cleaned so right-to-left tricks
      // cannot reorder it.
      const own = isOwn(e);
      return h('li', { className: `msg human ${own ? 'own' : 'other'}`, vars: own ? null : accentVars(personColor(e)), ...base },
        h('div', { className: 'bubble' },
          h('div', { className: 'meta' },
            h('bdi', { className: 'author', text: visibleName(e.authorName) }),
            h('span', { className: 'role-tag', title: 'a person, not an agent', text: 'person' }),
            timeEl(e.ts),
            this.actionsFor(e)),
          e.replyTo ? this.replyRef(e.replyTo) : null,
          this.body(e.text)));
    }
    const actions = this.actionsFor(e);
    const agent = agentOf(e.agentId) || { id: e.agentId || e.authorId, name: e.authorName, avatar: null, color: null };
    const color = colorFor(agent);
    const details = e.meta ? this.renderDetails(e.meta) : null;
    // Replies recorded with their prompt's reference can show what the agent saw.
    if (details && e.meta.prompt) details.append(seenRow(e));
    const detailsBtn = details
      ? h('button', { type: 'button', className: 'details-btn', 'aria-expanded': 'false', title: 'Model, tokens, latency, cost', text: 'details',
          onclick: (ev) => {
            const open = details.hidden;
            details.hidden = !open;
            ev.currentTarget.setAttribute('aria-expanded', String(open));
          } })
      : null;
    return h('li', { className: 'msg agent', vars: accentVars(color), ...base, dataset: { ...base.dataset, agentId: agent.id } },
      avatar(agent),
      h('div', { className: 'bubble' },
        h('div', { className: 'meta' },
          h('span', { className: 'author', text: e.authorName || agent.name }),
          h('span', { className: 'handle', text: '@' + agent.id }),
          timeEl(e.ts),
          regenTag(e),
          stoppedTag(e),
          detailsBtn,
          actions),
        this.body(e.text),
        details));
  }

  /** "↩ Writer: first words…" above a reply; a click brings the message replied to into view. */
  replyRef(id) {
    const target = this.entries.get(id);
    const who = !target ? null : target.kind === 'agent' ? (agentOf(target.agentId) || { name: target.authorName }).name : visibleName(target.authorName);
    const words = target ? String(target.text).replace(/\s+/g, ' ').trim() : '';
    const label = target ? `↩ ${who}: ${words.length > 80 ? words.slice(0, 79) + '…' : words}` : '↩ an earlier message';
    return h('button', { type: 'button', className: 'reply-ref', dataset: { replyTo: id }, title: 'Show the message this replies to', text: label,
      onclick: () => {
        const el = this.list.querySelector(`[data-entry-id="${CSS.escape(id)}"]`);
        if (!el) return;
        el.scrollIntoView({ block: 'center' });
        el.classList.add('flash');
        setTimeout(() => el.classList.remove('flash'), 1200);
      } });
  }

  renderDecision(e, base) {
    const d = e.decision || { type: 'pass' };
    const agent = d.agentId ? agentOf(d.agentId) : null;
    let text = (e.text || '').trim();
    if (!text) {
      const who = agent ? agent.name : 'An agent';
      text = { pass: `${who} passed`, cooldown: `${who} is cooling down`, cap: 'Turn cap reached', error: `${who} could not reply`, muted: `${who} is muted` }[d.type] || d.type;
      if (d.detail) text += ` (${d.detail})`;
    }
    const icon = DECISION_ICONS[d.type] || '·';
    const label = text.startsWith(icon) ? text : `${icon} ${text}`;
    return h('li', { className: `msg decision decision-${d.type}`, ...base, dataset: { ...base.dataset, decision: d.type } },
      h('span', { className: 'text', text: label }),
      timeEl(e.ts));
  }

  renderDetails(meta) {
    const u = meta.usage || {};
    const inTotal = (u.inputTokens || 0) + (u.cacheReadTokens || 0) + (u.cacheWriteTokens || 0);
    const share = inTotal > 0 ? Math.round(((u.cacheReadTokens || 0) / inTotal) * 100) : 0;
    const rows = [
      ['Model', meta.model || '—'],
      ['Why', meta.reason ? meta.reason + (meta.depth ? ` (depth ${meta.depth})` : '') : '—'],
      ['Tokens', `${formatInt(u.inputTokens)} in · ${formatInt(u.outputTokens)} out`],
      ['Cache', `${share}% read from cache (${formatInt(u.cacheReadTokens || 0)} read, ${formatInt(u.cacheWriteTokens || 0)} written)`],
      ['Latency', formatMs(meta.latencyMs)],
      ['Cost', meta.costUsd === null ? 'price unknown' : formatCost(meta.costUsd)],
    ];
    return h('dl', { className: 'details', hidden: true }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]));
  }

  text(value) {
    return renderMarkdown(String(value ?? ''), (handle) => handleColor(handle, colorFor));
  }

  /** A finished message's text (msgbody.js: direction, folding, code colours). */
  body(value) {
    return messageBody(value, (t) => this.text(t), textClass(), (handle) => handleColor(handle, colorFor));
  }

  setTyping(agentId, active) {
    this.live.setTyping(agentId, active);
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

  /** A recorded reply or decision replaces its agent's bubble; a stop notice ends them all. */
  endLive(e) {
    if (e.kind === 'agent' && e.agentId) this.live.end(e.agentId);
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

/** A pass that belongs to a round: these fold together. Other decisions stand alone. */
function foldable(e) {
  return e.kind === 'decision' && e.decision && e.decision.type === 'pass' && typeof e.roundId === 'string' && e.roundId !== '';
}

function textClass() {
  // Markdown output is made of blocks (paragraphs, lists); the plain-text fallback keeps newlines.
  return markdownReady() ? 'text md' : 'text';
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

/** The local day of `ts`: a key to compare and the words a date line shows. */
function dayData(ts) {
  const d = new Date(ts);
  if (!Number.isFinite(d.getTime())) return {};
  return { day: d.toDateString(), dayLabel: d.toLocaleDateString([], { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' }) };
}

/** "stopped" on a reply cut by Stop: what it had written until then was kept. */
function stoppedTag(e) {
  if (!e.meta || e.meta.cut !== 'stopped') return null;
  return h('span', { className: 'stopped-tag', title: 'Stopped while writing: this is what it had written until then', text: '⏹ stopped' });
}

/** "another answer" on a regenerated reply: the first answer is kept above it. */
function regenTag(e) {
  if (!e.meta || !e.meta.regenerates) return null;
  return h('span', { className: 'regen-tag', title: 'Regenerated: another answer to the same message; the earlier answer is kept above', text: '↻ another answer' });
}

/** A time: short on the line, the full date and time on hover. */
function timeEl(ts) {
  const el = h('time', { className: 'time' });
  setTime(el, ts);
  return el;
}

function setTime(el, ts) {
  const d = new Date(ts);
  el.textContent = formatTime(ts);
  if (!Number.isFinite(d.getTime())) return;
  el.setAttribute('datetime', d.toISOString());
  el.title = d.toLocaleString([], { dateStyle: 'full', timeStyle: 'medium' });
}
