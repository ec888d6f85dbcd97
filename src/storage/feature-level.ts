/**
 * The cluster's feature level (Kafka's `metadata.version`): one item per cluster that says which
 * format versions writers may use (`FEATURE_LEVELS` in formats.ts). Absent, it is level 1, the
 * formats of v0.1.0. It only goes up, and only to a level every running process supports:
 *
 *   deploy new code (it reads the new formats, writes the old ones)
 *     -> every process registers itself with the level it supports (`registerProcess`)
 *     -> raised by an explicit step (`raiseFeatureLevel`: the admin route, `kafka-log features`)
 *        or by the scheduler (`autoRaiseFeatureLevel`) once every process registered in the last
 *        `REGISTRATION_TTL_MS` supports the level, and has for `AUTO_RAISE_GRACE_MS`
 *     -> writers use the new formats
 *
 * Releases before registrations existed (v0.1.0) do not register, which is why the scheduler waits
 * `AUTO_RAISE_GRACE_MS` of agreement, longer than a Lambda invocation lives after a deploy; the
 * explicit step raises at once and is for the operator who knows the old code is gone.
 */
import { KafkaError } from '../wire/errors.js';
import { RELEASE } from '../wire/release.js';
import { SUPPORTED_FEATURE_LEVEL } from './formats.js';
import {
  CLASSIC_GROUP_REGISTRY_PREFIX,
  CLUSTER_PK,
  FEATURE_LEVEL_SK,
  GROUP_REGISTRY_PREFIX,
  PROCESS_PREFIX,
  PRODUCER_ID_SEQ_SK,
  processSk,
  TOPIC_PREFIX,
  TOPIC_PURGE_PREFIX,
} from './key-layout.js';
import { optimisticUpdate } from './optimistic-update.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from './ports.js';

export interface FeatureLevelItem {
  level: number;
  /** When the level was last raised, and by whom (a principal, or `scheduler`). */
  raisedAt?: number;
  raisedBy?: string;
  /** The scheduler's pending raise: every process has supported `level` since `since`. */
  candidate?: { level: number; since: number };
}

export interface ProcessRegistration {
  id: string;
  /** The release it runs (package.json's version) and the newest feature level its code knows. */
  release: string;
  supportedLevel: number;
  /** What it is (`http`, `scheduler`, `local-server`, ...), for the operator. */
  role: string;
  seenAt: number;
}

/** How late a process may see a raise made by another process (FeatureLevels.current's cache). */
export const FEATURE_LEVEL_MAX_AGE_MS = 30_000;
/** A registration older than this is of a process that is gone (each refreshes well within it). */
export const REGISTRATION_TTL_MS = 60 * 60_000;
/** How long every registered process must have agreed before the scheduler raises the level. */
export const AUTO_RAISE_GRACE_MS = 60 * 60_000;

export async function readFeatureLevel(metadata: MetadataStore): Promise<number> {
  return (await metadata.get<FeatureLevelItem>(CLUSTER_PK, FEATURE_LEVEL_SK))?.value.level ?? 1;
}

/**
 * Whether the store holds data a user made: a topic (live, or deleted and still to purge), a group,
 * or a producer id. Every release, v0.1.0 included, writes one of these before any record or
 * offset; process registrations, the scheduler's lease and timer cursors do not count.
 */
async function holdsData(metadata: MetadataStore): Promise<boolean> {
  const found = await Promise.all([
    ...[TOPIC_PREFIX, TOPIC_PURGE_PREFIX, GROUP_REGISTRY_PREFIX, CLASSIC_GROUP_REGISTRY_PREFIX].map((beginsWith) =>
      metadata.query(CLUSTER_PK, { beginsWith, limit: 1 }).then((items) => items.length > 0),
    ),
    metadata.get(CLUSTER_PK, PRODUCER_ID_SEQ_SK).then((item) => item !== undefined),
  ]);
  return found.includes(true);
}

/**
 * A new cluster starts at the newest level, as Kafka formats a new cluster at the latest
 * metadata.version: when the level item is absent and the store holds no data, it is written at
 * `supported` (IF absent). A store with data and no item is one an earlier release wrote (v0.1.0
 * has no item): it stays at level 1, nothing written. Answers the level.
 */
