/** What the GroupRouter is built from (the composition root, src/app.ts, fills it in). */
import type { Clock, LlmProvider, Logger, Peers, Store } from '../ports.js';
import type { ToolHost } from '../toolPorts.js';
import type { Files } from '../fileTypes.js';
import type { AgentDef, ConfigValidator, GroupConfig } from '../types.js';
import type { Metrics } from '../metrics.js';
import type { GateSettings } from './LlmGate.js';
import type { ModelSettings } from './RoundDeps.js';
import type { DeclaredGroup } from './declaredGroups.js';
import type { BotLimitsConfig } from '../rooms/BotPairs.js';

/** Everything the router needs; built by the composition root (src/app.ts). */
export interface RouterOptions {
  agents: AgentDef[];
  aliases: Record<string, string[]>;
  groupDefaults: GroupConfig;
  limits: { user_messages_per_minute: number; max_message_chars: number; reactions_per_minute?: number | undefined }
    & BotLimitsConfig;
  llm: LlmProvider;
  /** Model settings; the per-group/per-agent shares and the reply limit default to none / 32 KiB (see LlmGate). */
  llmSettings: ModelSettings & GateSettings;
  validateConfig: ConfigValidator;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Groups from the config file, created on first start. */
  declaredGroups?: DeclaredGroup[];
  scripted?: boolean;
  /** Records between checkpoints of a group (tests make it small to crash around checkpoints). */
  checkpointEvery?: number | undefined;
  /** Where counts and timings go (`/metrics`); nothing is reported without it. */
  metrics?: Metrics | undefined;
  /**
   * The other instances when several share one database: this process then runs only the groups
   * the cluster hands it (`hosting`). Without peers it runs every group.
   */
  peers?: Peers | undefined;
  /** Keeping and reading files (src/files/FileKeeper.ts); without it none is taken (`noFiles`). */
  files?: Files | undefined;
  /** The agents' tools, and what keeps secrets out of the room's view of their calls. */
  tools?: ToolHost | undefined;
  redact?: ((text: string) => string) | undefined;
}
