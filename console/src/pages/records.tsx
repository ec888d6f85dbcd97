import { useEffect, useState } from 'preact/hooks';
import { api, enc, type Data, type RecordList, type Topic } from '../api.js';
import { base64ToBytes, plural, show, utf8ToBase64, type View } from '../bytes.js';
import { ErrorLine, Loading, Form, PartitionSelect, Section, Table } from '../components.js';
import { usePoll } from '../hooks.js';

const bytesOf = (d: Data | null): Uint8Array | null =>
  d === null || d.data === null ? null : base64ToBytes(String(d.data));

function Browse({ topic, partitions, initial }: { topic: string; partitions: number; initial: URLSearchParams }) {
  const [partition, setPartition] = useState(Number(initial.get('partition') ?? 0));
  const [from, setFrom] = useState<'offset' | 'timestamp'>('offset');
  const [offset, setOffset] = useState(initial.get('offset') ?? '0');
  const [time, setTime] = useState('');
  const [view, setView] = useState<View>('text');
  const [list, setList] = useState<RecordList>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const fetchFrom = async (start: number) => {
    setBusy(true);
    setError(undefined);
    try {
      // format=binary: the bytes as they are, shown here as text, JSON or hex without a second fetch.
      setList(
        await api<RecordList>(
          `/topics/${enc(topic)}/partitions/${partition}/records?offset=${start}&max_bytes=65536&format=binary`,
        ),
      );
      setOffset(String(start));
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  const submit = async () => {
    if (from === 'offset') return fetchFrom(Number(offset));
    try {
      const ms = new Date(time).getTime();
      if (Number.isNaN(ms)) throw new Error('Give a date and time');
      const found = await api<{ offset: number | null }>(
        `/topics/${enc(topic)}/partitions/${partition}/offset?offset_type=timestamp&timestamp=${ms}`,
      );
      if (found.offset === null || found.offset < 0) {
        setList(undefined);
        throw new Error('No record at or after that time');
      }
      await fetchFrom(found.offset);
    } catch (e) {
      setError(e as Error);
    }
  };
  useEffect(() => {
    void fetchFrom(Number(offset));
  }, [partition]);
  // Produced records show up here: the form below raises this event.
  useEffect(() => {
    const on = () => void fetchFrom(Number(offset));
    window.addEventListener('records-produced', on);
    return () => window.removeEventListener('records-produced', on);
  });

  return (
    <Section title="Browse" id="browse">
      <Form class="controls" onSubmit={submit}>
        <PartitionSelect partitions={partitions} value={partition} onChange={(v) => setPartition(Number(v))} />
        <fieldset>
          <legend>From</legend>
          <label>
            <input type="radio" name="from" checked={from === 'offset'} onChange={() => setFrom('offset')} /> offset
          </label>
          <label>
            <input type="radio" name="from" checked={from === 'timestamp'} onChange={() => setFrom('timestamp')} /> time
          </label>
        </fieldset>
        {from === 'offset' ? (
          <label>
            Offset
            <input type="number" min={0} value={offset} onInput={(e) => setOffset(e.currentTarget.value)} />
          </label>
        ) : (
          <label>
            Time
            <input type="datetime-local" step={1} value={time} onInput={(e) => setTime(e.currentTarget.value)} />
          </label>
        )}
        <button type="submit" disabled={busy}>
          Fetch
        </button>
        <fieldset>
          <legend>Show as</legend>
          {(['text', 'json', 'hex'] as const).map((v) => (
            <label key={v}>
              <input type="radio" name="view" checked={view === v} onChange={() => setView(v)} /> {v}
            </label>
          ))}
        </fieldset>
      </Form>
      <ErrorLine error={error} />
      {list && (
        <>
          <p aria-live="polite">
            Partition {partition}: log start {list.log_start_offset}, high watermark {list.high_watermark};{' '}
            {plural(list.records.length, 'record')} shown.
          </p>
          <Table
            caption={`Records of ${topic} partition ${partition}`}
            head={['Offset', 'Timestamp', 'Key', 'Value', 'Headers']}
          >
            {list.records.map((r) => (
              <tr key={r.offset}>
                <th scope="row">{r.offset}</th>
                <td class="time">{r.timestamp}</td>
                <td>
                  <pre>{show(bytesOf(r.key), view)}</pre>
                </td>
                <td>
                  <pre>{show(bytesOf(r.value), view)}</pre>
                </td>
                <td>
                  {r.headers.map((h, i) => (
                    <div key={i}>
                      <code>{h.name}</code>:{' '}
                      <code>
                        {show(h.value === null ? null : base64ToBytes(h.value), view === 'json' ? 'text' : view)}
                      </code>
                    </div>
                  ))}
                </td>
              </tr>
            ))}
          </Table>
          {list.next_offset < list.high_watermark && (
            <button type="button" onClick={() => void fetchFrom(list.next_offset)}>
              Next records (from {list.next_offset})
            </button>
          )}
        </>
      )}
    </Section>
  );
}

function Produce({ topic, partitions }: { topic: string; partitions: number }) {
  const [partition, setPartition] = useState('');
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [type, setType] = useState<'STRING' | 'JSON'>('STRING');
  const [headers, setHeaders] = useState('');
  const [result, setResult] = useState('');
  const [error, setError] = useState<Error>();
  const submit = async () => {
    setError(undefined);
    setResult('');
    try {
      let data: unknown = value;
      if (type === 'JSON') {
        try {
          data = JSON.parse(value);
        } catch {
          throw new Error('The value is not valid JSON');
        }
      }
      const hs = headers
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => {
          const i = l.indexOf('=');
          if (i < 1) throw new Error(`Header "${l}" is not name=value`);
          return { name: l.slice(0, i).trim(), value: utf8ToBase64(l.slice(i + 1)) };
        });
      const r = await api<{ partition_id: number; offset: number }>(`/topics/${enc(topic)}/records`, {
        method: 'POST',
        body: {
          ...(partition === '' ? {} : { partition_id: Number(partition) }),
          ...(key === '' ? {} : { key: { type: 'STRING', data: key } }),
          value: { type, data },
          ...(hs.length ? { headers: hs } : {}),
        },
      });
      setResult(`Produced to partition ${r.partition_id} at offset ${r.offset}`);
      window.dispatchEvent(new Event('records-produced'));
    } catch (e) {
      setError(e as Error);
    }
  };
  return (
    <Section title="Produce a record" id="produce">
      <Form class="stack" onSubmit={submit}>
        <PartitionSelect partitions={partitions} value={partition} onChange={setPartition} any="by key (or any)" />
        <label>
          Key (text, empty for none)
          <input value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </label>
        <label>
          Value type
          <select value={type} onChange={(e) => setType(e.currentTarget.value as 'STRING' | 'JSON')}>
            <option value="STRING">text</option>
            <option value="JSON">JSON</option>
          </select>
        </label>
        <label>
          Value
          <textarea rows={3} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
        <label>
          Headers (one name=value a line)
          <textarea rows={2} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} />
        </label>
        <div>
          <button type="submit">Produce</button>
        </div>
      </Form>
      <div aria-live="polite">{result && <p class="ok">{result}</p>}</div>
      <ErrorLine error={error} />
    </Section>
  );
}

export function RecordsPage({ topic, query }: { topic: string; query: URLSearchParams }) {
  const t = usePoll(() => api<Topic>(`/topics/${enc(topic)}`), 0, [topic]);
  return (
    <>
      <p class="crumbs">
        <a href="#/">Overview</a> / <a href={`#/topics/${enc(topic)}`}>{topic}</a> / records
      </p>
      <h1 tabIndex={-1}>Records of {topic}</h1>
      <ErrorLine error={t.error} />
      <Loading data={t.data} error={t.error} />
      {t.data && (
        <>
          <Browse topic={topic} partitions={t.data.partitions_count} initial={query} />
          <Produce topic={topic} partitions={t.data.partitions_count} />
        </>
      )}
    </>
  );
}
