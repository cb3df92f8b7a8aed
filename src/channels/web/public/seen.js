// "What did <Agent> see?" in an agent reply's details: the parts of the prompt its model got for
// that turn — the messages it was shown in full, the older ones folded into one digest line, the
// running summary, its own earlier turns (collapsed) and its persona — rebuilt by the server from
// the log (GET /api/groups/:id/messages/:entryId/context) on first open. Every text is set with
// textContent, as the model read it: markup stays visible as typed and can never become markup.
import { api } from './api.js';
import { clear, formatInt, h } from './dom.js';
import { agentOf } from './state.js';

/** A row for the reply's details list (a <dl>): the button and, once opened, what it saw. */
export function seenRow(e) {
  const name = (agentOf(e.agentId) || { name: e.authorName }).name;
  const groupId = e.id.slice(0, e.id.lastIndexOf('.'));
  const body = h('div', { className: 'seen-body', hidden: true, role: 'region', 'aria-label': `What ${name} saw` });
  let loaded = false;
  const btn = h('button', { type: 'button', className: 'seen-btn', 'aria-expanded': 'false', text: `What did ${name} see?`,
    onclick: async () => {
      const open = body.hidden;
      body.hidden = !open;
      btn.setAttribute('aria-expanded', String(open));
      if (!open || loaded) return;
      loaded = true;
      body.setAttribute('aria-busy', 'true');
      body.append(h('p', { className: 'seen-note', text: 'Loading…' }));
      try {
        const ctx = await api('GET', `/api/groups/${encodeURIComponent(groupId)}/messages/${encodeURIComponent(e.id)}/context`);
        clear(body);
        body.append(...renderSeen(ctx, name));
      } catch (err) {
        loaded = false; // another open tries again
        clear(body);
        body.append(h('p', { className: 'seen-note', text: err.message || 'Could not load what the agent saw.' }));
      } finally {
        body.removeAttribute('aria-busy');
      }
    } });
  return h('div', { className: 'seen-row' }, h('dt', { text: 'Prompt' }), h('dd', {}, btn, body));
}

/** The parts of one prompt, in the order the model read them (newest messages last). */
function renderSeen(ctx, name) {
  const parts = [];
  const w = ctx.window || {};
  parts.push(h('p', { className: 'seen-note', text: `${ctx.model} · about ${formatInt(w.estimatedTokens)} of ${formatInt(w.budgetTokens)} prompt tokens (${formatInt(w.contextTokens)}-token window)` }));
  const inexact = Object.entries(ctx.exact || {}).filter(([, ok]) => !ok).map(([part]) => part);
  if (inexact.length) parts.push(h('p', { className: 'seen-note warning', text: `Not exactly as sent (changed since, or not recorded): ${inexact.join(', ')}` }));

  const obs = ctx.observations || { full: [], folded: { count: 0 } };
  const folded = obs.folded || { count: 0, omitted: 0 };
  parts.push(h('h4', { className: 'seen-heading', text: `Messages shown (${obs.full.length} in full${folded.count + folded.omitted ? `, ${folded.count + folded.omitted} folded` : ''})` }));
  if (folded.digest) parts.push(h('p', { className: 'seen-digest', title: `${folded.count + folded.omitted} earlier messages folded into one line`, text: folded.digest }));
  if (obs.full.length) {
    parts.push(h('ol', { className: 'seen-list' }, obs.full.map((m) => h('li', { className: `seen-msg seen-${m.kind}`, dataset: { seq: String(m.seq) } },
      h('bdi', { className: 'seen-author', text: m.kind === 'system' ? 'Chorus' : m.authorName }),
      m.cut ? h('span', { className: 'seen-tag', text: 'cut to fit' }) : null,
      h('div', { className: 'seen-text', text: m.text })))));
  } else {
    parts.push(h('p', { className: 'seen-note', text: 'Nothing new since its last turn.' }));
  }

  if (ctx.summary) {
    parts.push(collapsible(`Running summary${ctx.summary.cut ? ' (shortened to fit)' : ''}`, h('div', { className: 'seen-text', text: ctx.summary.text ?? '(left out to fit)' })));
  }
  const history = ctx.history || [];
  const turns = Math.ceil(history.length / 2);
  parts.push(collapsible(`${name}'s earlier turns (${turns})`, history.length
    ? h('ol', { className: 'seen-list' }, history.map((m) => h('li', { className: `seen-msg seen-turn-${m.role}` },
        h('span', { className: 'seen-author', text: m.role === 'assistant' ? name : 'shown to it' }),
        h('div', { className: 'seen-text', text: m.content ?? '(not recorded for older replies)' }))))
    : h('p', { className: 'seen-note', text: 'None: this turn had no earlier turns in its prompt.' })));
  if (ctx.system) parts.push(collapsible(`Persona and group${ctx.system.sameAsSent ? '' : ' (changed since)'}`, h('div', { className: 'seen-text', text: ctx.system.text })));
  return parts;
}

/** A native disclosure: keyboard and screen readers know it, closed by default. */
function collapsible(label, content) {
  return h('details', { className: 'seen-part' }, h('summary', { text: label }), content);
}
