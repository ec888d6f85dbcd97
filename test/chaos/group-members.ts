/**
 * Consumer-group members (KIP-848 heartbeats through the client's GroupClient, round-robin over the
 * servers) that join, commit, leave, stall past their session timeout and then commit as zombies.
 * Every assignment they are told and every commit they make is logged with client-side times, so
 * the checker can say when a partition surely had two owners or a stale commit was accepted.
 */
import { randomUUID } from 'node:crypto';
import { GroupClient } from '../../src/client/consumer/group-client.js';
import { KafkaClientError } from '../../src/client/errors.js';
import { Transport } from '../../src/client/transport.js';
import { roundRobin, sleep } from './producers.js';
import type { Rng } from './rng.js';

export const SESSION_TIMEOUT_MS = 6000;

/** A member incarnation's hold on a partition, as bounds the server's own view must contain. */
export interface Ownership {
  member: string;
  partition: number;
  epoch: number;
  /** When the heartbeat that was answered with it was sent (the server granted it no earlier). */
  requestedAt: number;
  /** When the answer granting it arrived (the server granted it no later). */
  acquiredBy: number;
  /** No earlier than this the server can have taken it away (Infinity while held). */
  releasedNotBefore: number;
}

export interface CommitLog {
  id: string;
  member: string;
  epoch: number;
  partition: number;
  offset: number;
  /** The member's hold on the partition this commit relied on. */
  held: Ownership;
  sentAt: number;
  answeredAt: number;
  /** 200, an error name, or 'unknown' (no answer). */
  result: string;
  zombie: boolean;
}

export interface GroupLog {
  topic: string;
  groupId: string;
  ownerships: Ownership[];
  commits: CommitLog[];
  joins: number;
  leaves: number;
  stalls: number;
  /** Member ids some client was told (in a heartbeat answer). */
  known: Set<string>;
  /** Member ids the group listed while the run went on (sampled every second). */
  listed: Set<string>;
  /** The committed offsets, sampled every second: when the read was sent, and partition -> offset. */
  committed: { sentAt: number; offsets: Map<number, number> }[];
}

