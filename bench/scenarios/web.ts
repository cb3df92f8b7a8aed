/**
 * End to end through the web channel: `POST /api/groups/:id/messages` → the agent's reply arriving
 * as a `message` event on the group's SSE stream (`GET /api/groups/:id/events`). Same group and
 * model as the overhead scenario (3 agents, `@analyst`, LLM latency 0), real HTTP on 127.0.0.1.
 */
import http from 'node:http';
import { FakeLlm } from '../../tests/helpers/fake-llm.js';
import { benchApp, now, percentile } from '../lib.js';

/** Reads an SSE stream and calls `onAgentMessage` when an agent reply arrives. */
export function openEvents(base: string, groupId: string, onAgentMessage: (t: number) => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/groups/${groupId}/events`, { headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE answered ${res.statusCode}`));
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (event !== 'message' || data.length === 0) continue;
          try {
            const ev = JSON.parse(data.join('\n')) as { entry?: { kind?: string } };
            if (ev.entry?.kind === 'agent') onAgentMessage(now());
          } catch {
            // not ours
          }
        }
      });
      resolve(() => req.destroy());
    });
    req.on('error', (err) => reject(err));
  });
}

export function post(agent: http.Agent, base: string, groupId: string, text: string): Promise<number> {
  const body = JSON.stringify({ text, author_name: 'Maya' });
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/api/groups/${groupId}/messages`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

export async function webRun(o: { messages: number; warmup: number }): Promise<{ p50: number; p99: number }> {
  const llm = new FakeLlm({ replies: { analyst: 'Revenue grew 12% quarter on quarter.' } });
  const b = await benchApp({ llm, agents: 3, web: true });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let close = () => undefined as void;
  try {
    const base = b.app.webUrl;
    if (!base) throw new Error('web channel did not start');
    await b.app.router.gateway.createGroup({ title: 'Web', participants: ['analyst', 'writer', 'critic'], id: 'web-room' });
    let waiter: ((t: number) => void) | null = null;
    close = await openEvents(base, 'web-room', (t) => {
      const w = waiter;
      waiter = null;
      w?.(t);
    });
    const samples: number[] = [];
    for (let i = 0; i < o.warmup + o.messages; i++) {
      const replied = new Promise<number>((r) => (waiter = r));
      const t0 = now();
      const status = await post(agent, base, 'web-room', `@analyst how did revenue do in week ${i}?`);
      if (status !== 202) throw new Error(`POST answered ${status}`);
      const t1 = await replied;
      if (i >= o.warmup) samples.push(t1 - t0);
      await b.app.router.idle();
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  } finally {
    close();
    agent.destroy();
    await b.close();
  }
}
