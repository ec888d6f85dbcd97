import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, enc, type Trigger, type TriggerDescription } from '../api.js';
import { ConfirmButton, ErrorLine, Loading, LineChart, Section, Stat, Table } from '../components.js';
import { usePoll, useSeries } from '../hooks.js';
import { targetText } from './triggers.js';

/** The delivery settings as the API names them, defaults filled in by the server. */
function settings(t: Trigger): [string, string][] {
  const rows: [string, string | number | boolean | undefined][] = [
    ['target', targetText(t.target)],
    ['target.timeout_ms', t.target.timeout_ms],
    ['batch_size', t.batch_size],
    ['starting_position', t.starting_position],
    [
      'starting_position_timestamp',
      t.starting_position_timestamp === undefined ? undefined : new Date(t.starting_position_timestamp).toISOString(),
    ],
    ['maximum_batching_window_ms', t.maximum_batching_window_ms],
    ['maximum_retry_attempts', t.maximum_retry_attempts === -1 ? '-1 (infinite)' : t.maximum_retry_attempts],
    [
      'maximum_record_age_seconds',
      t.maximum_record_age_seconds === -1 ? '-1 (infinite)' : t.maximum_record_age_seconds,
    ],
    ['bisect_batch_on_function_error', t.bisect_batch_on_function_error],
    ['function_response_types', t.function_response_types.join(', ') || '–'],
    ['on_failure_destination', t.on_failure_destination ?? '–'],
    ['filter_criteria', t.filter_criteria?.filters.map((f) => f.pattern).join('\n') ?? '–'],
    ['ordering', t.ordering],
    ['key_lanes', t.key_lanes],
    ['created_at', t.created_at],
  ];
  return rows
    .filter((r): r is [string, string | number | boolean] => r[1] !== undefined)
    .map(([k, v]) => [k, String(v)]);
}

function Actions({ trigger, onDone }: { trigger: Trigger; onDone: () => void }) {
  const [error, setError] = useState<Error>();
  const [result, setResult] = useState<string>();
  const name = trigger.trigger_name;
  const run = async (what: 'pause' | 'resume' | 'delete') => {
    setError(undefined);
    setResult(undefined);
    try {
      if (what === 'delete') {
        await api(`/triggers/${enc(name)}`, { method: 'DELETE' });
        location.hash = '#/triggers';
        return;
      }
      const t = await api<Trigger>(`/triggers/${enc(name)}/${what}`, { method: 'POST' });
      setResult(t.state === 'PAUSED' ? 'Paused: nothing is delivered until it is resumed.' : 'Resumed.');
      onDone();
    } catch (e) {
      setError(e as Error);
    }
  };
  return (
    <Section title="Actions" id="actions">
      <div class="actions">
        {trigger.state === 'ENABLED' ? (
          <ConfirmButton
            label="Pause…"
            question={`Pause ${name}? Its partitions stop being delivered (and committed) until it is resumed.`}
            confirm="Pause trigger"
            onConfirm={() => run('pause')}
          />
        ) : (
          <ConfirmButton
            label="Resume…"
            question={`Resume ${name}? Delivery goes on from its committed offsets.`}
            confirm="Resume trigger"
            onConfirm={() => run('resume')}
          />
        )}
        <ConfirmButton
          label="Delete…"
          question={`Delete ${name}? Its consumer group ${trigger.group_id} and its offsets stay.`}
          confirm="Delete trigger"
          onConfirm={() => run('delete')}
        />
      </div>
      <ErrorLine error={error} />
      {result && (
        <p class="ok" role="status">
          {result}
        </p>
      )}
    </Section>
  );
}

export function TriggerPage({ trigger }: { trigger: string }) {
  const d = usePoll(() => api<TriggerDescription>(`/triggers/${enc(trigger)}`), 2000, [trigger]);
  const { series, push } = useSeries();
  useEffect(() => {
    if (d.data) push(Date.now() / 1000, d.data.lag);
  }, [d.data]);
  const t = d.data;
  return (
    <>
      <p class="crumbs">
        <a href="#/triggers">Triggers</a> / trigger
      </p>
      <h1 tabIndex={-1}>{trigger}</h1>
      <ErrorLine error={d.error} />
      <Loading data={d.data} error={d.error} />
      {t && (
        <>
          <dl class="stats" aria-label="Trigger">
            <Stat label="State" value={t.state} />
            <Stat label="Total lag" value={t.lag} />
            <Stat label="Partitions" value={t.partitions.length} />
            <Stat label="Target" value={t.target.type} />
          </dl>
          <p>
            Topic <a href={`#/topics/${enc(t.topic_name)}`}>{t.topic_name}</a>, delivered as consumer group{' '}
            <a href={`#/groups/${enc(t.group_id)}`}>{t.group_id}</a> to {targetText(t.target)}.
          </p>
          <Actions trigger={t} onDone={d.reload} />
          <Section title="Positions" id="positions">
            <LineChart label="Total lag" unit="records" data={series} />
            <Table
              caption="Position and lag per partition"
              head={['Partition', 'Committed offset', 'Log start', 'High watermark', 'Lag', 'Delivering until']}
            >
              {t.partitions.map((p) => (
                <tr key={p.partition_id}>
                  <th scope="row">{p.partition_id}</th>
                  <td>{p.committed_offset ?? '–'}</td>
                  <td>{p.log_start_offset}</td>
                  <td>{p.high_watermark}</td>
                  <td>{p.lag}</td>
                  <td>{p.delivering_until ?? '–'}</td>
                </tr>
              ))}
            </Table>
          </Section>
          <Section title="Settings" id="settings">
            <dl class="settings">
              {settings(t).map(([k, v]) => (
                <Fragment key={k}>
                  <dt>{k}</dt>
                  <dd>{v}</dd>
                </Fragment>
              ))}
            </dl>
          </Section>
        </>
      )}
    </>
  );
}
