/**
 * One run of a trigger partition's delivery: claim the lease, then batch after batch from the
 * committed offset to the high watermark, invoking the target and committing the offset after each
 * success, until caught up and the lease is given back (delivery-lease.ts). At-least-once and in
 * order: offsets move only past what the target acknowledged, and only the lease holder delivers.
 *
 * A lease lasts two invocations' time (`leaseMs` each). Before an invocation (or a batching
 * window's wait) the holder renews it only if less than one invocation's time (or the wait and an
 * invocation) is left, so a busy partition writes its lease about once per `leaseMs`, not per batch;
 * and it commits only while it still holds it: a holder that stalled past its lease (another took
 * over) neither invokes nor commits again.
 *
 * Lambda's knobs, as its Kafka event source mappings apply them: a batch short of `batchSize` waits
 * up to the batching window for more commits; a failing batch is retried up to
 * MaximumRetryAttempts times (a split by BisectBatchOnFunctionError is no retry), records older
 * than MaximumRecordAgeInSeconds are not sent; records given up on go to the failure topic
 * (failure-topic.ts) before the offset moves past them.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Metrics } from '../metrics.js';
import { fetchedRecords } from '../log/fetched-records.js';
import { onlyPartition, type PartitionLog } from '../log/partition-log.js';
import type { DecodedRecord } from '../wire/record-batch.js';
import type { Topic, TopicRegistry } from '../topics/topics.js';
import { isKafkaError } from '../wire/errors.js';
import type { DeliveryLeases, HeldLease, LeaseKey } from './delivery-lease.js';
import { KeyLanes } from './key-lanes.js';
import { batchVerdict } from './batch-response.js';
import { matchesAny } from './filter-pattern.js';
import { EventLayout, kafkaEventJson, MAX_EVENT_BYTES, partitionKey, type EventBatch } from './kafka-event.js';
import type { TriggerPositions } from './positions.js';
import type { Invoke, InvokeAnswer, TargetFactory } from './targets.js';
import { deliveryKnobs, leaseMs, type DeliveryKnobs, type TriggerDefinition } from './trigger.js';
import type { PutFailureObject } from './failure-bucket.js';
import type { SendFailureMessage } from './failure-message.js';
import { sendFailed } from './failure-destination.js';
import type { FailedRecords, FailureReason } from './failure-topic.js';
import type { TriggerRegistry } from './trigger-registry.js';

export interface DeliveryDeps {
  registry: TriggerRegistry;
  leases: DeliveryLeases;
  topics: TopicRegistry;
  log: PartitionLog;
  positions: TriggerPositions;
  clock: Clock;
  targets: TargetFactory;
  bootstrapServers: string;
  /** This process, in holder ids (a holder id is this plus a run id). */
  processId: string;
  /** Back-off between attempts of a failing batch (exponential with full jitter). */
  retryBackoff: { baseMs: number; maxMs: number };
  onError: (msg: string, fields: Record<string, unknown>) => void;
  /** Invocations, errors, filtered records, records to the failure destination, offset lag. */
  metrics?: Metrics;
  /** S3 failure destinations' writes (failure-bucket.ts); without it such a give-up fails the run. */
  putFailureObject?: PutFailureObject;
  /** SQS and SNS failure destinations' messages (failure-message.ts); without it such a give-up fails the run. */
  sendFailureMessage?: SendFailureMessage;
}

/** What a run of this process tells the runner, and asks it. */
export interface RunControl {
  /** True once a commit arrived since the run last looked; reading it clears it. */
  takeMore(): boolean;
  /** True at the next commit to the partition; false when the run is stopped, or after `ms`. */
  waitForCommit(ms: number): Promise<boolean>;
  /** The process is shutting down: stop after the current step. */
  stopped(): boolean;
}

export type RunEnd = { how: 'caught-up' } | { how: 'held-elsewhere'; until: number } | { how: 'stopped' };

/** Bytes of record batches one read asks for. */
const READ_BYTES = 1024 * 1024;

