// The room's chats in the group's panel: which chats the group lives in (its home and its links),
// "Link a chat" (a one-time code to type as `/group link CODE` in a Telegram group or Discord
// channel, which then joins this room), "Have a code from another chat?" (the web joins the room a
// code typed elsewhere belongs to, and opens it), and Unlink for a linked chat. The server sends a
// `group updated` event when the chats change; app.js renders the panel again then.
import { api } from './api.js';
import { $, CHANNEL_NAMES, channelIcon, clear, formatTime, h, show } from './dom.js';
import { savedName } from './identity.js';
import { state } from './state.js';

export class RoomPanel {
  constructor(onChanged) {
    this.onChanged = onChanged;
    /** Called with a group's id once the web joined its room (app.js lists and opens it). */
    this.onJoined = async () => {};
    this.list = $('#room-chats');
    this.linkBtn = $('#link-chat');
    this.codeBox = $('#link-code');
    this.joinForm = $('#link-join');
    this.joinInput = $('#link-join-code');
    this.error = $('#link-error');
    /** The code shown, for the group it was made for: { groupId, code, until }. */
    this.shown = null;
    this.linkBtn.addEventListener('click', () => this.askCode());
    this.joinForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.join();
    });
  }

  render(g) {
    clear(this.list);
    this.list.append(this.chatRow(g, { channel: g.channel, chatId: g.chatId, title: g.title }, true));
    for (const l of g.links || []) this.list.append(this.chatRow(g, l, false));
    this.linkBtn.hidden = Boolean(g.archived);
    if (this.shown && (this.shown.groupId !== g.id || g.archived)) this.shown = null;
    this.renderCode();
  }

  chatRow(g, chat, home) {
    const name = CHANNEL_NAMES[chat.channel] || chat.channel;
    const title = chat.channel === 'web' && !home ? 'this page' : chat.title || chat.chatId;
    const label = chat.channel === 'web' ? 'the web (this page)' : `${name} chat ${title}`;
    return h('li', { className: 'room-chat', dataset: { channel: chat.channel, chatId: chat.chatId } },
      h('span', { className: 'channel-icon channel-' + chat.channel, 'aria-hidden': 'true' }, channelIcon(chat.channel)),
      h('span', { className: 'room-chat-name' }, h('strong', { text: name }), ' ', h('bdi', { text: title })),
      home ? h('span', { className: 'room-chat-note', text: 'home' }) : null,
      home || g.archived ? null : h('button', { type: 'button', className: 'btn btn-small unlink', 'aria-label': `Unlink ${label}`, text: 'Unlink',
        onclick: () => this.unlink(g, chat) }));
  }

  renderCode() {
    clear(this.codeBox);
    const c = this.shown;
    show(this.codeBox, Boolean(c));
    if (!c) return;
    const command = `/group link ${c.code}`;
    const status = h('span', { className: 'link-copied', 'aria-live': 'polite' });
    this.codeBox.append(
      h('p', { className: 'link-code-value' }, 'Code: ', h('code', { text: c.code })),
      h('p', {}, 'Type ', h('code', { className: 'link-command', text: command }), ' in the Telegram group or Discord channel within 10 minutes',
        ` (until ${formatTime(c.until)}).`),
      h('div', { className: 'row' },
        h('button', { type: 'button', className: 'btn btn-small link-copy', text: 'Copy', 'aria-label': `Copy ${command}`,
          onclick: () => copy(command, this.codeBox.querySelector('.link-command')).then((ok) => {
            status.textContent = ok ? 'Copied.' : 'Select the command and copy it.';
          }) }),
        status));
  }

  async askCode() {
    const g = state.detail;
    if (!g) return;
    await this.run(async () => {
      const out = await api('POST', `/api/groups/${encodeURIComponent(g.id)}/link-code`, { author_name: savedName() || undefined });
      if (state.detail && state.detail.id === g.id) this.shown = { groupId: g.id, code: out.code, until: out.until };
      this.renderCode();
    });
  }

  async join() {
    const code = this.joinInput.value.trim();
    if (!code) {
      this.fail('Enter the code /group link showed in the other chat.');
      this.joinInput.focus();
      return;
    }
    await this.run(async () => {
      const out = await api('POST', '/api/links', { code, author_name: savedName() || undefined });
      this.joinInput.value = '';
      await this.onJoined(out.group.id);
    }, this.joinInput);
  }

  async unlink(g, chat) {
    await this.run(async () => {
      await api('DELETE', `/api/groups/${encodeURIComponent(g.id)}/links/${encodeURIComponent(chat.channel)}/${encodeURIComponent(chat.chatId)}`,
        { author_name: savedName() || undefined });
      await this.onChanged();
      this.linkBtn.focus();
    });
  }

  fail(message, field = null) {
    this.error.textContent = message;
    show(this.error, true);
    if (field) field.setAttribute('aria-invalid', 'true');
  }

  async run(fn, field = null) {
    show(this.error, false);
    if (field) field.removeAttribute('aria-invalid');
    try {
      await fn();
      return true;
    } catch (err) {
      this.fail(err.message || 'That did not work.', field);
      return false;
    }
  }
}

/** Copy text to the clipboard; without the clipboard API (or its permission) select it for the reader. */
async function copy(text, el) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (el) {
      const range = document.createRange();
      range.selectNodeContents(el);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    return false;
  }
}
