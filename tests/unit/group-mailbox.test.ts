/**
 * One writer per group (src/core/groups/GroupMailbox.ts): a group's tasks hold it one at a time in
 * the order they were sent; a task that waits for something slow steps outside and queues up again
 * behind what came meanwhile; code inside a task may send to its own group without waiting for
 * itself by passing its task; work a task starts and leaves behind runs outside it. With checks on
 * (as everywhere in this suite), code that claims a group it does not hold is refused. And the
 * router's GroupManager refuses a change made outside its group's task.
 */
import { describe, expect, it } from 'vitest';
import { GroupMailbox } from '../../src/core/groups/GroupMailbox.js';
import { makeRouter } from '../helpers/router-harness.js';

/** A promise and its resolver, to hold a task at a known point. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('GroupMailbox', () => {
  it("runs a group's tasks one at a time, in the order sent; other groups run alongside", async () => {
    const mb = new GroupMailbox();
    const log: string[] = [];
    const held = gate();
    const first = mb.send('a', async () => {
      log.push('a1 start');
      await held.wait;
      log.push('a1 end');
    });
    const second = mb.send('a', () => void log.push('a2'));
    const other = mb.send('b', () => void log.push('b1'));
    await other;
    await ticks();
    expect(log).toEqual(['a1 start', 'b1']);
    held.open();
    await Promise.all([first, second]);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    expect(mb.idle).toBe(true);
  });

  it('a task that steps outside lets the tasks sent meanwhile in, then queues up behind them', async () => {
    const mb = new GroupMailbox();
    const log: string[] = [];
    const model = gate();
    const turn = mb.send('g', async () => {
      log.push('turn: prompt built');
      expect(mb.holds('g')).toBe(true);
      const answer = await mb.outside('g', async () => {
        expect(mb.holds('g')).toBe(false);
        await model.wait;
        return 'reply';
      });
      // Back in the line: the message sent while the model thought was taken in first.
      expect(mb.holds('g')).toBe(true);
      log.push(`turn: ${answer} recorded`);
    });
    await ticks();
    const message = mb.send('g', () => void log.push('message recorded'));
    await message;
    expect(log).toEqual(['turn: prompt built', 'message recorded']);
    const late = gate();
    const slow = mb.send('g', async () => {
      log.push('slow task in');
      await late.wait;
      log.push('slow task out');
    });
    await ticks();
    model.open();
    await ticks();
    // The turn waits for the task that holds the group now.
    expect(log).toEqual(['turn: prompt built', 'message recorded', 'slow task in']);
    late.open();
    await Promise.all([turn, slow]);
    expect(log).toEqual(['turn: prompt built', 'message recorded', 'slow task in', 'slow task out', 'turn: reply recorded']);
  });

  it('inside a task, sending to the same group via the task runs at once; to another group it queues there', async () => {
    const mb = new GroupMailbox();
    const log: string[] = [];
    await mb.send('g', async (t) => {
      await mb.send('g', () => void log.push('nested, same group'), t);
      const held = gate();
      const busy = mb.send('h', () => held.wait, t);
      const other = mb.send('h', () => void log.push('other group, in its line'), t);
      log.push('after nested');
      held.open();
      await Promise.all([busy, other]);
    });
    expect(log).toEqual(['nested, same group', 'after nested', 'other group, in its line']);
  });

  it('work a task leaves behind does not count as the task, once started detached or once the task ended', async () => {
    const mb = new GroupMailbox();
    let detachedHeld: boolean | undefined;
    let leftBehind: Promise<boolean> | undefined;
    const later = gate();
    await mb.send('g', () => {
      mb.detached(() => {
        detachedHeld = mb.holds('g');
      });
      leftBehind = later.wait.then(() => mb.holds('g'));
    });
    later.open();
    expect(detachedHeld).toBe(false);
    expect(await leftBehind).toBe(false);
  });

  it('checks refuse code that claims a group it does not hold; without checks the same tasks run in the same order', async () => {
    const checked = new GroupMailbox({ check: true });
    // Sending to the group it holds without saying so: it would wait for itself forever.
    await expect(checked.send('g', () => checked.send('g', () => 'never'))).rejects.toThrow(/wait for itself/);
    // Stepping outside for a group another task holds.
    const held = gate();
    const holder = checked.send('g', () => held.wait);
    await ticks();
    await expect(checked.outside('g', async () => 'x')).rejects.toThrow(/does not hold/);
    expect(checked.holds('g')).toBe(false);
    held.open();
    await holder;

    const order = async (mb: GroupMailbox): Promise<string[]> => {
      const log: string[] = [];
      const model = gate();
      const turn = mb.send('g', async (t) => {
        log.push(`turn holds: ${mb.holds('g')}`);
        await mb.send('g', () => void log.push('same task'), t);
        const answer = await mb.outside('g', async () => (await model.wait, 'reply'));
        log.push(`turn: ${answer}`);
      });
      await ticks();
      const message = mb.send('g', () => void log.push('message'));
      await message;
      model.open();
      await turn;
      return log;
    };
    const expected = ['turn holds: true', 'same task', 'message', 'turn: reply'];
    expect(await order(new GroupMailbox({ check: true }))).toEqual(expected);
    expect(await order(new GroupMailbox({ check: false }))).toEqual(expected);
  });

  it('a failed task lets go of the group', async () => {
    const mb = new GroupMailbox();
    await expect(mb.send('g', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(mb.send('g', () => 'next')).resolves.toBe('next');
  });
});

describe('the router: nothing changes a group from outside its mailbox', () => {
  it('a change made outside the group\'s task is refused; the same change as a task is made and recorded', async () => {
    const h = await makeRouter({ participants: ['analyst', 'writer'] });
    const g = h.router.groups.get(h.group.id)!;
    expect(() => h.router.groups.setMuted(g, 'writer', true)).toThrow(/outside its mailbox/);
    expect(g.state.muted).toEqual([]);
    await h.router.mailbox.send(g.id, async () => {
      h.router.groups.setMuted(g, 'writer', true);
      await h.router.recorder.record(g);
    });
    expect(g.state.muted).toEqual(['writer']);
  });

  it('a message sent while an agent is thinking is taken in at once; the reply is recorded after it', async () => {
    const thinking = gate();
    const called = gate();
    const h = await makeRouter({
      participants: ['analyst'],
      llm: { replies: { analyst: [async () => (called.open(), await thinking.wait, 'an answer'), 'a second answer'] } },
    });
    const first = await h.router.receive(h.message('@analyst first question'));
    await called.wait;
    // The model has not answered: the group is not held, so the message is recorded now.
    const second = await h.router.receive(h.message('and a second thought'));
    expect(second.status).toBe('recorded');
    thinking.open();
    await h.router.idle();
    const t = h.transcript();
    const seqOf = (id: string | undefined) => t.find((e) => e.id === id)!.seq;
    const replies = t.filter((e) => e.kind === 'agent');
    expect(replies[0]!.text).toBe('an answer');
    expect(seqOf(second.entryId)).toBeGreaterThan(seqOf(first.entryId));
    expect(replies[0]!.seq).toBeGreaterThan(seqOf(second.entryId));
  });
});
