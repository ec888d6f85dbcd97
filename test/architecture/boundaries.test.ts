/**
 * The module map as a test (docs/architecture.md explains it): every import under src/, functions/
 * and infra/ is read, files are grouped into modules (a folder of src/, a file directly under src/,
 * functions/, infra/), and the edges between modules must be in the allow-list below. The
 * allow-list itself must have no cycle, and neither may the files: a folder that needs a new
 * neighbour changes this map on purpose, in review, not by accident.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** Which modules each module may import (itself always). Listed bottom-up. */
const MAY_IMPORT: Record<string, string[]> = {
  'src/wire': [],
  'src/clock.ts': [],
  'src/metrics.ts': [],
  // Bounds shared by the Kafka listener and the self-hosted HTTP server: the memory pool, connection quotas.
  'src/limits': [],
  // The optimistic-update helper gives up with one typed KafkaError.
  'src/storage': ['src/wire'],
  // The built web console, as data (console/ is its source).
  'src/console': [],
  'src/config': ['src/wire'],
  'src/timer': ['src/clock.ts', 'src/storage'],
  'src/topics': ['src/clock.ts', 'src/config', 'src/storage', 'src/wire'],
  // A commit-log entry arms the durable timer that folds its shard before the entry expires.
  'src/partition': ['src/storage', 'src/timer', 'src/topics', 'src/wire'],
  'src/producer': ['src/storage', 'src/wire'],
  'src/log': ['src/clock.ts', 'src/metrics.ts', 'src/partition', 'src/storage', 'src/topics', 'src/wire'],
  'src/replication': ['src/clock.ts', 'src/metrics.ts', 'src/partition', 'src/storage', 'src/topics', 'src/wire'],
  'src/groups': ['src/clock.ts', 'src/log', 'src/partition', 'src/storage', 'src/timer', 'src/topics', 'src/wire'],
  // Push subscriptions and the commit notifier (its ConnectionPoster adapters: src/storage for AWS, its own for HTTP).
  'src/push': ['src/clock.ts', 'src/log', 'src/storage', 'src/topics', 'src/wire'],
  'src/transactions': [
    'src/clock.ts',
    'src/groups',
    'src/log',
    'src/producer',
    'src/storage',
    'src/timer',
    'src/topics',
    'src/wire',
  ],
  // Share groups (KIP-932): share-partition state over the log's reads.
  'src/share': ['src/clock.ts', 'src/log', 'src/storage', 'src/topics', 'src/wire'],
  // Triggers: a topic bound to a target, delivered as a consumer group of its own (its offsets through groups).
  'src/triggers': [
    'src/clock.ts',
    'src/groups',
    'src/log',
    'src/metrics.ts',
    'src/partition',
    'src/storage',
    'src/topics',
    'src/wire',
  ],
  'src/quotas': ['src/clock.ts', 'src/storage', 'src/wire'],
  'src/authz': ['src/clock.ts', 'src/config', 'src/quotas', 'src/storage', 'src/wire'],
  'src/maintenance': [
    'src/clock.ts',
    'src/log',
    'src/metrics.ts',
    'src/partition',
    'src/storage',
    'src/timer',
    'src/topics',
    'src/wire',
  ],
  // The services of a process, as one type: what the composition root hands both doors (http, kafka).
  'src/services.ts': [
    'src/authz',
    'src/clock.ts',
    'src/config',
    'src/groups',
    'src/log',
    'src/metrics.ts',
    'src/producer',
    'src/push',
    'src/share',
    'src/storage',
    'src/timer',
    'src/topics',
    'src/transactions',
    'src/triggers',
  ],
  'src/http': [
    'src/authz',
    'src/clock.ts',
    'src/limits',
    'src/metrics.ts',
    'src/config',
    'src/console',
    'src/groups',
    'src/log',
    'src/partition',
    'src/producer',
    'src/push',
    'src/quotas',
    'src/services.ts',
    'src/share',
    'src/storage',
    'src/timer',
    'src/topics',
    'src/transactions',
    'src/triggers',
    'src/wire',
  ],
  'src/compose.ts': [
    'src/authz',
    'src/clock.ts',
    'src/metrics.ts',
    'src/config',
    'src/groups',
    'src/http',
    'src/log',
    'src/maintenance',
    'src/producer',
    'src/push',
    'src/replication',
    'src/services.ts',
    'src/share',
    'src/storage',
    'src/timer',
    'src/topics',
    'src/transactions',
    'src/triggers',
  ],
  // The Kafka protocol listener: a door beside http, over the same services (AppServices), not through it.
  'src/kafka': [
    'src/authz',
    'src/config',
    'src/groups',
    'src/limits',
    'src/log',
    'src/metrics.ts',
    'src/partition',
    'src/services.ts',
    'src/share',
    'src/timer',
    'src/topics',
    'src/transactions',
    'src/wire',
  ],
  // storage: the lazy Lambda invoker of triggers' Lambda targets, which only deliverers import.
  'src/server.ts': [
    'src/compose.ts',
    'src/config',
    'src/http',
    'src/kafka',
    'src/limits',
    'src/metrics.ts',
    'src/storage',
  ],
  // Lambda entries stay thin: the composition root, the HTTP app, configuration, and the storage
  // ports their instrumenting decorator wraps.
  functions: [
    'src/clock.ts',
    'src/compose.ts',
    'src/config',
    'src/http',
    'src/metrics.ts',
    'src/push',
    'src/services.ts',
    'src/storage',
  ],
  // Infrastructure names the wire format's media types (binary media types of the REST API); the
  // trigger construct's custom resource is a client of the log (infra/trigger-resource-handler.ts).
  infra: ['src/wire', 'src/client'],
  // The client is shipped on its own: it may use only the wire format it shares with the server.
  'src/client': ['src/wire'],
  'src/cli': ['src/client', 'src/console'],
};

