/**
 * Group commit (docs/performance.md, "Group commit"): appends to one partition that arrive close
 * together are committed as one, so they share one object write, one conditional state write and
 * one index entry.
 */

export interface GroupBounds {
  /** Bytes of the members' objects: a member that would pass it starts a new group. */
  maxBytes: number;
  maxMembers: number;
}

interface Group<T, R> {
  members: T[];
  answers: { resolve: (r: R) => void; reject: (e: unknown) => void }[];
  bytes: number;
  /** Closes the group to new members. */
  close: () => void;
  /** Closes the group and lets it commit without waiting any longer. */
  full: () => void;
}

/**
 * Gathers members per key (a partition, and whatever must be the same for members to share a
 * commit). A group commits once the window has passed, one `setImmediate`, so that the event
 * loop's poll phase has read and parsed the requests already waiting on other sockets (on the
 * local backend an append otherwise runs from its body to its answer without yielding, and
 * nothing would ever be gathered), and once the key's group before it is done, so that while a
 * slow commit is in flight the next one gathers everything that arrives meanwhile. A group that
 * reaches a bound commits at once.
 */
export class AppendGroups<T, R> {
  private readonly open = new Map<string, Group<T, R>>();
  /** Per key, the commit of the last group opened: the next one waits for it (unless it fills up first). */
  private readonly tails = new Map<string, Promise<void>>();

  constructor(
    private readonly bounds: GroupBounds,
    private readonly sizeOf: (member: T) => number,
    /** Commits a group; answers each member in order. */
    private readonly commit: (members: T[]) => Promise<R[]>,
  ) {}

  join(key: string, member: T): Promise<R> {
    const bytes = this.sizeOf(member);
    let group = this.open.get(key);
    if (group && group.bytes + bytes > this.bounds.maxBytes) {
      group.full();
      group = undefined;
    }
    group ??= this.start(key);
    const answer = new Promise<R>((resolve, reject) => group.answers.push({ resolve, reject }));
    group.members.push(member);
    group.bytes += bytes;
    if (group.bytes >= this.bounds.maxBytes || group.members.length >= this.bounds.maxMembers) group.full();
    return answer;
  }

  private start(key: string): Group<T, R> {
    let filled!: () => void;
    const ready = new Promise<void>((r) => (filled = r));
    const close = () => {
      if (this.open.get(key) === group) this.open.delete(key);
    };
    const group: Group<T, R> = {
      members: [],
      answers: [],
      bytes: 0,
      close,
      full: () => {
        close();
        filled();
      },
    };
    this.open.set(key, group);
    const previous = this.tails.get(key);
    const window = new Promise<void>((r) => setImmediate(r));
    void (previous ? Promise.all([window, previous]) : window).then(filled);
    const done = ready.then(() => this.run(group));
    this.tails.set(key, done);
    void done.then(() => {
      if (this.tails.get(key) === done) this.tails.delete(key);
    });
    return group;
  }

  private async run(group: Group<T, R>): Promise<void> {
    group.close();
    try {
      const results = await this.commit(group.members);
      group.answers.forEach((a, i) => a.resolve(results[i]!));
    } catch (e) {
      for (const a of group.answers) a.reject(e);
    }
  }
}
