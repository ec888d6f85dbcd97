/**
 * Field runs that many of Kafka's message specs repeat word for word: the throttle time and error
 * code of a response, a producer's id and epoch, and the topic -> partitions arrays. A fragment
 * is the same fields with the versions given, so a definition still reads as its JSON spec does.
 */
import { arrayOf, f, type Field, type FieldType, type Versions } from '../schema.js';

export const throttleTimeMs = (versions: Versions = '0+'): Field => f('throttleTimeMs', 'int32', versions);
export const errorCode = (versions: Versions = '0+'): Field => f('errorCode', 'int16', versions);

/** ThrottleTimeMs then ErrorCode: the whole body of many responses. */
export const throttleThenError = (versions: Versions = '0+'): Field[] => [
  throttleTimeMs(versions),
  errorCode(versions),
];

/** ProducerId (int64) and ProducerEpoch (int16). */
export const producerIdAndEpoch = (versions: Versions = '0+'): Field[] => [
  f('producerId', 'int64', versions),
  f('producerEpoch', 'int16', versions),
];

/** An array of topics by name, each with its partitions (`partitions` as given: a struct or int32 indexes). */
export const topicsOf = (
  name: string,
  partitionsName: string,
  partitions: Field[] | 'int32',
  versions: Versions = '0+',
): Field =>
  f(
    name,
    arrayOf([f('name', 'string', versions), f(partitionsName, arrayOf(partitions) as FieldType, versions)]),
    versions,
  );

/** A partition's index and error code, as most per-partition results are. */
export const partitionResult = (versions: Versions = '0+'): Field[] => [
  f('partitionIndex', 'int32', versions),
  errorCode(versions),
];
