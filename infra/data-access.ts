/**
 * Least privilege, written down once: the S3 and DynamoDB actions each function may use, on the
 * stack's own buckets and table only. The stack turns this into IAM policies; a test records every
 * AWS call each function makes while every route runs, and checks each against the function's
 * role in the synthesized template, and that no grant goes unused (test/infra/data-access.test.ts).
 */
export type DataFunctionName = 'produce' | 'fetch' | 'admin' | 'push' | 'heartbeat' | 'scheduler';

export interface DataAccess {
  /** On the objects of every replica bucket (`arn:aws:s3:::bucket/*`). */
  objectActions: readonly string[];
  /** On the replica buckets themselves (`arn:aws:s3:::bucket`). */
  bucketActions: readonly string[];
  /** On the metadata table. */
  tableActions: readonly string[];
}

export const DATA_ACCESS: Readonly<Record<DataFunctionName, DataAccess>> = {
  // Writes the request's object, commits (conditional UpdateItem of the partition state), indexes;
  // reads the topic's push subscriptions and disarms (or removes) those it told;
  // reads the ACL and client quota sets (a Query each, at most every 5 s per instance).
  // Replicas (acks=all at RF > 1, `replicas:sync`): the liveness probe is a HEAD of a key that is
  // never written, which S3 answers 404 only to a caller with s3:ListBucket (403 otherwise, and the
  // store would look down); the catch-up copies a follower's missing objects from the leader (GET).
  produce: {
    objectActions: ['s3:PutObject', 's3:GetObject'],
    bucketActions: ['s3:ListBucket'],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Reads state and the offset index, ranged GETs of objects; repairs a missing index entry.
  fetch: {
    objectActions: ['s3:GetObject'],
    bucketActions: [],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
  },
  // Arms a connection's push subscription (or removes it), reads the topic and partition states,
  // and the ACL set (a Query) that authorizes the subscriber's reads.
  push: {
    objectActions: [],
    bucketActions: [],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Group heartbeats: the group item (and its registry item on the first join), topic items,
  // session timers, the offset fence of partitions a member gives up; the ACL and quota sets.
  // No DeleteItem: a REST consumer instance whose member a heartbeat expires is left to be found
  // stale (the removal listener is best effort).
  heartbeat: {
    objectActions: [],
    bucketActions: [],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
  },
  // Topics and configs (items), list offsets by time (object reads), transaction markers (commit,
  // abort, `transactions:abort`, init over an open transaction: each marker is a control batch
  // object, then the commit that moves the LSO). A topic deletion writes items only: the
  // scheduler purges the data.
  admin: {
    objectActions: ['s3:GetObject', 's3:PutObject'],
    bucketActions: [],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Retention, compaction and segment merge rewrite and delete objects; timers are items.
  scheduler: {
    objectActions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
    bucketActions: ['s3:ListBucket'],
    tableActions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
};

/** The S3 actions a ReadOnly S3 Express session covers (GET, HEAD, LIST). */
const READ_ACTIONS = new Set(['s3:GetObject', 's3:ListBucket']);

/**
 * The S3 Express session mode a function opens (and the only one its role may open): ReadOnly
 * where it only reads objects, ReadWrite otherwise. The stack sets it in the function's
 * S3_EXPRESS_SESSION_MODE and in the s3express:SessionMode condition of its grant.
 */
export function expressSessionMode(access: DataAccess): 'ReadOnly' | 'ReadWrite' {
  return [...access.objectActions, ...access.bucketActions].every((a) => READ_ACTIONS.has(a))
    ? 'ReadOnly'
    : 'ReadWrite';
}
