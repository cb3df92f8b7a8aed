/**
 * The offline provider: deterministic, persona-flavoured canned replies so a first run
 * works with no API key. Addressed agents always answer; voluntary turns pass unless the
 * message touches one of the agent's handles or keywords — or it is a greeting or a question to
 * the room, which the group's first agent (by handle) answers, so a newcomer's "hello everyone"
 * shows a conversation rather than a row of passes.
 *
 * A message people would react to — news ("we shipped it"), thanks, an exclamation — is
 * acknowledged by about half of the agents that would pass (seeded by the agent and the message,
 * so the same message always gets the same answers): where the turn offers reacting (`mayReact`)
 * with `[REACT 🎉]` (or another fitting emoji), so the demo room shows reactions. With
 * `reactions: false` they say so in a short message instead — what an agent that cannot react
 * does; the noisy-room bench (bench/scenarios/reactions.ts) compares the two.
 *
 * A reply to a message with files says what it was shown ("I can see chart.png (800×600).") from
 * the files the turn carries in full, or mentions the ones its text names by their lines.
 */
import type { LlmProvider, LlmRequest, LlmResponse } from '../core/ports.js';

export interface ScriptedOptions {
  /** React where a turn offers it (default); false: acknowledge in a message instead. */
  reactions?: boolean | undefined;
}

const TEMPLATES = [
  (name: string, topic: string, role: string) => `${name} here (demo mode). On “${topic}”: as ${role}, I would want a closer look before giving a real answer.`,
  (name: string, topic: string, role: string) => `“${topic}” — speaking as ${role}, that deserves a proper answer once a model is connected. (${name}, canned demo reply)`,
  (name: string, topic: string, role: string) => `Quick take from ${name}, ${role}: I would start with what matters most in “${topic}”. (Canned demo reply.)`,
];

export class ScriptedProvider implements LlmProvider {
  readonly name = 'scripted';
  private readonly reactions: boolean;

  constructor(opts: ScriptedOptions = {}) {
    this.reactions = opts.reactions ?? true;
  }

  async complete(req: LlmRequest): Promise<LlmResponse> {
    const text = this.reply(req);
    // Stream word by word so the web feed shows the same flow as with a real model.
    if (req.onDelta) for (const part of text.match(/\S+\s*/g) ?? []) req.onDelta(part);
    return {
      text,
      model: 'scripted',
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: 0,
    };
  }

  private reply(req: LlmRequest): string {
    const last = req.messages.at(-1)?.content ?? '';
    if (req.purpose === 'summary') return 'Earlier in this conversation: ' + last.slice(-300).replace(/\s+/g, ' ');
    if (req.purpose === 'selector') return 'NONE';
    const agent = req.agent;
    if (!agent) return 'ok';
    const named = lastHumanLine(last);
    // The words of the message, without the lines of its files (a file called hello.png is no greeting).
    const topic = withoutFileLines(named);
    if (!req.mustReply) {
      const words = [agent.id, agent.name, ...agent.aliases].map((w) => w.replace(/^@/, '').toLowerCase());
      const hay = topic.toLowerCase();
      const touched = words.some((w) => new RegExp(`(^|[^\\p{L}\\p{N}])${escape(w)}([^\\p{L}\\p{N}]|$)`, 'u').test(hay));
      if (!touched && !(opensConversation(topic) && firstInGroup(agent.id, req.system))) {
        if (!acknowledgeable(topic) || hash(`ack\n${agent.id}\n${topic}`) % 2 !== 0) return '[PASS]';
        const emoji = emojiFor(agent.id, topic);
        if (!this.reactions) return `Noted ${emoji} (${agent.name}, canned demo reply)`;
        return req.mayReact ? `[REACT ${emoji}]` : '[PASS]';
      }
    }
    const role = roleOf(agent.persona, agent.name) ?? `the group's ${agent.name.toLowerCase()}`;
    // Quote without "@" so a canned reply never addresses anyone (no reaction chains in the demo).
    const plain = topic.replace(/^(?:@[\p{L}\p{N}_-]+[\s,:]*)+/u, '').replace(/(^|\s)@(?=[\p{L}\p{N}_])/gu, '$1');
    const seen = filesSeen(req, named);
    if (seen && !plain) return `${seen} (${agent.name}, canned demo reply)`;
    const short = plain.length > 80 ? plain.slice(0, 77) + '…' : plain || 'this';
    const pick = TEMPLATES[hash(agent.id + topic) % TEMPLATES.length]!;
    const reply = pick(agent.name, short, role);
    return seen ? `${seen} ${reply}` : reply;
  }
}

/** A file's line in a turn's text (`attachmentLine`): its kind and what follows it. */
const FILE_LINE = /\[(image|PDF|text file): ([^\]\n]*)\]/g;