/** Records read and not yet delivered: every record to deliver in [from, next), in order. */
interface ReadAhead {
  from: number;
  next: number;
  records: DecodedRecord[];
}

export async function runDelivery(deps: DeliveryDeps, key: LeaseKey, control: RunControl): Promise<RunEnd> {
  const holder = `${deps.processId}/${randomUUID()}`;
  const first = await deps.registry.get(key.trigger).catch(notFoundAsUndefined);
  if (first?.state !== 'ENABLED') return { how: 'stopped' };
  const now = deps.clock.now();
  // A lease an earlier run of this process holds is over: the runner runs one at a time per partition.
  const mine = `${deps.processId}/`;
  const claim = await deps.leases.claim(key, holder, now, now + leaseTtl(first), (h) => h.startsWith(mine));
  if (!claim.held) return { how: 'held-elsewhere', until: claim.until };
  const hold: Hold = { lease: claim.lease, renewing: Promise.resolve() };
  try {
    return deliveryKnobs(first).ordering === 'KEY'
      ? await deliverByKey(deps, key, control, hold, first)
      : await deliverInOrder(deps, key, control, hold, first);
  } finally {
    // A run that stops while holding the lease gives it back, so the next commit claims it at once.
    if (hold.lease) await deps.leases.release(hold.lease).catch(() => {});
  }
}

/** The lease a run holds, renewed by one invocation at a time (KEY ordering has several in flight). */
interface Hold {
  /** Undefined once lost (another took it over) or given back. */
  lease: HeldLease | undefined;
  renewing: Promise<unknown>;
}

/** How long a claim or a renewal holds the lease: two invocations' time, renewed once one is left. */
const leaseTtl = (d: TriggerDefinition) => 2 * leaseMs(d);

/**
 * Makes sure the lease lasts until `needed` (epoch ms: the end of an invocation about to start, or
 * of a window's wait and the invocation after it). Writes only when it would not: then it extends
 * it to one more invocation's time past `needed`, so the next invocations need no write.
 */
function renewHold(
  deps: DeliveryDeps,
  hold: Hold,
  d: TriggerDefinition,
  needed: number,
): Promise<HeldLease | undefined> {
  const renewed = hold.renewing.then(async () => {
    if (!hold.lease) return undefined;
    if (hold.lease.item.value.until >= needed) return hold.lease;
    hold.lease = await deps.leases.renew(hold.lease, needed + leaseMs(d));
    return hold.lease;
  });
  hold.renewing = renewed.catch(() => {});
  return renewed;
}

/**
 * Gives the lease back once caught up. True when the run is over; false when a commit kicked it
 * meanwhile (the lease is still held): look again.
 */
async function releaseCaughtUp(deps: DeliveryDeps, hold: Hold): Promise<RunEnd | undefined> {
  const released = await deps.leases.release(hold.lease!);
  if (released.how === 'kicked') {
    hold.lease = released.lease;
    return undefined;
  }
  hold.lease = undefined;
  return { how: released.how === 'lost' ? 'stopped' : 'caught-up' };
}

/** The invoker of the trigger's target, made again when the target changes. */
function targetOf(deps: DeliveryDeps) {
  let made: { target: string; call: Invoke } | undefined;
  return (d: TriggerDefinition) => {
    const id = JSON.stringify(d.target);
    if (made?.target !== id) made = { target: id, call: deps.targets(d.target) };
    return made.call;
  };
}

const patternsOf = (d: TriggerDefinition) =>
  (d.filterCriteria?.filters ?? []).map((f) => JSON.parse(f.pattern) as Record<string, unknown>);

/** The records some filter pattern matches (all without patterns); the others are counted as filtered. */
function passingFilters(deps: DeliveryDeps, d: TriggerDefinition, topic: Topic, read: DecodedRecord[]) {
  const patterns = patternsOf(d);
  if (patterns.length === 0) return read;
  const kept = read.filter((r) => matchesAny(patterns, filterView(topic, r)));
  if (kept.length < read.length)
    deps.metrics?.add('TriggerRecordsFiltered', read.length - kept.length, { Trigger: d.name });
  return kept;
}