/** Packages only some modules may import (a prefix match on the specifier). */
const PACKAGE_OWNERS: { packages: RegExp; why: string; files: RegExp }[] = [
  {
    packages: /^@aws-sdk\/client-|^@aws-sdk\/lib-/,
    why: 'domain code never talks to AWS: only the storage adapters do',
    files:
      /^src\/storage\/(dynamodb-metadata-store|s3-object-store|api-gateway-connection-poster|lambda-invoker|sqs-message-sender|sns-message-publisher)\.ts$/,
  },
  {
    packages: /^@smithy\/|^@aws-sdk\/credential-provider-node$/,
    why: "the client's SigV4 signing and the storage adapters",
    files: /^src\/client\/auth\.ts$|^src\/storage\//,
  },
  { packages: /^aws-cdk-lib|^constructs$/, why: 'CDK is infrastructure', files: /^infra\// },
  {
    packages: /^hono|^@hono\//,
    why: 'HTTP is the http module and its hosts',
    files: /^src\/http\/|^src\/server\.ts$|^functions\//,
  },
  {
    packages: /^ws$/,
    why: "the push socket: the local server's and the consumer's (Node 20 has no WebSocket client)",
    files: /^src\/http\/push-socket\.ts$|^src\/client\/consumer\/push-channel\.ts$/,
  },
  {
    packages: /^better-sqlite3$/,
    why: 'the embedded metadata adapter and the local object store index',
    files: /^src\/storage\/sqlite-(metadata-store|pack-index)\.ts$/,
  },
];

const moduleOf = (file: string): string => {
  const parts = file.split('/');
  if (parts[0] !== 'src') return parts[0]!;
  return parts.length === 2 ? file : `src/${parts[1]}`;
};

interface Import {
  from: string;
  spec: string;
  /** The imported file, for a relative import. */
  file?: string;
}

function readImports(): { files: string[]; imports: Import[] } {
  const files = ['src', 'functions', 'infra'].flatMap((dir) =>
    readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|mts|mjs)$/.test(f))
      .map((f) => join(dir, f)),
  );
  const imports: Import[] = [];
  for (const from of files) {
    const text = readFileSync(join(root, from), 'utf8');
    const specs = [
      ...text.matchAll(/^\s*(?:import|export)\s[^'";]*?from\s*'([^']+)'/gm),
      ...text.matchAll(/^\s*import\s*'([^']+)'/gm),
      ...text.matchAll(/import\(\s*'([^']+)'\s*\)/g),
    ];
    for (const [, spec] of specs) imports.push(toImport(from, spec!));
  }
  return { files, imports };
}

function toImport(from: string, spec: string): Import {
  if (!spec.startsWith('.')) return { from, spec };
  const file = relative(root, resolve(dirname(join(root, from)), spec)).replace(/\.js$/, '.ts');
  return { from, spec, file };
}

/** A cycle in a graph given as adjacency lists, or undefined. */
function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'open') return [...stack.slice(stack.indexOf(m)), m];
      if (!state.has(m)) {
        const found = visit(m);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of graph.keys()) {
    if (!state.has(n)) {
      const found = visit(n);
      if (found) return found;
    }
  }
  return undefined;
}