export async function initializeFeatureLevel(
  metadata: MetadataStore,
  now: number,
  supported = SUPPORTED_FEATURE_LEVEL,
): Promise<number> {
  const item = await metadata.get<FeatureLevelItem>(CLUSTER_PK, FEATURE_LEVEL_SK);
  if (item) return item.value.level;
  if (await holdsData(metadata)) return 1;
  try {
    const value: FeatureLevelItem = { level: supported, raisedAt: now, raisedBy: 'new-cluster' };
    return (await metadata.put(CLUSTER_PK, FEATURE_LEVEL_SK, value, { ifAbsent: true })).value.level;
  } catch (e) {
    // Another process initialized (or raised) it first: its level stands.
    if (e instanceof ConditionFailedError) return readFeatureLevel(metadata);
    throw e;
  }
}

/** Writes (or refreshes) a process's registration; the store may drop it after REGISTRATION_TTL_MS. */
export async function registerProcess(metadata: MetadataStore, r: ProcessRegistration): Promise<void> {
  await metadata.put(CLUSTER_PK, processSk(r.id), r, undefined, { expiresAt: r.seenAt + REGISTRATION_TTL_MS });
}

/** The processes registered within REGISTRATION_TTL_MS of `now`. */
export async function activeProcesses(metadata: MetadataStore, now: number): Promise<ProcessRegistration[]> {
  const items = await metadata.query<ProcessRegistration>(CLUSTER_PK, { beginsWith: PROCESS_PREFIX });
  return items.map((i) => i.value).filter((r) => r.seenAt + REGISTRATION_TTL_MS > now);
}

export interface FeatureLevelStatus {
  level: number;
  /** The newest level this code knows. */
  supported: number;
  /** The newest level every active process supports (what a raise may go to now). */
  finalizable: number;
  processes: ProcessRegistration[];
  raisedAt?: number;
  raisedBy?: string;
}

export async function featureLevelStatus(
  metadata: MetadataStore,
  now: number,
  supported = SUPPORTED_FEATURE_LEVEL,
): Promise<FeatureLevelStatus> {
  const [item, processes] = await Promise.all([
    metadata.get<FeatureLevelItem>(CLUSTER_PK, FEATURE_LEVEL_SK),
    activeProcesses(metadata, now),
  ]);
  return {
    level: item?.value.level ?? 1,
    supported,
    finalizable: Math.min(supported, ...processes.map((p) => p.supportedLevel)),
    processes,
    ...(item?.value.raisedAt !== undefined ? { raisedAt: item.value.raisedAt } : {}),
    ...(item?.value.raisedBy !== undefined ? { raisedBy: item.value.raisedBy } : {}),
  };
}

/**
 * The explicit step: raises the level to `target` (one conditional write). Refused, with nothing
 * written, above what this code knows (`supported`), above what an active process supports, or
 * below the level now (there is no going down: data may already be in the newer formats). At the
 * level already: a no-op.
 */
export async function raiseFeatureLevel(
  metadata: MetadataStore,
  target: number,
  now: number,
  by: string,
  supported = SUPPORTED_FEATURE_LEVEL,
): Promise<FeatureLevelStatus> {
  if (!Number.isInteger(target) || target < 1)
    throw new KafkaError('INVALID_REQUEST', `A feature level is a whole number from 1 (got ${target})`);
  if (target > supported)
    throw new KafkaError(
      'INVALID_REQUEST',
      `Feature level ${target} is unknown to this code, which supports up to ${supported}: deploy a release that knows it first`,
    );
  const behind = (await activeProcesses(metadata, now)).filter((p) => p.supportedLevel < target);
  if (behind.length > 0)
    throw new KafkaError(
      'INVALID_REQUEST',
      `Feature level ${target} is not supported by ${behind.length} active process(es) (${behind
        .map((p) => `${p.role} ${p.release} up to level ${p.supportedLevel}`)
        .join(', ')}): finish the deploy first`,
    );
  await optimisticUpdate<FeatureLevelItem, void>({
    metadata,
    pk: CLUSTER_PK,
    sk: FEATURE_LEVEL_SK,
    decide: (item) => {
      const level = item?.value.level ?? 1;
      if (target < level)
        throw new KafkaError(
          'INVALID_REQUEST',
          `The feature level is ${level}; it cannot go down to ${target} (data may be in its formats already)`,
        );
      if (target === level) return { done: undefined };
      return { write: { level: target, raisedAt: now, raisedBy: by }, answer: () => undefined };
    },
    giveUp: { errorName: 'CONCURRENT_TRANSACTIONS', message: 'The feature level is being changed; retry' },
  });
  return featureLevelStatus(metadata, now, supported);
}

/**
 * The scheduler's step: once every active process (this one included) has supported a level above
 * the current one for AUTO_RAISE_GRACE_MS, raise to it. Answers the level raised to, or undefined.
 */