/** A record given up on because its event alone would be over the payload cap. */
const tooLarge = (
  deps: DeliveryDeps,
  d: TriggerDefinition,
  topic: Topic,
  partition: number,
  record: DecodedRecord,
  bytes: number,
) =>
  failRecords(deps, d, deliveryKnobs(d), {
    topic: topic.name,
    partition,
    records: [record],
    reason: 'PayloadTooLarge',
    attempts: 0,
    error: `the event would be ${bytes} bytes, over the ${MAX_EVENT_BYTES}-byte payload cap`,
  });

/** Ordering PARTITION (Lambda's): one invocation in flight, batches in offset order. */
async function deliverInOrder(
  deps: DeliveryDeps,
  key: LeaseKey,
  control: RunControl,
  hold: Hold,
  first: TriggerDefinition,
): Promise<RunEnd> {
  const invokerOf = targetOf(deps);
  // A partial batch response's failed records are the next batch, and its failures so far count
  // against MaximumRetryAttempts there: `failures` of the batch that starts at `at`.
  let partial = { at: -1, failures: 0 };
  let ahead: ReadAhead | undefined;
  // The batching window of the batch starting at `position`: it is invoked at `until` at the latest.
  let gathering: { position: number; until: number } | undefined;
  // The definition the run started with serves its first step (just read): later ones read it
  // again, to see a pause or a change.
  let known: TriggerDefinition | undefined = first;
  for (;;) {
    control.takeMore();
    const d = known ?? (await deps.registry.get(key.trigger).catch(notFoundAsUndefined));
    known = undefined;
    if (d?.state !== 'ENABLED' || control.stopped()) return { how: 'stopped' };
    const topic = await deps.topics.get(key.topic);
    const state = await deps.log.state(topic, key.partition);
    const position = await deps.positions.current(d, topic, key.partition, state);
    if (position >= state.highWatermark) {
      if (control.takeMore()) continue;
      const end = await releaseCaughtUp(deps, hold);
      if (end) return end;
      continue;
    }
    // What an earlier read brought past the last batch serves while delivery goes on from inside
    // it; a position moved elsewhere (a group reset, retention) reads afresh.
    if (!ahead || position < ahead.from || position > ahead.next)
      ahead = { from: position, next: position, records: [] };
    const past = firstAtOrAfter(ahead.records, position);
    if (past > 0) ahead.records = ahead.records.slice(past);
    ahead.from = position;
    await readAhead(deps, topic, key.partition, ahead, d.batchSize, state.highWatermark);
    const read1 = ahead.records.slice(0, d.batchSize);
    // A batch short of batchSize waits for more commits, up to the window (Lambda's
    // MaximumBatchingWindowInSeconds), from when this run first saw its first record.
    const { maximumBatchingWindowMs: windowMs } = deliveryKnobs(d);
    if (read1.length > 0 && read1.length < d.batchSize && windowMs > 0 && !control.stopped()) {
      const at = deps.clock.now();
      if (gathering?.position !== position) {
        gathering = { position, until: at + windowMs };
        // The lease must outlast the wait and the invocation after it.
        if (!(await renewHold(deps, hold, d, gathering.until + leaseMs(d)))) return { how: 'stopped' };
      }
      if (at < gathering.until) {
        // The window is over when the wait ends without a commit, whatever the clock says.
        if (!(await control.waitForCommit(gathering.until - at))) gathering.until = at;
        continue;
      }
    }
    // Nothing but control records or aborted ones up to nextOffset: step over them.
    let next = read1.length > 0 ? read1[read1.length - 1]!.offset + 1 : ahead.next;
    // Filtered records are committed with the batch, never invoked with.
    let records = passingFilters(deps, d, topic, read1);
    // Lambda's payload cap: the batch ends before the record that would take the event past it.
    const fit = recordsThatFit(deps.bootstrapServers, { ...eventOf(topic, key.partition), records });
    if (records.length > 0 && fit.count === 0) {
      // One record alone over the cap can never be invoked with: given up on at once, so it
      // does not hold the partition.
      await tooLarge(deps, d, topic, key.partition, records[0]!, fit.firstBytes);
      next = records[0]!.offset + 1;
      records = [];
    } else if (fit.count < records.length) {
      next = records[fit.count]!.offset;
      records = records.slice(0, fit.count);
    }
    let failedFrom: number | undefined;
    if (records.length > 0) {
      const failures = partial.at === records[0]!.offset ? partial.failures : 0;
      const done = await deliver(deps, d, hold, key.partition, invokerOf(d), topic, records, control, failures);
      if (!done || done.stopped) return { how: 'stopped' };
      failedFrom = done.failedFrom;
      if (failedFrom !== undefined) {
        next = failedFrom;
        partial = { at: failedFrom, failures: done.failures ?? 0 };
      } else if (done.through !== undefined) next = done.through;
    }
    if (stalled(deps, hold)) return { how: 'stopped' };
    await deps.positions.commit(d, topic, key.partition, next);
    deps.metrics?.gauge('TriggerOffsetLag', Math.max(0, state.highWatermark - next), { Trigger: d.name });
    if (failedFrom !== undefined) await sleep(backoff(partial.failures, deps.retryBackoff));
  }
}