describe('module boundaries', () => {
  const { files, imports } = readImports();

  it('reads the tree: every module is on the map and imports resolve to files', () => {
    expect(imports.length).toBeGreaterThan(300);
    const unmapped = [...new Set(files.map(moduleOf))].filter((m) => !(m in MAY_IMPORT));
    expect(unmapped, 'modules missing from MAY_IMPORT').toEqual([]);
    const fileSet = new Set(files);
    const dangling = imports.filter((i) => i.file !== undefined && !fileSet.has(i.file) && !i.file.endsWith('.json'));
    expect(dangling.map((i) => `${i.from} -> ${i.spec}`)).toEqual([]);
  });

  it('has only the module edges the map allows', () => {
    const forbidden = new Set<string>();
    for (const i of imports) {
      if (i.file === undefined) continue;
      const a = moduleOf(i.from);
      const b = moduleOf(i.file);
      if (a !== b && !MAY_IMPORT[a]?.includes(b)) forbidden.add(`${a} -> ${b} (${i.from} imports ${i.spec})`);
    }
    expect([...forbidden]).toEqual([]);
  });

  it('the map itself has no cycle, and neither have the files', () => {
    const map = new Map(Object.entries(MAY_IMPORT).map(([a, bs]) => [a, new Set(bs)]));
    expect(findCycle(map), 'cycle in MAY_IMPORT').toBeUndefined();
    const fileGraph = new Map<string, Set<string>>(files.map((f) => [f, new Set()]));
    for (const i of imports) if (i.file !== undefined && !i.spec.endsWith('.json')) fileGraph.get(i.from)?.add(i.file);
    expect(findCycle(fileGraph), 'import cycle between files').toBeUndefined();
  });

  it('keeps AWS, CDK, HTTP and SQLite packages in the modules that own them', () => {
    const misplaced = imports.flatMap((i) =>
      i.file === undefined
        ? PACKAGE_OWNERS.filter((o) => o.packages.test(i.spec) && !o.files.test(i.from)).map(
            (o) => `${i.from} imports ${i.spec}: ${o.why}`,
          )
        : [],
    );
    expect(misplaced).toEqual([]);
  });

  it('keeps the client and the wire format free of server packages', () => {
    // The compression codecs are pure JavaScript or WebAssembly: the client ships them as they are.
    const allowed =
      /^(node:|@smithy\/signature-v4$|@aws-sdk\/credential-provider-node$|ws$|snappyjs$|lz4js(\/xxh32\.js)?$|fzstd$|@bokuweb\/zstd-wasm$)/;
    const bad = imports.filter(
      (i) => /^src\/(client|wire)\//.test(i.from) && i.file === undefined && !allowed.test(i.spec),
    );
    expect(bad.map((i) => `${i.from} imports ${i.spec}`)).toEqual([]);
  });

  it('fails on a forbidden edge and on a cycle (the checks can fail)', () => {
    expect(
      findCycle(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['a'])],
        ]),
      ),
    ).toEqual(['a', 'b', 'a']);
    expect(MAY_IMPORT['src/client']).not.toContain('src/log');
    expect(MAY_IMPORT['src/partition']).not.toContain('src/log');
    expect(MAY_IMPORT['src/log']).not.toContain('src/replication');
    expect(MAY_IMPORT['src/maintenance']).not.toContain('src/groups'); // the composition root hands it the coordinator
    expect(MAY_IMPORT['src/maintenance']).not.toContain('src/transactions'); // ... and the transactions' timers
    expect(MAY_IMPORT['src/kafka']).not.toContain('src/http'); // two doors over one AppServices (src/services.ts)
    expect(MAY_IMPORT.functions).not.toContain('src/maintenance');
  });
});
