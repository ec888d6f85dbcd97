/**
 * Field runs that many of Kafka's message specs repeat word for word: throttle time and error
 * code, error messages, a producer's id and epoch, the topic -> partitions arrays, per-partition
 * and per-resource results, a group member's identity, config entries. A fragment is the same
 * fields with the versions given, so each definition still reads field by field as its JSON spec.
 */
import { arrayOf, f, type Field, type Versions } from '../schema.js';

/** A string nullable where it exists (or from `nullableVersions`), null when absent. */
export const nullableString = (name: string, versions: Versions, nullableVersions: Versions = versions): Field =>
  f(name, 'string', versions, { nullableVersions, default: null });

export const throttleTimeMs = (versions: Versions = '0+'): Field => f('throttleTimeMs', 'int32', versions);
export const errorCode = (versions: Versions = '0+'): Field => f('errorCode', 'int16', versions);
export const errorMessage = (versions: Versions = '0+'): Field => nullableString('errorMessage', versions);

/** ThrottleTimeMs then ErrorCode: the whole body of many responses. */
export const throttleThenError = (throttleVersions: Versions = '0+', errorVersions: Versions = '0+'): Field[] => [
  throttleTimeMs(throttleVersions),
  errorCode(errorVersions),
];

/** ProducerId (int64) and ProducerEpoch (int16). */
export const producerIdAndEpoch = (versions: Versions = '0+'): Field[] => [
  f('producerId', 'int64', versions),
  f('producerEpoch', 'int16', versions),
];

/**
 * An array of topics, each a name and an array of partitions (structs, or int32 indexes). Most
 * specs call them `name` and `partitions`; the older ones (Fetch, OffsetForLeaderEpoch) `topic`.
 */
export const topicsOf = (
  field: string,
  partitions: Field[] | 'int32',
  options: { topic?: string; partitionsField?: string; versions?: Versions; nullableVersions?: Versions } = {},
): Field => {
  const v = options.versions ?? '0+';
  return f(
    field,
    arrayOf([
      f(options.topic ?? 'name', 'string', v),
      f(options.partitionsField ?? 'partitions', arrayOf(partitions), v),
    ]),
    v,
    options.nullableVersions ? { nullableVersions: options.nullableVersions } : {},
  );
};

/** A partition's index and error code: most per-partition results, with what follows them. */
export const partitionResult = (...more: Field[]): Field[] => [
  f('partitionIndex', 'int32', '0+'),
  errorCode(),
  ...more,
];

/** A named resource's result: name, error code (and error message from `messageVersions`). */
export const namedResult = (name: string, messageVersions?: Versions): Field[] => [
  f(name, 'string', '0+'),
  errorCode(),
  ...(messageVersions ? [errorMessage(messageVersions)] : []),
];

/** A group member's id and static instance id (KIP-345, from `instanceVersions`). */
export const memberIdentity = (instanceVersions: Versions, memberVersions: Versions = '0+'): Field[] => [
  f('memberId', 'string', memberVersions),
  nullableString('groupInstanceId', instanceVersions),
];

/** A config's name and nullable value. */
export const configEntry = (versions: Versions = '0+', valueNullable: Versions = versions): Field[] => [
  f('name', 'string', versions),
  f('value', 'string', versions, { nullableVersions: valueNullable }),
];

/** A config resource: its type (2 topic, 4 broker) and name. */
export const configResource: Field[] = [f('resourceType', 'int8', '0+'), f('resourceName', 'string', '0+')];
