import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import {
  ConditionFailedError,
  skMatches,
  type MetadataStore,
  type MetaItem,
  type QueryOptions,
  type PutOptions,
  type WriteCondition,
} from './ports.js';
import { sortKeyInterval } from './sort-key-range.js';
import { SDK_TIMEOUTS, sdkClientTimeouts, type SdkTimeouts } from './sdk-timeouts.js';

export interface DynamoDbMetadataStoreOptions {
  table: string;
  client: DynamoDBClient;
}

type Item = Record<string, AttributeValue>;

/**
 * The write conditions, named. Every write is one UpdateItem or DeleteItem on one item:
 *
 *   reader ─ GetItem (version n) ─ compute ─ UpdateItem IF version = n ─┬─ ok: version n+1
 *                                                                       └─ failed: someone wrote
 *                                                                          first; the error
 *                                                                          carries their item
 *
 * `ADD #version :one` runs on every put, conditional or not, so the version counts every write
 * (ADD on a missing attribute starts from zero, so a new item gets version 1).
 */
const ITEM_IS_ABSENT = 'attribute_not_exists(pk)';
const VERSION_IS_EXPECTED = '#version = :expected';
const SET_VALUE_AND_BUMP_VERSION = 'SET #value = :value REMOVE #ttl ADD #version :one';
/** With PutOptions.expiresAt: the TTL attribute too (epoch seconds, as DynamoDB's TTL reads it); without, none. */
const SET_VALUE_AND_EXPIRY = 'SET #value = :value, #ttl = :ttl ADD #version :one';
/** The table's TTL attribute (infra/log-stack.ts): DynamoDB deletes an item some time after it. */
export const TTL_ATTRIBUTE = 'ttl';

/** Items in one DynamoDB table with the key schema (pk S HASH, sk S RANGE). */
export class DynamoDbMetadataStore implements MetadataStore {
  private readonly table: string;
  private readonly client: DynamoDBClient;

  constructor({ table, client }: DynamoDbMetadataStoreOptions) {
    this.table = table;
    this.client = client;
  }

  async get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    const res = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: key(pk, sk), ConsistentRead: true }),
    );
    return res.Item && fromItem<T>(res.Item);
  }

  /**
   * One key condition (the tightest interval the bounds allow), pages followed through
   * LastEvaluatedKey until `limit` items pass. DynamoDB's BETWEEN is inclusive, so an exclusive
   * end of a two-sided range, and a `beginsWith` whose end cannot be computed, are filtered here.
   */
  async query<T>(pk: string, o: QueryOptions = {}): Promise<MetaItem<T>[]> {
    const range = sortKeyInterval(o);
    if (range.empty || o.limit === 0) return [];
    const values: Item = { ':pk': { S: pk } };
    let keyCondition = 'pk = :pk';
    const { lower, upper } = range;
    if (lower && upper) {
      keyCondition += ' AND sk BETWEEN :lower AND :upper';
    } else if (lower) {
      keyCondition += ` AND sk ${lower.inclusive ? '>=' : '>'} :lower`;
    } else if (upper) {
      keyCondition += ` AND sk ${upper.inclusive ? '<=' : '<'} :upper`;
    }
    if (lower) values[':lower'] = { S: lower.value };
    if (upper) values[':upper'] = { S: upper.value };

    const items: MetaItem<T>[] = [];
    let startKey: Item | undefined;
    do {
      const remaining = o.limit === undefined ? undefined : o.limit - items.length;
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: keyCondition,
          ExpressionAttributeValues: values,
          ScanIndexForward: !o.reverse,
          ConsistentRead: true,
          ...(remaining !== undefined && { Limit: remaining }),
          ...(startKey && { ExclusiveStartKey: startKey }),
        }),
      );
      for (const raw of res.Items ?? []) {
        const item = fromItem<T>(raw);
        if (skMatches(item.sk, o)) items.push(item);
        if (o.limit !== undefined && items.length >= o.limit) return items;
      }
      startKey = res.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  async put<T>(
    pk: string,
    sk: string,
    value: T,
    condition?: WriteCondition,
    options?: PutOptions,
  ): Promise<MetaItem<T>> {
    const values: Item = { ':value': { S: JSON.stringify(value) ?? 'null' }, ':one': { N: '1' } };
    if (options?.expiresAt !== undefined) values[':ttl'] = { N: String(Math.ceil(options.expiresAt / 1000)) };
    let conditionExpression: string | undefined;
    if (condition && 'ifAbsent' in condition) {
      conditionExpression = ITEM_IS_ABSENT;
    } else if (condition) {
      conditionExpression = VERSION_IS_EXPECTED;
      values[':expected'] = { N: String(condition.ifVersion) };
    }
    try {
      const res = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: key(pk, sk),
          UpdateExpression: options?.expiresAt !== undefined ? SET_VALUE_AND_EXPIRY : SET_VALUE_AND_BUMP_VERSION,
          ExpressionAttributeNames: { '#value': 'value', '#version': 'version', '#ttl': TTL_ATTRIBUTE },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ...(conditionExpression && {
            ConditionExpression: conditionExpression,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
          }),
        }),
      );
      if (!res.Attributes) throw new Error(`DynamoDB UpdateItem on ${pk} / ${sk} returned no attributes`);
      return fromItem<T>(res.Attributes);
    } catch (err) {
      throw await this.conditionFailure(err, pk, sk);
    }
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: key(pk, sk),
          ...(condition && {
            ConditionExpression: VERSION_IS_EXPECTED,
            ExpressionAttributeNames: { '#version': 'version' },
            ExpressionAttributeValues: { ':expected': { N: String(condition.ifVersion) } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
          }),
        }),
      );
    } catch (err) {
      throw await this.conditionFailure(err, pk, sk);
    }
  }

  /**
   * Maps a failed condition to `ConditionFailedError` with the item as found. DynamoDB returns
   * it with the error (ALL_OLD); engines that do not (dynalite) get a consistent read instead,
   * which may see a later write than the one that failed the condition: callers retry either way.
   */
  private async conditionFailure(err: unknown, pk: string, sk: string): Promise<unknown> {
    if (
      !(err instanceof ConditionalCheckFailedException) &&
      (err as Error | undefined)?.name !== 'ConditionalCheckFailedException'
    ) {
      return err;
    }
    const found = (err as ConditionalCheckFailedException).Item;
    const current = found ? fromItem(found) : await this.get(pk, sk);
    const attempts = (err as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;
    return new ConditionFailedError(pk, sk, current, attempts > 1);
  }
}

