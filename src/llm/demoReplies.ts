/**
 * What the demo's agents say: several canned replies per kind of persona (an analyst, a writer, a
 * critic, anyone else), with and without a subject to talk about, picked by a seeded hash of the
 * agent and the message. The same message always gets the same reply from the same agent, so tests
 * can rely on it, while different messages and agents read differently, so the room sounds like a
 * conversation rather than one template. Every reply ends with a short "(demo)" marker: nobody
 * should take a canned line for a model's answer.
 */

export const DEMO_MARK = '(demo)';

/**
 * A well-mixed 32-bit hash (FNV-1a, then MurmurHash3's finaliser). The scripted provider's hash
 * keeps its low bits close to the text's last characters, so a pick among four by it gave the
 * same reply to most questions (they all end in "?").
 */
export function seeded(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** What a reply is made from. */
export interface ReplyContext {
  agentId: string;
  name: string;
  /** "a sharp, numbers-first analyst", from the persona (or a stand-in). */
  role: string;
  persona: string;
  /** What the message is about, as quoted; null for a greeting or a bare "thoughts?". */
  subject: string | null;
  /** The agent that answered the same message just before, if any: the reply can build on it. */
  after: string | null;
  /** Seeds the pick: the message as the agent read it. */
  seed: string;
}

type Line = (c: ReplyContext, s: string) => string;
type Greeting = (c: ReplyContext) => string;

interface Family {
  about: Line[];
  hello: Greeting[];
  /** Sentences that follow, picked on their own: more combinations, and a reply long enough to stream. */
  more: string[];
}

const ANALYST: Family = {
  about: [
    (_c, s) =>
      `On “${s}”: I'd want two numbers first — what it costs and what it moves. ` +
      `Until then it's a coin flip with decent odds.`,
    (_c, s) =>
      `Quick sizing of “${s}”: the upside looks real, the risk sits in the timeline. ` +
      `I'd put my confidence near 60%, and say so plainly.`,
    (_c, s) => `Three things I'd measure on “${s}”: cost, time to a first result, and how we'd know it failed.`,
    (_c, s) => `If “${s}” pays back inside a quarter, yes. If not, it needs a sharper case.`,
  ],
  hello: [
    () => `Hi! Give me something with a number in it — a budget, a target, a deadline — and I'll weigh the trade-offs.`,
    () => `Hello all. My take in one line: decide what you'd measure before deciding what to do. What's the question?`,
    () => `Hey! Ready when you are; the more concrete the question, the crisper my figures.`,
  ],
  more: [
    'The biggest unknown is usually adoption, so I would test that first with a small group.',
    'Rough rule: a month to learn whether it works, a quarter to learn whether it pays.',
    'With a real model connected I would put actual figures on it; for now, that is the shape of it.',
  ],
};

const WRITER: Family = {
  about: [
    (_c, s) => `A headline for “${s}”: “Small change, big story.” I'd open with the person it helps.`,
    (_c, s) => `“${s}” wants one clear sentence before anything else: who it's for, and why now. Happy to draft it.`,
    (_c, s) => `I'd tell “${s}” as a before-and-after: one line for the pain, one for the relief.`,
    (_c, s) =>
      `Picture the first line of the announcement for “${s}”. ` +
      `Hard to write? The idea needs work. Easy? We're close.`,
  ],
  hello: [
    (c) =>
      `Hello! Toss me a rough idea and I'll turn it into a headline. ` +
      `I keep our notes too: try “@${c.agentId} note that …”.`,
    () => `Hi everyone, I'm the one who drafts. Give me a topic and I'll make it read well.`,
    () => `Hey! Every good conversation needs a title. What's ours today?`,
  ],
  more: [
    'Short words, one idea per sentence, and the reader stays with us to the end.',
    'If it fits in one breath, it will fit in people’s heads, and that is half the work done.',
    'I could sketch two versions side by side and let the room pick the one that sounds like us.',
  ],
};

const CRITIC: Family = {
  about: [
    (_c, s) => `The weakest part of “${s}” is the assumption nobody has tested yet. One fix: try it small this week.`,
    (_c, s) =>
      `Candidly, “${s}” sounds easier in a chat than it will be in practice. ` +
      `Name the first thing that could go wrong.`,
    (_c, s) => `I'd push back on “${s}” a little: what's the cheaper alternative we haven't ruled out?`,
    (_c, s) => `On “${s}”, the scope is the risk. Cut it in half and it gets much more convincing.`,
  ],
  hello: [
    () => `Hi. I'm the one who pokes holes, kindly. Bring me an idea and I'll find its weakest spot.`,
    () => `Hello! Fair warning: I'll ask what could go wrong. That's how good plans get better.`,
    () => `Hey all. Tell us what you're deciding and I'll give one honest objection and one fix.`,
  ],
  more: [
    'Not a reason to stop, just a reason to check before we commit to it.',
    'Fix that one thing and the rest of it holds up better than it first looks.',
    'I would rather we hear the objection now, in this room, than after the launch.',
  ],
};

const ANYONE: Family = {
  about: [
    (c, s) => `${c.name} here: as ${c.role}, on “${s}” I'd start with what matters most.`,
    (c, s) => `Speaking as ${c.role}: “${s}” deserves a closer look, and a real model for a real answer.`,
    (c, s) => `My first thought on “${s}”, as ${c.role}: what would make this clearly worth it?`,
  ],
  hello: [
    (c) => `Hi, ${c.name} here, ${c.role}. What shall we talk about?`,
    (c) => `Hello! As ${c.role}, I'm glad to weigh in. Give me a topic.`,
  ],
  more: [
    'A real model would say a good deal more; this is the demo talking, but the room works the same way.',
    'Ask me by name for a direct answer, or ask the room and see who chimes in.',
  ],
};

/** How a reply builds on the one just before it. */
const AFTER: Array<(name: string) => string> = [
  (n) => `${n} makes a fair point.`,
  (n) => `Adding to what ${n} said:`,
  (n) => `Building on ${n}'s take:`,
];

/** The kind of persona, from the words it uses about itself. */
function familyOf(persona: string): Family {
  const p = persona.toLowerCase();
  if (/\b(analy[sz]\w*|numbers?|figures|data)\b/.test(p)) return ANALYST;
  if (/\b(critic\w*|review\w*|weakest|candid)\b/.test(p)) return CRITIC;
  if (/\b(writ\w*|prose|stor(y|ies)|headlines?)\b/.test(p)) return WRITER;
  return ANYONE;
}

/** The agent's canned reply to a message (see the top of this file). */
export function demoReply(c: ReplyContext): string {
  const family = familyOf(c.persona);
  const pick = seeded(`${c.agentId}\n${c.seed}`);
  const body =
    c.subject === null
      ? family.hello[pick % family.hello.length]!(c)
      : family.about[pick % family.about.length]!(c, c.subject);
  // Two of them, in turn: a voluntary reply's first 120 characters are held back by the router
  // (it could still turn out to be a pass), so a shorter one would appear all at once.
  const k = (pick >>> 8) % family.more.length;
  const more = `${family.more[k]!} ${family.more[(k + 1) % family.more.length]!}`;
  // A greeting needs no link to the reply before it; a view on a subject reads better with one.
  const lead = c.after && c.subject !== null ? `${AFTER[(pick >>> 3) % AFTER.length]!(c.after)} ` : '';
  return `${lead}${body} ${more} ${DEMO_MARK}`;
}

const GREETING_LEAD =
  /^(?:hey|hi|hiya|hello|howdy|greetings|good (?:morning|afternoon|evening)|hallo|bonjour|hola|ciao)\b[\s,!.]*/iu;
const ROOM_LEAD = /^(?:everyone|everybody|all|y'all|you all|folks|team|guys|people)\b[\s,!.]*/iu;
const ABOUT =
  /\b(?:think|thoughts?|opinions?|views?|ideas?|feel|say|take)\s+(?:about|on|of|for|regarding)\s+(.+?)[\s?.!]*$/iu;
const BARE_ASK =
  /^(?:so\s+)?(?:any\s+)?(?:thoughts|ideas|opinions|views|takes?|what do you (?:all |guys )?think)?[\s?.!]*$/iu;

/**
 * What a message asks the room about: the X of "what do you all think about X?", else the message
 * without its greeting; null when nothing is left but a greeting or a bare "thoughts?". Quoted
 * without handles (no reply addresses anyone) and cut to 80 characters.
 */
export function subjectOf(plain: string): string | null {
  const about = ABOUT.exec(plain);
  let s = about ? about[1]! : plain;
  if (!about) {
    s = s.replace(GREETING_LEAD, '').replace(ROOM_LEAD, '').replace(/^[\s,!.]+/, '');
    if (BARE_ASK.test(s)) return null;
  }
  s = s.replace(/[\s?.!]+$/u, '').trim();
  if (!s) return null;
  return s.length > 80 ? s.slice(0, 77) + '…' : s;
}

/** The agent that spoke after the newest person's message in a mailbox-formatted turn, if any. */
export function previousSpeaker(turn: string, self: string): string | null {
  const human = [...turn.matchAll(/<message from="[^"]*" role="human">/g)].at(-1);
  if (!human) return null;
  const later = [...turn.slice(human.index).matchAll(/<message from="([^"]*)" role="agent">/g)].map((m) => m[1]!);
  const name = later.filter((n) => n !== self).at(-1);
  return name ? name.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&') : null;
}
