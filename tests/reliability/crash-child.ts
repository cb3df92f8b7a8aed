/**
 * Child process of the storage crash test (tests/reliability/storage-crash.test.ts). Runs a real
 * GroupRouter on a FileStore in `dataDir` with a fast fake LLM, and either
 *   send <start> <end>: sends messages start..end-1 across four groups (four at a time), printing
 *                       `ACK <group> <messageId>` as soon as each `receive()` resolved, then idles;
 *   idle:               starts (resuming unfinished work) and waits until every group is idle.
 * Prints `DONE` when everything is written. The parent SIGKILLs it at random moments.
 *
 * Usage: node --import tsx tests/reliability/crash-child.ts <dataDir> send|idle [start end]
 */
import { GroupRouter } from '../../src/core/router/GroupRouter.js';
import { FileStore } from '../../src/store/files/FileStore.js';
import { systemClock } from '../../src/core/clock.js';
import { validateGroupConfig } from '../../src/config/groupConfig.js';
import type { AgentDef, InboundMessage } from '../../src/core/types.js';
import { groupConfigSchema } from '../../src/config/schema.js';
import { FakeChannel } from '../helpers/fake-channel.js';
import { silentLogger } from '../helpers/logger.js';
import { crashWorkloadLlm, CRASH_GROUPS, crashMessageText } from './workload.js';

const [dataDir, mode, startArg, endArg] = process.argv.slice(2);
if (!dataDir || (mode !== 'send' && mode !== 'idle')) {
  process.stderr.write('usage: crash-child.ts <dataDir> send|idle [start end]\n');
  process.exit(2);
}

const agent = (id: string, name: string): AgentDef => ({ id, name, persona: `You are the ${id}.`, model: null, avatar: null, color: null, aliases: [], talkativeness: 0.5 });
const AGENTS = [agent('analyst', 'Analyst'), agent('writer', 'Writer'), agent('critic', 'Critic')];

const out = (line: string) => process.stdout.write(line + '\n');

async function main(): Promise<void> {
  // Plain definitions instead of src/app.ts: importing every channel SDK would slow each restart.
  const store = new FileStore({ dataDir: dataDir!, fsync: 'always', logger: silentLogger });
  const router = new GroupRouter({
    agents: AGENTS,
    aliases: { creatives: ['writer', 'critic'] },
    groupDefaults: { ...groupConfigSchema.parse({}), cooldown_seconds: 0, history_turns: 1000, max_agent_turns_per_message: 3 },
    limits: { user_messages_per_minute: 10_000, max_message_chars: 8000 },
    llm: crashWorkloadLlm(2),
    llmSettings: { model: 'm', summaryModel: 's', maxTokens: 256, maxConcurrency: 4 },
    validateConfig: validateGroupConfig,
    store,
    clock: systemClock,
    logger: silentLogger,
  });
  const channel = new FakeChannel('web');
  router.addChannel(channel);
  await router.start();
  await channel.start(router);
  for (const id of CRASH_GROUPS) {
    if (!router.gateway.getGroup(id)) await router.gateway.createGroup({ title: id, participants: ['analyst', 'writer', 'critic'], id });
  }
  if (mode === 'send') {
    const start = Number(startArg);
    const end = Number(endArg);
    for (let i = start; i < end; i += CRASH_GROUPS.length) {
      const batch: Promise<void>[] = [];
      for (let j = i; j < Math.min(end, i + CRASH_GROUPS.length); j++) {
        const groupId = CRASH_GROUPS[j % CRASH_GROUPS.length]!;
        const msg: InboundMessage = {
          channel: 'web',
          chatId: groupId,
          messageId: `m${j}`,
          author: { id: `u${j % 3}`, name: `User${j % 3}` },
          text: crashMessageText(j),
          ts: Date.now(),
        };
        batch.push(
          router.receive(msg).then((r) => {
            if (r.status === 'recorded' || r.status === 'duplicate') out(`ACK ${groupId} m${j}`);
            else out(`REFUSED ${groupId} m${j} ${r.status} ${r.reason ?? ''}`);
          }),
        );
      }
      await Promise.all(batch);
      await new Promise((r) => setTimeout(r, 3));
    }
  }
  await router.idle();
  await store.flush();
  out('DONE');
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`crash-child failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
