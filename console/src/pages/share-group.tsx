import { useEffect, useState } from 'preact/hooks';
import { api, enc, type List, type ShareGroupDescription } from '../api.js';
import { type ConfigEntry, ConfigRow } from '../configs.js';
import { ConfirmButton, ErrorLine, Loading, LineChart, Section, Stat, Table } from '../components.js';
import { usePoll, useSeries } from '../hooks.js';
import { ResetOffsets } from '../reset.js';

/** DeleteShareGroupOffsets of one topic: its share-partitions start again by share.auto.offset.reset. */
function DeleteOffsets({ group, topics, onDone }: { group: string; topics: string[]; onDone: () => void }) {
  const [topic, setTopic] = useState(topics[0] ?? '');
  const [result, setResult] = useState<string>();
  const [error, setError] = useState<Error>();
  useEffect(() => {
    if (!topics.includes(topic)) setTopic(topics[0] ?? '');
  }, [topics.join(',')]);
  const run = async () => {
    setError(undefined);
    setResult(undefined);
    try {
      const r = await api<{ data: { topic_name: string; error: string | null }[] }>(
        `/share-groups/${enc(group)}/offsets:delete`,
        { method: 'POST', body: { topics: [topic] } },
      );
      const failed = r.data.find((t) => t.error);
      if (failed) setError(new Error(`${failed.error}: the offsets of ${failed.topic_name} were not deleted`));
      else setResult(`Offsets of ${topic} deleted.`);
      onDone();
    } catch (e) {
      setError(e as Error);
    }
  };
  // Kept after the last topic's offsets went, so that the result stays in view.
  if (topics.length === 0 && !result && !error) return null;
  return (
    <Section title="Delete offsets" id="delete-offsets">
      <p>The topic's share-partitions lose their state and start again by share.auto.offset.reset.</p>
      {topics.length > 0 && (
        <div class="actions">
          <label>
            Topic
            <select value={topic} onChange={(e) => setTopic(e.currentTarget.value)}>
              {topics.map((t) => (
                <option value={t} key={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          <ConfirmButton
            label="Delete offsets…"
            question={`Delete the share group's offsets of ${topic}?`}
            confirm="Delete offsets"
            onConfirm={run}
          />
        </div>
      )}
      <ErrorLine error={error} />
      {result && (
        <p class="ok" role="status">
          {result}
        </p>
      )}
    </Section>
  );
}

/** DeleteGroups of the share group: refused (NON_EMPTY_GROUP) while it has members or locked records. */
function DeleteGroup({ group }: { group: string }) {
  const [error, setError] = useState<Error>();
  const run = async () => {
    setError(undefined);
    try {
      await api(`/share-groups/${enc(group)}`, { method: 'DELETE' });
      location.hash = '#/groups';
    } catch (e) {
      setError(e as Error);
    }
  };
  return (
    <Section title="Delete group" id="delete-group">
      <p>
        The group and its share-partitions' state go: a group of the name used again starts by share.auto.offset.reset
        (its configs stay). The group must be empty.
      </p>
      <div class="actions">
        <ConfirmButton
          label="Delete group…"
          question={`Delete the share group ${group} and its state?`}
          confirm="Delete group"
          onConfirm={run}
        />
      </div>
      <ErrorLine error={error} />
    </Section>
  );
}

export function ShareGroupPage({ group }: { group: string }) {
  const d = usePoll(() => api<ShareGroupDescription>(`/share-groups/${enc(group)}`), 2000, [group]);
  // Share group configs are set on the group or not at all: the group is their only source.
  const configs = usePoll(
    () =>
      api<List<Omit<ConfigEntry, 'source'>>>(`/share-groups/${enc(group)}/configs`).then((l) =>
        l.data.map((c) => ({ ...c, source: 'group' })),
      ),
    0,
    [group],
  );
  const configPath = (name: string) => `/share-groups/${enc(group)}/configs/${enc(name)}`;
  const { series, push } = useSeries();
  useEffect(() => {
    if (d.data) push(Date.now() / 1000, d.data.lag);
  }, [d.data]);
  const g = d.data;
  const topics = [...new Set(g?.partitions.map((p) => p.topic_name) ?? [])];
  return (
    <>
      <p class="crumbs">
        <a href="#/groups">Groups</a> / share group
      </p>
      <h1 tabIndex={-1}>{group}</h1>
      <ErrorLine error={d.error} />
      <Loading data={d.data} error={d.error} />
      {g && (
        <>
          <dl class="stats" aria-label="Share group">
            <Stat label="State" value={g.state} />
            <Stat label="Members" value={g.members.length} />
            <Stat label="Total lag" value={g.lag} />
            <Stat label="Locked records" value={g.partitions.reduce((n, p) => n + p.in_flight.acquired, 0)} />
          </dl>
          <Section title="Share-partitions" id="partitions">
            <LineChart label="Total lag" unit="records" data={series} />
            <p>
              SPSO: every record below it is acknowledged or archived. SPEO: records from it on were never delivered.
              Between them, the in-flight records by state.
            </p>
            {g.partitions.length === 0 ? (
              <p>No share-partition yet: nothing was received, or its offsets were deleted.</p>
            ) : (
              <Table
                caption="Share-partitions"
                head={[
                  'Topic',
                  'Partition',
                  'SPSO',
                  'SPEO',
                  'High watermark',
                  'Lag',
                  'Available',
                  'Locked',
                  'Acknowledged',
                  'Archived',
                  'State epoch',
                ]}
              >
                {g.partitions.map((p) => (
                  <tr key={`${p.topic_name}-${p.partition_id}`}>
                    <th scope="row">
                      <a href={`#/topics/${enc(p.topic_name)}`}>{p.topic_name}</a>
                    </th>
                    <td>{p.partition_id}</td>
                    <td>{p.start_offset}</td>
                    <td>{p.end_offset}</td>
                    <td>{p.high_watermark}</td>
                    <td>{p.lag}</td>
                    <td>{p.in_flight.available}</td>
                    <td>{p.in_flight.acquired}</td>
                    <td>{p.in_flight.acknowledged}</td>
                    <td>{p.in_flight.archived}</td>
                    <td>{p.state_epoch}</td>
                  </tr>
                ))}
              </Table>
            )}
          </Section>
          <Section title="Members" id="members">
            <p>Kafka share consumers (ShareGroupHeartbeat). HTTP receivers need no membership and are not listed.</p>
            {g.members.length === 0 ? (
              <p>No members.</p>
            ) : (
              <Table
                caption="Members and their assignment"
                head={['Member', 'Client', 'Host', 'Epoch', 'Subscribed', 'Assigned partitions', 'Last heartbeat']}
              >
                {g.members.map((m) => (
                  <tr key={m.member_id}>
                    <th scope="row">
                      <code>{m.member_id}</code>
                    </th>
                    <td>{m.client_id}</td>
                    <td>{m.client_host}</td>
                    <td>{m.member_epoch}</td>
                    <td>{m.subscribed_topic_names.join(', ')}</td>
                    <td>
                      {m.assignment.flatMap((a) => a.partition_ids.map((p) => `${a.topic_name}-${p}`)).join(', ') ||
                        '–'}
                    </td>
                    <td>{m.last_heartbeat}</td>
                  </tr>
                ))}
              </Table>
            )}
          </Section>
          <ResetOffsets
            path={`/share-groups/${enc(group)}/offsets:reset`}
            strategies={['to-earliest', 'to-latest', 'to-offset', 'to-datetime', 'by-duration']}
            topics={topics}
            intro="The group must be empty: no members and no record under an unexpired lock (stop the receivers, and let their locks end or release what they hold). Each share-partition starts afresh at the new SPSO, its in-flight records forgotten. Preview the plan (a dry run), then execute it."
            offsetLabel="SPSO"
            onDone={d.reload}
          />
          <DeleteOffsets group={group} topics={topics} onDone={d.reload} />
          <DeleteGroup group={group} />
          <Section title="Configs" id="configs">
            <ErrorLine error={configs.error} />
            {configs.data && (
              <Table caption={`Configs of ${group}`} head={['Name', 'Value', 'Source']}>
                {configs.data.map((c) => (
                  <ConfigRow
                    key={c.name}
                    config={c}
                    save={(value) =>
                      value === undefined
                        ? api(configPath(c.name), { method: 'DELETE' })
                        : api(configPath(c.name), { method: 'PUT', body: { value } })
                    }
                    onSaved={configs.reload}
                  />
                ))}
              </Table>
            )}
          </Section>
        </>
      )}
    </>
  );
}
