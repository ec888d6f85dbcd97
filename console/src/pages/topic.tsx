import { useEffect, useRef } from 'preact/hooks';
import { api, apiList, enc, type List, type Partition, type Topic, type TopicConfig } from '../api.js';
import { formatBytes, plural } from '../bytes.js';
import { ErrorLine, Loading, LineChart, Section, Table } from '../components.js';
import { ConfigRow } from '../configs.js';
import { usePoll, useSeries } from '../hooks.js';

export function TopicPage({ topic }: { topic: string }) {
  const t = usePoll(() => api<Topic>(`/topics/${enc(topic)}`), 0, [topic]);
  const configs = usePoll(() => api<List<TopicConfig>>(`/topics/${enc(topic)}/configs`), 0, [topic]);
  const partitions = usePoll(() => apiList<Partition>(`/topics/${enc(topic)}/partitions`), 2000, [topic]);
  const { series, push } = useSeries();
  const last = useRef<{ at: number; hw: number } | undefined>(undefined);
  useEffect(() => {
    if (!partitions.data) return;
    const at = Date.now();
    const hw = partitions.data.data.reduce((n, p) => n + p.high_watermark, 0);
    if (last.current) push(at / 1000, Math.round(((hw - last.current.hw) * 1000) / Math.max(1, at - last.current.at)));
    last.current = { at, hw };
  }, [partitions.data]);
  return (
    <>
      <p class="crumbs">
        <a href="#/">Overview</a> / topic
      </p>
      <h1 tabIndex={-1}>{topic}</h1>
      <ErrorLine error={t.error} />
      <Loading data={t.data} error={t.error} />
      {t.data && (
        <p>
          {plural(t.data.partitions_count, 'partition')}, replication factor {t.data.replication_factor}.{' '}
          <a href={`#/topics/${enc(topic)}/records`}>Browse and produce records</a>
        </p>
      )}
      <Section title="Throughput" id="throughput">
        <LineChart label="Records in" unit="records/s" data={series} />
      </Section>
      <Section title="Partitions" id="partitions">
        <ErrorLine error={partitions.error} />
        <Loading data={partitions.data} error={partitions.error} />
        {partitions.data && (
          <Table
            caption={`Partitions of ${topic}`}
            head={[
              'Partition',
              'Leader',
              'Leader epoch',
              'Replicas',
              'ISR',
              'Log start',
              'Last stable',
              'High watermark',
              'Log end',
              'Size',
              '',
            ]}
          >
            {partitions.data.data.map((p) => (
              <tr key={p.partition_id}>
                <th scope="row">{p.partition_id}</th>
                <td>{p.leader_id}</td>
                <td>{p.leader_epoch}</td>
                <td>{p.replica_ids.join(', ')}</td>
                <td class={p.isr.length < p.replica_ids.length ? 'warn' : undefined}>{p.isr.join(', ')}</td>
                <td>{p.log_start_offset}</td>
                <td>{p.last_stable_offset}</td>
                <td>{p.high_watermark}</td>
                <td>{p.log_end_offset}</td>
                <td>{formatBytes(p.size_in_bytes)}</td>
                <td>
                  <a
                    href={`#/topics/${enc(topic)}/records?partition=${p.partition_id}&offset=${p.log_start_offset}`}
                    aria-label={`Browse partition ${p.partition_id}`}
                  >
                    Browse
                  </a>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
      <Section title="Configs" id="configs">
        <ErrorLine error={configs.error} />
        <Loading data={configs.data} error={configs.error} />
        {configs.data && (
          <Table caption={`Configs of ${topic}`} head={['Name', 'Value', 'Source']}>
            {configs.data.data.map((c) => (
              <ConfigRow
                key={c.name}
                config={c}
                save={(value) =>
                  api(`/topics/${enc(topic)}/configs:alter`, {
                    method: 'POST',
                    body: {
                      data: [
                        {
                          name: c.name,
                          ...(value === undefined ? { operation: 'DELETE' } : { operation: 'SET', value }),
                        },
                      ],
                    },
                  })
                }
                onSaved={configs.reload}
              />
            ))}
          </Table>
        )}
      </Section>
    </>
  );
}
