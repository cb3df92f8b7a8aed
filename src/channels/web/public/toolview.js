// Agents' tool calls in the feed (entries of kind 'tool'). A step is one compact line, "🔧 Analyst
// used orders.lookup", that opens (a native <details>) on its arguments and result, always as
// plain text: a tool's answer is untrusted and never becomes markup. A request ("Analyst wants to
// use orders.cancel") shows all its arguments, then Approve and Deny, until it is decided; what became
// of it is told by later entries — the decision line ("✅ Maya approved orders.cancel (t12)") or
// the step with the same call id — whichever page of history they arrive on, before or after it.
import { api } from './api.js';
import { avatar, colorFor, accentVars, formatTime, h } from './dom.js';
import { setTime, visibleName } from './entryview.js';
import { ensureName } from './identity.js';
import { agentOf, state } from './state.js';

/** Words after a step that did not simply work. */
const OUTCOME_WORDS = {
  error: 'answered with an error',
  timeout: 'timed out',
  unavailable: 'server unavailable',
  denied: 'not approved',
  interrupted: 'interrupted — outcome unknown',
  cancelled: 'cancelled',
};
/** A result longer than this shows its start and a "show all" control. */
const FOLD_CHARS = 2000;
/** The decision line Approvals.decide records (the same for /approve, /deny and the buttons). */
const DECISION_LINE = /^(?:✅|⛔) (.+) (approved|denied) (\S+) \(([^()\s]+)\)$/u;
/** setTimeout takes at most 2^31-1 ms. */
const MAX_TIMER = 2 ** 31 - 1;

const utf8 = new TextEncoder();

function kb(bytes) {
  return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
}

function jsonText(value) {
  try {
    return JSON.stringify(value ?? {}, null, 2);
  } catch {
    return String(value);
  }
}

export class ToolViews {
  constructor() {
    /** Call id → what became of its request: { verdict: 'approved' | 'denied' | 'expired' | 'cancelled', by, sure }. */
    this.verdicts = new Map();
    /** Call id → the request's parts on screen. */
    this.requests = new Map();
  }

  reset() {
    for (const r of this.requests.values()) clearTimeout(r.timer);
    this.requests.clear();
    this.verdicts.clear();
  }

  /** Learn from any entry what became of a request: a decision line, or the call's step. */
  note(e) {
    if (e.kind === 'system' && e.toolDecision && typeof e.toolDecision.id === 'string') {
      const d = e.toolDecision;
      this.learn(d.id, { verdict: d.approved ? 'approved' : 'denied', by: d.by, sure: true });
    } else if (e.kind === 'system' && typeof e.text === 'string') {
      // The line alone (an answer to this reader's own click): its words say the same.
      const m = DECISION_LINE.exec(e.text.trim());
      if (m) this.learn(m[4], { verdict: m[2], by: m[1], sure: true });
    } else if (e.kind === 'tool' && e.tool && e.tool.outcome !== 'waiting') {
      const t = e.tool;
      const verdict = t.outcome === 'denied' ? (t.decidedBy ? 'denied' : 'expired') : t.outcome === 'cancelled' && !t.decidedBy ? 'cancelled' : 'approved';
      this.learn(t.id, { verdict, by: t.decidedBy || null, sure: false });
    }
  }

  /** A decision line (the answer to this reader's own click). */
  noteLine(line) {
    if (typeof line === 'string') this.note({ kind: 'system', text: line });
  }

  learn(id, v) {
    if (typeof id !== 'string') return;
    const known = this.verdicts.get(id);
    // The decision line says who decided; a step says so too unless nobody did (it expired).
    if (known && (known.sure || !v.sure)) return;
    this.verdicts.set(id, v);
    const r = this.requests.get(id);
    if (r) this.update(r);
  }

  /** The list item of a tool entry; `base` holds its data attributes (entry id, seq, day). */
  render(e, base) {
    const t = e.tool;
    const agent = agentOf(e.agentId) || { id: e.agentId || e.authorId, name: visibleName(e.authorName), avatar: null, color: null };
    const who = e.authorName ? visibleName(e.authorName) : agent.name;
    const label = `${t.server}.${t.tool}`;
    const waiting = t.outcome === 'waiting';
    const li = h('li', { className: `msg tool ${waiting ? 'tool-request' : 'tool-step'}`, vars: accentVars(colorFor(agent)),
      ...base, dataset: { ...base.dataset, toolId: t.id, outcome: t.outcome, agentId: agent.id } }, avatar(agent, 'sm'));
    li.append(waiting ? this.request(e, who, label, li) : step(e, who, label));
    return li;
  }

  request(e, who, label, li) {
    const t = e.tool;
    const btn = (approve) => h('button', { type: 'button', className: `btn btn-small ${approve ? 'btn-primary tool-approve' : 'tool-deny'}`,
      'aria-label': `${approve ? 'Approve' : 'Deny'} ${label}`, text: approve ? 'Approve' : 'Deny', onclick: () => this.decide(r, approve) });
    const until = t.deadline ? h('time', { className: 'tool-until', datetime: new Date(t.deadline).toISOString(), title: `Refused if nobody decides by ${new Date(t.deadline).toLocaleString()}`, text: `until ${formatTime(t.deadline)}` }) : null;
    const r = {
      e,
      li,
      approve: btn(true),
      deny: btn(false),
      until,
      status: h('span', { className: 'tool-status', role: 'status' }),
      error: h('p', { className: 'tool-error', role: 'alert', hidden: true }),
      busy: false,
      lapsed: false,
      timer: 0,
    };
    const box = h('div', { className: 'tool-card' },
      h('div', { className: 'tool-head' }, headLine(who, 'wants to use', label), timeEl(e.ts)),
      h('pre', { className: 'tool-json tool-args', tabindex: '0', 'aria-label': `Arguments for ${label}`, text: jsonText(t.input) }),
      h('div', { className: 'tool-decide' }, r.approve, r.deny, until, r.status),
      r.error);
    clearTimeout(this.requests.get(t.id)?.timer);
    this.requests.set(t.id, r);
    this.update(r);
    return box;
  }