/** The text without file lines; a text without any is returned as it is. */
export function withoutFileLines(text: string): string {
  const out = text.replace(FILE_LINE, '');
  return out === text ? text : out.replace(/[ \t]+/g, ' ').replace(/\s*\n\s*/g, '\n').trim();
}

/**
 * What the newest turn showed, said as a model that sees would: "I can see chart.png (800×600)."
 * The files sent in full when there are any; else the files the newest message names by their
 * lines, which the demo can only mention. Null when it has neither.
 */
function filesSeen(req: LlmRequest, topic: string): string | null {
  const newest = req.messages.at(-1);
  const shown = newest?.role === 'user' ? (newest.attachments ?? []) : [];
  if (shown.length) return `I can see ${listed(shown.map((a) => (a.width && a.height ? `${a.name} (${a.width}\u00d7${a.height})` : a.name)))}.`;
  const named = [...topic.matchAll(FILE_LINE)].map((m) => {
    const parts = m[2]!.split(', ');
    // `name[, W×H], size`: the size goes, the pixels stay beside the name.
    parts.pop();
    const px = parts.length > 1 && /^\d+\u00d7\d+$/.test(parts.at(-1)!) ? parts.pop()! : null;
    return px ? `${parts.join(', ')} (${px})` : parts.join(', ');
  });
  return named.length ? `I see you shared ${listed(named)}, though in demo mode I cannot open it.` : null;
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : (items[0] ?? '');
}

const THANKS = /(^|[^\p{L}])(thanks|thank you|thx|cheers|merci|danke|gracias)([^\p{L}]|$)/iu;
const NEWS = /(^|[^\p{L}])(shipped|launched|released|merged|fixed|done|finished|signed|approved|good news|great news|welcome)([^\p{L}]|$)/iu;

/** A message people would react to: thanks, news, an exclamation (not a question). */
export function acknowledgeable(topic: string): boolean {
  return !/\?\s*$/.test(topic) && (THANKS.test(topic) || NEWS.test(topic) || /!\s*$/.test(topic));
}

/** A fitting emoji for acknowledging `topic` (all in Telegram's set of reactions). */
export function emojiFor(agentId: string, topic: string): string {
  if (THANKS.test(topic)) return '🙏';
  return ['🎉', '👍', '🔥', '👏'][hash(`emoji\n${agentId}\n${topic}`) % 4]!;
}

const GREETING = /(^|[^\p{L}])(hello|hi|hey|hiya|howdy|greetings|good (morning|afternoon|evening)|hallo|bonjour|hola|ciao)([^\p{L}]|$)/iu;

/** A greeting or a question: the kind of message a person expects someone in the room to answer. */
export function opensConversation(topic: string): boolean {
  return GREETING.test(topic) || /\?\s*$/.test(topic);
}

/**
 * Whether this agent comes first (by handle) among the group's members. The provider sees no
 * group, only the system prompt, which lists the other participants as "- Name (@id): …"; one
 * deterministic volunteer keeps the demo from answering a greeting three times over.
 */
export function firstInGroup(agentId: string, system: string): boolean {
  const others = [...system.matchAll(/^- [^\n]*?\(@([\p{L}\p{N}_-]+)\):/gmu)].map((m) => m[1]!);
  return others.every((id) => agentId.localeCompare(id) <= 0);
}

/** The newest human line in a mailbox-formatted user turn (or the whole text for 1:1 turns). */
export function lastHumanLine(turn: string): string {
  // Mailbox blocks (core/session/prompt.ts): the text of the last block a human sent.
  const blocks = [...turn.matchAll(/<message from="[^"]*" role="human">([\s\S]*?)<\/message>/g)];
  const block = blocks.at(-1);
  if (block) return block[1]!.trim();
  // Sessions written before the block format kept `[Name (human)] text` lines.
  const lines = turn.split('\n').filter((l) => /^\[[^\]]+\(human\)\] /.test(l));
  const line = lines.at(-1);
  if (line) return line.replace(/^\[[^\]]+\] /, '').trim();
  return turn.includes('## Your turn') ? '' : turn.trim();
}

function firstSentence(s: string): string {
  const m = /[^.!?]+[.!?]/.exec(s.replace(/\s+/g, ' ').trim());
  return (m ? m[0] : s).trim();
}

/** "You are Analyst, a sharp analyst. …" → "a sharp analyst"; null when the persona says no role. */
export function roleOf(persona: string, name: string): string | null {
  const m = /^You are\s+(.*?)[.!?]?$/i.exec(firstSentence(persona));
  if (!m) return null;
  let role = m[1]!.trim();
  if (role.toLowerCase().startsWith(name.toLowerCase())) role = role.slice(name.length).replace(/^[\s,;:-]+/, '');
  return role.length > 2 && role.length < 120 ? role : null;
}

export function hash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}

export function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
