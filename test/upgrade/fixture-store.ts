/**
 * A fixture on disk and back: the local backend's data directory as it is, and the aws backend's
 * DynamoDB items (as DynamoDB JSON, sorted) plus S3 objects (one file per object, under the bucket's
 * replica number) captured from dynalite and s3rver, and loaded into fresh emulators again.
 *
 *   fixtures/<release>/local/...             the data dir (metadata.sqlite, store-N/)
 *   fixtures/<release>/aws/items.json        every item of the table
 *   fixtures/<release>/aws/objects/<n>/<key> every object of bucket n
 *   fixtures/<release>/expected.json         the release's own snapshot and the workload's facts
 */
import { cp, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { BatchWriteItemCommand, ScanCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

type Item = Record<string, AttributeValue>;

export async function captureTable(client: DynamoDBClient, table: string, file: string): Promise<number> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  items.sort((a, b) => `${a.pk?.S}\u0000${a.sk?.S}`.localeCompare(`${b.pk?.S}\u0000${b.sk?.S}`));
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${items.map((i) => JSON.stringify(i, binaryAsBase64)).join('\n')}\n`);
  return items.length;
}

export async function loadTable(client: DynamoDBClient, table: string, file: string): Promise<number> {
  const items = (await readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => reviveBinary(JSON.parse(l)) as Item);
  for (let i = 0; i < items.length; i += 25) {
    let requests: { PutRequest: { Item: Item } }[] | undefined = items
      .slice(i, i + 25)
      .map((Item) => ({ PutRequest: { Item } }));
    while (requests && requests.length > 0) {
      const r = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
      requests = r.UnprocessedItems?.[table] as typeof requests;
    }
  }
  return items.length;
}

const binaryAsBase64 = (_: string, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v);

/** JSON.stringify turns a B attribute's Uint8Array into {"0":..}; it is written as base64 and read back. */
function reviveBinary(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reviveBinary);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.B === 'string') return { B: Buffer.from(o.B, 'base64') };
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, reviveBinary(x)]));
  }
  return v;
}

export async function captureBucket(client: S3Client, bucket: string, dir: string): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      const body = await client.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key! }));
      const file = join(dir, o.Key!);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, await body.Body!.transformToByteArray());
      count++;
    }
    token = page.NextContinuationToken;
  } while (token);
  return count;
}

export async function loadBucket(client: S3Client, bucket: string, dir: string): Promise<number> {
  const files = await listFiles(dir);
  for (const file of files)
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: relative(dir, file).split('\\').join('/'),
        Body: await readFile(file),
      }),
    );
  return files.length;
}

async function listFiles(dir: string): Promise<string[]> {
  const exists = await stat(dir).catch(() => undefined);
  if (!exists) return [];
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(path)));
    else out.push(path);
  }
  return out.sort();
}

/** The local backend's data directory, copied whole (a copy, so a test never changes the fixture). */
export const copyDataDir = (from: string, to: string) => cp(from, to, { recursive: true });

/**
 * Folds each SQLite database's write-ahead log into the database file (what SQLite does itself at a
 * checkpoint): the same content in a fraction of the bytes, so the fixture stays small.
 */
export async function checkpointSqlite(dir: string): Promise<void> {
  const { default: Database } = await import('better-sqlite3');
  for (const file of await listFiles(dir)) {
    if (!file.endsWith('.sqlite')) continue;
    const db = new Database(file);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
}
