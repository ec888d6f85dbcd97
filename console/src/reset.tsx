import { useEffect, useState } from 'preact/hooks';
import { api, type ResetPlan } from './api.js';
import { plural } from './bytes.js';
import { ErrorLine, Form, Section, Table } from './components.js';

/** Reset strategies, as kafka-consumer-groups.sh and kafka-share-groups.sh name them. */
export const STRATEGY_LABELS = {
  'to-earliest': 'to the earliest offset',
  'to-latest': 'to the latest offset',
  'to-current': 'to the committed offset (no change)',
  'to-offset': 'to an offset',
  'shift-by': 'shift by N',
  'to-datetime': 'to a date and time',
  'by-duration': 'back by a duration (ISO 8601, e.g. PT1H)',
} as const;
export type Strategy = keyof typeof STRATEGY_LABELS;

const ARG_LABEL: Partial<Record<Strategy, string>> = {
  'to-offset': 'Offset',
  'shift-by': 'Shift by',
  'to-datetime': 'Date and time',
  'by-duration': 'Duration',
};

/**
 * A group's offsets reset: "Preview" sends `offsets:reset` with `dry_run: true` and shows the plan;
 * only then does "Execute this reset" send the same request without it. `path` is the group's
 * offsets:reset route (consumer or share group), `strategies` those it takes.
 */
export function ResetOffsets({
  path,
  strategies,
  topics,
  intro,
  offsetLabel,
  onDone,
}: {
  path: string;
  strategies: readonly Strategy[];
  topics: string[];
  intro: string;
  /** What the offsets are, in the plan's column heads ("offset", "SPSO"). */
  offsetLabel: string;
  onDone: () => void;
}) {
  const [strategy, setStrategy] = useState<Strategy>(strategies[0]!);
  const [topic, setTopic] = useState('');
  const [arg, setArg] = useState('');
  const [plan, setPlan] = useState<ResetPlan>();
  const [done, setDone] = useState<ResetPlan>();
  const [error, setError] = useState<Error>();
  const argLabel = ARG_LABEL[strategy];
  const body = (dryRun: boolean) => ({
    strategy,
    ...(topic === '' ? { all_topics: true } : { topics: [{ topic_name: topic }] }),
    ...(strategy === 'to-offset' ? { offset: Number(arg) } : {}),
    ...(strategy === 'shift-by' ? { shift_by: Number(arg) } : {}),
    // datetime-local is the browser's local time: sent as epoch ms, so no zone is lost.
    ...(strategy === 'to-datetime' ? { datetime: new Date(arg).getTime() } : {}),
    ...(strategy === 'by-duration' ? { duration: arg } : {}),
    dry_run: dryRun,
  });
  const send = async (dryRun: boolean) => {
    setError(undefined);
    try {
      const r = await api<ResetPlan>(path, { method: 'POST', body: body(dryRun) });
      if (dryRun) {
        setPlan(r);
        setDone(undefined);
      } else {
        setDone(r);
        setPlan(undefined);
        onDone();
      }
    } catch (e) {
      setError(e as Error);
    }
  };
  // A changed form invalidates the plan: what runs is always what was shown.
  useEffect(() => setPlan(undefined), [strategy, topic, arg]);
  const shown = plan ?? done;
  const refused = shown?.data.filter((e) => e.error) ?? [];
  return (
    <Section title="Reset offsets" id="reset">
      <p>{intro}</p>
      <Form class="controls" onSubmit={() => send(true)}>
        <label>
          Strategy
          <select value={strategy} onChange={(e) => setStrategy(e.currentTarget.value as Strategy)}>
            {strategies.map((v) => (
              <option value={v} key={v}>
                {STRATEGY_LABELS[v]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Topics
          <select value={topic} onChange={(e) => setTopic(e.currentTarget.value)}>
            <option value="">all the group's topics</option>
            {topics.map((t) => (
              <option value={t} key={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        {argLabel && (
          // biome-ignore lint/a11y/noLabelWithoutControl: the input is inside the label, chosen by the strategy
          <label>
            {argLabel}
            {strategy === 'to-offset' || strategy === 'shift-by' ? (
              <input type="number" value={arg} required onInput={(e) => setArg(e.currentTarget.value)} />
            ) : strategy === 'to-datetime' ? (
              <input
                type="datetime-local"
                step={1}
                value={arg}
                required
                onInput={(e) => setArg(e.currentTarget.value)}
              />
            ) : (
              <input type="text" value={arg} required onInput={(e) => setArg(e.currentTarget.value)} />
            )}
          </label>
        )}
        <button type="submit">Preview (dry run)</button>
      </Form>
      <ErrorLine error={error} />
      {shown && (
        <>
          <Table
            caption={plan ? 'Planned reset (dry run: nothing changed yet)' : 'Offsets reset'}
            head={[
              'Topic',
              'Partition',
              `Current ${offsetLabel}`,
              `New ${offsetLabel}`,
              ...(refused.length ? ['Error'] : []),
            ]}
          >
            {shown.data.map((e) => (
              <tr key={`${e.topic_name}-${e.partition_id}`}>
                <th scope="row">{e.topic_name}</th>
                <td>{e.partition_id}</td>
                <td>{e.current_offset ?? '–'}</td>
                <td>{e.new_offset}</td>
                {refused.length > 0 && <td class={e.error ? 'warn' : undefined}>{e.error ?? '–'}</td>}
              </tr>
            ))}
          </Table>
          {plan ? (
            <button type="button" class="danger" onClick={() => void send(false)}>
              Execute this reset
            </button>
          ) : (
            <p class={refused.length ? 'error' : 'ok'} role="status">
              Reset done: {plural(shown.data.length - refused.length, 'partition')}
              {refused.length > 0 && `; refused for ${plural(refused.length, 'partition')} (see Error)`}.
            </p>
          )}
        </>
      )}
    </Section>
  );
}
