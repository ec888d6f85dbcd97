/**
 * Every media type whose body is bytes, not text, in either direction: what the client sends
 * (Kafka's ProduceRequest, record batches) and accepts (record batches, Kafka's FetchResponse),
 * and the generic one. One list, because a front that carries bodies as text unless told
 * otherwise (API Gateway's REST API: its binaryMediaTypes, infra/rest-api.ts) must be told all of
 * them, and the client reads exactly these answers as bytes (src/client/transport.ts).
 */
import { FETCH_RESPONSE_MEDIA_TYPE } from './fetch-response.js';
import { PRODUCE_REQUEST_MEDIA_TYPE } from './produce-request.js';
import { RECORD_BATCH_MEDIA_TYPE } from './protocol.js';

export const BINARY_MEDIA_TYPES: readonly string[] = [
  RECORD_BATCH_MEDIA_TYPE,
  PRODUCE_REQUEST_MEDIA_TYPE,
  FETCH_RESPONSE_MEDIA_TYPE,
  'application/octet-stream',
];
