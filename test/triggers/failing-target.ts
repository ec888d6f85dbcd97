/**
 * The on-failure destination tests' set-up: an app delivering triggers in this process, as the
 * local server composes one, with the destinations' adapters given; a webhook target that fails
 * every delivery; and triggers that give records up after one retry.
 */
import { expect } from 'vitest';
import type { ServiceOptions } from '../../src/compose.js';
import { testApp } from '../support/test-app.js';
import { startSink } from './webhook-sink.js';

export type FailingTarget = Awaited<ReturnType<typeof startFailingTarget>>;

export async function startFailingTarget(
  destinations: Pick<ServiceOptions, 'putFailureObject' | 'sendFailureMessage'>,
) {
  const sink = await startSink();
  sink.answer = () => ({ status: 500, body: { error: 'poison' } });
  const { call, services } = testApp({ runTriggers: true, destinations });
  /** The trigger's committed offset of partition 0 (null: none yet). */
  const committed = async (trigger: string) =>
    (await call('GET', `triggers/${trigger}`)).body.partitions[0].committed_offset as number | null;
  /**
   * A topic of one partition and a trigger `{topic}-hook` on it that gives up to `destination`;
   * then two records in one request: one commit, so the first delivery holds both.
   */
  async function failingTrigger(topic: string, destination: string) {
    expect((await call('POST', 'topics', { topic_name: topic, partitions_count: 1 })).status).toBe(201);
    const created = await call('POST', 'triggers', {
      trigger_name: `${topic}-hook`,
      topic_name: topic,
      target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 2000 },
      starting_position: 'TRIM_HORIZON',
      maximum_batching_window_ms: 0,
      maximum_retry_attempts: 1,
      on_failure_destination: destination,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const produced = await call('POST', `topics/${topic}/records:batch`, {
      entries: [
        { id: '0', partition_id: 0, key: { type: 'STRING', data: 'k' }, value: { type: 'STRING', data: 'a' } },
        { id: '1', partition_id: 0, value: { type: 'STRING', data: 'b' } },
      ],
    });
    expect(produced.status, JSON.stringify(produced.body)).toBeLessThan(300);
  }
  const close = async () => {
    await services.triggers.runner.close();
    await sink.close();
  };
  return { sink, call, committed, failingTrigger, close };
}