  /** Buttons while the request waits; what became of it once that is known. */
  update(r) {
    const t = r.e.tool;
    const v = this.verdicts.get(t.id);
    clearTimeout(r.timer);
    const left = (t.deadline || 0) - Date.now();
    if (!v && t.deadline && left <= 0) r.lapsed = true;
    else if (!v && t.deadline) r.timer = setTimeout(() => this.update(r), Math.min(left + 50, MAX_TIMER));
    // Decided: the outcome instead of the buttons. Too late with no decision: the buttons stay, off.
    r.approve.hidden = r.deny.hidden = Boolean(v);
    if (r.until) r.until.hidden = Boolean(v) || r.lapsed;
    r.approve.disabled = r.deny.disabled = Boolean(v) || r.lapsed || Boolean(r.busy);
    r.li.dataset.state = v ? v.verdict : r.lapsed ? 'lapsed' : 'waiting';
    r.status.textContent = !v ? (r.lapsed ? 'waiting expired' : r.busy === true ? 'sending…' : '') : v.verdict === 'expired' ? 'expired: nobody decided in time' : v.verdict === 'cancelled' ? 'cancelled before anyone decided' : `${v.verdict}${v.by ? ` by ${visibleName(v.by)}` : ''}`;
  }

  async decide(r, approve) {
    if (r.busy) return;
    const name = await ensureName();
    const groupId = state.currentId;
    if (!name || !groupId) return;
    r.busy = true;
    r.error.hidden = true;
    this.update(r);
    try {
      // The request's digest: the server refuses the decision if the call is not the one shown here.
      const digest = typeof r.e.tool.digest === 'string' ? { digest: r.e.tool.digest } : {};
      const body = { decision: approve ? 'approve' : 'deny', author_name: name, ...digest };
      const path = `/api/groups/${encodeURIComponent(groupId)}/tools/${encodeURIComponent(r.e.tool.id)}`;
      const res = await api('POST', path, body);
      this.noteLine(res && res.line);
    } catch (err) {
      r.error.textContent = `⚠ Could not ${approve ? 'approve' : 'deny'}: ${err.message || 'the server did not answer'}`;
      r.error.hidden = false;
      // Decided already, too late, or a call the server no longer knows (its turn is over): the
      // buttons stay off; the outcome, if any, arrives on its own.
      if (err.status === 409 && err.code === 'expired') r.lapsed = true;
      else if (err.status === 409 || err.code === 'unknown_call') r.busy = 'done';
    }
    if (r.busy === true) r.busy = false;
    this.update(r);
  }
}

/** "🔧 Analyst used orders.lookup" as parts: the name in the agent's colour, the tool as code. */
function headLine(who, verb, label) {
  return h('span', { className: 'tool-line' }, h('span', { 'aria-hidden': 'true', text: '🔧 ' }), h('span', { className: 'author', text: who }), ` ${verb} `, h('code', { text: label }));
}

function timeEl(ts) {
  const el = h('time', { className: 'time' });
  setTime(el, ts);
  return el;
}

/** A finished step: a line that opens on the arguments and the result (built on first open). */
function step(e, who, label) {
  const t = e.tool;
  const words = t.outcome === 'denied' && t.decidedBy ? `denied by ${visibleName(t.decidedBy)}` : OUTCOME_WORDS[t.outcome] || (t.outcome === 'ok' ? '' : t.outcome);
  const verb = t.outcome === 'denied' ? 'wanted to use' : 'used';
  const summary = h('summary', { className: 'tool-summary' }, headLine(who, verb, label),
    words ? h('span', { className: `tool-outcome outcome-${t.outcome}`, text: words }) : null, timeEl(e.ts));
  const details = h('details', { className: 'tool-card tool-details' }, summary);
  details.addEventListener('toggle', () => {
    if (details.open && details.childElementCount === 1) details.append(stepBody(t, label));
  });
  return details;
}

function stepBody(t, label) {
  const result = String(t.result ?? '');
  const kept = utf8.encode(result).length;
  const long = result.length > FOLD_CHARS;
  let cut = FOLD_CHARS;
  // Never split a character made of two UTF-16 units.
  if (long && /[\ud800-\udbff]/.test(result[cut - 1])) cut--;
  const pre = h('pre', { className: 'tool-json tool-result', tabindex: '0', 'aria-label': `Result of ${label}`, text: long ? result.slice(0, cut) + '…' : result || '(empty)' });
  const more = long
    ? h('button', { type: 'button', className: 'show-more tool-more', text: `show all (${kb(kept)})`,
        onclick: (ev) => {
          pre.textContent = result;
          ev.currentTarget.remove();
          pre.focus();
        } })
    : null;
  return h('div', { className: 'tool-body' },
    t.decidedBy && t.outcome !== 'denied' ? h('p', { className: 'tool-note', text: `Approved by ${visibleName(t.decidedBy)}` }) : null,
    h('p', { className: 'tool-label', text: 'Arguments' }),
    h('pre', { className: 'tool-json tool-args', tabindex: '0', 'aria-label': `Arguments for ${label}`, text: jsonText(t.input) }),
    h('p', { className: 'tool-label', text: 'Result' }),
    pre,
    more,
    t.resultBytes > kept ? h('p', { className: 'tool-note tool-cut', text: `Cut: the tool answered ${kb(t.resultBytes)}; this is the first ${kb(kept)}, as the agent got it.` }) : null);
}
