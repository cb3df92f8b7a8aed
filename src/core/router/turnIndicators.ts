/**
 * What a turn shows while the model works on it. Someone asked: the agent is working on it from
 * the start, so it is typing. A voluntary turn is only the agent considering whether to speak —
 * most pass — so it shows as considering (on the page only: a chat platform has no such
 * indicator, and a bot that types and then posts nothing reads as broken) until text that will
 * be posted comes, and then as typing.
 */
import type { GroupDoc } from '../records.js';
import type { AgentDef } from '../types.js';
import type { RoundDeps } from './RoundDeps.js';

export class TurnIndicators {
  private considering = false;
  private typing = false;

  constructor(
    private readonly d: Pick<RoundDeps, 'events' | 'typing'>,
    private readonly g: GroupDoc,
    private readonly agent: AgentDef,
  ) {}

  /** The model call is about to start. */
  begin(mustReply: boolean): void {
    if (mustReply) this.setTyping(true);
    else this.consider(true);
  }

  /** Typing on or off (a tool step pauses it); typing ends considering for good. */
  readonly setTyping = (on: boolean): void => {
    if (on) this.consider(false);
    if (this.typing === on) return;
    this.typing = on;
    this.d.typing(this.g, this.agent, on);
  };

  /** The model call is over, however it ended. */
  end(): void {
    this.consider(false);
    this.setTyping(false);
  }

  private consider(on: boolean): void {
    if (this.considering === on) return;
    this.considering = on;
    this.d.events.emit({ type: 'considering', groupId: this.g.id, agentId: this.agent.id, active: on });
  }
}
