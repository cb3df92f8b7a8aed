// Search over the whole history: Ctrl+K (⌘K) or the search button opens a dialog; results come
// newest first from the server with a plain-text snippet and the offsets of its matched words,
// which are wrapped in <mark> elements here (text nodes only: nothing a message says can become
// markup). Choosing a result hands it to `onPick`, which jumps the feed there. Escape closes the
// dialog and gives focus back to where it was.
import { api } from './api.js';
import { $, clear, formatTime, h, show } from './dom.js';

const PAGE = 20;

export class Search {
  /** `currentGroup()`: the open group's id (or null); `onPick(result)`: jump to a result. */
  constructor({ currentGroup, onPick }) {
    this.currentGroup = currentGroup;
    this.onPick = onPick;
    this.dialog = $('#search-dialog');
    this.input = $('#search-input');
    this.scope = $('#search-all');
    this.list = $('#search-results');
    this.status = $('#search-status');
    this.more = $('#search-more');
    this.button = $('#search-btn');
    this.returnTo = null;
    this.cursor = null;
    this.asked = 0;
    this.timer = null;
    this.button.addEventListener('click', () => this.open());
    document.addEventListener('keydown', (ev) => {
      if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && ev.key.toLowerCase() === 'k') {
        ev.preventDefault();
        if (this.dialog.open) this.input.focus();
        else this.open();
      }
    });
    this.input.addEventListener('input', () => this.later());
    this.scope.addEventListener('change', () => this.run());
    this.more.addEventListener('click', () => this.run(true));
    $('#search-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.run();
    });
    $('#search-close').addEventListener('click', () => this.dialog.close());
    // Arrow keys move between the input and the results.
    this.dialog.addEventListener('keydown', (ev) => {
      if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
      const items = [...this.list.querySelectorAll('.search-hit')];
      if (items.length === 0) return;
      const at = items.indexOf(document.activeElement);
      const next = ev.key === 'ArrowDown' ? (at < 0 ? 0 : Math.min(items.length - 1, at + 1)) : at - 1;
      ev.preventDefault();
      if (next < 0) this.input.focus();
      else items[next].focus();
    });
    // Escape (the dialog's own cancel), the close button or a pick: focus goes back where it was.
    this.dialog.addEventListener('close', () => {
      const back = this.returnTo;
      this.returnTo = null;
      if (back && back.isConnected) back.focus();
    });
  }

  open() {
    this.returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : this.button;
    // With no group open there is only one scope.
    this.scope.disabled = !this.currentGroup();
    if (this.scope.disabled) this.scope.checked = true;
    this.dialog.showModal();
    this.input.select();
    this.input.focus();
  }

  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), 200);
  }

  async run(more = false) {
    clearTimeout(this.timer);
    const q = this.input.value.trim();
    const asked = ++this.asked;
    if (!more) {
      clear(this.list);
      this.cursor = null;
      show(this.more, false);
    }
    if (!q) {
      this.say('');
      return;
    }
    const group = this.scope.checked ? null : this.currentGroup();
    const params = new URLSearchParams({ q: q.slice(0, 200), limit: String(PAGE) });
    if (more && this.cursor) params.set('cursor', this.cursor);
    const path = group ? `/api/groups/${encodeURIComponent(group)}/search?${params}` : `/api/search?${params}`;
    this.say('Searching…');
    let page;
    try {
      page = await api('GET', path);
    } catch (err) {
      if (asked === this.asked) this.say(err.message || 'Search failed.');
      return;
    }
    // A newer query was typed meanwhile: its answer counts, not this one.
    if (asked !== this.asked) return;
    for (const r of page.results) this.list.append(this.item(r, !group));
    this.cursor = page.cursor;
    show(this.more, Boolean(page.cursor));
    const n = this.list.children.length;
    this.say(n === 0 ? 'No messages match.' : `${n}${page.cursor ? '+' : ''} message${n === 1 ? '' : 's'} found`);
  }

  say(text) {
    this.status.textContent = text;
  }

  item(r, showGroup) {
    const meta = h('span', { className: 'search-meta' },
      showGroup ? h('span', { className: 'search-group', text: r.groupTitle }) : null,
      h('bdi', { className: 'search-author', text: r.authorName }),
      h('time', { className: 'time', text: formatTime(r.ts) }));
    const btn = h('button', { type: 'button', className: 'search-hit', dataset: { entryId: r.id, groupId: r.groupId } },
      meta, h('span', { className: 'search-snippet' }, snippetNodes(r.snippet, r.highlights)));
    btn.addEventListener('click', () => {
      this.returnTo = null;
      this.dialog.close();
      this.onPick(r);
    });
    return h('li', {}, btn);
  }
}

/** The snippet as text nodes, with the matched ranges in <mark> elements. */
export function snippetNodes(snippet, highlights) {
  const out = [];
  let at = 0;
  for (const [a, b] of Array.isArray(highlights) ? highlights : []) {
    if (!(a >= at && b > a && b <= snippet.length)) continue;
    out.push(snippet.slice(at, a), h('mark', { text: snippet.slice(a, b) }));
    at = b;
  }
  out.push(snippet.slice(at));
  return out.filter((x) => x !== '');
}
