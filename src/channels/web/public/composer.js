// The composer: Enter sends, Shift+Enter adds a line, an agent picker that inserts @handles,
// @-autocomplete over handles and aliases, the sticky agent, and idempotent sending.
import { api } from './api.js';
import { $, avatar, clear, h, show } from './dom.js';
import { agentOf, currentGroup, participants, state } from './state.js';

const NAME_KEY = 'chorus.name';

function newClientId() {
  if (globalThis.crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return 'c' + Date.now().toString(36) + Math.random().toString(36).slice(2, 12);
}

export class Composer {
  constructor() {
    this.form = $('#composer');
    this.input = $('#input');
    this.send = $('#send');
    this.error = $('#composer-error');
    this.picker = $('#picker');
    this.pickerBtn = $('#picker-btn');
    this.auto = $('#autocomplete');
    this.sticky = $('#sticky');
    this.readonly = $('#readonly-note');
    this.nameInput = $('#author-name');
    this.suggestions = [];
    this.active = 0;
    /** Reused when the same text is re-sent after a failure, so a retry is never doubled. */
    this.pending = null;

    this.nameInput.value = localStorage.getItem(NAME_KEY) || 'You';
    this.nameInput.addEventListener('change', () => localStorage.setItem(NAME_KEY, this.nameInput.value.trim() || 'You'));
    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.submit();
    });
    this.input.addEventListener('keydown', (ev) => this.onKey(ev));
    this.input.addEventListener('input', () => {
      this.autosize();
      this.updateAutocomplete();
      if (!this.error.hidden) show(this.error, false);
    });
    this.input.addEventListener('click', () => this.updateAutocomplete());
    // Close the suggestions when focus moves elsewhere on the page (after a moment, so a click on
    // one still lands); the window itself losing focus keeps them for when the reader comes back.
    this.input.addEventListener('blur', () => setTimeout(() => {
      if (document.hasFocus() && document.activeElement !== this.input) this.closeAutocomplete();
    }, 150));
    this.pickerBtn.addEventListener('click', () => this.togglePicker());
    document.addEventListener('click', (ev) => {
      if (!this.picker.hidden && !ev.target.closest('.picker-wrap')) this.closePicker();
    });
    this.update();
  }

  /** Reflect the open group: writable or read-only, sticky agent, picker contents. */
  update() {
    const g = state.detail || currentGroup();
    const writable = Boolean(g && g.channel === 'web' && !g.archived);
    this.input.disabled = !writable;
    this.send.disabled = !writable;
    this.pickerBtn.disabled = !writable;
    this.input.placeholder = writable ? (matchMedia('(max-width: 720px)').matches ? 'Message… (@ to mention)' : 'Message the group — @handle addresses an agent') : '';
    if (g && !writable) {
      const where = g.archived ? 'This group was dissolved; its history stays readable.' : `This group lives on ${g.channel === 'telegram' ? 'Telegram' : 'Discord'}. You can follow it here; reply there.`;
      this.readonly.textContent = where;
    }
    show(this.readonly, Boolean(g && !writable));
    this.form.classList.toggle('readonly', Boolean(g && !writable));
    const sticky = g && g.sticky ? agentOf(g.sticky) : null;
    clear(this.sticky);
    if (sticky && g.config && g.config.sticky) {
      this.sticky.append(avatar(sticky, 'xs'), ` Talking to ${sticky.name}`);
      this.sticky.title = `Messages without an @mention go to ${sticky.name}`;
      this.sticky.dataset.agentId = sticky.id;
    }
    show(this.sticky, Boolean(sticky && g.config && g.config.sticky));
    this.closePicker();
  }

  async submit() {
    const text = this.input.value;
    if (!text.trim() || !state.currentId || this.input.disabled) return;
    if (!this.pending || this.pending.text !== text || this.pending.groupId !== state.currentId) {
      this.pending = { text, groupId: state.currentId, clientId: newClientId() };
    }
    const { clientId, groupId } = this.pending;
    this.send.disabled = true;
    try {
      await api('POST', `/api/groups/${encodeURIComponent(groupId)}/messages`, {
        text,
        author_name: this.nameInput.value.trim() || 'You',
        client_id: clientId,
      });
      this.pending = null;
      if (this.input.value === text) this.input.value = '';
      this.autosize();
      show(this.error, false);
    } catch (err) {
      this.error.textContent = err.message || 'Could not send.';
      show(this.error, true);
    } finally {
      this.send.disabled = this.input.disabled;
      this.input.focus();
    }
  }

  onKey(ev) {
    if (!this.auto.hidden && this.suggestions.length > 0) {
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        ev.preventDefault();
        const n = this.suggestions.length;
        this.active = (this.active + (ev.key === 'ArrowDown' ? 1 : n - 1)) % n;
        this.renderAutocomplete();
        return;
      }
      if (ev.key === 'Enter' || ev.key === 'Tab') {
        ev.preventDefault();
        this.accept(this.suggestions[this.active]);
        return;
      }
      if (ev.key === 'Escape') {
        ev.preventDefault();
        this.closeAutocomplete();
        return;
      }
    }
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      this.submit();
    }
  }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = Math.min(this.input.scrollHeight, 200) + 'px';
  }

  /** Insert text at the caret (the picker). */
  insert(text) {
    const el = this.input;
    const start = el.selectionStart ?? el.value.length;
    const end = el.selectionEnd ?? el.value.length;
    const before = el.value.slice(0, start);
    const pad = before && !/\s$/.test(before) ? ' ' : '';
    el.setRangeText(pad + text, start, end, 'end');
    el.focus();
    this.autosize();
  }

  // ---- agent picker

  togglePicker() {
    if (this.picker.hidden) this.openPicker();
    else this.closePicker();
  }

  openPicker() {
    clear(this.picker);
    for (const a of participants()) {
      this.picker.append(h('li', { role: 'none' },
        h('button', { type: 'button', role: 'menuitem', className: 'pick', dataset: { handle: a.id },
          onclick: () => {
            this.insert('@' + a.id + ' ');
            this.closePicker();
          } }, avatar(a, 'sm'), h('span', { className: 'pick-name', text: a.name }), h('span', { className: 'pick-handle', text: '@' + a.id }))));
    }
    show(this.picker, true);
    this.pickerBtn.setAttribute('aria-expanded', 'true');
    const first = this.picker.querySelector('button');
    if (first) first.focus();
  }

  closePicker() {
    show(this.picker, false);
    this.pickerBtn.setAttribute('aria-expanded', 'false');
  }

  // ---- @-autocomplete

  /** The `@prefix` right before the caret, if any. */
  tokenAtCaret() {
    const el = this.input;
    if (el.selectionStart !== el.selectionEnd) return null;
    const before = el.value.slice(0, el.selectionStart);
    const m = /(^|[\s(,;])@([\p{L}\p{N}_-]{0,32})$/u.exec(before);
    if (!m) return null;
    return { prefix: m[2].toLowerCase(), start: before.length - m[2].length - 1, end: before.length };
  }

  candidates() {
    const out = [];
    const inGroup = new Set(participants().map((a) => a.id));
    for (const a of state.agents) {
      if (!inGroup.has(a.id)) continue;
      for (const handle of a.handles || [a.id]) out.push({ handle, agent: a, label: a.name, primary: handle === a.id });
    }
    for (const [name, members] of Object.entries(state.aliases)) {
      out.push({ handle: name, agent: null, label: 'group: ' + members.join(', '), primary: false });
    }
    for (const name of state.builtinAliases) out.push({ handle: name, agent: null, label: 'everyone in the group', primary: false });
    return out;
  }

  updateAutocomplete() {
    const tok = this.tokenAtCaret();
    if (!tok) {
      this.closeAutocomplete();
      return;
    }
    const matches = this.candidates().filter((c) => c.handle.startsWith(tok.prefix));
    matches.sort((a, b) => Number(b.primary) - Number(a.primary) || a.handle.localeCompare(b.handle));
    this.suggestions = matches.slice(0, 8);
    this.token = tok;
    this.active = 0;
    if (this.suggestions.length === 0) {
      this.closeAutocomplete();
      return;
    }
    this.renderAutocomplete();
  }

  renderAutocomplete() {
    clear(this.auto);
    this.suggestions.forEach((s, i) => {
      const item = h('li', { role: 'option', className: 'option', id: 'ac-' + i, 'aria-selected': String(i === this.active), dataset: { handle: s.handle },
        onmousedown: (ev) => {
          ev.preventDefault();
          this.accept(s);
        } },
      s.agent ? avatar(s.agent, 'xs') : h('span', { className: 'avatar avatar-xs avatar-group', 'aria-hidden': 'true', text: '#' }),
      h('span', { className: 'opt-handle', text: '@' + s.handle }),
      h('span', { className: 'opt-label', text: s.label }));
      this.auto.append(item);
    });
    this.input.setAttribute('aria-activedescendant', 'ac-' + this.active);
    show(this.auto, true);
  }

  accept(s) {
    const tok = this.tokenAtCaret() || this.token;
    if (!tok || !s) return;
    this.input.setRangeText('@' + s.handle + ' ', tok.start, tok.end, 'end');
    this.closeAutocomplete();
    this.input.focus();
  }

  closeAutocomplete() {
    show(this.auto, false);
    this.suggestions = [];
    this.input.removeAttribute('aria-activedescendant');
  }
}
