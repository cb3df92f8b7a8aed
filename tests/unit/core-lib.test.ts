import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../src/core/lib/KeyedQueue.js';
import { BoundedMap, BoundedSet } from '../../src/core/lib/BoundedMap.js';

/** A promise and the function that settles it, for tasks that finish when the test says so. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('KeyedQueue', () => {
  it('runs one key’s tasks one at a time, in order; other keys alongside', async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    const first = gate();
    const a1 = q.run('a', async () => {
      log.push('a1 start');
      await first.promise;
      log.push('a1 end');
      return 1;
    });
    const a2 = q.run('a', async () => {
      log.push('a2');
      return 2;
    });
    const b1 = q.run('b', async () => {
      log.push('b1');
      return 3;
    });
    expect(await b1).toBe(3);
    expect(q.waiting('a')).toBe(1);
    expect(log).toEqual(['a1 start', 'b1']);
    first.open();
    expect(await Promise.all([a1, a2])).toEqual([1, 2]);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('a failed task does not hold up the next one under its key', async () => {
    const q = new KeyedQueue();
    const failed = q.run('a', async () => {
      throw new Error('boom');
    });
    const next = q.run('a', async () => 'ran');
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe('ran');
  });

  it('keeps no lane for an idle key, so the map does not grow with every key ever seen', async () => {
    const q = new KeyedQueue();
    expect(q.idle).toBe(true);
    await Promise.all(Array.from({ length: 100 }, (_, i) => q.run(`chat${i}`, async () => i)));
    await q.onIdleAll();
    expect(q.idle).toBe(true);
    expect(q.waiting('chat5')).toBe(0);
    await q.onIdle('never-seen'); // resolves at once
  });

  it('onIdle waits for a key’s running and waiting tasks; onIdleAll for every busy key', async () => {
    const q = new KeyedQueue();
    const a = gate();
    const b = gate();
    const done: string[] = [];
    void q.run('a', () => a.promise.then(() => void done.push('a')));
    void q.run('a', async () => void done.push('a2'));
    void q.run('b', () => b.promise.then(() => void done.push('b')));
    expect(q.idle).toBe(false);
    const aIdle = q.onIdle('a').then(() => [...done]);
    const allIdle = q.onIdleAll().then(() => [...done]);
    a.open();
    expect(await aIdle).toEqual(['a', 'a2']);
    b.open();
    expect((await allIdle).sort()).toEqual(['a', 'a2', 'b']);
    expect(q.idle).toBe(true);
  });
});

describe('BoundedMap and BoundedSet', () => {
  it('hold at most their capacity, dropping the oldest first', () => {
    const m = new BoundedMap<string, number>(3);
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) m.set(k, i);
    expect(m.size).toBe(3);
    expect(m.has('a')).toBe(false);
    expect([m.get('b'), m.get('c'), m.get('d')]).toEqual([1, 2, 3]);
    const s = new BoundedSet<string>(2);
    s.add('x').add('y').add('z');
    expect([s.has('x'), s.has('y'), s.has('z'), s.size]).toEqual([false, true, true, 2]);
  });

  it('setting a key again changes its value and keeps its place; reading does not count as use', () => {
    const m = new BoundedMap<string, string>(2);
    m.set('a', '1').set('b', '2');
    m.set('a', 'again');
    expect(m.get('a')).toBe('again');
    m.set('c', '3'); // 'a' is still the oldest
    expect([m.has('a'), m.get('b'), m.get('c')]).toEqual([false, '2', '3']);
  });

  it('keeps a stored null apart from a missing key', () => {
    const m = new BoundedMap<string, null>(2);
    m.set('none', null);
    expect(m.get('none')).toBeNull();
    expect(m.get('missing')).toBeUndefined();
  });

  it('refuses a capacity that is not a whole number ≥ 1', () => {
    expect(() => new BoundedMap(0)).toThrow(RangeError);
    expect(() => new BoundedSet(1.5)).toThrow(RangeError);
  });
});
