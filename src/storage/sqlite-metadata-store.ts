import Database from 'better-sqlite3';
import { requireFileFormat } from './sqlite-format.js';
import {
  ConditionFailedError,
  type AlongsideItem,
  type MetadataStore,
  type MetaItem,
  type QueryOptions,
  type WriteCondition,
} from './ports.js';
import { sortKeyInterval } from './sort-key-range.js';
import { ChangeCounters } from './change-counters.js';

interface Row {
  pk: string;
  sk: string;
  version: number;
  value: string;
}

/**
 * Metadata items in one SQLite table, for the single-machine mode and for tests.
 *
 * better-sqlite3 is synchronous, so each write is one short IMMEDIATE transaction: the
 * conditional statement (its WHERE clause is the condition) and, only when it changed nothing,
 * the read of the item that made it fail. No other writer, in this process or another one
 * sharing the file, can run in between, so the item in `ConditionFailedError` is the one the
 * condition was evaluated against. WAL mode lets readers in other processes run meanwhile.
 */
export class SqliteMetadataStore implements MetadataStore {
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /** Query statements by shape (which bounds, order, limit): see `query`. */
  private readonly queries = new Map<string, Database.Statement>();
  /** Built once: making a transaction function per write was 3% of a small produce request. */
  private readonly putTransaction: Database.Transaction<
    (pk: string, sk: string, json: string, condition: WriteCondition | undefined) => number
  >;
  /** Writes through this connection, per partition key (other connections move `data_version`). */
  private readonly changes = new ChangeCounters();
  private readonly dataVersion: Database.Statement<[], number>;
  private readonly putAllTransaction: Database.Transaction<
    (pk: string, sk: string, json: string, condition: WriteCondition | undefined, rest: [string, string][]) => number
  >;

  /**
   * `path` is a database file (created when missing) or ':memory:'. `fsync` (the local backend's
   * FSYNC) makes every commit durable across a power loss (synchronous=FULL). Without it SQLite
   * never syncs (synchronous=OFF): a commit survives a crash of the process, not of the machine,
   * like the object files, and the main thread never waits on a sync. (NORMAL still syncs at each
   * WAL checkpoint, and on ext4 a sync waits for every dirty page the objects left: stalls of
   * hundreds of milliseconds under heavy produce, with the event loop blocked.)
   */
  constructor(path: string, options: { fsync?: boolean } = {}) {
    this.db = new Database(path);
    requireFileFormat(this.db, 'metadata-file', path);
    this.db.pragma('journal_mode = WAL'); // ':memory:' stays in 'memory' mode, which is fine
    this.db.pragma(options.fsync ? 'synchronous = FULL' : 'synchronous = OFF');
    this.db.exec(`CREATE TABLE IF NOT EXISTS items (
      pk TEXT NOT NULL,
      sk TEXT NOT NULL,
      version INTEGER NOT NULL,
      value TEXT NOT NULL,
      PRIMARY KEY (pk, sk)
    ) WITHOUT ROWID`);
    this.dataVersion = this.db.prepare<[], number>('PRAGMA data_version').pluck();
    this.putAllTransaction = this.db.transaction(
      (pk: string, sk: string, json: string, c: WriteCondition | undefined, rest: [string, string][]) => {
        // A failed condition throws out of the transaction, which then rolls back: nothing is written.
        const version = this.putRow(pk, sk, json, c);
        for (const [restSk, restJson] of rest) this.putRow(pk, restSk, restJson, undefined);
        return version;
      },
    );
    this.putTransaction = this.db.transaction((pk: string, sk: string, json: string, c: WriteCondition | undefined) =>
      this.putRow(pk, sk, json, c),
    );
  }

