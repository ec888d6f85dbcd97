import { useEffect } from 'preact/hooks';
import { api, enc, type GroupDescription } from '../api.js';
import { ErrorLine, Loading, LineChart, Section, Stat, Table } from '../components.js';
import { usePoll, useSeries } from '../hooks.js';
import { ResetOffsets } from '../reset.js';

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
        <a href="#/groups">Groups</a> / consumer group
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
          <ResetOffsets
            path={`/consumer-groups/${enc(group)}/offsets:reset`}
            strategies={[
              'to-earliest',
              'to-latest',
              'to-current',
              'to-offset',
              'shift-by',
              'to-datetime',
              'by-duration',
            ]}
            topics={topics}
            intro="The group must have no members. Preview the plan (a dry run), then execute it."
            offsetLabel="offset"
            onDone={d.reload}
          />
        </>
      )}
    </>
  );
}