export function startGroupMembers(opts: {
  count: number;
  topic: string;
  groupId: string;
  servers: () => string[];
  clusterId: string;
  rng: Rng;
}): { log: GroupLog; stop(): Promise<void> } {
  const log: GroupLog = {
    topic: opts.topic,
    groupId: opts.groupId,
    ownerships: [],
    commits: [],
    joins: 0,
    leaves: 0,
    stalls: 0,
    known: new Set(),
    listed: new Set(),
    committed: [],
  };
  let stopping = false;
  let nextOffset = 1;
  const members = Array.from({ length: opts.count }, (_, i) => runMember(i));
  const sampler = (async () => {
    const next = roundRobin(opts.servers);
    while (!stopping) {
      await sleep(1000);
      try {
        const group = `${next()}/v3/clusters/${opts.clusterId}/consumer-groups/${opts.groupId}`;
        const res = await fetch(`${group}/consumers`, { signal: AbortSignal.timeout(5000) });
        if (res.status === 200)
          for (const m of ((await res.json()) as { data: { consumer_id: string }[] }).data)
            log.listed.add(m.consumer_id);
        const sentAt = Date.now();
        const off = await fetch(`${group}/offsets?topic_name=${opts.topic}`, { signal: AbortSignal.timeout(5000) });
        if (off.status === 200) {
          const data = ((await off.json()) as { data: { partition_id: number; committed_offset: number | null }[] })
            .data;
          log.committed.push({
            sentAt,
            offsets: new Map(
              data.filter((d) => d.committed_offset !== null).map((d) => [d.partition_id, d.committed_offset!]),
            ),
          });
        }
      } catch {
        // a fault or a killed server: the next sample
      }
    }
  })();

  async function runMember(index: number): Promise<void> {
    const rng = opts.rng.fork(`member-${index}`);
    const transport = new Transport({
      url: `http://127.0.0.1:1/v3/clusters/${opts.clusterId}`,
      requestTimeoutMs: 10_000,
      fetch: rerouting(roundRobin(opts.servers)),
    });
    const group = new GroupClient(transport, opts.groupId);
    let incarnation = 0;
    while (!stopping) {
      incarnation++;
      // As the client library's consumer does (KIP-1082): the member names itself, so a join retried
      // after a lost answer rejoins this member instead of adding another.
      let memberId: string = randomUUID();
      log.known.add(memberId);
      let epoch = 0;
      let lastOkSent = 0;
      const held = new Map<number, Ownership>();
      const releaseAll = (at: number) => {
        for (const o of held.values()) o.releasedNotBefore = Math.min(at, lastOkSent + SESSION_TIMEOUT_MS);
        held.clear();
      };
      const beat = async (): Promise<'ok' | 'fenced' | 'error'> => {
        const sent = Date.now();
        try {
          const a = await group.heartbeat({
            memberId,
            memberEpoch: epoch,
            ...(epoch === 0
              ? { subscribedTopics: [opts.topic], sessionTimeoutMs: SESSION_TIMEOUT_MS, rebalanceTimeoutMs: 30_000 }
              : {}),
            ownedPartitions: { [opts.topic]: [...held.keys()].sort((x, y) => x - y) },
          });
          const now = Date.now();
          if (lastOkSent > 0 && sent - lastOkSent > SESSION_TIMEOUT_MS) releaseAll(now); // the server may have expired it meanwhile
          if (epoch === 0) log.joins++;
          memberId = a.memberId;
          log.known.add(memberId);
          epoch = a.memberEpoch;
          lastOkSent = sent;
          const granted = new Set(a.assignment[opts.topic] ?? []);
          for (const [p, o] of held) {
            if (granted.has(p)) continue;
            o.releasedNotBefore = now;
            held.delete(p);
          }
          for (const p of granted) {
            const o = held.get(p);
            if (o) o.epoch = epoch;
            else {
              const own: Ownership = {
                member: memberId,
                partition: p,
                epoch,
                requestedAt: sent,
                acquiredBy: now,
                releasedNotBefore: Infinity,
              };
              held.set(p, own);
              log.ownerships.push(own);
            }
          }
          return 'ok';
        } catch (e) {
          if (e instanceof KafkaClientError && ['UNKNOWN_MEMBER_ID', 'FENCED_MEMBER_EPOCH'].includes(e.type))
            return 'fenced';
          return 'error';
        }
      };
      const commit = async (zombie: boolean) => {
        const parts = [...held.keys()];
        if (parts.length === 0 || !memberId) return;
        const offsets = parts.map((p) => ({
          topic: opts.topic,
          partition: p,
          offset: nextOffset++,
          metadata: `${memberId}|${incarnation}`,
        }));
        const sentAt = Date.now();
        const entries: CommitLog[] = offsets.map((o) => ({
          id: `${memberId}#${o.offset}`,
          member: memberId,
          epoch,
          partition: o.partition,
          offset: o.offset,
          held: held.get(o.partition)!,
          sentAt,
          answeredAt: 0,
          result: 'unknown',
          zombie,
        }));
        log.commits.push(...entries);
        let result = '200';
        try {
          await group.commit(memberId, epoch, offsets);
        } catch (e) {
          result =
            e instanceof KafkaClientError && !(e.type === 'NETWORK_EXCEPTION' || e.type === 'REQUEST_TIMED_OUT')
              ? e.type
              : 'unknown';
        }
        const answeredAt = Date.now();
        for (const c of entries) Object.assign(c, { answeredAt, result });
      };

      // Join (a retried join after a lost answer is what finding 4 is about).
      while (!stopping && epoch === 0) {
        if ((await beat()) !== 'ok') await sleep(200);
      }
      const lifetime = Date.now() + rng.int(5000, 15_000);
      let outcome: 'leave' | 'stall' | 'fenced' | 'stop' = 'stop';
      while (!stopping) {
        if (Date.now() > lifetime) {
          outcome = rng.chance(0.4) ? 'stall' : 'leave';
          break;
        }
        const r = await beat();
        if (r === 'fenced') {
          outcome = 'fenced';
          break;
        }
        await commit(false);
        await sleep(rng.int(200, 500));
      }
      if (outcome === 'leave' || outcome === 'stop') {
        // Half the time a last commit goes out together with the leave (a slow commit racing it).
        const last = outcome === 'leave' && rng.chance(0.5) ? commit(false) : Promise.resolve();
        const leaveSent = Date.now();
        log.leaves++;
        try {
          await group.heartbeat({ memberId, memberEpoch: -1 });
        } catch {
          // an unanswered leave: the session timeout removes it
        }
        releaseAll(leaveSent);
        await last;
      } else if (outcome === 'stall') {
        // A frozen Lambda: no heartbeat for longer than the session, then a commit at the old epoch.
        log.stalls++;
        const wakeAt = Date.now() + SESSION_TIMEOUT_MS + rng.int(1500, 3000);
        while (!stopping && Date.now() < wakeAt) await sleep(200);
        if (!stopping) await commit(true);
        releaseAll(Date.now());
      } else releaseAll(Date.now());
      await sleep(rng.int(100, 1000));
    }
  }

  return {
    log,
    async stop() {
      stopping = true;
      await Promise.all([...members, sampler]);
    },
  };
}