  async get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return this.read<T>(pk, sk);
  }

  /**
   * SQLite's `data_version` moves when another connection (another process sharing the file, or
   * another instance) commits; this connection's own writes are counted per key. Every write here
   * is synchronous, so a write and its count land together: no reader sees one without the other.
   */
  changeStamp(pk: string): string {
    return `${this.dataVersion.get()}.${this.changes.of(pk)}`;
  }

  async query<T>(pk: string, o: QueryOptions = {}): Promise<MetaItem<T>[]> {
    const range = sortKeyInterval(o);
    if (range.empty || o.limit === 0) return [];
    // The statement by the query's shape (a few letters), its parameters by position: building the
    // SQL text and a named-parameter object per call cost more than running the query.
    const params: (string | number)[] = [pk];
    let shape = '';
    if (range.lower) {
      shape += range.lower.inclusive ? 'L' : 'l';
      params.push(range.lower.value);
    }
    if (range.upper) {
      shape += range.upper.inclusive ? 'U' : 'u';
      params.push(range.upper.value);
    }
    if (!range.exact) {
      shape += 'p';
      params.push(o.beginsWith!, o.beginsWith!);
    }
    shape += o.reverse ? 'd' : 'a';
    // A whole-number limit goes into the SQL text (one statement per limit in use, at most a few hundred):
    // bound as a parameter, it made a query of a few rows take twice as long.
    const inline = o.limit !== undefined && Number.isSafeInteger(o.limit) && o.limit > 0;
    if (inline) shape += o.limit;
    else if (o.limit !== undefined) {
      shape += 'n';
      params.push(o.limit);
    }
    let statement = this.queries.get(shape);
    if (!statement) this.queries.set(shape, (statement = this.statement(querySql(range, o, inline))));
    const rows = statement.all(params) as Row[];
    return rows.map((r) => toItem<T>(r));
  }

  async put<T>(pk: string, sk: string, value: T, condition?: WriteCondition): Promise<MetaItem<T>> {
    const json = JSON.stringify(value) ?? 'null';
    const version = this.putTransaction.immediate(pk, sk, json, condition);
    this.changes.bump(pk);
    return writtenItem<T>(pk, sk, version, json);
  }

  /** One IMMEDIATE transaction for all the items: one WAL commit instead of one per item. */
  async putAll<T>(
    pk: string,
    sk: string,
    value: T,
    condition: WriteCondition | undefined,
    alongside: AlongsideItem[],
  ): Promise<MetaItem<T>> {
    const json = JSON.stringify(value) ?? 'null';
    const rest = alongside.map((a): [string, string] => [a.sk, JSON.stringify(a.value) ?? 'null']);
    const version = this.putAllTransaction.immediate(pk, sk, json, condition, rest);
    this.changes.bump(pk);
    return writtenItem<T>(pk, sk, version, json);
  }

  /** One conditional write, in the transaction `putTransaction` runs it in; answers the new version. */
  private putRow(pk: string, sk: string, json: string, condition: WriteCondition | undefined): number {
    let row: { version: number } | undefined;
    if (!condition) {
      row = this.statement(
        `INSERT INTO items (pk, sk, version, value) VALUES (?, ?, 1, ?)
             ON CONFLICT (pk, sk) DO UPDATE SET version = version + 1, value = excluded.value
             RETURNING version`,
      ).get(pk, sk, json) as { version: number };
    } else if ('ifAbsent' in condition) {
      row = this.statement(
        `INSERT INTO items (pk, sk, version, value) VALUES (?, ?, 1, ?)
             ON CONFLICT (pk, sk) DO NOTHING
             RETURNING version`,
      ).get(pk, sk, json) as { version: number } | undefined;
    } else {
      row = this.statement(
        `UPDATE items SET version = version + 1, value = ?
             WHERE pk = ? AND sk = ? AND version = ?
             RETURNING version`,
      ).get(json, pk, sk, condition.ifVersion) as { version: number } | undefined;
    }
    if (!row) throw new ConditionFailedError(pk, sk, this.read(pk, sk));
    return row.version;
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    if (!condition) {
      this.statement('DELETE FROM items WHERE pk = ? AND sk = ?').run(pk, sk);
      this.changes.bump(pk);
      return;
    }
    this.db
      .transaction(() => {
        const { changes } = this.statement('DELETE FROM items WHERE pk = ? AND sk = ? AND version = ?').run(
          pk,
          sk,
          condition.ifVersion,
        );
        if (changes === 0) throw new ConditionFailedError(pk, sk, this.read(pk, sk));
      })
      .immediate();
    this.changes.bump(pk);
  }

  close(): void {
    this.statements.clear();
    this.queries.clear();
    this.db.close();
  }

  private read<T>(pk: string, sk: string): MetaItem<T> | undefined {
    const row = this.statement('SELECT pk, sk, version, value FROM items WHERE pk = ? AND sk = ?').get(pk, sk) as
      | Row
      | undefined;
    return row && toItem<T>(row);
  }

  /** Prepared statements by SQL text; queries have at most a few dozen shapes. */
  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }
}

/**
 * The SQL of a query's shape; its parameters, by position: pk, lower, upper, prefix (twice), and
 * the limit unless it is `inline` (a safe positive integer, written into the text).
 */
function querySql(range: ReturnType<typeof sortKeyInterval>, o: QueryOptions, inline: boolean): string {
  const where = ['pk = ?'];
  if (range.lower) where.push(`sk ${range.lower.inclusive ? '>=' : '>'} ?`);
  if (range.upper) where.push(`sk ${range.upper.inclusive ? '<=' : '<'} ?`);
  if (!range.exact) where.push('substr(sk, 1, length(?)) = ?');
  return `SELECT pk, sk, version, value FROM items WHERE ${where.join(' AND ')} ORDER BY sk ${o.reverse ? 'DESC' : 'ASC'}${inline ? ` LIMIT ${o.limit}` : o.limit !== undefined ? ' LIMIT ?' : ''}`;
}

/**
 * The item a write answers: its value is the JSON round trip, like a read's, but parsed only when
 * a caller looks at it (once; an own enumerable property, so spreads and comparisons see it). Most
 * writers never do: parsing every share-partition item back was a few percent of an
 * acknowledgement's CPU for nothing.
 */
function writtenItem<T>(pk: string, sk: string, version: number, json: string): MetaItem<T> {
  const settle = (item: MetaItem<T>, value: T): T => {
    Object.defineProperty(item, 'value', { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  return {
    pk,
    sk,
    version,
    get value(): T {
      return settle(this, JSON.parse(json) as T);
    },
    set value(value: T) {
      settle(this, value);
    },
  };
}

function toItem<T>(r: Row): MetaItem<T> {
  return { pk: r.pk, sk: r.sk, version: r.version, value: JSON.parse(r.value) as T };
}
