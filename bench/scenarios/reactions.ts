/**
 * The noisy room: what agents' reactions do to the number of messages. The same script of 20
 * unaddressed messages (news, thanks, questions, small talk; no @handle) goes to an 8-agent room
 * — hybrid strategy, `max_voluntary_responders` and the turn cap at their defaults, cooldown 0 as
 * in every bench config — whose agents are the scripted demo provider, once with reacting turned
 * off (`ScriptedProvider({ reactions: false })`) and once on (the default). Counted: messages
 * posted by agents, reactions recorded on the people's messages, model calls.
 *
 * What decides the answers is the scripted provider's policy (src/llm/ScriptedProvider.ts), so the
 * figures are a model of a noisy room, not a measurement of real models: the first agent by handle
 * answers greetings and questions; of the others, about half acknowledge news, thanks and
 * exclamations. With reacting off they do it in a message ("Noted 🎉"), as agents that cannot react
 * tend to; with it on they react. What Chorus adds is measured for real: a reaction is not a
 * message, so it takes none of the round's `max_voluntary_responders` places; with reacting off
 * the acknowledgements compete for them (at most 2 per message get through).
 *
 * `npx tsx bench/scenarios/reactions.ts` runs only this scenario and prints its figures.
 */
import { fileURLToPath } from 'node:url';
import type { LlmProvider, LlmRequest, LlmResponse } from '../../src/core/ports.js';
import { ScriptedProvider } from '../../src/llm/ScriptedProvider.js';
import { AGENT_IDS, benchApp, inbound } from '../lib.js';

/** Twenty messages of an ordinary day in a busy team room, none addressed to an agent. */
export const NOISY_ROOM_SCRIPT = [
  'Morning everyone!',
  'We shipped the beta to the first ten customers.',
  'Thanks for staying late yesterday.',
  'The staging server is back up.',
  'Can someone look at the onboarding copy?',
  'The contract with Northwind is signed!',
  'Lunch is on me today.',
  'Bug 4312 is fixed and merged.',
  'Who owns the pricing page now?',
  'Great news: churn dropped to 3% last month.',
  'I moved the retro to Thursday.',
  'The new logo files are in the shared drive.',
  'Thanks, that was quick.',
  'Release notes are done.',
  'Any objections to freezing the API on Friday?',
  'The security review came back approved.',
  'Welcome Sam, who joins us from support!',
  'Dashboard numbers look odd this morning.',
  'Launched the referral experiment.',
  'Have a good weekend, all!',
] as const;

export interface NoisyRoomResult {
  /** Messages posted by agents over the whole script. */
  agentMessages: number;
  /** Agents' reactions recorded on the people's messages. */
  reactions: number;
  /** Model calls for turns. */
  calls: number;
}

/** Counts the turn calls of the provider it wraps. */
class Counting implements LlmProvider {
  readonly name = 'scripted';
  calls = 0;
  constructor(private readonly inner: LlmProvider) {}
  complete(req: LlmRequest): Promise<LlmResponse> {
    if (req.purpose === 'turn') this.calls++;
    return this.inner.complete(req);
  }
}

export async function noisyRoomRun(o: { reactions: boolean }): Promise<NoisyRoomResult> {
  const llm = new Counting(new ScriptedProvider({ reactions: o.reactions }));
  const b = await benchApp({ llm, agents: 8, group: { reply_strategy: 'hybrid' } });
  try {
    const { router } = b.app;
    const id = 'noisy';
    await router.gateway.createGroup({ title: 'Noisy room', participants: [...AGENT_IDS], id });
    for (const text of NOISY_ROOM_SCRIPT) {
      const res = await router.receive(inbound(id, text));
      if (res.status !== 'recorded') throw new Error(`noisy room: message not recorded (${res.status})`);
      await router.idle();
    }
    const entries = await router.gateway.messages(id, { limit: 500 });
    return {
      agentMessages: entries.filter((e) => e.kind === 'agent').length,
      reactions: entries.filter((e) => e.kind === 'human').reduce((n, e) => n + (e.reactions ?? []).filter((r) => r.byKey.startsWith('agent:')).length, 0),
      calls: llm.calls,
    };
  } finally {
    await b.close();
  }
}

async function main(): Promise<void> {
  for (const reactions of [false, true]) {
    const r = await noisyRoomRun({ reactions });
    console.log(`reacting ${reactions ? 'on ' : 'off'}: ${r.agentMessages} agent messages, ${r.reactions} reactions, ${r.calls} model calls for ${NOISY_ROOM_SCRIPT.length} messages in an 8-agent room`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
