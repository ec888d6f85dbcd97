/**
 * The web console in a real browser: Debian's Chromium, headless, driven by playwright-core, against
 * `src/server.ts` (memory backend) started here on a free port. Each page must show what the API
 * answers; a record produced in the form appears in the browser; a group's lag appears and clears;
 * an offset reset goes through its dry-run plan; a trigger (delivering to a webhook served here) is
 * paused, resumed and deleted from its page; a share group is listed beside the consumer groups,
 * and its SPSO reset, its offsets deleted and itself deleted from its page, refused while a
 * receiver holds a lock or a Kafka share consumer (joined on the listener) is a member.
 * Screenshots land in test-artifacts/console/ (git-ignored). Without /usr/bin/chromium (.ci/run
 * installs it) the suite skips, saying why.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShareGroupHeartbeat } from '../../src/kafka/protocol/messages/index.js';
import { RawClient } from '../kafka/support/raw-client.js';
import { freePort, startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = join(import.meta.dirname, '../..');
const SHOTS = join(ROOT, 'test-artifacts', 'console');
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`console browser tests skipped: ${CHROMIUM} not found (apt-get install -y chromium; .ci/run does)`);

let server: LocalServer | undefined;
let dataDir: { path: string; remove: () => Promise<void> } | undefined;
let origin: string;
/** The server's Kafka listener (a share group's members join there). */
let kafkaPort: number;
let context: BrowserContext;
let page: Page;
let profile: string;
const foreignRequests: string[] = [];
/** The webhook the triggers deliver to: the offsets of every record it was POSTed, as `topic-partition@offset`. */
let hook: Server;
let hookUrl: string;
const delivered: string[] = [];
const pageErrors: string[] = [];

async function call(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${origin}/v3/clusters/local${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const produce = (topic: string, partition: number, values: string[]) =>
  call('POST', `/topics/${topic}/records:batch`, {
    entries: values.map((v, i) => ({
      id: String(i),
      partition_id: partition,
      key: { type: 'STRING', data: `k-${v}` },
      value: { type: 'STRING', data: v },
    })),
  });

/** The page's globals inside page.evaluate, which runs in the browser (the tests compile without the DOM library). */
interface BrowserElement {
  textContent: string | null;
  outerHTML: string;
  labels?: { length: number };
  getAttribute(name: string): string | null;
}
interface BrowserGlobal {
  document: {
    activeElement: BrowserElement | null;
    documentElement: { scrollWidth: number };
    querySelectorAll(s: string): Iterable<BrowserElement>;
  };
  location: { hash: string };
}

/**
 * The bound of every wait for the page: a load, an element, what it shows after its next poll (every
 * 2-3 s). Only a failing test waits it out; it leaves room for a machine loaded many times over.
 */
const PAGE_WAIT_MS = 15_000;
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: PAGE_WAIT_MS });

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** The text of a stat card (Overview, group page) by its label. */
const stat = (label: string) =>
  page.locator('.stat', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) }).locator('dd');

