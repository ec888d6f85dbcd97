import {
  api,
  apiList,
  type GroupListing,
  type LagSummary,
  type List,
  type Partition,
  type ShareGroupDescription,
  type Topic,
  type Trigger,
  enc,
} from '../api.js';
import { formatBytes } from '../bytes.js';
import { ErrorLine, Loading, Section, Stat, Table } from '../components.js';
import { usePoll } from '../hooks.js';
import { groupHref } from './groups.js';

interface TopicRow extends Topic {
  records: number;
  bytes: number;
}

async function loadOverview() {
  const [topics, groups, brokers, triggers] = await Promise.all([
    api<List<Topic>>('/topics'),
    api<List<GroupListing>>('/groups'),
    api<List<{ broker_id: number }>>('/brokers'),
    api<List<Trigger>>('/triggers'),
  ]);
  const rows: TopicRow[] = await Promise.all(
    topics.data.map(async (t) => {
      const ps = await apiList<Partition>(`/topics/${enc(t.topic_name)}/partitions`);
      return {
        ...t,
        records: ps.data.reduce((n, p) => n + (p.high_watermark - p.log_start_offset), 0),
        bytes: ps.data.reduce((n, p) => n + p.size_in_bytes, 0),
      };
    }),
  );
  const lags = await Promise.all(
    groups.data.map((g) =>
      (g.type === 'SHARE'
        ? api<ShareGroupDescription>(`/share-groups/${enc(g.group_id)}`).then((d) => d.lag)
        : api<LagSummary>(`/consumer-groups/${enc(g.group_id)}/lag-summary`).then((l) => l.total_lag)
      ).catch(() => undefined),
    ),
  );
  return {
    topics: rows,
    groups: groups.data.map((g, i) => ({ ...g, lag: lags[i] })),
    brokers: brokers.data.length,
    triggers: triggers.data.length,
  };
}

export function OverviewPage() {
  const { data, error } = usePoll(loadOverview, 3000, []);
  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <ErrorLine error={error} />
      <Loading data={data} error={error} />
      {data && (
        <>
          <dl class="stats" aria-label="Cluster totals">
            <Stat label="Topics" value={data.topics.length} />
            <Stat label="Partitions" value={data.topics.reduce((n, t) => n + t.partitions_count, 0)} />
            <Stat label="Records" value={data.topics.reduce((n, t) => n + t.records, 0)} />
            <Stat label="Bytes stored" value={formatBytes(data.topics.reduce((n, t) => n + t.bytes, 0))} />
            <Stat label="Consumer groups" value={data.groups.filter((g) => g.type !== 'SHARE').length} />
            <Stat label="Share groups" value={data.groups.filter((g) => g.type === 'SHARE').length} />
            <Stat label="Triggers" value={data.triggers} />
            <Stat label="Replica stores" value={data.brokers} />
          </dl>
          <Section title="Topics" id="topics">
            <Table caption="Topics" head={['Topic', 'Partitions', 'Replication', 'Records', 'Bytes stored']}>
              {data.topics.map((t) => (
                <tr key={t.topic_name}>
                  <th scope="row">
                    <a href={`#/topics/${enc(t.topic_name)}`}>{t.topic_name}</a>
                  </th>
                  <td>{t.partitions_count}</td>
                  <td>{t.replication_factor}</td>
                  <td>{t.records}</td>
                  <td>{formatBytes(t.bytes)}</td>
                </tr>
              ))}
            </Table>
            {data.topics.length === 0 && <p>No topics yet.</p>}
          </Section>
          <Section title="Groups" id="groups">
            <Table caption="Groups" head={['Group', 'Type', 'State', 'Total lag']}>
              {data.groups.map((g) => (
                <tr key={`${g.type}-${g.group_id}`}>
                  <th scope="row">
                    <a href={groupHref(g)}>{g.group_id}</a>
                  </th>
                  <td>{g.type}</td>
                  <td>{g.state}</td>
                  <td>{g.lag ?? '–'}</td>
                </tr>
              ))}
            </Table>
            {data.groups.length === 0 && <p>No groups yet.</p>}
          </Section>
        </>
      )}
    </>
  );
}
