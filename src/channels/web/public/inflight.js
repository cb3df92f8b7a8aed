// Replies being written in the open group: a "writing…" bubble per turn that streams, the typing
// line (who is typing, and who is still considering a turn nobody asked for: most of those pass,
// and then simply leave the line) and the Stop button. Chunks only record text; the bubbles are brought up to date in one
// animation frame at most every PAINT_GAP_MS (streaming.js renders only what changed), so a fast
// model cannot flood the page: each update costs a layout of the feed, whatever its size.
// On every (re)connect the server sends what is in flight (`inflight`: who is typing and each
// reply's text so far), so a reload shows a reply from its first word and goes on from there.
// A recorded reply replaces its bubble at once; so does Stop (the text written so far is kept by
// the server as a reply marked stopped, published just before the stop notice).
import { accentVars, avatar, clear, colorFor, h, show } from './dom.js';
import { markdownReady } from './markdown.js';
import { agentOf } from './state.js';
import { StreamView } from './streaming.js';

/** How long a bubble stays after its agent stopped typing without a message (a pass, a failure). */
const STREAM_GRACE_MS = 10_000;
/** Bubbles are updated at most this often: 20 times a second reads as smooth, and costs a third of every frame. */
const PAINT_GAP_MS = 50;

/** "A", "A and B", "A, B and C". */
function listOf(names) {
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

export class RepliesInFlight {
  /**
   * `feed` gives the list to put bubbles in, `text(markdown)` to render, whether it is
   * `following` the bottom, `scrollToBottom()`, `updateEmpty()`, `canStop()`, and the typing
   * line and Stop button elements.
   */
  constructor(feed) {
    this.feed = feed;
    this.typing = new Set();
    this.considering = new Set();
    /** turnId → { agentId, view, el, timer } */
    this.streams = new Map();
    this.dirty = new Set();
    this.frame = 0;
    /** The timer waiting for the next allowed update, and when the last one ran. */
    this.wait = 0;
    this.lastPaint = -Infinity;
  }

  get size() {
    return this.streams.size;
  }

  reset() {
    for (const s of this.streams.values()) clearTimeout(s.timer);
    this.streams.clear();
    this.dirty.clear();
    if (this.frame) cancelAnimationFrame(this.frame);
    clearTimeout(this.wait);
    this.frame = 0;
    this.wait = 0;
    this.typing.clear();
    this.considering.clear();
    this.renderTyping();
  }

  /** A chunk of streamed text of one turn. */
  delta(ev) {
    const s = this.stream(ev.turnId, ev.agentId);
    s.view.append(ev.text);
    this.schedule(s);
  }

  setTyping(agentId, active) {
    if (active) this.typing.add(agentId);
    else {
      this.typing.delete(agentId);
      for (const s of this.streams.values()) if (s.agentId === agentId) this.graceEnd(s);
    }
    this.renderTyping();
  }

  setConsidering(agentId, active) {
    if (active) this.considering.add(agentId);
    else this.considering.delete(agentId);
    this.renderTyping();
  }

  /** What the server has in flight on (re)connecting: it replaces whatever this page had. */
  resume({ typing = [], considering = [], streams = [] }) {
    const live = new Set(streams.map((x) => x.turnId));
    for (const [turnId, s] of this.streams) if (!live.has(turnId)) this.drop(turnId, s);
    this.typing = new Set(typing);
    this.considering = new Set(considering);
    for (const x of streams) {
      const s = this.stream(x.turnId, x.agentId);
      if (s.view.text !== x.text) s.view.replace(x.text);
      clearTimeout(s.timer);
      s.timer = null;
      if (!this.typing.has(x.agentId)) this.graceEnd(s);
      this.schedule(s);
    }
    this.renderTyping();
    this.feed.updateEmpty();
  }

  /**
   * The agent's reply is recorded: the StreamView of its latest bubble, whose rendered blocks
   * the recorded reply keeps (its text element moves into the reply), or null. The bubble
   * itself goes with `end`.
   */
  take(agentId) {
    let found = null;
    for (const s of this.streams.values()) if (s.agentId === agentId && s.el) found = s;
    if (!found) return null;
    this.dirty.delete(found);
    return found.view;
  }

  /** The agent's reply (or its decision) is recorded: its bubbles go. */
  end(agentId) {
    for (const [turnId, s] of this.streams) if (s.agentId === agentId) this.drop(turnId, s);
  }

  /** The round was stopped: what was written is in the entries recorded with the stop notice. */
  endAll() {
    for (const [turnId, s] of this.streams) this.drop(turnId, s);
  }

  renderTyping() {
    const { typingEl, stopBtn } = this.feed;
    const nameOf = (id) => (agentOf(id) || { name: id }).name;
    const names = [...this.typing].map(nameOf);
    // An agent that types is no longer only considering (the two events may cross).
    const thinking = [...this.considering].filter((id) => !this.typing.has(id)).map(nameOf);
    clear(typingEl);
    typingEl.dataset.agents = [...this.typing].join(',');
    typingEl.dataset.considering = [...this.considering].filter((id) => !this.typing.has(id)).join(',');
    // Stop is there only while something can be stopped: an agent typing or considering, or a
    // reply still streaming (one whose agent has not stopped typing: those wait out their grace period).
    const streaming = [...this.streams.values()].some((s) => s.el && !s.timer);
    show(stopBtn, (names.length > 0 || thinking.length > 0 || streaming) && this.feed.canStop());
    if (names.length === 0 && thinking.length === 0) return;
    const parts = [];
    if (names.length > 0) parts.push(`${listOf(names)} ${names.length === 1 ? 'is' : 'are'} typing…`);
    if (thinking.length > 0) parts.push(`${listOf(thinking)} ${thinking.length === 1 ? 'is' : 'are'} considering…`);
    typingEl.append(h('span', { className: 'dots', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')), parts.join(' · '));
  }

  stream(turnId, agentId) {
    let s = this.streams.get(turnId);
    if (!s) {
      // Markdown output is made of blocks; the plain-text fallback keeps newlines.
      const textEl = h('div', { className: markdownReady() ? 'text md' : 'text' });
      s = { turnId, agentId, textEl, view: new StreamView(textEl, (t) => this.feed.text(t)), el: null, timer: null };
      this.streams.set(turnId, s);
    }
    return s;
  }

  drop(turnId, s) {
    clearTimeout(s.timer);
    if (s.el) s.el.remove();
    this.streams.delete(turnId);
    this.dirty.delete(s);
    if (!this.feed.stopBtn.hidden) this.renderTyping();
  }

  /** Text that was streamed but never became a message (a pass, an error) goes away after a while. */
  graceEnd(s) {
    clearTimeout(s.timer);
    s.timer = setTimeout(() => this.drop(s.turnId, s), STREAM_GRACE_MS);
  }

  schedule(s) {
    this.dirty.add(s);
    this.request();
  }

  /** An update in the first animation frame the gap allows. */
  request() {
    if (this.frame || this.wait) return;
    const left = this.lastPaint + PAINT_GAP_MS - performance.now();
    const frame = () => {
      this.wait = 0;
      this.frame = requestAnimationFrame(() => this.paint());
    };
    if (left > 0) this.wait = setTimeout(frame, left);
    else frame();
  }

  /** One frame: every bubble with new text is brought up to date, then the feed follows once. */
  paint() {
    this.frame = 0;
    this.lastPaint = performance.now();
    const dirty = [...this.dirty];
    this.dirty.clear();
    let changed = false;
    for (const s of dirty) {
      if (this.streams.get(s.turnId) !== s) continue;
      if (!s.el) {
        if (!s.view.visible) continue;
        s.el = this.bubble(s);
        this.feed.list.append(s.el);
        this.feed.updateEmpty();
        if (this.feed.stopBtn.hidden) this.renderTyping();
      }
      if (s.view.flush()) this.dirty.add(s);
      changed = true;
    }
    if (changed && this.feed.following) this.feed.scrollToBottom();
    // Work left (a long reply arriving at once, a tail waiting its turn): the next update does it.
    if (this.dirty.size > 0) this.request();
  }

  bubble(s) {
    const agent = agentOf(s.agentId) || { id: s.agentId, name: s.agentId };
    return h('li', { className: 'msg agent streaming', vars: accentVars(colorFor(agent)), dataset: { turnId: s.turnId, agentId: s.agentId } },
      avatar(agent),
      h('div', { className: 'bubble' },
        h('div', { className: 'meta' }, h('span', { className: 'author', text: agent.name }), h('span', { className: 'handle', text: 'writing…' })),
        s.textEl));
  }
}
