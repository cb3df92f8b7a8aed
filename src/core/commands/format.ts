/** Text of `/group list` and `/group usage`: short, readable in any chat client. */
import type { GroupDoc } from '../ports.js';
import type { CommandContext } from './commands.js';

export function formatGroupList(r: CommandContext, g: GroupDoc): string {
  const detail = r.admin.getGroup(g.id)!;
  const now = r.now();
  const lines = [`Group “${g.title}” · ${g.channel} · ${detail.messageCount} messages`];
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
    `Strategy: ${c.reply_strategy}${c.sticky ? ` (sticky: ${g.state.sticky ? (r.agentMap.get(g.state.sticky)?.name ?? g.state.sticky) : 'nobody yet'})` : ''}, execution ${c.execution}${c.last_speaker ? `, last speaker ${c.last_speaker}` : ''}`,
    `Caps: ${c.max_agent_turns_per_message} agent turns per message, depth ${c.max_depth}, ${c.max_voluntary_responders} voluntary, cooldown ${c.cooldown_seconds}s`,
  );
  for (const w of detail.warnings) lines.push(`⚠ ${w}`);
  return lines.join('\n');
}

export function formatUsage(r: CommandContext, g: GroupDoc): string {
  const rows = Object.entries(g.state.usage);
  if (rows.length === 0) return 'No model calls in this group yet.';
  const lines = ['Usage in this group (estimated):'];
  let total = 0;
  for (const [agentId, u] of rows) {
    const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
    const share = input > 0 ? Math.round((u.cacheReadTokens / input) * 100) : 0;
    total += u.costUsd;
    lines.push(`• ${r.agentMap.get(agentId)?.name ?? agentId}: ${u.calls} calls, ${fmt(input)} in (${share}% from cache), ${fmt(u.outputTokens)} out, $${u.costUsd.toFixed(4)}`);
  }
  lines.push(`Total: $${total.toFixed(4)}`);
  return lines.join('\n');
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
