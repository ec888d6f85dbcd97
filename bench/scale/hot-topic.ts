import { PartitionLog } from '../../src/log/partition-log.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { TopicRegistry, type Topic } from '../../src/topics/topics.js';
import type { Storage } from '../../src/compose.js';
import type { Clock } from '../../src/clock.js';
import { PushNotifier } from '../../src/push/push-notifier.js';
import { SUBSCRIPTION_CACHE_MS, Subscriptions } from '../../src/push/subscriptions.js';
import type { Scenario, ScenarioFigures, Simulation } from './scenario.js';

/**
 * One topic of 1,000 partitions produced at 10,000 requests a second (one record each, partitions
 * in turn), as separate function invocations would: each request runs on a process of its own (a
 * pool of partition logs, one request at a time each, as Lambda gives one request per instance), so
 * nothing coalesces requests across processes. 3 s simulated (1 s with --quick). Each commit goes
 * to the instance's push notifier, which lists the topic's subscriptions (key `push#clicks`) as the
 * produce function does before it answers; PUSH_SUBSCRIPTION_CACHE_MS sets its list cache as it does
 * for a deployment (0: a query per produce request, as before the cache). Figures: requests
 * answered, failed, latency, subscription queries.
 */
export const hotTopic: Scenario = {
  name: 'hot-topic',
  description: 'One topic of 1,000 partitions produced at 10,000 requests/s',
  run,
};

const PARTITIONS = 1_000;
const RATE = 10_000;

async function run(sim: Simulation): Promise<ScenarioFigures> {
  const { time } = sim;
  const s = sim.storage(1);
  const topics = new TopicRegistry(s.storage.metadata, time, 1);
  const topic = await topics.create({ name: 'clicks', partitionCount: PARTITIONS, replicationFactor: 1, configs: {} });
  const pushCacheMs = Number(process.env.PUSH_SUBSCRIPTION_CACHE_MS ?? SUBSCRIPTION_CACHE_MS);
  const counted = { queries: 0 };
  const free: Instance[] = [];
  let instances = 0;
  const take = () => {
    const found = free.pop();
    if (found) return found;
    instances++;
    return instance(s.storage, time, topic, sim.featureLevel, pushCacheMs, counted);
  };

  s.setLatency(true);
  s.traffic.start();
  const seconds = sim.quick ? 1 : 3;
  let answered = 0;
  let failed = 0;
  const latencies: number[] = [];
  const requests: Promise<void>[] = [];
  const perMs = RATE / 1000;
  for (let ms = 0; ms < seconds * 1000; ms++) {
    for (let i = 0; i < perMs; i++) {
      const n = ms * perMs + i;
      const inst = take();
      requests.push(
        (async () => {
          const sent = time.now();
          try {
            await inst.produce(n % PARTITIONS, sent);
            answered++;
          } catch {
            failed++;
          }
          latencies.push(time.now() - sent);
          free.push(inst);
        })(),
      );
    }
    await time.sleep(1);
  }
  await Promise.all(requests);
  s.traffic.recording = false;
  latencies.sort((a, b) => a - b);
  return {
    partitions: PARTITIONS,
    'requests/s': RATE,
    'simulated seconds': seconds,
    'requests answered': answered,
    'requests failed': failed,
    'instances (one request at a time each)': instances,
    'produce latency p50 (ms)': latencies[Math.floor(latencies.length / 2)] ?? 0,
    'produce latency p99 (ms)': latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    'push subscription list cache (ms)': pushCacheMs,
    'push subscription queries': counted.queries,
    'push subscription queries/s': Math.round(counted.queries / seconds),
  };
}

interface Instance {
  produce(partition: number, timestamp: number): Promise<void>;
}

/** One process's partition log and topic registry (its own caches), as one function instance has. */
function instance(
  storage: Storage,
  clock: Clock,
  topic: Topic,
  featureLevel: number,
  pushCacheMs: number,
  counted: { queries: number },
): Instance {
  const { metadata, stores } = storage;
  const topics = new TopicRegistry(metadata, clock, stores.length);
  const leadership = new ReplicaManager({ metadata, stores, clock });
  const log = new PartitionLog({
    metadata,
    stores,
    clock,
    leadership,
    featureLevel: () => Promise.resolve(featureLevel),
  });
  // The same store, with its subscription queries counted (a proxy keeps its methods' `this`).
  const counting = new Proxy(metadata, {
    get(target, key) {
      if (key === 'query')
        return (...args: Parameters<typeof metadata.query>) => {
          counted.queries++;
          return target.query(...args);
        };
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const subscriptions = new Subscriptions(counting, clock, pushCacheMs);
  const notifier = new PushNotifier(
    subscriptions,
    { post: async () => 'delivered' },
    () => {},
    () => clock.now(),
  );
  log.onAppend((t, p) => notifier.committed(t, p));
  return {
    async produce(partition, timestamp) {
      const current = await topics.get(topic.name);
      const out = (
        await log.append(current, [
          { partition, records: [{ key: null, value: Buffer.from('click'), headers: [], timestamp }] },
        ])
      ).get(partition);
      if (!out?.ok) throw out?.error ?? new Error('no answer');
      // The HTTP layer waits for the notifications before it answers.
      await notifier.settle();
    },
  };
}
