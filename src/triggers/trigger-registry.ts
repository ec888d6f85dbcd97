/**
 * The stored trigger definitions: one item each under `triggers` (key-layout.ts), so listing them
 * is one query. The runner asks for a topic's triggers on every commit: the list is kept for
 * `maxAgeMs` (a trigger created on another process is seen that much later; one created here at
 * once), which is what keeps a commit to a topic without triggers free of reads.
 */
import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { TRIGGERS_PK } from '../storage/key-layout.js';
import { validateDefinition, validateTriggerName, type TriggerDefinition, type TriggerState } from './trigger.js';

export class TriggerRegistry {
  private cached: { at: number; list: Promise<TriggerDefinition[]> } | undefined;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    private readonly maxAgeMs = 1000,
  ) {}

  /** Stores a new trigger; DUPLICATE_RESOURCE if the name is taken. */
  async create(d: TriggerDefinition): Promise<TriggerDefinition> {
    validateDefinition(d);
    await optimisticUpdate<TriggerDefinition, true>({
      metadata: this.metadata,
      pk: TRIGGERS_PK,
      sk: d.name,
      known: { item: undefined },
      attempts: 2,
      decide: (item) => {
        if (item) throw alreadyExists(d.name);
        return { write: d, answer: () => true as const };
      },
      // A create the store sent twice finds its own definition (createdAt is part of it).
      recognise: (found, attempted, retried) => (retried && holdsWrite(found, attempted) ? true : undefined),
      giveUp: { errorName: 'DUPLICATE_RESOURCE', message: `Trigger ${d.name} already exists` },
    });
    this.invalidate();
    return d;
  }

  async get(name: string): Promise<TriggerDefinition> {
    validateTriggerName(name);
    const item = await this.metadata.get<TriggerDefinition>(TRIGGERS_PK, name);
    if (!item) throw notFound(name);
    return item.value;
  }

  async list(): Promise<TriggerDefinition[]> {
    const items = await this.metadata.query<TriggerDefinition>(TRIGGERS_PK);
    return items.map((i) => i.value);
  }

  /** The triggers on `topic`, from a list at most `maxAgeMs` old. */
  async onTopic(topic: string): Promise<TriggerDefinition[]> {
    const now = this.clock.now();
    if (!this.cached || now - this.cached.at > this.maxAgeMs) {
      const list = this.list();
      this.cached = { at: now, list };
      list.catch(() => this.invalidate());
    }
    return (await this.cached.list).filter((t) => t.topic === topic);
  }

  async setState(name: string, state: TriggerState): Promise<TriggerDefinition> {
    validateTriggerName(name);
    const { result } = await optimisticUpdate<TriggerDefinition, TriggerDefinition>({
      metadata: this.metadata,
      pk: TRIGGERS_PK,
      sk: name,
      decide: (item: MetaItem<TriggerDefinition> | undefined) => {
        if (!item) throw notFound(name);
        if (item.value.state === state) return { done: item.value };
        const next = { ...item.value, state };
        return { write: next, answer: () => next };
      },
      // Writing the same state twice is harmless: the next decision finds it done.
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Too many concurrent changes to trigger ${name}` },
    });
    this.invalidate();
    return result;
  }

  async delete(name: string): Promise<void> {
    const item = await this.metadata.get<TriggerDefinition>(TRIGGERS_PK, name);
    if (!item) throw notFound(name);
    await this.metadata.delete(TRIGGERS_PK, name);
    this.invalidate();
  }

  invalidate(): void {
    this.cached = undefined;
  }
}

export const notFound = (name: string) => new KafkaError('RESOURCE_NOT_FOUND', `Trigger ${name} not found`);
const alreadyExists = (name: string) => new KafkaError('DUPLICATE_RESOURCE', `Trigger ${name} already exists`);
