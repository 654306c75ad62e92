/**
 * A Map that forgets its oldest entry once it holds `max`: for what a process keeps of the
 * requests it serves (compiled statements, tilings, probes), which must not grow with them.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.max && !this.has(key)) {
      const oldest = this.keys().next();
      if (oldest.done !== true) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}
