import { useEffect, useState } from 'preact/hooks';
import { api, enc, type GroupDescription, type ResetPlan } from '../api.js';
import { plural } from '../bytes.js';
import { ErrorLine, Loading, Form, LineChart, Section, Stat, Table } from '../components.js';
import { usePoll, useSeries } from '../hooks.js';

const STRATEGIES = [
  ['to-earliest', 'to the earliest offset'],
  ['to-latest', 'to the latest offset'],
  ['to-current', 'to the committed offset (no change)'],
  ['to-offset', 'to an offset'],
  ['shift-by', 'shift by N'],
  ['to-datetime', 'to a date and time'],
  ['by-duration', 'back by a duration (ISO 8601, e.g. PT1H)'],
] as const;
type Strategy = (typeof STRATEGIES)[number][0];

function Reset({ group, topics, onDone }: { group: string; topics: string[]; onDone: () => void }) {
  const [strategy, setStrategy] = useState<Strategy>('to-earliest');
  const [topic, setTopic] = useState('');
  const [arg, setArg] = useState('');
  const [plan, setPlan] = useState<ResetPlan>();
  const [done, setDone] = useState<ResetPlan>();
  const [error, setError] = useState<Error>();
  const needs =
    strategy === 'to-offset' || strategy === 'shift-by'
      ? 'number'
      : strategy === 'to-datetime'
        ? 'datetime'
        : strategy === 'by-duration'
          ? 'duration'
          : undefined;
  const body = (dryRun: boolean) => ({
    strategy,
    ...(topic === '' ? { all_topics: true } : { topics: [{ topic_name: topic }] }),
    ...(strategy === 'to-offset' ? { offset: Number(arg) } : {}),
    ...(strategy === 'shift-by' ? { shift_by: Number(arg) } : {}),
    ...(strategy === 'to-datetime' ? { datetime: new Date(arg).getTime() } : {}),
    ...(strategy === 'by-duration' ? { duration: arg } : {}),
    dry_run: dryRun,
  });
  const send = async (dryRun: boolean) => {
    setError(undefined);
    try {
      const r = await api<ResetPlan>(`/consumer-groups/${enc(group)}/offsets:reset`, {
        method: 'POST',
        body: body(dryRun),
      });
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
  return (
    <Section title="Reset offsets" id="reset">
      <p>The group must have no members. Preview the plan (a dry run), then execute it.</p>
      <Form class="controls" onSubmit={() => send(true)}>
        <label>
          Strategy
          <select value={strategy} onChange={(e) => setStrategy(e.currentTarget.value as Strategy)}>
            {STRATEGIES.map(([v, l]) => (
              <option value={v} key={v}>
                {l}
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
        {needs && (
          // biome-ignore lint/a11y/noLabelWithoutControl: the input is inside the label, chosen by the strategy
          <label>
            {needs === 'number'
              ? strategy === 'to-offset'
                ? 'Offset'
                : 'Shift by'
              : needs === 'datetime'
                ? 'Date and time'
                : 'Duration'}
            {needs === 'number' ? (
              <input type="number" value={arg} required onInput={(e) => setArg(e.currentTarget.value)} />
            ) : needs === 'datetime' ? (
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
            head={['Topic', 'Partition', 'Current offset', 'New offset']}
          >
            {shown.data.map((e) => (
              <tr key={`${e.topic_name}-${e.partition_id}`}>
                <th scope="row">{e.topic_name}</th>
                <td>{e.partition_id}</td>
                <td>{e.current_offset ?? '–'}</td>
                <td>{e.new_offset}</td>
              </tr>
            ))}
          </Table>
          {plan ? (
            <button type="button" class="danger" onClick={() => void send(false)}>
              Execute this reset
            </button>
          ) : (
            <p class="ok" role="status">
              Reset done: {plural(shown.data.length, 'partition')}.
            </p>
          )}
        </>
      )}
    </Section>
  );
}

export function GroupPage({ group }: { group: string }) {
  const d = usePoll(() => api<GroupDescription>(`/consumer-groups/${enc(group)}`), 2000, [group]);
  const { series, push } = useSeries();
  useEffect(() => {
    if (d.data)
      push(
        Date.now() / 1000,
        d.data.partitions.reduce((n, p) => n + p.lag, 0),
      );
  }, [d.data]);
  const g = d.data;
  const topics = [...new Set(g?.partitions.map((p) => p.topic_name) ?? [])];
  return (
    <>
      <p class="crumbs">
        <a href="#/groups">Consumer groups</a> / group
      </p>
      <h1 tabIndex={-1}>{group}</h1>
      <ErrorLine error={d.error} />
      <Loading data={d.data} error={d.error} />
      {g && (
        <>
          <dl class="stats" aria-label="Group">
            <Stat label="State" value={g.state} />
            <Stat label="Members" value={g.members.length} />
            <Stat label="Total lag" value={g.partitions.reduce((n, p) => n + p.lag, 0)} />
            <Stat label="Group epoch" value={g.group_epoch} />
          </dl>
          <Section title="Lag" id="lag">
            <LineChart label="Total lag" unit="records" data={series} />
            <Table
              caption="Lag per partition"
              head={['Topic', 'Partition', 'Owner', 'Committed offset', 'Log end', 'Lag']}
            >
              {g.partitions.map((p) => (
                <tr key={`${p.topic_name}-${p.partition_id}`}>
                  <th scope="row">
                    <a href={`#/topics/${enc(p.topic_name)}`}>{p.topic_name}</a>
                  </th>
                  <td>{p.partition_id}</td>
                  <td>{p.client_id ?? '–'}</td>
                  <td>{p.committed_offset ?? '–'}</td>
                  <td>{p.log_end_offset}</td>
                  <td>{p.lag}</td>
                </tr>
              ))}
            </Table>
          </Section>
          <Section title="Members" id="members">
            {g.members.length === 0 ? (
              <p>No members.</p>
            ) : (
              <Table
                caption="Members and their assignment"
                head={['Member', 'Client', 'Epoch', 'Subscribed', 'Assigned partitions', 'Last heartbeat']}
              >
                {g.members.map((m) => (
                  <tr key={m.consumer_id}>
                    <th scope="row">
                      <code>{m.consumer_id}</code>
                    </th>
                    <td>{m.client_id}</td>
                    <td>{m.member_epoch}</td>
                    <td>{m.subscribed_topic_names.join(', ')}</td>
                    <td>{m.assignment.map((a) => `${a.topic_name}-${a.partition_id}`).join(', ') || '–'}</td>
                    <td>{m.last_heartbeat}</td>
                  </tr>
                ))}
              </Table>
            )}
          </Section>
          <Reset group={group} topics={topics} onDone={d.reload} />
        </>
      )}
    </>
  );
}
