/**
 * The custom resource behind `KafkaLogTrigger` (infra/log-trigger.ts): creates, updates and deletes
 * one trigger through the log's v3 API with the shipped client, signed with the handler's role
 * (SigV4). Run by the CDK's Provider framework, which answers CloudFormation: this returns the
 * physical id or throws.
 *
 * The physical id is the trigger's URL (API, cluster, name): a change of any of them is a new
 * trigger (created first; CloudFormation then deletes the old one with its old properties). A
 * change of the definition under the same id deletes and re-creates the trigger: its consumer group
 * outlives it and the new one takes the idle group over with its offsets, so delivery resumes where
 * it stopped. Only `Enabled` changed: pause or resume.
 *
 * Faults: a Create whose first answer was lost is sent again by the framework, and then finds the
 * trigger: it succeeds when the definition is the one asked for, and fails otherwise (a trigger of
 * that name that somebody else owns is never taken over). A Delete of a trigger already gone
 * succeeds, and a Delete under another physical id than this resource's (a Create that failed
 * before it made anything) deletes nothing, so a rollback never removes a trigger it did not make.
 */
import { KafkaClientError } from '../src/client/errors.js';
import { Kafka } from '../src/client/kafka.js';
import type { TriggerConfig, TriggerInfo } from '../src/client/trigger-admin.js';
import type { AuthConfig } from '../src/client/auth.js';

/** The resource's properties; CloudFormation hands every value over as a string. */
export interface TriggerResourceProperties {
  /** The log's API (its stack's ApiUrl output). */
  ApiUrl: string;
  ClusterId: string;
  /** The trigger as the client creates it (TriggerConfig), as JSON. */
  Trigger: string;
  /** 'false': created paused (Lambda's Enabled). */
  Enabled?: string;
}

export interface TriggerResourceEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  PhysicalResourceId?: string;
  ResourceProperties: TriggerResourceProperties;
  OldResourceProperties?: TriggerResourceProperties;
}

export interface TriggerResourceOptions {
  /** Another transport than the global fetch (tests: the app in-process). */
  fetch?: typeof globalThis.fetch;
  /** Default SigV4 with the handler's credentials. */
  auth?: AuthConfig;
}

export async function onEvent(
  event: TriggerResourceEvent,
  options: TriggerResourceOptions = {},
): Promise<{ PhysicalResourceId: string; Data: { TriggerName: string } }> {
  const props = event.ResourceProperties;
  const config = JSON.parse(props.Trigger) as TriggerConfig;
  const id = physicalId(props, config.name);
  const done = { PhysicalResourceId: id, Data: { TriggerName: config.name } };
  const admin = adminOf(props, options);
  const enabled = props.Enabled !== 'false';

  if (event.RequestType === 'Delete') {
    if (event.PhysicalResourceId !== id) return { ...done, PhysicalResourceId: event.PhysicalResourceId ?? id };
    await admin.deleteTrigger(config.name).catch(ignoreNotFound);
    return done;
  }

  const old = event.OldResourceProperties;
  if (event.RequestType === 'Update' && old && event.PhysicalResourceId === id) {
    const oldConfig = JSON.parse(old.Trigger) as TriggerConfig;
    if (JSON.stringify(oldConfig) !== JSON.stringify(config)) {
      await admin.deleteTrigger(config.name).catch(ignoreNotFound);
      await create(admin, config);
    }
    await setEnabled(admin, config.name, enabled);
    return done;
  }

  // Create, or an update to a new physical id (CloudFormation deletes the old one afterwards).
  await create(admin, config);
  await setEnabled(admin, config.name, enabled);
  return done;
}

/** The Provider framework's entry. */
export const handler = (event: TriggerResourceEvent) => onEvent(event);

export function physicalId(props: Pick<TriggerResourceProperties, 'ApiUrl' | 'ClusterId'>, name: string): string {
  return `${props.ApiUrl.replace(/\/+$/, '')}/v3/clusters/${encodeURIComponent(props.ClusterId)}/triggers/${encodeURIComponent(name)}`;
}

function adminOf(props: TriggerResourceProperties, options: TriggerResourceOptions) {
  return new Kafka({
    url: props.ApiUrl,
    clusterId: props.ClusterId,
    auth: options.auth ?? { type: 'sigv4' },
    clientId: 'kafka-log-trigger-resource',
    ...(options.fetch && { fetch: options.fetch }),
  }).admin();
}

type Admin = ReturnType<typeof adminOf>;

async function create(admin: Admin, config: TriggerConfig): Promise<void> {
  try {
    await admin.createTrigger(config);
  } catch (e) {
    if (!(e instanceof KafkaClientError && e.type === 'DUPLICATE_RESOURCE')) throw e;
    // Ours if it is what we asked for (a create whose answer was lost); never somebody else's.
    const [existing] = await admin.describeTriggers([config.name]);
    if (!existing || !sameDefinition(config, existing)) throw e;
  }
}

async function setEnabled(admin: Admin, name: string, enabled: boolean): Promise<void> {
  const [d] = await admin.describeTriggers([name]);
  if (enabled && d?.state === 'PAUSED') await admin.resumeTrigger(name);
  if (!enabled && d?.state === 'ENABLED') await admin.pauseTrigger(name);
}

/** Whether an existing trigger has every setting `config` gives (the rest are the server's defaults). */
export function sameDefinition(config: TriggerConfig, existing: TriggerInfo): boolean {
  const { target, ...rest } = config;
  const t = existing.target;
  const sameTarget =
    target.type === t.type &&
    (target.type === 'LAMBDA'
      ? target.functionArn === (t as { functionArn: string }).functionArn
      : target.url === (t as { url: string }).url) &&
    (target.timeoutMs === undefined || target.timeoutMs === t.timeoutMs);
  return (
    sameTarget &&
    Object.entries(rest).every(
      ([k, v]) => JSON.stringify(v) === JSON.stringify((existing as unknown as Record<string, unknown>)[k]),
    )
  );
}

const ignoreNotFound = (e: unknown) => {
  if (e instanceof KafkaClientError && (e.type === 'RESOURCE_NOT_FOUND' || e.type === 'NOT_FOUND')) return;
  throw e;
};
