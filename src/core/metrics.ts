/**
 * Counters and gauges in Prometheus text format (SPEC §9). Small on purpose: a handful of series,
 * labelled by what an operator filters on.
 */
type Labels = Record<string, string>;

export class Metrics {
  private readonly counters = new Map<string, Map<string, number>>();
  private readonly gauges = new Map<string, () => number>();
  private readonly help = new Map<string, string>();

  constructor() {
    this.describe('chorus_messages_total', 'Inbound human messages recorded');
    this.describe('chorus_rounds_total', 'Rounds completed');
    this.describe('chorus_llm_calls_total', 'LLM calls by outcome');
    this.describe('chorus_llm_latency_ms_sum', 'Sum of LLM call latency in milliseconds');
    this.describe('chorus_passes_total', 'Agent passes');
    this.describe('chorus_errors_total', 'Agent turn failures');
    this.describe('chorus_replies_total', 'Agent replies delivered');
    this.describe('chorus_tokens_total', 'Tokens by kind');
  }

  describe(name: string, help: string): void {
    this.help.set(name, help);
  }

  inc(name: string, labels: Labels = {}, by = 1): void {
    let series = this.counters.get(name);
    if (!series) this.counters.set(name, (series = new Map()));
    const key = labelText(labels);
    series.set(key, (series.get(key) ?? 0) + by);
  }

  /** Read a counter (tests, benchmarks). */
  get(name: string, labels: Labels = {}): number {
    return this.counters.get(name)?.get(labelText(labels)) ?? 0;
  }

  gauge(name: string, help: string, read: () => number): void {
    this.help.set(name, help);
    this.gauges.set(name, read);
  }

  render(): string {
    const out: string[] = [];
    for (const [name, series] of this.counters) {
      out.push(`# HELP ${name} ${this.help.get(name) ?? name}`, `# TYPE ${name} counter`);
      for (const [labels, v] of series) out.push(`${name}${labels} ${v}`);
    }
    for (const [name, read] of this.gauges) {
      out.push(`# HELP ${name} ${this.help.get(name) ?? name}`, `# TYPE ${name} gauge`, `${name} ${read()}`);
    }
    return out.join('\n') + '\n';
  }
}

function labelText(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return '';
  return '{' + keys.map((k) => `${k}="${String(labels[k]).replace(/["\\\n]/g, '_')}"`).join(',') + '}';
}
