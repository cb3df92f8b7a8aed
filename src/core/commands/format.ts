/** Text of `/group list` and `/group usage`: short, readable in any chat client. */
import type { GroupDoc } from '../records.js';
import type { CommandContext } from './CommandContext.js';
import { budgetLevel, compact, today } from '../router/budget.js';
import { chatName, chatsOf } from '../groups/linkCodes.js';

export function formatGroupList(r: CommandContext, g: GroupDoc): string {
  const detail = r.admin.getGroup(g.id)!;
  const now = r.now();
  const lines = [`Group “${g.title}” · ${g.channel} · ${detail.messageCount} messages`];
  // A room in several chats: each of them, its home first.
  if (g.links?.length) lines.push(`Chats: ${chatsOf(g).map((c, i) => `${chatName(c)}${i === 0 ? ' (home)' : ''}`).join(', ')}`);
  for (const m of detail.members) {
    const agent = r.agentMap.get(m.agentId);
    const status = [
      m.muted ? 'muted' : null,
      m.cooldownLeftMs > 0 ? `cooling down ${Math.ceil(m.cooldownLeftMs / 1000)}s` : null,
      m.lastSpokeAt ? `last spoke ${ago(now - m.lastSpokeAt)}` : 'has not spoken yet',
      g.state.sticky === m.agentId && g.config.sticky ? 'sticky' : null,
    ].filter(Boolean);
    lines.push(`• ${agent?.name ?? m.agentId} — ${r.handles.handlesOf(m.agentId).slice(0, 4).join(' ')} — ${status.join(', ')}`);
  }
  const c = g.config;
  lines.push(
    `Strategy: ${c.reply_strategy}${c.sticky ? ` (sticky: ${g.state.sticky ? (r.agentMap.get(g.state.sticky)?.name ?? g.state.sticky) : 'nobody yet'})` : ''}, execution ${c.execution}, voluntary turns ${c.voluntary_execution ?? 'sequential'}${c.last_speaker ? `, last speaker ${c.last_speaker}` : ''}`,
    `Caps: ${c.max_agent_turns_per_message} agent turns per message, depth ${c.max_depth}, ${c.max_voluntary_responders} voluntary, cooldown ${c.cooldown_seconds}s`,
  );
  const budget = budgetLevel(g, now);
  if (budget.parts.length > 0) lines.push(`Budget today: ${budget.parts.join(', ')}${budget.over ? ' — used up, agents silent until 00:00 UTC' : ''}`);
  for (const w of detail.warnings) lines.push(`⚠ ${w}`);
  return lines.join('\n');
}

export function formatUsage(r: CommandContext, g: GroupDoc): string {
  const rows = Object.entries(g.state.usage);
  if (rows.length === 0) return ['No model calls in this group yet.', ...budgetLines(g, r.now())].join('\n');
  const lines = ['Usage in this group (estimated):'];
  const total = { costUsd: 0, calls: 0, unpricedCalls: 0 };
  for (const [agentId, u] of rows) {
    const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
    const share = input > 0 ? Math.round((u.cacheReadTokens / input) * 100) : 0;
    total.costUsd += u.costUsd;
    total.calls += u.calls;
    total.unpricedCalls += u.unpricedCalls ?? 0;
    lines.push(`• ${r.agentMap.get(agentId)?.name ?? agentId}: ${u.calls} calls, ${fmt(input)} in (${share}% from cache), ${fmt(u.outputTokens)} out, ${costText(u)}`);
  }
  lines.push(`Total: ${costText(total)}`);
  lines.push(...budgetLines(g, r.now()));
  return lines.join('\n');
}

/** Today's (UTC) usage and where it stands against the group's daily budget. */
function budgetLines(g: GroupDoc, now: number): string[] {
  const t = today(g, now);
  const cost = t.costUnknown && t.costUsd === 0 ? 'price unknown' : `$${t.costUsd.toFixed(4)}${t.costUnknown ? ' + calls of unknown price' : ''}`;
  const day = `Today (${t.day} UTC): ${compact(t.tokens)} tokens, ${cost}`;
  const b = budgetLevel(g, now);
  if (b.parts.length === 0) return [`${day}. No daily budget (set one with /group config budget.daily_usd <dollars>).`];
  const state = b.over ? 'used up: agents are silent until 00:00 UTC' : `${Math.floor(b.share * 100)}% used`;
  return [`${day}. Daily budget: ${b.parts.join(', ')} (${state}).`];
}

/**
 * A cost as people should read it: a model without a known price is "price unknown", never
 * `$0.0000` (that reads as free); a mix shows the known part and how many calls it leaves out.
 */
function costText(u: { costUsd: number; calls: number; unpricedCalls?: number | undefined }): string {
  const unpriced = u.unpricedCalls ?? 0;
  if (unpriced > 0 && unpriced >= u.calls) return 'price unknown';
  const known = `$${u.costUsd.toFixed(4)}`;
  return unpriced > 0 ? `${known} + ${unpriced} call${unpriced === 1 ? '' : 's'} of unknown price` : known;
}

function fmt(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}