describe.skipIf(!hasChromium)('web console in Chromium', { timeout: 4 * PAGE_WAIT_MS }, () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const event = JSON.parse(body) as { records: Record<string, { offset: number }[]> };
        for (const [tp, records] of Object.entries(event.records))
          for (const r of records) delivered.push(`${tp}@${r.offset}`);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    dataDir = await tempDir('console-server-');
    kafkaPort = await freePort();
    server = await startServer(
      dataDir.path,
      0,
      { STORAGE_BACKEND: 'memory', SCHEDULER_INTERVAL_MS: '0', KAFKA_HOST: '127.0.0.1' },
      kafkaPort,
    );
    origin = server.origin;
    profile = await mkdtemp(join(tmpdir(), 'console-chromium-'));
    // A persistent context is how playwright takes a fresh --user-data-dir of our own.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 900 },
    });
    context.on('request', (r) => {
      if (!r.url().startsWith(origin)) foreignRequests.push(r.url());
    });
    context.setDefaultTimeout(PAGE_WAIT_MS); // navigations too
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (e) => pageErrors.push(e.message));

    await call('POST', '/topics', { topic_name: 'orders', partitions_count: 3 });
    await call('POST', '/topics', { topic_name: 'audit', partitions_count: 1 });
    await produce('orders', 0, ['a1', 'a2', 'a3', 'a4']);
    await produce('orders', 1, ['b1', 'b2']);
    await call('POST', '/topics/orders/records', {
      partition_id: 2,
      value: { type: 'JSON', data: { id: 7, item: 'book' } },
      headers: [{ name: 'trace', value: Buffer.from('t-1').toString('base64') }],
    });
    // An inactive group with committed offsets: lag 4 - 1 + 2 - 0 = 5.
    await call('POST', '/consumer-groups/billing/offsets:commit', {
      offsets: [
        { topic_name: 'orders', partition_id: 0, offset: 1 },
        { topic_name: 'orders', partition_id: 1, offset: 0 },
      ],
    });
  }, 40_000);

  afterAll(async () => {
    await context?.close();
    await stopServer(server);
    await new Promise((r) => hook?.close(r));
    await dataDir?.remove();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('Overview shows the totals and lists the API answers', async () => {
    await page.goto(`${origin}/console`);
    await poll(() => stat('Topics').textContent()).toBe('2');
    const partitions = (await call('GET', '/topics/orders/partitions')).data as {
      high_watermark: number;
      log_start_offset: number;
      size_in_bytes: number;
    }[];
    const records = partitions.reduce((n, p) => n + p.high_watermark - p.log_start_offset, 0);
    expect(records).toBe(7);
    expect(await stat('Partitions').textContent()).toBe('4');
    expect(await stat('Records').textContent()).toBe('7');
    expect(await stat('Consumer groups').textContent()).toBe('1');
    expect(await stat('Bytes stored').textContent()).toMatch(/\d+(\.\d)? (B|KiB)/);
    const row = page.getByRole('row', { name: /orders/ });
    await poll(() => row.locator('td').allTextContents()).toEqual(['3', '1', '7', expect.stringMatching(/B/)]);
    expect(
      await page
        .getByRole('row', { name: /billing/ })
        .locator('td')
        .allTextContents(),
    ).toEqual(['CLASSIC', 'EMPTY', '5']);
    expect(await stat('Share groups').textContent()).toBe('0');
    expect(await stat('Triggers').textContent()).toBe('0');
    // Keyboard: the first Tab reaches the skip link; every form control has a label.
    await page.keyboard.press('Tab');
    expect(
      await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.activeElement?.textContent),
    ).toBe('Skip to content');
    await shot('overview');
  });

  it("Topic shows partitions as the API does, edits a config, and shows Kafka's error on a bad value", async () => {
    await page.goto(`${origin}/console/#/topics/orders`);
    const table = page.getByRole('table', { name: 'Partitions of orders' });
    await poll(() => table.locator('tbody tr').count()).toBe(3);
    const api = (await call('GET', '/topics/orders/partitions')).data as {
      partition_id: number;
      leader_id: number;
      leader_epoch: number;
      replica_ids: number[];
      isr: number[];
      high_watermark: number;
      last_stable_offset: number;
      log_end_offset: number;
      log_start_offset: number;
    }[];
    for (const p of api) {
      const cells = await table.locator('tbody tr').nth(p.partition_id).locator('th, td').allTextContents();
      expect(cells.slice(0, 9)).toEqual(
        [
          p.partition_id,
          p.leader_id,
          p.leader_epoch,
          p.replica_ids.join(', '),
          p.isr.join(', '),
          p.log_start_offset,
          p.last_stable_offset,
          p.high_watermark,
          p.log_end_offset,
        ].map(String),
      );
    }

    const retention = page.getByLabel('retention.ms', { exact: true });
    await retention.fill('soon');
    await retention.press('Enter');
    await poll(() => page.getByRole('alert').first().textContent()).toMatch(/^INVALID_CONFIG: .*retention\.ms/);
    await retention.fill('3600000');
    await retention.press('Enter');
    const row = page.getByRole('row', { name: /^retention\.ms/ });
    await poll(() => row.getByText('Saved', { exact: true }).count()).toBe(1);
    expect(await row.getByRole('alert').count()).toBe(0);
    expect((await call('GET', '/topics/orders/configs/retention.ms')).value).toBe('3600000');

    // The chart plots records/s between two polls of the high watermarks.
    await produce(
      'orders',
      2,
      Array.from({ length: 40 }, (_, i) => `burst-${i}`),
    );
    await poll(() => page.getByTestId('Records in-latest').textContent().then(Number)).toBeGreaterThan(0);
    await shot('topic');
  });

  it('Records browses a partition as text, JSON and hex, from an offset or a time, and shows a produced record', async () => {
    await page.goto(`${origin}/console/#/topics/orders/records?partition=2&offset=0`);
    const table = page.getByRole('table', { name: 'Records of orders partition 2' });
    const first = table.locator('tbody tr').first();
    await poll(() => first.locator('td').nth(2).textContent()).toBe('{"id":7,"item":"book"}');
    expect(await first.locator('td').nth(3).textContent()).toBe('trace: t-1');
    await page.getByRole('radio', { name: 'json' }).check();
    expect(await first.locator('td').nth(2).textContent()).toBe('{\n  "id": 7,\n  "item": "book"\n}');
    await page.getByRole('radio', { name: 'hex' }).check();
    expect(await first.locator('td').nth(2).textContent()).toMatch(/^7b 22 69 64 22 3a 37/);
    await page.getByRole('radio', { name: 'text' }).check();

    // From a time: the offset endpoint (offset_type=timestamp) picks the first record at or after it.
    await page.getByRole('region', { name: 'Browse' }).getByRole('combobox').selectOption('0');
    await poll(() => table.count()).toBe(0);
    const t0 = page.getByRole('table', { name: 'Records of orders partition 0' });
    await poll(() => t0.locator('tbody tr').count()).toBe(4);
    await page.getByRole('radio', { name: 'time' }).check();
    await page.getByLabel('Time', { exact: true }).fill('2000-01-01T00:00:00');
    await page.getByRole('button', { name: 'Fetch' }).click();
    await poll(() => t0.locator('tbody tr th').first().textContent()).toBe('0');

    const form = page.getByRole('region', { name: 'Produce a record' });
    await form.getByLabel('Partition').selectOption('0');
    await form.getByLabel('Key (text, empty for none)').fill('browser-key');
    await form.getByLabel('Value', { exact: true }).fill('hello from the browser');
    await form.getByLabel('Headers (one name=value a line)').fill('source=console');
    await form.getByRole('button', { name: 'Produce' }).click();
    await poll(() => form.getByText(/Produced to partition 0 at offset 4/).count()).toBe(1);
    const produced = t0.getByRole('row', { name: /^4 / });
    await poll(() => produced.locator('td').allTextContents()).toEqual([
      expect.any(String),
      'browser-key',
      'hello from the browser',
      'source: console',
    ]);
    const back = await call('GET', '/topics/orders/partitions/0/records?offset=4&format=string');
    expect(back.records[0]).toMatchObject({
      offset: 4,
      key: { data: 'browser-key' },
      value: { data: 'hello from the browser' },
    });
    await shot('records');
  });

  it('Consumer group shows lag per partition; lag appears and clears; a reset runs through its dry-run plan', async () => {
    await page.goto(`${origin}/console/#/groups/billing`);
    const lagTable = page.getByRole('table', { name: 'Lag per partition' });
    const lagOf = (p: number) => lagTable.locator('tbody tr').nth(p).locator('td').last().textContent();
    const desc = await call('GET', '/consumer-groups/billing');
    const expected = Object.fromEntries(
      desc.partitions.map((p: { partition_id: number; lag: number }) => [p.partition_id, String(p.lag)]),
    );
    await poll(() => lagOf(0)).toBe(expected[0]);
    expect(await lagOf(1)).toBe(expected[1]);
    expect(await stat('State').textContent()).toBe('EMPTY');
    // The log grew since the commit (the record produced from the browser): more lag.
    await poll(() => stat('Total lag').textContent()).toBe('6');
    await produce('orders', 1, ['b3', 'b4']);
    await poll(() => stat('Total lag').textContent()).toBe('8');
    await call('POST', '/consumer-groups/billing/offsets:commit', {
      offsets: [
        { topic_name: 'orders', partition_id: 0, offset: 5 },
        { topic_name: 'orders', partition_id: 1, offset: 4 },
      ],
    });
    await poll(() => stat('Total lag').textContent()).toBe('0');
    await poll(() => page.getByTestId('Total lag-latest').textContent()).toBe('0');
    await shot('group-lag');

    const reset = page.getByRole('region', { name: 'Reset offsets' });
    await reset.getByLabel('Strategy').selectOption('to-earliest');
    await reset.getByRole('button', { name: 'Preview (dry run)' }).click();
    const plan = page.getByRole('table', { name: /Planned reset/ });
    await poll(() => plan.locator('tbody tr').count()).toBe(2);
    expect(await plan.locator('tbody tr').nth(0).locator('th, td').allTextContents()).toEqual([
      'orders',
      '0',
      '5',
      '0',
    ]);
    expect(await plan.locator('tbody tr').nth(1).locator('th, td').allTextContents()).toEqual([
      'orders',
      '1',
      '4',
      '0',
    ]);
    // A dry run changes nothing.
    expect(
      (await call('GET', '/consumer-groups/billing')).partitions.map(
        (p: { committed_offset: number }) => p.committed_offset,
      ),
    ).toEqual([5, 4]);
    await shot('group-reset-plan');
    await reset.getByRole('button', { name: 'Execute this reset' }).click();
    await poll(() => reset.getByRole('status').textContent()).toBe('Reset done: 2 partitions.');
    expect(
      (await call('GET', '/consumer-groups/billing')).partitions.map(
        (p: { committed_offset: number }) => p.committed_offset,
      ),
    ).toEqual([0, 0]);
    await poll(() => stat('Total lag').textContent()).toBe('9');
  });

  it("shows a live group's members and assignment, and refuses its reset with Kafka's error", async () => {
    const hb = await call('POST', '/consumer-groups/live/consumers:heartbeat', {
      subscribed_topic_names: ['audit'],
      client_id: 'console-test',
    });
    await call('POST', '/consumer-groups/live/consumers:heartbeat', {
      member_id: hb.member_id,
      member_epoch: hb.member_epoch,
      subscribed_topic_names: ['audit'],
    });
    await page.goto(`${origin}/console/#/groups/live`);
    const members = page.getByRole('table', { name: 'Members and their assignment' });
    await poll(() => members.locator('tbody tr th').first().textContent()).toBe(hb.member_id);
    expect(await members.locator('tbody tr td').allTextContents()).toEqual([
      'console-test',
      expect.any(String),
      'audit',
      'audit-0',
      expect.any(String),
    ]);
    const reset = page.getByRole('region', { name: 'Reset offsets' });
    await reset.getByRole('button', { name: 'Preview (dry run)' }).click();
    await poll(() => reset.getByRole('alert').textContent()).toMatch(/^NON_EMPTY_GROUP: /);
  });

  it('Triggers lists a trigger with its lag; its page pauses, resumes and deletes it after asking', async () => {
    await call('POST', '/topics', { topic_name: 'events', partitions_count: 2 });
    for (const name of ['events-hook', 'audit-hook'])
      await call('POST', '/triggers', {
        trigger_name: name,
        topic_name: name === 'events-hook' ? 'events' : 'audit',
        target: { type: 'WEBHOOK', url: hookUrl, timeout_ms: 5000 },
        starting_position: 'TRIM_HORIZON',
        maximum_batching_window_ms: 0,
        batch_size: 10,
      });
    await produce('events', 0, ['e1', 'e2', 'e3']);
    await poll(() => delivered.filter((d) => d.startsWith('events-')).sort()).toEqual([
      'events-0@0',
      'events-0@1',
      'events-0@2',
    ]);
    await poll(async () => (await call('GET', '/triggers/events-hook')).lag).toBe(0);

    await page.goto(`${origin}/console/#/triggers`);
    const row = page.getByRole('row', { name: /^events-hook / });
    await poll(() => row.locator('td').allTextContents()).toEqual([
      'events',
      `webhook ${hookUrl}`,
      'ENABLED',
      '0',
      'trigger.events-hook',
    ]);
    expect(await page.getByRole('table', { name: 'Triggers' }).locator('tbody tr').count()).toBe(2);
    await row.getByRole('link', { name: 'events-hook', exact: true }).click();
    await poll(() => page.locator('main h1').textContent()).toBe('events-hook');

    // Per partition what the API describes: the committed offset, the log's ends, the lag.
    const positions = page.getByRole('table', { name: 'Position and lag per partition' });
    const described = await call('GET', '/triggers/events-hook');
    await poll(() => positions.locator('tbody tr').count()).toBe(2);
    for (const p of described.partitions as {
      partition_id: number;
      committed_offset: number | null;
      log_start_offset: number;
      high_watermark: number;
      lag: number;
    }[])
      expect(
        (await positions.locator('tbody tr').nth(p.partition_id).locator('th, td').allTextContents()).slice(0, 5),
      ).toEqual([p.partition_id, p.committed_offset ?? '–', p.log_start_offset, p.high_watermark, p.lag].map(String));
    expect(described.partitions[0]).toMatchObject({ committed_offset: 3, high_watermark: 3, lag: 0 });
    const settings = page.getByRole('region', { name: 'Settings' });
    expect(
      await settings
        .locator('dt', { hasText: /^batch_size$/ })
        .locator('xpath=following-sibling::dd[1]')
        .textContent(),
    ).toBe('10');
    expect(
      await settings
        .locator('dt', { hasText: /^maximum_retry_attempts$/ })
        .locator('xpath=following-sibling::dd[1]')
        .textContent(),
    ).toBe('-1 (infinite)');

    // Pause asks first; Cancel leaves it running.
    const actions = page.getByRole('region', { name: 'Actions' });
    await actions.getByRole('button', { name: 'Pause…' }).click();
    await actions.getByRole('button', { name: 'Cancel' }).click();
    expect((await call('GET', '/triggers/events-hook')).state).toBe('ENABLED');
    await actions.getByRole('button', { name: 'Pause…' }).click();
    await shot('trigger-pause-confirm');
    await actions.getByRole('button', { name: 'Pause trigger' }).click();
    await poll(() => stat('State').textContent()).toBe('PAUSED');
    expect((await call('GET', '/triggers/events-hook')).state).toBe('PAUSED');

    // Paused: new records wait, and the page shows their lag.
    await produce('events', 1, ['f1', 'f2']);
    await poll(() => stat('Total lag').textContent()).toBe('2');
    expect((await call('GET', '/triggers/events-hook')).lag).toBe(2);
    expect(delivered.filter((d) => d.startsWith('events-1'))).toEqual([]);
    await shot('trigger-paused');

    await actions.getByRole('button', { name: 'Resume…' }).click();
    await actions.getByRole('button', { name: 'Resume trigger' }).click();
    await poll(() => stat('State').textContent()).toBe('ENABLED');
    expect((await call('GET', '/triggers/events-hook')).state).toBe('ENABLED');
    await poll(() => stat('Total lag').textContent()).toBe('0');
    expect(delivered.filter((d) => d.startsWith('events-1')).sort()).toEqual(['events-1@0', 'events-1@1']);
    expect((await call('GET', '/triggers/events-hook')).partitions[1]).toMatchObject({ committed_offset: 2, lag: 0 });

    // A trigger deleted elsewhere while the question is open: the answer is the server's error, by its Kafka name.
    const definition = {
      trigger_name: 'events-hook',
      topic_name: 'events',
      target: { type: 'WEBHOOK', url: hookUrl, timeout_ms: 5000 },
      maximum_batching_window_ms: 0,
      batch_size: 10,
    };
    await actions.getByRole('button', { name: 'Pause…' }).click();
    await call('DELETE', '/triggers/events-hook');
    await actions.getByRole('button', { name: 'Pause trigger' }).click();
    await poll(() => actions.getByRole('alert').textContent()).toBe(
      'RESOURCE_NOT_FOUND: Trigger events-hook not found',
    );
    await call('POST', '/triggers', definition);

    // Delete asks first, goes back to the list, and leaves the trigger's consumer group.
    await actions.getByRole('button', { name: 'Delete…' }).click();
    await actions.getByRole('button', { name: 'Delete trigger' }).click();
    await poll(() => page.locator('main h1').textContent()).toBe('Triggers');
    await poll(() => page.getByRole('table', { name: 'Triggers' }).locator('tbody tr').count()).toBe(1);
    expect((await call('GET', '/triggers')).data.map((t: { trigger_name: string }) => t.trigger_name)).toEqual([
      'audit-hook',
    ]);
    expect((await call('GET', '/consumer-groups/trigger.events-hook')).consumer_group_id).toBe('trigger.events-hook');
    await page.goto(`${origin}/console/#/triggers/events-hook`);
    await poll(() => page.getByRole('alert').first().textContent()).toBe(
      'RESOURCE_NOT_FOUND: Trigger events-hook not found',
    );
  });

  it('lists share groups beside consumer groups; a share group shows SPSO/SPEO and locks, and resets after a dry run', async () => {
    await call('POST', '/topics', { topic_name: 'jobs', partitions_count: 2 });
    await produce('jobs', 0, ['j1', 'j2', 'j3', 'j4']);
    await produce('jobs', 1, ['k1', 'k2']);
    await call('PUT', '/share-groups/workers/configs/share.auto.offset.reset', { value: 'earliest' });
    const got = await call('POST', '/share-groups/workers/records:receive', {
      topics: ['jobs'],
      member_id: 'w1',
      max_records: 10,
    });
    expect(got.data).toHaveLength(6);
    // Partition 0 done; partition 1's two records stay locked by w1.
    await call('POST', '/share-groups/workers/records:acknowledge', {
      member_id: 'w1',
      acknowledgements: [{ topic_name: 'jobs', partition_id: 0, offset: 0, last_offset: 3, type: 'accept' }],
    });

    // A Kafka share consumer's membership, over the listener.
    const kafka = await RawClient.open(`127.0.0.1:${kafkaPort}`);
    const memberId = randomUUID();
    const heartbeat = (memberEpoch: number) =>
      kafka.request(ShareGroupHeartbeat, 1, {
        groupId: 'workers',
        memberId,
        memberEpoch,
        rackId: null,
        subscribedTopicNames: memberEpoch === 0 ? ['jobs'] : null,
      });
    expect((await heartbeat(0)).body.errorCode).toBe(0);

    await page.goto(`${origin}/console/#/groups`);
    const groups = page.getByRole('table', { name: 'Groups' });
    const listed = (await call('GET', '/groups')).data as { group_id: string; type: string; state: string }[];
    expect(listed.find((g) => g.group_id === 'workers')).toMatchObject({ type: 'SHARE', state: 'STABLE' });
    await poll(() => groups.locator('tbody tr').count()).toBe(listed.length);
    for (const [i, g] of listed.entries())
      expect((await groups.locator('tbody tr').nth(i).locator('th, td').allTextContents()).slice(0, 3)).toEqual([
        g.group_id,
        g.type,
        g.state,
      ]);
    await shot('groups');
    await groups.getByRole('link', { name: 'workers' }).click();

    const parts = page.getByRole('table', { name: 'Share-partitions' });
    await poll(() => parts.locator('tbody tr').count()).toBe(2);
    const described = await call('GET', '/share-groups/workers');
    for (const [i, p] of (
      described.partitions as {
        topic_name: string;
        partition_id: number;
        start_offset: number;
        end_offset: number;
        high_watermark: number;
        lag: number;
        in_flight: { available: number; acquired: number; acknowledged: number; archived: number };
        state_epoch: number;
      }[]
    ).entries())
      expect(await parts.locator('tbody tr').nth(i).locator('th, td').allTextContents()).toEqual(
        [
          p.topic_name,
          p.partition_id,
          p.start_offset,
          p.end_offset,
          p.high_watermark,
          p.lag,
          p.in_flight.available,
          p.in_flight.acquired,
          p.in_flight.acknowledged,
          p.in_flight.archived,
          p.state_epoch,
        ].map(String),
      );
    expect(
      described.partitions.map((p: { start_offset: number; end_offset: number }) => [p.start_offset, p.end_offset]),
    ).toEqual([
      [4, 4],
      [0, 2],
    ]);
    expect(await stat('State').textContent()).toBe('STABLE');
    expect(await stat('Locked records').textContent()).toBe('2');
    expect(await stat('Total lag').textContent()).toBe(String(described.lag));
    expect(await stat('Members').textContent()).toBe('1');
    const members = page.getByRole('table', { name: 'Members and their assignment' });
    const [m] = described.members;
    expect(m).toMatchObject({ member_id: memberId, client_id: 'raw', subscribed_topic_names: ['jobs'] });
    expect(await members.locator('tbody tr').locator('th, td').allTextContents()).toEqual(
      [m.member_id, m.client_id, m.client_host, m.member_epoch, 'jobs', 'jobs-0, jobs-1', m.last_heartbeat].map(String),
    );
    await shot('share-group');

    // The group's configs: the one set through the API shows, a bad value is refused by its Kafka name.
    const configOf = async (name: string) =>
      (
        (await call('GET', '/share-groups/workers/configs')).data as {
          name: string;
          value: string;
          is_default: boolean;
        }[]
      ).find((c) => c.name === name);
    expect(await page.getByLabel('share.auto.offset.reset', { exact: true }).inputValue()).toBe('earliest');
    const limit = page.getByLabel('share.delivery.count.limit', { exact: true });
    await limit.fill('99');
    await limit.press('Enter');
    const limitRow = page.getByRole('row', { name: /^share\.delivery\.count\.limit/ });
    await poll(() => limitRow.getByRole('alert').textContent()).toMatch(/^INVALID_CONFIG: /);
    await limit.fill('3');
    await limit.press('Enter');
    await poll(() => limitRow.getByText('Saved', { exact: true }).count()).toBe(1);
    expect(await configOf('share.delivery.count.limit')).toMatchObject({ value: '3', is_default: false });
    await poll(() => limitRow.locator('td').last().textContent()).toBe('group');
    await limitRow.getByRole('button', { name: 'Reset' }).click();
    await poll(() => limitRow.getByText('Reset to default', { exact: true }).count()).toBe(1);
    expect(await configOf('share.delivery.count.limit')).toMatchObject({ is_default: true });

    // A dry run is always allowed and changes nothing; executing while w1 holds locks is refused.
    const reset = page.getByRole('region', { name: 'Reset offsets' });
    await reset.getByLabel('Strategy').selectOption('to-earliest');
    await reset.getByRole('button', { name: 'Preview (dry run)' }).click();
    const plan = page.getByRole('table', { name: /Planned reset/ });
    await poll(() => plan.locator('tbody tr').count()).toBe(2);
    expect(await plan.locator('tbody tr').nth(0).locator('th, td').allTextContents()).toEqual(['jobs', '0', '4', '0']);
    expect(await plan.locator('tbody tr').nth(1).locator('th, td').allTextContents()).toEqual(['jobs', '1', '0', '0']);
    expect(
      (await call('GET', '/share-groups/workers')).partitions.map((p: { start_offset: number }) => p.start_offset),
    ).toEqual([4, 0]);
    await reset.getByRole('button', { name: 'Execute this reset' }).click();
    await poll(() => reset.getByRole('alert').textContent()).toMatch(/^NON_EMPTY_GROUP: .*workers/);
    expect(
      (await call('GET', '/share-groups/workers')).partitions.map((p: { start_offset: number }) => p.start_offset),
    ).toEqual([4, 0]);

    // Once the member leaves and w1 releases its records the group is empty, and the reset goes through.
    expect((await heartbeat(-1)).body.errorCode).toBe(0);
    kafka.close();
    await poll(() => page.getByRole('region', { name: 'Members' }).getByText('No members.').count()).toBe(1);
    await call('POST', '/share-groups/workers/records:acknowledge', {
      member_id: 'w1',
      acknowledgements: [{ topic_name: 'jobs', partition_id: 1, offset: 0, last_offset: 1, type: 'release' }],
    });
    await poll(() => stat('State').textContent()).toBe('EMPTY');
    await reset.getByRole('button', { name: 'Preview (dry run)' }).click();
    await poll(() => reset.getByRole('alert').count()).toBe(0);
    await reset.getByRole('button', { name: 'Execute this reset' }).click();
    await poll(() => reset.getByRole('status').textContent()).toBe('Reset done: 2 partitions.');
    const after = await call('GET', '/share-groups/workers');
    expect(after.partitions.map((p: { start_offset: number; lag: number }) => [p.start_offset, p.lag])).toEqual([
      [0, 4],
      [0, 2],
    ]);
    await poll(() => stat('Total lag').textContent()).toBe('6');
    expect(await stat('Locked records').textContent()).toBe('0');

    // Deleting the topic's offsets asks first; its share-partitions then start again by share.auto.offset.reset.
    const del = page.getByRole('region', { name: 'Delete offsets' });
    await del.getByLabel('Topic').selectOption('jobs');
    await del.getByRole('button', { name: 'Delete offsets…' }).click();
    await del.getByRole('button', { name: 'Delete offsets', exact: true }).click();
    await poll(() => del.getByRole('status').textContent()).toBe('Offsets of jobs deleted.');
    expect((await call('GET', '/share-groups/workers')).partitions).toEqual([]);
    await poll(() => parts.count()).toBe(0);
    const again = await call('POST', '/share-groups/workers/records:receive', {
      topics: ['jobs'],
      member_id: 'w2',
      max_records: 1,
    });
    expect(again.data.map((r: { offset: number; delivery_count: number }) => [r.offset, r.delivery_count])).toEqual([
      [0, 1],
    ]);
    await poll(() => parts.locator('tbody tr').count()).toBe(1);

    // Deleting the group asks first, and is refused while w2 holds a record under its lock.
    const deleteGroup = page.getByRole('region', { name: 'Delete group' });
    await deleteGroup.getByRole('button', { name: 'Delete group…' }).click();
    await deleteGroup.getByRole('button', { name: 'Delete group', exact: true }).click();
    await poll(() => deleteGroup.getByRole('alert').textContent()).toMatch(/^NON_EMPTY_GROUP: .*workers/);
    expect((await call('GET', '/share-groups')).data.map((g: { group_id: string }) => g.group_id)).toContain('workers');
    // An empty group goes, and the console returns to the groups.
    await call('PUT', '/share-groups/doomed/configs/share.auto.offset.reset', { value: 'earliest' });
    await page.goto(`${origin}/console/#/share-groups/doomed`);
    const doomed = page.getByRole('region', { name: 'Delete group' });
    await doomed.getByRole('button', { name: 'Delete group…' }).click();
    await doomed.getByRole('button', { name: 'Delete group', exact: true }).click();
    await poll(() => page.evaluate(() => (globalThis as unknown as BrowserGlobal).location.hash)).toBe('#/groups');
    expect((await call('GET', '/share-groups')).data.map((g: { group_id: string }) => g.group_id)).not.toContain(
      'doomed',
    );
  });

  it('fits a narrow screen, labels every control, and fetches nothing from outside', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    for (const [hash, name] of [
      ['#/', 'narrow-overview'],
      ['#/topics/orders/records?partition=0', 'narrow-records'],
      ['#/groups/billing', 'narrow-group'],
      ['#/groups', 'narrow-groups'],
      ['#/share-groups/workers', 'narrow-share-group'],
      ['#/triggers/audit-hook', 'narrow-trigger'],
    ] as const) {
      await page.goto(`${origin}/console/${hash}`);
      await page.locator('main table').first().waitFor();
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobal).document.documentElement.scrollWidth),
        hash,
      ).toBeLessThanOrEqual(360);
      const unlabelled = await page.evaluate(() =>
        [...(globalThis as unknown as BrowserGlobal).document.querySelectorAll('input, select, textarea')]
          .filter((el) => el.labels?.length === 0 && !el.getAttribute('aria-label'))
          .map((el) => el.outerHTML),
      );
      expect(unlabelled, hash).toEqual([]);
      await shot(name);
    }
    expect(foreignRequests).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
