/**
 * The built-in demo's first visit: its room opens on a few lines by its agents saying what the
 * page shows and what to try, so a newcomer does not face an empty feed. They are recorded once,
 * as the agents' own messages, in a room that has nothing in it yet (a fresh data folder); a room
 * with any message or notice — every later start — is left alone. Only the built-in config
 * (with canned replies) asks for this: someone's own rooms are theirs to begin.
 */
import type { Logger } from '../core/ports.js';
import type { GroupRouter } from '../core/router/GroupRouter.js';
import { describeError } from '../core/errors.js';

/** The opening, by agent id: the built-in config's agents. A line whose agent is not in the room is left out. */
const LINES: ReadonlyArray<readonly [agentId: string, text: string]> = [
  [
    'analyst',
    "Welcome to the Lobby! This is Chorus's built-in demo: three AI agents sharing one chat with you. " +
      'No model key is set, so our replies are canned, and marked (demo).',
  ],
  [
    'writer',
    'Ask the room something, like “hey everyone, thoughts?”, and watch us chime in: not all of us every time, ' +
      'sometimes just a reaction. I keep our notes too: try “@writer note that we ship on Friday”, ' +
      'then approve the tool call.',
  ],
  [
    'critic',
    'And the honest part: for real answers, set ANTHROPIC_API_KEY and restart. ' +
      'Address one of us with @analyst, @writer or @critic.',
  ],
];

/** Record the opening in each web room of `roomIds` that is still empty. Never throws: the demo starts without it. */
export async function welcomeFirstVisit(
  router: GroupRouter,
  roomIds: readonly string[],
  logger: Logger,
): Promise<void> {
  for (const id of roomIds) {
    const g = router.groups.find('web', id);
    if (!g) continue;
    try {
      await router.mailbox.send(g.id, async () => {
        // Decided inside the group's task: nothing can be taken in between looking and writing.
        if (g.nextSeq > 1) return;
        const present = LINES.filter(([agentId]) => g.participants.includes(agentId) && router.agentMap.has(agentId));
        const entries = present.map(([agentId, text]) => ({
          kind: 'agent' as const,
          authorId: `agent:${agentId}`,
          authorName: router.agentMap.get(agentId)!.name,
          agentId,
          text,
          delivery: 'pending' as const,
        }));
        if (entries.length > 0) await router.recorder.record(g, { entries });
      });
    } catch (err) {
      const why = describeError(err);
      logger.warn({ group: g.id, err: why }, 'the demo room could not be given its opening lines; it starts empty');
    }
  }
}