export async function autoRaiseFeatureLevel(
  metadata: MetadataStore,
  now: number,
  graceMs = AUTO_RAISE_GRACE_MS,
  supported = SUPPORTED_FEATURE_LEVEL,
): Promise<number | undefined> {
  // A new cluster starts at the newest level: no candidate at level 1 before its first topic.
  if ((await initializeFeatureLevel(metadata, now, supported)) >= supported) return undefined;
  const processes = await activeProcesses(metadata, now);
  const agreed = Math.min(supported, ...processes.map((p) => p.supportedLevel));
  const outcome = await optimisticUpdate<FeatureLevelItem, number | undefined>({
    metadata,
    pk: CLUSTER_PK,
    sk: FEATURE_LEVEL_SK,
    decide: (item: MetaItem<FeatureLevelItem> | undefined) => {
      const current = item?.value ?? { level: 1 };
      if (agreed <= current.level) {
        if (!current.candidate) return { done: undefined };
        const { candidate: _, ...rest } = current;
        return { write: rest, answer: () => undefined }; // a process that does not support it came back
      }
      if (current.candidate?.level !== agreed)
        return { write: { ...current, candidate: { level: agreed, since: now } }, answer: () => undefined };
      if (now - current.candidate.since < graceMs) return { done: undefined };
      return { write: { level: agreed, raisedAt: now, raisedBy: 'scheduler' }, answer: () => agreed };
    },
    giveUp: { errorName: 'CONCURRENT_TRANSACTIONS', message: 'The feature level is being changed; retry' },
  });
  return outcome.result;
}

/** This process's view of the feature level, for the routes and the entry points (one per process). */
export class FeatureLevels {
  /** This process's registration id: stable for its life. */
  readonly processId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  /** How often a long-running process refreshes its registration. */
  readonly refreshMs = REGISTRATION_TTL_MS / 4;
  constructor(
    private readonly metadata: MetadataStore,
    readonly release: string = RELEASE,
  ) {}
  level = () => readFeatureLevel(this.metadata);
  status = (now: number) => featureLevelStatus(this.metadata, now);
  raise = async (target: number, now: number, by: string) => {
    const status = await raiseFeatureLevel(this.metadata, target, now, by);
    this.remember(status.level, now);
    return status;
  };

  private cached: { level: number; readAt: number } | undefined;
  private reading: Promise<number> | undefined;
  private initialized = false;
  /**
   * The level for a writer's decision (the produce path), without a read per request: served from
   * this process's cache for FEATURE_LEVEL_MAX_AGE_MS, one read at a time; a raise through this
   * process is seen at once, one by another process within FEATURE_LEVEL_MAX_AGE_MS (until then
   * this process writes as the lower level says, which is always safe). The newest level is kept
   * for good: a level never goes down.
   */
  current = async (now: number): Promise<number> => {
    const c = this.cached;
    if (c && (c.level >= SUPPORTED_FEATURE_LEVEL || now - c.readAt < FEATURE_LEVEL_MAX_AGE_MS)) return c.level;
    this.reading ??= readFeatureLevel(this.metadata)
      .then((level) => this.remember(level, now))
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  };
  /** Starts a new cluster at the newest level (`initializeFeatureLevel`): before the first topic is made. */
  initialize = async (now: number): Promise<void> => {
    if (this.initialized) return;
    this.remember(await initializeFeatureLevel(this.metadata, now), now);
    this.initialized = true;
  };
  private remember(level: number, now: number): number {
    if (!this.cached || level >= this.cached.level) this.cached = { level, readAt: now };
    return this.cached.level;
  }
  private registeredAt = -Infinity;
  /** Registers (or refreshes) this process; callers do it at start and then within REGISTRATION_TTL_MS. */
  register = async (role: string, now: number) => {
    await registerProcess(this.metadata, {
      id: this.processId,
      release: this.release,
      supportedLevel: SUPPORTED_FEATURE_LEVEL,
      role,
      seenAt: now,
    });
    this.registeredAt = now;
  };
  /**
   * `register` when the last one is `refreshMs` old (one write per quarter hour per process): what a
   * Lambda entry awaits at the start of an invocation. A failure is reported, not thrown: a request
   * is not refused for it (the registration is retried on the next call).
   */
  keepRegistered = async (role: string, now: number, onError: (e: unknown) => void): Promise<void> => {
    if (now - this.registeredAt < this.refreshMs) return;
    await this.register(role, now).catch(onError);
  };
}