/** A holder that stalled past its lease (another may have taken over) neither invokes nor commits again. */
const stalled = (deps: DeliveryDeps, hold: Hold) => !hold.lease || deps.clock.now() >= hold.lease.item.value.until;

/**
 * Ordering KEY: the partition's records spread over key lanes (key-lanes.ts), one invocation in
 * flight per lane, so a key keeps its order while the lanes run at once. The committed offset is
 * the lowest record not done, whatever the other lanes finished. Reads go on while less than a
 * batch per lane waits. A lane short of a full batch waits the batching window (from when its first
 * record was read) for more commits; a full one invokes as soon as the lane is free.
 */
async function deliverByKey(
  deps: DeliveryDeps,
  key: LeaseKey,
  control: RunControl,
  hold: Hold,
  first: TriggerDefinition,
): Promise<RunEnd> {
  const invokerOf = targetOf(deps);
  const topic = await deps.topics.get(key.topic);
  const start = await deps.positions.current(first, topic, key.partition, await deps.log.state(topic, key.partition));
  // Lanes and batch size as the run started: a change applies from the next run.
  const knobs = deliveryKnobs(first);
  const lanes = new KeyLanes(knobs.keyLanes, first.batchSize, start, knobs.maximumBatchingWindowMs);
  let committed = start;
  const running = new Map<number, Promise<void>>();
  // Why the run ends, once a lane or the loop knows: the lanes in flight finish first.
  let end: RunEnd | undefined;
  let failure: { error: unknown } | undefined;
  let commitWait: Promise<boolean> | undefined;

  const commitDone = async (def: TriggerDefinition) => {
    const at = lanes.commitPoint();
    if (at <= committed) return;
    if (stalled(deps, hold)) {
      end = { how: 'stopped' };
      return;
    }
    await deps.positions.commit(def, topic, key.partition, at);
    committed = at;
  };

  const runLane = async (def: TriggerDefinition, lane: number, batch: DecodedRecord[], failures: number) => {
    try {
      const fit = recordsThatFit(deps.bootstrapServers, { ...eventOf(topic, key.partition), records: batch });
      if (fit.count === 0) {
        await tooLarge(deps, def, topic, key.partition, batch[0]!, fit.firstBytes);
        lanes.finished(lane, batch, batch[0]!.offset + 1);
        return;
      }
      const sent = batch.slice(0, fit.count);
      const done = await deliver(deps, def, hold, key.partition, invokerOf(def), topic, sent, control, failures);
      if (!done || done.stopped) {
        lanes.abandoned(lane);
        end ??= { how: 'stopped' };
        return;
      }
      if (done.failedFrom !== undefined) {
        const f = done.failures ?? 0;
        lanes.finished(lane, sent, done.failedFrom, {
          from: done.failedFrom,
          failures: f,
          notBefore: deps.clock.now() + backoff(f, deps.retryBackoff),
        });
      } else lanes.finished(lane, sent, done.through ?? sent[sent.length - 1]!.offset + 1);
    } catch (error) {
      lanes.abandoned(lane);
      failure ??= { error };
    }
  };

  for (;;) {
    control.takeMore();
    const d = await deps.registry.get(key.trigger).catch(notFoundAsUndefined);
    if (d?.state !== 'ENABLED' || control.stopped() || end || failure) {
      // Stopping: no lane starts; the ones in flight end (at their next step), and what they
      // finished is committed unless the lease was lost.
      await Promise.all(running.values());
      if (d && !failure) await commitDone(d);
      if (failure) throw failure.error;
      return end ?? { how: 'stopped' };
    }
    // A step that fails (a read, a commit, a renewal) ends the run through the stop above, which
    // waits for the lanes in flight: a run that ended with lanes still invoking would leave them
    // holding the lease its process then takes over.
    let at: number | undefined;
    try {
      const state = await deps.log.state(topic, key.partition);
      if (lanes.pending < knobs.keyLanes * first.batchSize && lanes.readFrom < state.highWatermark) {
        const ahead: ReadAhead = { from: lanes.readFrom, next: lanes.readFrom, records: [] };
        await readAhead(deps, topic, key.partition, ahead, first.batchSize * knobs.keyLanes, state.highWatermark);
        // Filtered records are never handed to a lane: done as read.
        lanes.add(passingFilters(deps, d, topic, ahead.records), ahead.next, deps.clock.now());
      }
      await commitDone(d);
      deps.metrics?.gauge('TriggerOffsetLag', Math.max(0, state.highWatermark - committed), { Trigger: d.name });
      for (const s of lanes.start(deps.clock.now()))
        running.set(
          s.lane,
          runLane(d, s.lane, s.records, s.failures).finally(() => running.delete(s.lane)),
        );
      if (running.size === 0 && lanes.pending === 0 && lanes.readFrom >= state.highWatermark) {
        if (control.takeMore()) continue;
        const caughtUp = await releaseCaughtUp(deps, hold);
        if (caughtUp) return caughtUp;
        continue;
      }
      // Wait for a lane to end, a commit (more to read), or a lane's back-off or window to end.
      at = lanes.nextStart();
      // The lease must outlast the wait and the invocation after it.
      if (at !== undefined && !(await renewHold(deps, hold, d, at + leaseMs(d)))) {
        end ??= { how: 'stopped' };
        continue;
      }
    } catch (error) {
      failure ??= { error };
      continue;
    }
    commitWait ??= control.waitForCommit(1000).finally(() => {
      commitWait = undefined;
    });
    const waits: Promise<unknown>[] = [...running.values(), commitWait];
    if (at !== undefined && running.size < knobs.keyLanes) waits.push(sleep(Math.max(0, at - deps.clock.now())));
    await Promise.race(waits);
  }
}