function rerouting(next: () => string): typeof globalThis.fetch {
  return (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const target = new URL(next());
    url.host = target.host;
    return globalThis.fetch(url, init);
  };
}

export interface GroupFindings {
  commitsAccepted: number;
  zombieCommitsRejected: number;
  /** Two members surely held one partition at the same time. */
  twoOwners: string[];
  /** A commit answered 200 after another member had been given its partition. */
  staleCommitsAccepted: string[];
  /** The committed offset at the end is a commit made before a later owner's accepted one. */
  staleCommitsLanded: string[];
  /** Members the group had that no client was ever told of (a join answered twice, say). */
  ghostMembers: string[];
}

export function checkGroup(
  log: GroupLog,
  finalCommitted: Map<number, { offset: number; metadata: string }>,
): GroupFindings {
  const f: GroupFindings = {
    commitsAccepted: 0,
    zombieCommitsRejected: 0,
    twoOwners: [],
    staleCommitsAccepted: [],
    staleCommitsLanded: [],
    ghostMembers: [...log.listed].filter((id) => !log.known.has(id)),
  };
  const byPartition = new Map<number, Ownership[]>();
  for (const o of log.ownerships) byPartition.set(o.partition, [...(byPartition.get(o.partition) ?? []), o]);
  for (const [p, list] of byPartition) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const a = list[i]!;
        const b = list[j]!;
        if (a.member === b.member) continue;
        const overlap = Math.min(a.releasedNotBefore, b.releasedNotBefore) - Math.max(a.acquiredBy, b.acquiredBy);
        if (overlap > 0)
          f.twoOwners.push(
            `p${p}: ${a.member}@${a.epoch} and ${b.member}@${b.epoch} for ${overlap === Infinity ? 'ever' : `${overlap} ms`}`,
          );
      }
    }
  }
  // Another member surely given the partition after this commit's member was (granted no earlier
  // than it asked, the other no later than its answer came) means the commit's member had lost it.
  const takenOver = (c: CommitLog, before: number) =>
    (byPartition.get(c.partition) ?? []).find(
      (o) => o.member !== c.member && o.requestedAt > c.held.acquiredBy && o.acquiredBy < before,
    );
  const accepted = log.commits.filter((c) => c.result === '200');
  for (const c of log.commits) {
    if (c.result === '200') f.commitsAccepted++;
    else if (c.zombie) f.zombieCommitsRejected++;
    const by = c.result === '200' ? takenOver(c, c.sentAt) : undefined;
    if (by)
      f.staleCommitsAccepted.push(
        `p${c.partition} offset ${c.offset} by ${c.member}@${c.epoch}${c.zombie ? ' (zombie)' : ''}, after ${by.member} was given it`,
      );
  }
  // A committed offset read at some time is a commit that an accepted commit by a later owner,
  // answered before that read, should have overwritten: it landed after its member lost the partition.
  const reads = [
    ...log.committed,
    { sentAt: Infinity, offsets: new Map([...finalCommitted].map(([p, c]) => [p, c.offset])) },
  ];
  const reported = new Set<number>();
  for (const read of reads) {
    for (const [p, offset] of read.offsets) {
      const x = log.commits.find((c) => c.partition === p && c.offset === offset);
      if (!x || reported.has(offset)) continue;
      const later = accepted.find(
        (y) =>
          y.partition === p &&
          y.member !== x.member &&
          y.held.requestedAt > x.held.acquiredBy &&
          y.answeredAt < read.sentAt,
      );
      if (!later) continue;
      reported.add(offset);
      f.staleCommitsLanded.push(
        `p${p}: committed ${offset} by ${x.member}@${x.epoch} read over ${later.offset} by later owner ${later.member}${read.sentAt === Infinity ? ' at the end' : ''}`,
      );
    }
  }
  return f;
}
