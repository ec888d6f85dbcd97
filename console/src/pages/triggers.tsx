import { api, enc, type List, type Trigger, type TriggerDescription, type TriggerTarget } from '../api.js';
import { ErrorLine, Loading, Table } from '../components.js';
import { usePoll } from '../hooks.js';

/** Where a trigger delivers: the webhook's URL or the function's ARN. */
export const targetText = (t: TriggerTarget) =>
  t.type === 'WEBHOOK' ? `webhook ${t.url}` : `Lambda ${t.function_arn}`;

/** The triggers, each with its lag from its description (the list has none). */
async function loadTriggers() {
  const list = await api<List<Trigger>>('/triggers');
  const lags = await Promise.all(
    list.data.map((t) =>
      api<TriggerDescription>(`/triggers/${enc(t.trigger_name)}`).then(
        (d) => d.lag,
        () => undefined,
      ),
    ),
  );
  return list.data.map((t, i) => ({ ...t, lag: lags[i] }));
}

export function TriggersPage() {
  const { data, error } = usePoll(loadTriggers, 3000, []);
  return (
    <>
      <h1 tabIndex={-1}>Triggers</h1>
      <p>Topics bound to a webhook or a Lambda function, each delivered as a consumer group of its own.</p>
      <ErrorLine error={error} />
      <Loading data={data} error={error} />
      {data && (
        <Table caption="Triggers" head={['Trigger', 'Topic', 'Target', 'State', 'Lag', 'Consumer group']}>
          {data.map((t) => (
            <tr key={t.trigger_name}>
              <th scope="row">
                <a href={`#/triggers/${enc(t.trigger_name)}`}>{t.trigger_name}</a>
              </th>
              <td>
                <a href={`#/topics/${enc(t.topic_name)}`}>{t.topic_name}</a>
              </td>
              <td>{targetText(t.target)}</td>
              <td class={t.state === 'PAUSED' ? 'warn' : undefined}>{t.state}</td>
              <td>{t.lag ?? '–'}</td>
              <td>
                <a href={`#/groups/${enc(t.group_id)}`}>{t.group_id}</a>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {data?.length === 0 && <p>No triggers yet.</p>}
    </>
  );
}