/**
 * Invokes until the target accepts the batch, or (partial batch responses) some of its first
 * records: `failedFrom` is then the lowest failed offset, where the next batch starts, and
 * `failures` the failed invocations so far (`failuresSoFar`, those of the partial responses that
 * led to this batch, and this batch's), which go on counting there. `through`:
 * the offset to commit when it is not the end of the batch read (a bisected half succeeded).
 * Records given up on (retries exhausted, too old) are produced to the failure topic first, and
 * count as done. Undefined when the lease was lost; `stopped` when the run stopped before the
 * target accepted the batch.
 */
async function deliver(
  deps: DeliveryDeps,
  d: TriggerDefinition,
  hold: Hold,
  partition: number,
  invoke: Invoke,
  topic: Topic,
  records: DecodedRecord[],
  control: RunControl,
  failuresSoFar: number,
): Promise<{ failedFrom?: number; failures?: number; through?: number; stopped?: true } | undefined> {
  const knobs = deliveryKnobs(d);
  // Lambda's rule: infinite retries with an on-failure destination are 10.
  const maxRetries = knobs.maximumRetryAttempts === -1 && knobs.onFailureDestination ? 10 : knobs.maximumRetryAttempts;
  const giveUp = (
    failed: DecodedRecord[],
    reason: FailureReason,
    attempts: number,
    error?: string,
    answer?: InvokeAnswer,
  ) =>
    failRecords(deps, d, knobs, {
      topic: topic.name,
      partition: partition,
      records: failed,
      reason,
      attempts,
      error,
      ...(answer && { answer }),
    });
  let current = records;
  // Failed invocations of `current` that count against MaximumRetryAttempts (the first is the attempt itself).
  let failures = failuresSoFar;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) await sleep(backoff(attempt, deps.retryBackoff));
    // Stopping gives the lease back without a commit: the batch is delivered again by the next run.
    if (control.stopped()) return { stopped: true };
    if (!(await renewHold(deps, hold, d, deps.clock.now() + leaseMs(d)))) return undefined;
    if (knobs.maximumRecordAgeSeconds >= 0) {
      // Lambda's MaximumRecordAgeInSeconds: a record older than that is never sent.
      const oldest = deps.clock.now() - knobs.maximumRecordAgeSeconds * 1000;
      const expired = current.filter((r) => r.timestamp < oldest);
      if (expired.length > 0) {
        await giveUp(expired, 'RecordAgeExceeded', failures);
        const fresh = current.filter((r) => r.timestamp >= oldest);
        if (fresh.length === 0) return { through: current[current.length - 1]!.offset + 1 };
        current = fresh;
      }
    }
    const offsets = current.map((r) => r.offset);
    const event = kafkaEventJson(deps.bootstrapServers, { ...eventOf(topic, partition), records: current });
    const through = offsets[offsets.length - 1]! + 1;
    const outcome = await invoke(event);
    deps.metrics?.add('TriggerInvocations', 1, { Trigger: d.name });
    if (!outcome.ok) deps.metrics?.add('TriggerErrors', 1, { Trigger: d.name });
    let error = outcome.ok ? undefined : outcome.error;
    if (outcome.ok && !knobs.reportBatchItemFailures) return { through };
    if (outcome.ok) {
      const verdict = batchVerdict(outcome.response, partitionKey(topic.name, partition), offsets);
      if (verdict.kind === 'success') return { through };
      // The first record failing is the whole batch failing: retried here, with back-off.
      if (verdict.kind === 'failed-from' && verdict.offset > offsets[0]!) {
        // The records before the lowest failed one are done; the rest is retried from there,
        // and this invocation was a failed attempt of them, as Lambda counts it.
        failures++;
        if (maxRetries < 0 || failures <= maxRetries) return { failedFrom: verdict.offset, failures };
        // Out of retries: the records the answer named go to the failure topic; the others succeeded.
        const named = new Set(verdict.failed);
        await giveUp(
          current.filter((r) => named.has(r.offset)),
          'RetriesExhausted',
          failures,
          'named in batchItemFailures',
          outcome.answer,
        );
        return { through };
      }
      error =
        verdict.kind === 'failed'
          ? `partial batch response: ${verdict.why}`
          : 'batchItemFailures from the first record';
    }
    deps.onError('trigger invocation failed', {
      trigger: d.name,
      topic: topic.name,
      partition: partition,
      firstOffset: current[0]?.offset,
      records: current.length,
      attempt,
      error,
    });
    // BisectBatchOnFunctionError: the first half is retried alone (the second follows it, read
    // again); a split is not a retry.
    if (knobs.bisectBatchOnFunctionError && current.length > 1) {
      current = current.slice(0, Math.ceil(current.length / 2));
      continue;
    }
    failures++;
    if (maxRetries >= 0 && failures > maxRetries) {
      await giveUp(current, 'RetriesExhausted', failures, error, outcome.answer);
      return { through };
    }
  }
}

