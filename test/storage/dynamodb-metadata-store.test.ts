import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  type QueryCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import { ConditionFailedError } from '../../src/storage/ports.js';

/** A client that records each command's input and answers from a script. */
function stubClient(answer: (name: string, input: Record<string, unknown>) => unknown) {
  const sent: { name: string; input: Record<string, unknown> }[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const name = command.constructor.name;
      sent.push({ name, input: command.input });
      const result = answer(name, command.input);
      if (result instanceof Error) throw result;
      return result;
    },
  } as unknown as DynamoDBClient;
  return { client, sent };
}

const item = (version: number, value: unknown) => ({
  pk: { S: 'p' },
  sk: { S: 's' },
  version: { N: String(version) },
  value: { S: JSON.stringify(value) },
});

describe('DynamoDbMetadataStore requests', () => {
  it('writes SET value ADD version (and REMOVE the expiry), with the named condition', async () => {
    const { client, sent } = stubClient(() => ({ Attributes: item(4, 'x') }));
    const store = new DynamoDbMetadataStore({ table: 't', client });
    await store.put('p', 's', 'x');
    await store.put('p', 's', 'x', { ifAbsent: true });
    await store.put('p', 's', 'x', { ifVersion: 3 });
    const inputs = sent.map((s) => s.input as unknown as UpdateItemCommandInput);
    expect(inputs.map((i) => i.UpdateExpression)).toEqual(
      Array(3).fill('SET #value = :value REMOVE #ttl ADD #version :one'),
    );
    expect(inputs.map((i) => i.ConditionExpression)).toEqual([
      undefined,
      'attribute_not_exists(pk)',
      '#version = :expected',
    ]);
    expect(inputs[2]!.ExpressionAttributeValues![':expected']).toEqual({ N: '3' });
    expect(inputs.every((i) => i.ReturnValues === 'ALL_NEW')).toBe(true);
    expect(inputs.map((i) => i.ReturnValuesOnConditionCheckFailure)).toEqual([undefined, 'ALL_OLD', 'ALL_OLD']);
  });

  it('takes the current item from the failed condition when DynamoDB returns it, without a read', async () => {
    const { client, sent } = stubClient(
      () => new ConditionalCheckFailedException({ message: 'failed', $metadata: {}, Item: item(7, { n: 7 }) }),
    );
    const store = new DynamoDbMetadataStore({ table: 't', client });
    const err = await store.put('p', 's', 'x', { ifVersion: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect((err as ConditionFailedError).current).toEqual({ pk: 'p', sk: 's', version: 7, value: { n: 7 } });
    expect(sent.map((s) => s.name)).toEqual(['UpdateItemCommand']);
  });

  it('reads the item consistently when the failure carries none', async () => {
    const { client, sent } = stubClient((name) =>
      name === 'GetItemCommand'
        ? { Item: item(2, 'now') }
        : new ConditionalCheckFailedException({ message: 'failed', $metadata: {} }),
    );
    const store = new DynamoDbMetadataStore({ table: 't', client });
    const err = await store.delete('p', 's', { ifVersion: 1 }).catch((e: unknown) => e);
    expect((err as ConditionFailedError).current).toMatchObject({ version: 2, value: 'now' });
    expect(sent.map((s) => s.name)).toEqual(['DeleteItemCommand', 'GetItemCommand']);
    expect(sent[1]!.input.ConsistentRead).toBe(true);
  });

  it('passes other errors through', async () => {
    const boom = new Error('throttled');
    const { client } = stubClient(() => boom);
    const store = new DynamoDbMetadataStore({ table: 't', client });
    await expect(store.put('p', 's', 1)).rejects.toBe(boom);
  });

  it('folds sort-key bounds into one key condition', async () => {
    const { client, sent } = stubClient(() => ({ Items: [] }));
    const store = new DynamoDbMetadataStore({ table: 't', client });
    await store.query('p');
    await store.query('p', { gte: 'a' });
    await store.query('p', { gt: 'a', gte: 'b' });
    await store.query('p', { lt: 'm' });
    await store.query('p', { gt: 'a', lt: 'm', reverse: true, limit: 5 });
    await store.query('p', { beginsWith: 'off#' });
    await store.query('p', { gt: 'z', lt: 'a' }); // empty: no request
    const inputs = sent.map((s) => s.input as unknown as QueryCommandInput);
    expect(inputs.map((i) => i.KeyConditionExpression)).toEqual([
      'pk = :pk',
      'pk = :pk AND sk >= :lower',
      'pk = :pk AND sk >= :lower',
      'pk = :pk AND sk < :upper',
      'pk = :pk AND sk BETWEEN :lower AND :upper',
      'pk = :pk AND sk BETWEEN :lower AND :upper',
    ]);
    expect(inputs[2]!.ExpressionAttributeValues![':lower']).toEqual({ S: 'b' });
    expect(inputs[4]).toMatchObject({ ScanIndexForward: false, Limit: 5, ConsistentRead: true });
    expect(inputs[5]!.ExpressionAttributeValues).toMatchObject({ ':lower': { S: 'off#' }, ':upper': { S: 'off$' } });
  });
});
