// The composer: Enter sends, Shift+Enter adds a line, an agent picker that inserts @handles
// (mouse or keyboard), suggestions for @handles and /commands (autocomplete.js), the sticky
// agent, idempotent sending, a draft per group (drafts.js), files to send with the message
// (attach.js: sent as a form, with the upload's progress), the reader's name asked before the
// first message (identity.js), and help while typing: unknown handles and the length limit show
// before Send.
import { api, upload } from './api.js';
import { Attachments } from './attach.js';
import { Autocomplete } from './autocomplete.js';
import { $, avatar, clear, h, show } from './dom.js';
import { loadDraft, saveDraft } from './drafts.js';
import { askName, ensureName, savedName } from './identity.js';
import { unknownMentions } from './mentions.js';
import { agentOf, knownHandles, openGroup, participants, state, webWritable } from './state.js';

/** The counter appears once a draft passes this share of the limit. */
const COUNTER_FROM = 0.8;

function newClientId() {
  if (globalThis.crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return 'c' + Date.now().toString(36) + Math.random().toString(36).slice(2, 12);
}

/** A message with files as the form the server reads: the fields first, then each file. */
function formOf(fields, files) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null && v !== '') form.append(k, v);
  for (const f of files) form.append('file', f, f.name);
  return form;
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
    this.handleWarning = $('#handle-warning');
    this.counter = $('#char-count');
    this.ac = new Autocomplete(this.input, this.auto, () => this.onEdited());
    /** The group whose draft the message box holds. */
    this.draftGroup = null;
    /** Reused when the same text is re-sent after a failure, so a retry is never doubled. */
    this.pending = null;
    /** The message being replied to ({ id, groupId, name }), shown as a chip; null when none. */
    this.replyTo = null;
    this.replyChip = $('#reply-chip');
    /** Shows an answer to this reader only (app.js: the feed's local line). */
    this.onLocal = () => {};
    /** Files to send with the message; a file refused as it is added is said on the error line. */
    this.attachments = new Attachments((why) => {
      this.error.textContent = why;
      show(this.error, Boolean(why));
    });

    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.submit();
    });
    this.input.addEventListener('keydown', (ev) => this.onKey(ev));
    this.input.addEventListener('input', () => {
      this.autosize();
      this.ac.update();
      this.updateHelp();
      this.keepDraft();
      if (!this.error.hidden) show(this.error, false);
    });
    this.input.addEventListener('click', () => {
      this.ac.update();
      this.updateHelp();
    });
    this.picker.addEventListener('keydown', (ev) => this.onPickerKey(ev));
    // Close the suggestions when focus moves elsewhere on the page (after a moment, so a click on
    // one still lands); the window itself losing focus keeps them for when the reader comes back.
    this.input.addEventListener('blur', () => setTimeout(() => {
      if (document.hasFocus() && document.activeElement !== this.input) this.ac.close();
    }, 150));
    this.pickerBtn.addEventListener('click', () => this.togglePicker());
    document.addEventListener('click', (ev) => {
      if (!this.picker.hidden && !ev.target.closest('.picker-wrap')) this.closePicker();
    });
    this.update();
  }

  /** The name messages are sent under ('' before one is chosen: the server then says "Guest"). */
  authorName() {
    return savedName();
  }

  /** After a change made for the reader (a suggestion, a fix): the same upkeep as typing. */
  onEdited() {
    this.autosize();
    this.updateHelp();
    this.keepDraft();
  }

  keepDraft() {
    if (this.draftGroup) saveDraft(this.draftGroup, this.input.value);
  }

  /** The message box holds the open group's draft: the one left keeps its own. */
  switchDraft() {
    if (this.draftGroup === state.currentId) return;
    this.keepDraft();
    this.draftGroup = state.currentId;
    this.input.value = loadDraft(this.draftGroup);
    this.pending = null;
    this.ac.close();
    show(this.error, false);
    this.autosize();
  }

  /**
   * Reply to a message: the next message is sent with `reply_to` (on an agent's message that
   * addresses the agent). A chip says so and can be cancelled (its ✕, or Escape in the message box).
   */
  setReplyTo(e) {
    const name = e.kind === 'agent' ? (agentOf(e.agentId) || { name: e.authorName }).name : e.authorName || 'someone';
    this.replyTo = { id: e.id, groupId: state.currentId, name, agentId: e.kind === 'agent' ? e.agentId : null };
    this.renderReply();
    this.input.focus();
  }

  clearReplyTo(focus = false) {
    this.replyTo = null;
    this.renderReply();
    if (focus) this.input.focus();
  }

  renderReply() {
    clear(this.replyChip);
    const r = this.replyTo;
    if (r) {
      this.replyChip.dataset.replyTo = r.id;
      this.replyChip.append(h('span', { className: 'reply-label', text: `↩ Replying to ${r.name}` }),
        h('button', { type: 'button', className: 'icon-btn reply-cancel', 'aria-label': `Cancel the reply to ${r.name}`, title: 'Cancel reply (Esc)', text: '✕',
          onclick: () => this.clearReplyTo(true) }));
    } else delete this.replyChip.dataset.replyTo;
    show(this.replyChip, Boolean(r));
  }

  /** Reflect the open group: writable or read-only, sticky agent, picker contents. */
  update() {
    this.switchDraft();
    const g = openGroup();
    const writable = webWritable(g);
    if (this.replyTo && (this.replyTo.groupId !== state.currentId || !writable)) this.clearReplyTo();
    this.input.disabled = !writable;
    this.send.disabled = !writable;
    this.attachments.update(state.currentId, writable);
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
    this.updateHelp();
  }

  // ---- help while typing

  /** Refresh the unknown-handle warning and the character counter for the current draft. */
  updateHelp() {
    this.renderHandleWarning();
    this.renderCounter();
  }

  renderHandleWarning() {
    clear(this.handleWarning);
    const text = this.input.value;
    const caret = this.input.selectionStart === this.input.selectionEnd ? this.input.selectionStart : -1;
    const found = this.input.disabled || !text.includes('@') ? [] : unknownMentions(text, knownHandles(), caret);
    for (const u of found.slice(0, 3)) {
      const owner = state.handleOwner.get(u.handle.toLowerCase());
      const outsider = owner && !owner.startsWith('alias:') ? agentOf(owner) : null;
      const line = outsider
        ? `${outsider.name} (@${u.handle}) is not in this group, so nobody is addressed`
        : `unknown handle @${u.handle}` + (u.suggestion ? ` — did you mean @${u.suggestion}?` : ' — no agent or alias here has that name');
      const fix = u.suggestion
        ? h('button', { type: 'button', className: 'link-btn', dataset: { handle: u.suggestion }, text: `use @${u.suggestion}`,
            onclick: () => this.replaceMention(u, u.suggestion) })
        : null;
      this.handleWarning.append(h('div', { className: 'warn-line', dataset: { handle: u.handle } }, h('span', { text: '⚠ ' + line }), fix ? ' ' : null, fix));
    }
    show(this.handleWarning, found.length > 0);
  }

  replaceMention(u, handle) {
    // Only if the draft still has that handle at that place (it may have been edited since).
    if (this.input.value.slice(u.start, u.end) !== '@' + u.handle) return;
    this.input.setRangeText('@' + handle, u.start, u.end, 'end');
    this.input.focus();
    this.onEdited();
  }

  /** Characters as the server counts them (UTF-16 code units, like String.length). */
  overLimit() {
    return this.input.value.length - state.maxMessageChars;
  }

  renderCounter() {
    const n = this.input.value.length;
    const max = state.maxMessageChars;
    const over = n - max;
    this.counter.textContent = over > 0
      ? `${n.toLocaleString()} / ${max.toLocaleString()} characters — ${over.toLocaleString()} over the limit`
      : `${n.toLocaleString()} / ${max.toLocaleString()}`;
    this.counter.classList.toggle('over', over > 0);
    this.counter.dataset.over = String(over > 0);
    show(this.counter, n > max * COUNTER_FROM);
  }

  /** Something to send: words, or files (a picture may say it all). */
  hasContent() {
    return Boolean(this.input.value.trim()) || this.attachments.count > 0;
  }

  async submit() {
    // One upload at a time: a second Enter while files are on their way does not send them twice.
    if (!this.hasContent() || !state.currentId || this.input.disabled || this.uploading) return;
    // A newcomer says who they are before their first message; cancelling keeps the draft.
    if (!savedName() && !(await ensureName())) return;
    const text = this.input.value;
    if (!this.hasContent() || !state.currentId || this.input.disabled) return;
    const over = this.overLimit();
    if (over > 0) {
      // Refused here rather than after a round trip; the text stays so it can be shortened.
      this.error.textContent = `Not sent: this message has ${text.length.toLocaleString()} characters and the limit is ${state.maxMessageChars.toLocaleString()}. Shorten it by ${over.toLocaleString()} or split it into two messages.`;
      show(this.error, true);
      this.input.focus();
      return;
    }
    const replyTo = this.replyTo ? this.replyTo.id : undefined;
    const files = this.attachments.files;
    const sameFiles = (a, b) => a.length === b.length && a.every((f, i) => f === b[i]);
    if (!this.pending || this.pending.text !== text || this.pending.groupId !== state.currentId || this.pending.replyTo !== replyTo || !sameFiles(this.pending.files, files)) {
      this.pending = { text, groupId: state.currentId, clientId: newClientId(), replyTo, files };
    }
    const { clientId, groupId } = this.pending;
    this.send.disabled = true;
    this.uploading = files.length > 0;
    this.attachments.markRefused(null);
    try {
      const path = `/api/groups/${encodeURIComponent(groupId)}/messages`;
      const fields = { text, author_name: this.authorName(), client_id: clientId, reply_to: replyTo };
      const out = files.length === 0 ? await api('POST', path, fields) : await upload(path, formOf(fields, files), (sent, total) => this.attachments.progress(sent, total));
      this.pending = null;
      if (files.length > 0) this.attachments.sent(groupId, files);
      // The reader may have moved to another group meanwhile: only the sent group's draft goes.
      if (this.draftGroup === groupId) {
        if (this.input.value === text) this.input.value = '';
        this.keepDraft();
      } else if (loadDraft(groupId) === text) saveDraft(groupId, '');
      if (this.replyTo && this.replyTo.id === replyTo) this.clearReplyTo();
      this.autosize();
      this.updateHelp();
      show(this.error, false);
      // A command's answer is for this reader alone: shown here, never stored.
      if (out && out.ephemeral) this.onLocal({ ...out.ephemeral, asked: text.trim().slice(0, 200) });
    } catch (err) {
      const local = err.data && err.data.ephemeral;
      if (local) {
        // A refusal: shown once, as a line only this reader sees; the text stays in the box.
        show(this.error, false);
        this.onLocal(local);
      } else {
        // A file the server would not take: its chip is marked; the text and the files stay.
        const refused = err.data && err.data.error && err.data.error.file;
        this.error.textContent = (refused || err.code === 'too_many_files' ? 'Not sent: ' : '') + (err.message || 'Could not send.');
        if (refused) this.attachments.markRefused(refused);
        // A name that reads as an agent's: offer to change it right there.
        if (err.code === 'reserved_name') {
          this.error.append(' ', h('button', { type: 'button', className: 'link-btn', text: 'Change your name', onclick: () => askName(err.message) }));
        }
        show(this.error, true);
      }
    } finally {
      this.uploading = false;
      this.attachments.progress(null);
      this.send.disabled = this.input.disabled;
      this.input.focus();
    }
  }

  onKey(ev) {
    if (this.ac.onKey(ev)) return;
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      this.submit();
    } else if (ev.key === 'Escape' && this.replyTo) {
      ev.preventDefault();
      this.clearReplyTo(true);
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
    this.onEdited();
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
    this.focusPick(0);
  }

  /** The picker's items; the focused one is the selection (Enter activates it, as any button). */
  picks() {
    return [...this.picker.querySelectorAll('button.pick')];
  }

  focusPick(index) {
    const picks = this.picks();
    if (picks.length === 0) return;
    const i = ((index % picks.length) + picks.length) % picks.length;
    picks.forEach((b, k) => b.classList.toggle('active', k === i));
    picks[i].focus();
  }

  onPickerKey(ev) {
    const picks = this.picks();
    const at = picks.indexOf(document.activeElement);
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const step = ev.key === 'ArrowDown' ? 1 : -1;
      this.focusPick(at < 0 ? (step > 0 ? 0 : -1) : at + step);
    } else if (ev.key === 'Home' || ev.key === 'End') {
      ev.preventDefault();
      this.focusPick(ev.key === 'Home' ? 0 : picks.length - 1);
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      this.closePicker();
      this.input.focus();
    } else if (ev.key === 'Tab') {
      // Leaving the menu closes it, like a click elsewhere.
      this.closePicker();
    }
  }

  closePicker() {
    show(this.picker, false);
    this.pickerBtn.setAttribute('aria-expanded', 'false');
  }
}
