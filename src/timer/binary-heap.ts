/**
 * A minimal array-backed binary min-heap, ordered by `compare` (negative: `a` comes first). JavaScript
 * has no `PriorityQueue`/`DelayQueue`; the timing wheel keeps its bucket expirations in one and the
 * system timer its due tasks in another.
 */
export class BinaryHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.compare(items[i]!, items[parent]!) >= 0) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < items.length && this.compare(items[left]!, items[smallest]!) < 0) smallest = left;
      if (right < items.length && this.compare(items[right]!, items[smallest]!) < 0) smallest = right;
      if (smallest === i) return top;
      this.swap(i, smallest);
      i = smallest;
    }
  }

  private swap(i: number, j: number): void {
    const items = this.items;
    const t = items[i]!;
    items[i] = items[j]!;
    items[j] = t;
  }
}
