// Suggestions while typing, in the listbox under the message box: `@` offers the group's agents
// and aliases, and a message that starts with `/` offers the commands the server knows (from
// /api/agents). Arrows move, Enter or Tab takes one, Escape closes; a click takes one too.
import { avatar, clear, h, show } from './dom.js';
import { participants, state } from './state.js';

const MAX_SHOWN = 8;

export class Autocomplete {
  /** `onAccept()` runs after a suggestion was put in the message box. */
  constructor(input, list, onAccept) {
    this.input = input;
    this.list = list;
    this.onAccept = onAccept;
    this.suggestions = [];
    this.active = 0;
    this.token = null;
  }

  get open() {
    return !this.list.hidden && this.suggestions.length > 0;
  }

  /** Handle a key in the message box; true when it was for the suggestions. */
  onKey(ev) {
    if (!this.open) return false;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      const n = this.suggestions.length;
      this.active = (this.active + (ev.key === 'ArrowDown' ? 1 : n - 1)) % n;
      this.render();
    } else if (ev.key === 'Enter' || ev.key === 'Tab') {
      if (ev.isComposing) return false;
      this.accept(this.suggestions[this.active]);
    } else if (ev.key === 'Escape') {
      this.close();
    } else return false;
    ev.preventDefault();
    return true;
  }

  /** What is being typed at the caret: an `@handle` or a command at the start of the message. */
  tokenAtCaret() {
    const el = this.input;
    if (el.selectionStart !== el.selectionEnd) return null;
    const before = el.value.slice(0, el.selectionStart);
    const cmd = /^\/[a-z]*(?: [a-z]*)?$/i.exec(before);
    if (cmd) return { kind: 'command', prefix: before.toLowerCase(), start: 0, end: before.length };
    const m = /(^|[\s(,;])@([\p{L}\p{N}_-]{0,32})$/u.exec(before);
    if (!m) return null;
    return { kind: 'mention', prefix: m[2].toLowerCase(), start: before.length - m[2].length - 1, end: before.length };
  }

  mentionCandidates() {
    const out = [];
    const inGroup = new Set(participants().map((a) => a.id));
    for (const a of state.agents) {
      if (!inGroup.has(a.id)) continue;
      for (const handle of a.handles || [a.id]) out.push({ key: handle, insert: '@' + handle + ' ', main: '@' + handle, label: a.name, agent: a, primary: handle === a.id });
    }
    for (const [name, members] of Object.entries(state.aliases)) {
      out.push({ key: name, insert: '@' + name + ' ', main: '@' + name, label: 'group: ' + members.join(', '), mark: '#' });
    }
    for (const name of state.builtinAliases) out.push({ key: name, insert: '@' + name + ' ', main: '@' + name, label: 'everyone in the group', mark: '#' });
    return out;
  }

  commandCandidates(prefix) {
    const matches = state.commands.filter((c) => c.command.startsWith(prefix));
    // A command typed out in full, with nothing longer to offer: Enter sends it as it is.
    if (matches.length === 1 && matches[0].command === prefix.trimEnd()) return [];
    return matches.map((c) => ({ key: c.command, insert: c.command + (c.args ? ' ' : ''), main: c.command, args: c.args, label: c.summary, mark: '/' }));
  }

  update() {
    const tok = this.tokenAtCaret();
    if (!tok) {
      this.close();
      return;
    }
    let matches;
    if (tok.kind === 'command') matches = this.commandCandidates(tok.prefix);
    else {
      matches = this.mentionCandidates().filter((c) => c.key.startsWith(tok.prefix));
      matches.sort((a, b) => Number(Boolean(b.primary)) - Number(Boolean(a.primary)) || a.key.localeCompare(b.key));
    }
    this.suggestions = matches.slice(0, MAX_SHOWN);
    this.token = tok;
    this.active = 0;
    if (this.suggestions.length === 0) {
      this.close();
      return;
    }
    this.render();
  }

  render() {
    clear(this.list);
    this.list.setAttribute('aria-label', this.token && this.token.kind === 'command' ? 'Commands' : 'Agents and aliases');
    this.suggestions.forEach((s, i) => {
      const item = h('li', { role: 'option', className: 'option', id: 'ac-' + i, 'aria-selected': String(i === this.active),
        dataset: s.mark === '/' ? { command: s.key } : { handle: s.key },
        onmousedown: (ev) => {
          ev.preventDefault();
          this.accept(s);
        } },
      s.agent ? avatar(s.agent, 'xs') : h('span', { className: 'avatar avatar-xs avatar-group', 'aria-hidden': 'true', text: s.mark }),
      h('span', { className: 'opt-handle', text: s.main }),
      s.args ? h('span', { className: 'opt-args', text: s.args }) : null,
      h('span', { className: 'opt-label', text: s.label }));
      this.list.append(item);
    });
    this.input.setAttribute('aria-activedescendant', 'ac-' + this.active);
    show(this.list, true);
  }

  accept(s) {
    const tok = this.tokenAtCaret() || this.token;
    if (!tok || !s) return;
    this.input.setRangeText(s.insert, tok.start, tok.end, 'end');
    this.close();
    this.input.focus();
    this.onAccept();
  }

  close() {
    show(this.list, false);
    this.suggestions = [];
    this.input.removeAttribute('aria-activedescendant');
  }
}
