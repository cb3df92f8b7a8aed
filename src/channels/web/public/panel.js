// Members and settings of the open group: add/remove agents, the room's chats (roompanel.js),
// change the config, usage, dissolve.
// Validation errors from the API are shown next to the form (and the field they name).
import { api } from './api.js';
import { $, avatar, clear, formatCost, formatInt, h, show } from './dom.js';
import { savedName } from './identity.js';
import { RoomPanel } from './roompanel.js';
import { agentOf, state } from './state.js';

const NUMBER_KEYS = ['max_agent_turns_per_message', 'max_depth', 'cooldown_seconds', 'max_voluntary_responders', 'agent_reply_timeout_seconds', 'voluntary_timeout_seconds', 'history_turns'];

export class Panel {
  constructor(onChanged) {
    this.onChanged = onChanged;
    /** Called after the panel opens or closes (app.js: what is inert behind it on a phone). */
    this.onToggle = () => {};
    this.el = $('#panel');
    this.toggleBtn = $('#panel-toggle');
    this.members = $('#members');
    this.addForm = $('#add-member');
    this.addSelect = $('#add-member-select');
    this.memberError = $('#member-error');
    this.configForm = $('#config-form');
    this.configError = $('#config-error');
    this.saved = $('#config-saved');
    this.dissolveBtn = $('#dissolve');
    /** The chats of the room and linking them (roompanel.js). */
    this.room = new RoomPanel(() => this.onChanged());
    this.armed = false;
    /** The member whose removal (or muting: `confirmAction`) waits for a confirm, or null. */
    this.confirming = null;
    this.confirmAction = 'remove';

    this.toggleBtn.addEventListener('click', () => {
      const open = this.el.hidden;
      this.setOpen(open);
      // Keyboard and screen-reader users land in the panel they opened (it covers a phone's screen).
      if (open) $('#panel-close').focus();
    });
    $('#panel-close').addEventListener('click', () => {
      this.setOpen(false);
      this.toggleBtn.focus();
    });
    this.addForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.addMember();
    });
    this.configForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.saveConfig();
    });
    this.configForm.addEventListener('input', () => {
      this.configForm.dataset.dirty = '1';
      show(this.saved, false);
      this.clearFieldErrors();
    });
    this.dissolveBtn.addEventListener('click', () => this.dissolve());
  }

  setOpen(open) {
    this.el.hidden = !open;
    this.confirming = null;
    this.toggleBtn.setAttribute('aria-expanded', String(open));
    document.body.classList.toggle('panel-open', open);
    this.onToggle();
    if (open) this.render();
  }

  /** Re-render from state.detail. Keeps unsaved edits unless `force`. */
  render(force = false) {
    const g = state.detail;
    if (!g) return;
    if (this.confirmingGroup !== g.id) this.confirming = null;
    this.renderMembers(g);
    this.room.render(g);
    if (force || !this.configForm.dataset.dirty) this.fillConfig(g.config, g.participants);
    this.renderUsage(g);
    this.dissolveBtn.hidden = g.archived;
    this.armed = false;
    this.dissolveBtn.textContent = 'Dissolve group';
  }

  renderMembers(g) {
    clear(this.members);
    const status = new Map((g.members || []).map((m) => [m.agentId, m]));
    for (const id of g.participants) {
      const a = agentOf(id) || { id, name: id };
      const m = status.get(id);
      const notes = [];
      if (m && m.muted) notes.push('muted');
      if (m && m.cooldownLeftMs > 0) notes.push(`cooling down ${Math.ceil(m.cooldownLeftMs / 1000)} s`);
      if (g.sticky === id && g.config && g.config.sticky) notes.push('sticky');
      this.members.append(h('li', { className: 'member', dataset: { agentId: id } },
        avatar(a, 'sm'),
        h('span', { className: 'member-name', text: a.name }),
        h('span', { className: 'member-handle', text: '@' + id }),
        notes.length ? h('span', { className: 'member-note', text: notes.join(' · ') }) : null,
        this.confirming === id ? this.renderConfirm(a, this.confirmAction) : h('span', { className: 'member-actions' },
          // Unmuting gives voluntary turns back at once; muting asks first, like removing.
          m && m.muted
            ? h('button', { type: 'button', className: 'btn btn-small mute unmute', 'aria-label': `Unmute ${a.name}`, 'aria-pressed': 'true', text: 'Unmute',
                onclick: () => this.setMuted(id, false) })
            : h('button', { type: 'button', className: 'btn btn-small mute', 'aria-label': `Mute ${a.name}`, 'aria-pressed': 'false', text: 'Mute',
                onclick: () => this.askRemove(id, 'mute') }),
          h('button', { type: 'button', className: 'btn btn-small remove', 'aria-label': `Remove ${a.name}`, text: 'Remove',
            onclick: () => this.askRemove(id) }))));
    }
    clear(this.addSelect);
    const others = state.agents.filter((a) => !g.participants.includes(a.id));
    for (const a of others) this.addSelect.append(h('option', { value: a.id, text: `${a.name} (@${a.id})` }));
    this.addForm.hidden = others.length === 0;
  }

  /**
   * Removing a member is a two-step action inside the panel: "Remove" turns the row into a
   * question with its own confirm and cancel buttons (no window.confirm, which blocks the page and
   * its live streams). Escape or Cancel leaves the member in place.
   */
  renderConfirm(a, action = 'remove') {
    const mute = action === 'mute';
    const cancel = () => {
      this.confirming = null;
      this.render();
      const again = this.members.querySelector(`.member[data-agent-id="${CSS.escape(a.id)}"] ${mute ? '.mute' : '.remove'}`);
      if (again) again.focus();
    };
    if (mute) {
      return h('div', { className: 'confirm-remove-box confirm-mute-box', role: 'group', 'aria-label': `Confirm muting ${a.name}`,
        onkeydown: (ev) => {
          if (ev.key === 'Escape') {
            ev.stopPropagation();
            cancel();
          }
        } },
      h('span', { className: 'confirm-question', text: `Mute ${a.name}? It will answer only when @mentioned.` }),
      h('button', { type: 'button', className: 'btn btn-primary btn-small confirm-mute', text: 'Mute', onclick: () => {
        this.confirming = null;
        this.setMuted(a.id, true);
      } }),
      h('button', { type: 'button', className: 'btn btn-small cancel-mute', text: 'Cancel', onclick: cancel }));
    }
    const box = h('div', { className: 'confirm-remove-box', role: 'group', 'aria-label': `Confirm removing ${a.name}`,
      onkeydown: (ev) => {
        if (ev.key === 'Escape') {
          ev.stopPropagation();
          cancel();
        }
      } },
    h('span', { className: 'confirm-question', text: `Remove ${a.name} from this group?` }),
    h('button', { type: 'button', className: 'btn btn-danger btn-small confirm-remove', text: 'Remove', onclick: () => {
      this.confirming = null;
      this.removeMember(a.id);
    } }),
    h('button', { type: 'button', className: 'btn btn-small cancel-remove', text: 'Cancel', onclick: cancel }));
    return box;
  }

  askRemove(id, action = 'remove') {
    this.confirming = id;
    this.confirmAction = action;
    this.confirmingGroup = state.detail ? state.detail.id : null;
    this.render();
    const btn = this.members.querySelector(`.member[data-agent-id="${CSS.escape(id)}"] .cancel-${action}`);
    if (btn) btn.focus();
  }

  fillConfig(cfg, participantIds) {
    const f = this.configForm.elements;
    const last = f.namedItem('last_speaker');
    clear(last);
    last.append(h('option', { value: '', text: '— none —' }));
    for (const id of participantIds) last.append(h('option', { value: id, text: (agentOf(id) || { name: id }).name }));
    for (const [key, value] of Object.entries(cfg || {})) {
      const input = f.namedItem(key);
      if (!input) continue;
      if (input.type === 'checkbox') input.checked = Boolean(value);
      else input.value = value === null ? '' : String(value);
    }
    delete this.configForm.dataset.dirty;
  }

  renderUsage(g) {
    const body = $('#usage tbody');
    clear(body);
    const rows = Object.entries(g.usage || {});
    for (const [id, u] of rows) {
      body.append(h('tr', {},
        h('td', { text: (agentOf(id) || { name: id }).name }),
        h('td', { text: formatInt(u.calls) }),
        h('td', { text: `${formatInt(u.inputTokens)} / ${formatInt(u.outputTokens)}` }),
        h('td', { text: u.unpricedCalls && u.unpricedCalls >= u.calls ? 'price unknown' : formatCost(u.costUsd) + (u.unpricedCalls ? ` + ${u.unpricedCalls} unpriced` : '') })));
    }
    $('#usage').hidden = rows.length === 0;
    const warn = $('#warnings');
    clear(warn);
    for (const w of g.warnings || []) warn.append(h('p', { className: 'warning', text: '⚠ ' + w }));
  }

  async addMember() {
    const agent = this.addSelect.value;
    if (!agent || !state.detail) return;
    await this.run(this.memberError, () => api('POST', `/api/groups/${encodeURIComponent(state.detail.id)}/members`, { agent }));
  }

  /**
   * Mute or unmute through the chat command, so everyone in the group gets the same system line
   * ("Writer is muted …") as when it is typed, and the command line says who did it.
   */
  async setMuted(agent, muted) {
    const g = state.detail;
    if (!g) return;
    const ok = await this.run(this.memberError, () => api('POST', `/api/groups/${encodeURIComponent(g.id)}/messages`, {
      text: `/group ${muted ? 'mute' : 'unmute'} ${agent}`,
      author_name: savedName() || undefined,
    }).then((out) => {
      // A refused command answers in `ephemeral` (200): show it here as the error it is.
      if (out && out.ephemeral) throw new Error(out.ephemeral.text.replace(/^⚠\s*/, ''));
    }));
    if (ok) {
      const btn = this.members.querySelector(`.member[data-agent-id="${CSS.escape(agent)}"] .mute`);
      if (btn) btn.focus();
    }
  }

  async removeMember(agent) {
    if (!state.detail) return;
    await this.run(this.memberError, () => api('DELETE', `/api/groups/${encodeURIComponent(state.detail.id)}/members/${encodeURIComponent(agent)}`));
  }

  /** Only changed keys are sent. */
  async saveConfig() {
    const g = state.detail;
    if (!g) return;
    const f = this.configForm.elements;
    const patch = {};
    for (const [key, old] of Object.entries(g.config)) {
      const input = f.namedItem(key);
      if (!input) continue;
      let value;
      if (input.type === 'checkbox') value = input.checked;
      else if (NUMBER_KEYS.includes(key)) value = input.value.trim() === '' ? null : Number(input.value);
      else if (key === 'last_speaker') value = input.value || null;
      else value = input.value;
      if (value !== old) patch[key] = value;
    }
    this.clearFieldErrors();
    if (Object.keys(patch).length === 0) {
      show(this.saved, true);
      this.saved.textContent = 'Nothing changed';
      return;
    }
    const ok = await this.run(this.configError, () => api('PATCH', `/api/groups/${encodeURIComponent(g.id)}/config`, patch), (msg) => {
      for (const key of Object.keys(g.config)) {
        if (!msg.includes(key)) continue;
        const input = f.namedItem(key);
        if (input) input.setAttribute('aria-invalid', 'true');
      }
    });
    if (ok) {
      this.saved.textContent = 'Saved';
      show(this.saved, true);
    }
  }

  clearFieldErrors() {
    for (const el of this.configForm.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    show(this.configError, false);
  }

  async dissolve() {
    const g = state.detail;
    if (!g) return;
    if (!this.armed) {
      this.armed = true;
      this.dissolveBtn.textContent = `Really dissolve “${g.title}”?`;
      return;
    }
    await this.run(this.memberError, () => api('DELETE', `/api/groups/${encodeURIComponent(g.id)}`));
  }

  async run(errorEl, fn, onError) {
    show(errorEl, false);
    try {
      await fn();
      await this.onChanged();
      this.render(true);
      return true;
    } catch (err) {
      errorEl.textContent = err.message || 'That did not work.';
      show(errorEl, true);
      if (onError) onError(err.message || '');
      return false;
    }
  }
}