export interface CreateDynamoDbClientOptions {
  /** e.g. `http://127.0.0.1:4566` for LocalStack or dynalite; omit for AWS. */
  endpoint?: string;
  region?: string;
  credentials?: DynamoDBClientConfig['credentials'];
  /** Default: the request-serving functions' (sdk-timeouts.ts). */
  timeouts?: SdkTimeouts;
}

export function createDynamoDbClient(options: CreateDynamoDbClientOptions = {}): DynamoDBClient {
  return new DynamoDBClient({
    ...sdkClientTimeouts(options.timeouts ?? SDK_TIMEOUTS.request.dynamodb),
    ...(options.endpoint !== undefined && { endpoint: options.endpoint }),
    ...(options.region !== undefined && { region: options.region }),
    ...(options.credentials !== undefined && { credentials: options.credentials }),
  });
}

/**
 * Creates the table (pk S HASH, sk S RANGE, on-demand) when it does not exist and waits until it
 * is ACTIVE. For local and test use; deployed tables belong to the infrastructure code.
 */
export async function ensureTable(client: DynamoDBClient, table: string, timeoutMs = 60_000): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err; // exists already (or is being created)
  }
  const deadline = Date.now() + timeoutMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 1000)) {
    try {
      const res = await client.send(new DescribeTableCommand({ TableName: table }));
      if (res.Table?.TableStatus === 'ACTIVE') return;
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err; // not visible yet
    }
    if (Date.now() > deadline) throw new Error(`DynamoDB table ${table} not ACTIVE after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

function key(pk: string, sk: string): Item {
  return { pk: { S: pk }, sk: { S: sk } };
}

function fromItem<T>(item: Item): MetaItem<T> {
  const { pk, sk, version, value } = item;
  if (pk?.S === undefined || sk?.S === undefined || version?.N === undefined || value?.S === undefined) {
    throw new Error(`malformed metadata item: ${JSON.stringify(item)}`);
  }
  return { pk: pk.S, sk: sk.S, version: Number(version.N), value: JSON.parse(value.S) as T };
}
