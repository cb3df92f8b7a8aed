/**
 * Config reload (SIGHUP): the file is read and validated again; agents (their tool lists too),
 * personas, aliases and group defaults apply at once, other sections (`tools:` among them) are
 * reported as needing a restart. A file that does not load is refused with the same problems
 * `chorus check` prints, and the running config stays.
 */
import type { Logger } from '../core/ports.js';
import { ConfigError, type LoadedConfig } from './load.js';
import type { ChorusConfig } from './schema.js';
import type { ConfigProblem } from './rules.js';

/** What one reload did. */
export type ReloadOutcome =
  | { ok: true; source: string; applied: string[]; restartNeeded: string[] }
  | { ok: false; source: string; problems: ConfigProblem[] };

/** Sections read only at start: a change is reported, not applied. */
const RESTART_SECTIONS = ['data_dir', 'storage', 'log_level', 'llm', 'limits', 'channels', 'groups'] as const;

/** Compare the running config with a newly loaded one. */
export function planReload(running: ChorusConfig, next: ChorusConfig): { refused: ConfigProblem[]; applied: string[]; restartNeeded: string[] } {
  const refused: ConfigProblem[] = [];
  const applied: string[] = [];
  const restartNeeded: string[] = [];
  const nextIds = new Set(next.agents.map((a) => a.id));
  for (const a of running.agents) {
    if (!nextIds.has(a.id)) {
      refused.push({ path: 'agents', message: `agent "${a.id}" was removed; removing an agent needs a restart (its groups still hold it), so put it back or restart` });
    }
  }
  const before = new Map(running.agents.map((a) => [a.id, a]));
  next.agents.forEach((a, i) => {
    const old = before.get(a.id);
    if (!old) {
      applied.push(`agent ${a.id} added`);
      if (next.channels.telegram.enabled && a.telegram?.token.trim()) restartNeeded.push(`agents[${i}].telegram (its Telegram bot starts with the daemon)`);
      return;
    }
    const changed = (Object.keys(a) as Array<keyof typeof a>).filter((k) => k !== 'telegram' && JSON.stringify(a[k]) !== JSON.stringify(old[k]));
    if (changed.length) applied.push(`agent ${a.id}: ${changed.join(', ')}`);
    if (next.channels.telegram.enabled && JSON.stringify(a.telegram) !== JSON.stringify(old.telegram)) restartNeeded.push(`agents[${i}].telegram (bots start with the daemon)`);
  });
  if (JSON.stringify(next.aliases) !== JSON.stringify(running.aliases)) applied.push('aliases');
  if (JSON.stringify(next.group_defaults) !== JSON.stringify(running.group_defaults)) applied.push('group_defaults (for groups created from now on)');
  for (const key of RESTART_SECTIONS) {
    if (JSON.stringify(next[key]) !== JSON.stringify(running[key])) restartNeeded.push(key);
  }
  // The MCP servers' processes and connections are made at start; an agent's `tools` list applies
  // at once (it only picks among the servers already running).
  if (JSON.stringify(next.tools) !== JSON.stringify(running.tools)) restartNeeded.push('tools (MCP servers are started and connected with the daemon)');
  return { refused, applied, restartNeeded };
}

/**
 * Reloads on request. `load` reads the file the daemon started with (same path, `.env` and
 * environment rules); `apply` hands the hot sections to the running app.
 */
export class ConfigReloader {
  private running: ChorusConfig;

  constructor(
    private readonly deps: {
      load: () => LoadedConfig;
      apply: (next: ChorusConfig) => void;
      logger: Logger;
      initial: ChorusConfig;
    },
  ) {
    this.running = deps.initial;
  }

  /** The config in force: hot sections as last reloaded, the rest as started. */
  get config(): ChorusConfig {
    return this.running;
  }

  reload(): ReloadOutcome {
    const log = this.deps.logger;
    let loaded: LoadedConfig;
    try {
      loaded = this.deps.load();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.refuse(err.source, err.problems);
    }
    const plan = planReload(this.running, loaded.config);
    if (plan.refused.length) return this.refuse(loaded.source, plan.refused);
    this.deps.apply(loaded.config);
    this.running = { ...this.running, agents: loaded.config.agents, aliases: loaded.config.aliases, group_defaults: loaded.config.group_defaults };
    log.info({ config: loaded.source, applied: plan.applied }, plan.applied.length ? 'config reloaded' : 'config reloaded: nothing to change');
    if (plan.restartNeeded.length) log.warn({ config: loaded.source, sections: plan.restartNeeded }, 'config reload: these changes take effect after a restart');
    return { ok: true, source: loaded.source, applied: plan.applied, restartNeeded: plan.restartNeeded };
  }

  private refuse(source: string, problems: ConfigProblem[]): ReloadOutcome {
    // The same lines `chorus check` prints, so the fix reads the same in the log and the terminal.
    this.deps.logger.error({ config: source, problems: problems.map((p) => `${p.path}: ${p.message}`) }, 'config reload refused; the running config is kept');
    return { ok: false, source, problems };
  }
}
