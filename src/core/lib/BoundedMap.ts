/**
 * A Map (and a Set) that never holds more than `capacity` entries: adding one past it drops the
 * oldest, the one added first. For memories that only need to be recent — which agent posted a
 * platform message, dedupe keys, caches — and must not grow with every message a long-running
 * daemon sees. Setting a key that is already there changes its value and keeps its place; reads
 * do not count as use.
 */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`BoundedMap: capacity must be a whole number ≥ 1 (got ${capacity})`);
  }

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): this {
    this.map.set(key, value);
    // A Map iterates in insertion order, so its first key is the oldest.
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
    return this;
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  get size(): number {
    return this.map.size;
  }
}

/** The set variant: adding a value past `capacity` drops the oldest. */
export class BoundedSet<T> {
  private readonly map: BoundedMap<T, true>;

  constructor(capacity: number) {
    this.map = new BoundedMap(capacity);
  }

  add(value: T): this {
    this.map.set(value, true);
    return this;
  }

  has(value: T): boolean {
    return this.map.has(value);
  }

  get size(): number {
    return this.map.size;
  }
}
