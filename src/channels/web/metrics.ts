/**
 * Prometheus text for `GET /metrics`. The app may inject its own source (rounds, LLM calls,
 * tokens, ...); the web channel appends its own figures (HTTP requests, SSE clients), and when
 * nothing is injected it derives group and message gauges from the gateway.
 */
import type { GatewayApi } from '../../core/ports.js';

/** Counts HTTP responses by status class. */
export class WebMetrics {
  private readonly byStatus = new Map<string, number>();
  sseClients = 0;
  /** Connections turned away by `max_connections_per_address`. */
  connectionsRefused = 0;
  /** SSE streams closed because they could not take their heartbeat (a peer that stopped reading). */
  sseStalled = 0;

  countResponse(status: number): void {
    const cls = `${Math.floor(status / 100)}xx`;
    this.byStatus.set(cls, (this.byStatus.get(cls) ?? 0) + 1);
  }

  text(): string {
    const lines = [
      '# HELP chorus_web_http_responses_total HTTP responses of the web channel by status class.',
      '# TYPE chorus_web_http_responses_total counter',
    ];
    for (const cls of ['2xx', '3xx', '4xx', '5xx']) {
      lines.push(`chorus_web_http_responses_total{status="${cls}"} ${this.byStatus.get(cls) ?? 0}`);
    }
    lines.push('# HELP chorus_web_sse_clients Connected Server-Sent Events clients.', '# TYPE chorus_web_sse_clients gauge');
    lines.push(`chorus_web_sse_clients ${this.sseClients}`);
    lines.push('# HELP chorus_web_connections_refused_total Connections refused by the per-address cap.', '# TYPE chorus_web_connections_refused_total counter');
    lines.push(`chorus_web_connections_refused_total ${this.connectionsRefused}`);
    lines.push('# HELP chorus_web_sse_stalled_total SSE streams closed because the client stopped reading.', '# TYPE chorus_web_sse_stalled_total counter');
    lines.push(`chorus_web_sse_stalled_total ${this.sseStalled}`);
    return lines.join('\n') + '\n';
  }
}

function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** Gauges derived from the gateway alone, used when the app injects no metrics source. */
export function gatewayMetrics(gateway: GatewayApi): string {
  const groups = gateway.listGroups();
  const perChannel = new Map<string, number>();
  for (const g of groups) if (!g.archived) perChannel.set(g.channel, (perChannel.get(g.channel) ?? 0) + 1);
  const lines = ['# HELP chorus_groups Active groups by channel.', '# TYPE chorus_groups gauge'];
  for (const ch of ['web', 'telegram', 'discord']) lines.push(`chorus_groups{channel="${ch}"} ${perChannel.get(ch) ?? 0}`);
  lines.push('# HELP chorus_group_transcript_messages Messages in each group\'s transcript.', '# TYPE chorus_group_transcript_messages gauge');
  for (const g of groups) lines.push(`chorus_group_transcript_messages{group="${label(g.id)}",channel="${g.channel}"} ${g.messageCount}`);
  lines.push('# HELP chorus_agents Configured agents.', '# TYPE chorus_agents gauge', `chorus_agents ${gateway.listAgents().length}`);
  return lines.join('\n') + '\n';
}
