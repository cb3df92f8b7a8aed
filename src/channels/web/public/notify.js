// Desktop notifications, off until the reader turns them on (the checkbox in the sidebar, which
// asks the browser's permission): when someone replies to one of this reader's messages (a
// person's reply, or an agent answering it) or an agent's message mentions the reader's name as
// an @handle. Only for live messages, never for the reader's own, and not for the group in view
// while the page has focus. Which messages are the reader's own is kept in this browser, so a
// reply to something sent before a reload still counts.
import { $, show } from './dom.js';
import { isOwn, savedName } from './identity.js';
import { agentOf, state } from './state.js';

const ON_KEY = 'chorus.notify';
const OWN_KEY = 'chorus.ownEntries';
const MAX_OWN = 300;
const BODY_CHARS = 160;

function readOwn() {
  try {
    const ids = JSON.parse(localStorage.getItem(OWN_KEY) || '[]');
    return Array.isArray(ids) ? ids.filter((x) => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** True when `text` has `@name` (spaces dropped, or the first word), in any case. */
export function mentionsName(text, name) {
  const words = name.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return false;
  const forms = new Set([words.join(''), words[0]].map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`(^|[^\\p{L}\\p{N}_.@-])@(?:${[...forms].join('|')})(?![\\p{L}\\p{N}_-])`, 'iu').test(text);
}

export class Notifier {
  /** `openGroup(id)` brings a group into view (a click on a notification). */
  constructor(openGroup) {
    this.openGroup = openGroup;
    this.toggle = $('#notify-toggle');
    this.own = readOwn();
    this.supported = typeof Notification === 'function';
    show(this.toggle.closest('label'), this.supported);
    let on = false;
    try {
      on = localStorage.getItem(ON_KEY) === '1';
    } catch {
      on = false;
    }
    this.toggle.checked = this.supported && on && Notification.permission === 'granted';
    this.toggle.addEventListener('change', () => this.setEnabled(this.toggle.checked));
  }

  async setEnabled(on) {
    if (on && Notification.permission !== 'granted') {
      const answer = await Notification.requestPermission();
      if (answer !== 'granted') {
        this.toggle.checked = false;
        this.toggle.closest('label').title = 'The browser did not allow notifications for this page';
        return;
      }
    }
    try {
      localStorage.setItem(ON_KEY, on ? '1' : '0');
    } catch {
      // On for this page only.
    }
  }

  /** Entries already on screen (history): only to learn which of them are the reader's own. */
  learn(entries) {
    for (const e of entries) if (isOwn(e)) this.remember(e.id);
  }

  remember(id) {
    if (this.own.includes(id)) return;
    this.own.push(id);
    if (this.own.length > MAX_OWN) this.own.splice(0, this.own.length - MAX_OWN);
    try {
      localStorage.setItem(OWN_KEY, JSON.stringify(this.own));
    } catch {
      // Remembered for this page only.
    }
  }

  /** Why `e` is news for this reader, or null. */
  reason(e) {
    const who = e.kind === 'agent' ? (agentOf(e.agentId) || { name: e.authorName }).name : e.authorName || 'Someone';
    if (e.kind === 'human' && e.replyTo && this.own.includes(e.replyTo)) return `${who} replied to you`;
    if (e.kind !== 'agent') return null;
    if (e.meta && e.meta.answers && this.own.includes(e.meta.answers)) return `${who} replied to you`;
    const name = savedName();
    return name && mentionsName(String(e.text || ''), name) ? `${who} mentioned you` : null;
  }

  /** A live entry of any group. */
  consider(groupId, e) {
    if (!e || typeof e.id !== 'string') return;
    if (isOwn(e)) {
      this.remember(e.id);
      return;
    }
    if (!this.supported || !this.toggle.checked || Notification.permission !== 'granted') return;
    const why = this.reason(e);
    if (!why) return;
    if (groupId === state.currentId && document.visibilityState === 'visible' && document.hasFocus()) return;
    const g = state.groups.get(groupId);
    const text = String(e.text || '').replace(/\s+/g, ' ').trim();
    const n = new Notification(g ? `${why} in ${g.title}` : why, { body: text.length > BODY_CHARS ? text.slice(0, BODY_CHARS - 1) + '…' : text, tag: e.id });
    n.onclick = () => {
      window.focus();
      this.openGroup(groupId);
      n.close();
    };
  }
}