/** Records the delivery gives up on: to the failure destination if there is one, else dropped (as Lambda drops them). */
async function failRecords(
  deps: DeliveryDeps,
  d: TriggerDefinition,
  knobs: DeliveryKnobs,
  failed: Omit<FailedRecords, 'trigger'>,
): Promise<void> {
  const fields = {
    trigger: d.name,
    topic: failed.topic,
    partition: failed.partition,
    offsets: failed.records.map((r) => r.offset),
    reason: failed.reason,
  };
  if (!knobs.onFailureDestination) {
    deps.onError('trigger records dropped', fields);
    return;
  }
  try {
    await sendFailed(deps, knobs.onFailureDestination, d.target, { trigger: d.name, ...failed });
    deps.metrics?.add('TriggerRecordsToFailureDestination', failed.records.length, { Trigger: d.name });
  } catch (e) {
    // A failure topic that refuses the records as too large would refuse them on every retry:
    // they are reported and dropped rather than holding the partition for ever.
    if (!isKafkaError(e, 'MESSAGE_TOO_LARGE') && !isKafkaError(e, 'RECORD_LIST_TOO_LARGE')) throw e;
    deps.onError('trigger records dropped: the failure topic refused them', {
      ...fields,
      destination: d.onFailureDestination,
      error: String(e),
    });
    return;
  }
  deps.onError('trigger records sent to the failure destination', { ...fields, destination: d.onFailureDestination });
}

