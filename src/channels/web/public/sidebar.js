// The sidebar: every group (web rooms and rooms the web joined writable, other Telegram/Discord groups read-only, with their icon),
// unread badges, and the create-group dialog.
import { api } from './api.js';
import { $, CHANNEL_NAMES, avatar, channelIcon, clear, h, show } from './dom.js';
import { state, webJoined } from './state.js';

export class Sidebar {
  constructor(onSelect) {
    this.onSelect = onSelect;
    this.list = $('#group-list');
    this.el = $('#sidebar');
    this.scrim = $('#scrim');
    this.menuBtn = $('#menu-toggle');
    this.narrow = matchMedia('(max-width: 720px)');
    this.menuBtn.addEventListener('click', () => this.setOpen(!this.drawerOpen()));
    this.scrim.addEventListener('click', () => this.setOpen(false, true));
    this.narrow.addEventListener('change', () => this.syncInert());
    this.syncInert();
    $('#new-group').addEventListener('click', () => this.openCreate());
    $('#create-cancel').addEventListener('click', () => $('#create-dialog').close());
    $('#create-form').addEventListener('input', () => show($('#create-error'), false));
    $('#create-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.create();
    });
  }

  /** True while the phone-width drawer is out. */
  drawerOpen() {
    return this.narrow.matches && document.body.classList.contains('sidebar-open');
  }

  /**
   * Phone width: the sidebar slides over the feed. Focus moves into it when it opens, and back to
   * the menu button when it is dismissed (`returnFocus`: Escape, the scrim).
   */
  setOpen(open, returnFocus = false) {
    document.body.classList.toggle('sidebar-open', open);
    show(this.scrim, open);
    this.menuBtn.setAttribute('aria-expanded', String(open));
    this.syncInert();
    if (open && this.narrow.matches) (this.list.querySelector('[aria-current="page"]') || $('#new-group')).focus();
    else if (!open && returnFocus) this.menuBtn.focus();
  }

  /**
   * A closed drawer is off screen but would keep its links and buttons in the tab order: it is
   * inert until opened. While it is open, the page behind the scrim is inert instead. The members
   * panel covers the whole screen at phone width: while it is open, everything behind it is inert
   * (the drawer included), and all of it comes back when it closes.
   */
  syncInert() {
    const drawer = this.narrow.matches;
    const open = document.body.classList.contains('sidebar-open');
    const panel = drawer && document.body.classList.contains('panel-open');
    this.el.inert = (drawer && !open) || panel;
    $('#panel').inert = drawer && open;
    for (const el of document.querySelectorAll('main.chat, #banner')) el.inert = (drawer && open) || panel;
  }

  render() {
    clear(this.list);
    const groups = [...state.groups.values()].filter((g) => !g.archived || g.id === state.currentId);
    groups.sort((a, b) => {
      if (webJoined(a) !== webJoined(b)) return webJoined(a) ? -1 : 1;
      const ta = a.lastMessage ? a.lastMessage.ts : a.createdAt;
      const tb = b.lastMessage ? b.lastMessage.ts : b.createdAt;
      return tb - ta || a.title.localeCompare(b.title);
    });
    for (const g of groups) {
      const unread = state.unread.get(g.id) || 0;
      // A Telegram or Discord group whose room the web joined is written to here too.
      const readOnly = !webJoined(g);
      const typing = [...(state.typingIn.get(g.id) || [])].map((id) => (state.agentById.get(id) || { name: id }).name);
      const preview = typing.length ? `${typing.join(', ')} ${typing.length === 1 ? 'is' : 'are'} typing…` : g.lastMessage ? `${g.lastMessage.authorName}: ${g.lastMessage.text || '📎 a file'}` : `${g.participants.length} agent${g.participants.length === 1 ? '' : 's'}`;
      const current = g.id === state.currentId;
      this.list.append(h('li', {},
        h('a', { href: '#/g/' + encodeURIComponent(g.id), className: 'group-item' + (current ? ' current' : '') + (unread ? ' has-unread' : ''),
          'aria-current': current ? 'page' : null, dataset: { groupId: g.id, channel: g.channel },
          onclick: (ev) => {
            ev.preventDefault();
            this.setOpen(false);
            this.onSelect(g.id);
          } },
        h('span', { className: 'channel-icon channel-' + g.channel, title: CHANNEL_NAMES[g.channel] + (readOnly ? ' (read-only here)' : ''), role: 'img', 'aria-label': CHANNEL_NAMES[g.channel] }, channelIcon(g.channel)),
        h('span', { className: 'group-main' },
          h('span', { className: 'group-title', text: g.title }),
          h('span', { className: 'group-preview' + (typing.length ? ' is-typing' : ''), text: preview.length > 80 ? preview.slice(0, 79) + '…' : preview })),
        readOnly ? h('span', { className: 'ro', title: 'Read-only: post on ' + CHANNEL_NAMES[g.channel], text: 'read-only' }) : null,
        unread ? h('span', { className: 'badge', 'aria-label': `${unread} unread`, text: unread > 99 ? '99+' : String(unread) }) : null)));
    }
    show($('#no-groups'), groups.length === 0);
    const total = [...state.unread.values()].reduce((a, b) => a + b, 0);
    document.title = total ? `(${total}) Chorus` : 'Chorus';
  }

  openCreate() {
    const box = $('#create-agents');
    clear(box);
    for (const a of state.agents) {
      box.append(h('label', { className: 'agent-check' },
        h('input', { type: 'checkbox', name: 'participants', value: a.id }),
        avatar(a, 'sm'),
        h('span', { text: a.name }),
        h('span', { className: 'muted', text: '@' + a.id })));
    }
    $('#create-name').value = '';
    show($('#create-error'), false);
    $('#create-dialog').showModal();
    $('#create-name').focus();
  }

  async create() {
    const title = $('#create-name').value.trim();
    const participants = [...document.querySelectorAll('#create-agents input:checked')].map((i) => i.value);
    const error = $('#create-error');
    const fail = (msg) => {
      error.textContent = msg;
      show(error, true);
    };
    if (!title) return fail('Give the group a title.');
    if (participants.length === 0) return fail('Pick at least one agent.');
    const btn = $('#create-submit');
    btn.disabled = true;
    try {
      const res = await api('POST', '/api/groups', { title, participants });
      state.groups.set(res.group.id, res.group);
      $('#create-dialog').close();
      // On a phone the new group should be in view, not behind the sidebar it was created from.
      this.setOpen(false);
      this.render();
      this.onSelect(res.group.id);
    } catch (err) {
      fail(err.message || 'Could not create the group.');
    } finally {
      btn.disabled = false;
    }
  }
}