/**
 * Reads on from `ahead.next` until a batch's worth of records is there, the high watermark is
 * reached, or an event's payload cap was read (no batch can hold more).
 */
async function readAhead(
  deps: DeliveryDeps,
  topic: Topic,
  partition: number,
  ahead: ReadAhead,
  batchSize: number,
  highWatermark: number,
): Promise<void> {
  let bytes = 0;
  while (ahead.records.length < batchSize && ahead.next < highWatermark && bytes < MAX_EVENT_BYTES) {
    const read = fetchedRecords(
      onlyPartition(
        await deps.log.reader.readBatchesMany(
          [{ topic, partition, offset: ahead.next, maxBytes: READ_BYTES }],
          READ_BYTES,
        ),
      ),
      ahead.next,
      'read_uncommitted',
    );
    for (const r of read.records) if (r.offset >= ahead.next) ahead.records.push(r);
    if (read.nextOffset <= ahead.next) return;
    ahead.next = read.nextOffset;
    bytes += read.bytes;
  }
}

/** The index of the first record at or after `offset` (records in offset order). */
function firstAtOrAfter(records: DecodedRecord[], offset: number): number {
  let lo = 0;
  let hi = records.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (records[mid]!.offset < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const eventOf = (topic: Topic, partition: number): Omit<EventBatch, 'records'> => ({
  topic: topic.name,
  partition,
  logAppendTime: topic.config.logAppendTime,
});

/** How many of the batch's first records fit one event under the payload cap (and the first one's size). */
function recordsThatFit(bootstrapServers: string, batch: EventBatch): { count: number; firstBytes: number } {
  const layout = new EventLayout(bootstrapServers, batch);
  let size = layout.emptyBytes;
  let count = 0;
  let firstBytes = 0;
  for (const r of batch.records) {
    const bytes = layout.recordBytes(r) + (count > 0 ? 1 : 0); // and the comma
    if (count === 0) firstBytes = size + bytes;
    if (size + bytes > MAX_EVENT_BYTES) break;
    size += bytes;
    count++;
  }
  return { count, firstBytes };
}

/** What a filter pattern sees of a record: key and value decoded as JSON when they are JSON. */
function filterView(topic: Topic, r: DecodedRecord) {
  return { topic: topic.name, offset: r.offset, timestamp: r.timestamp, key: decoded(r.key), value: decoded(r.value) };
}

function decoded(bytes: Uint8Array | null): unknown {
  if (bytes === null) return undefined;
  const text = Buffer.from(bytes).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const notFoundAsUndefined = (e: unknown) =>
  isKafkaError(e, 'RESOURCE_NOT_FOUND') ? undefined : Promise.reject<undefined>(e);

const backoff = (attempt: number, { baseMs, maxMs }: { baseMs: number; maxMs: number }) =>
  Math.random() * Math.min(maxMs, baseMs * 2 ** (attempt - 1));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
