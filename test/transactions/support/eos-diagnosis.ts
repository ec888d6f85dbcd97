/**
 * What the exactly-once test quotes when it fails: the stored facts of the pipeline, read from the
 * metadata store once the server is stopped. The output partition's index entries and abort items
 * (offsets, producer id/epoch, markers), its commit log's entries (appends and whole-state changes,
 * folded or not), its state (open transactions, fold position), the group's committed offset and
 * the transactional id's state: enough to tell a transaction committed twice (the input read again)
 * from an aborted one shown as committed.
 */
import type { MetadataStore } from '../../../src/storage/ports.js';
import type { CommitRecord, PartitionState } from '../../../src/partition/partition-state.js';
import { unpackEntry } from '../../../src/partition/shard-log.js';

type Packed = Parameters<typeof unpackEntry>[0];

const producerOf = (c: CommitRecord) =>
  c.producer ? ` pid ${c.producer.producerId}/${c.producer.producerEpoch} seq ${c.producer.baseSequence}` : '';
const controlOf = (c: CommitRecord) =>
  c.control
    ? ` ${c.control.type} of pid ${c.control.producerId}/${c.control.producerEpoch} from ${c.control.firstOffset}`
    : '';
const commitLine = (c: CommitRecord) =>
  `${c.baseOffset}..${c.lastOffset} epoch ${c.leaderEpoch}${producerOf(c)}${controlOf(c)}`;
const stateLine = (s: PartitionState) =>
  `hw ${s.highWatermark} clog ${s.clog ?? '-'} openTxns ${JSON.stringify(s.openTxns ?? {})} last ${s.lastCommit ? commitLine(s.lastCommit) : '-'}`;

export async function describePipeline(
  metadata: MetadataStore,
  o: { output: string; group: string; transactionalId: string },
): Promise<string> {
  const lines: string[] = [];
  const part = await metadata.query<unknown>(`part#${o.output}#0`);
  for (const i of part) {
    if (i.sk === 'state') lines.push(`${o.output}-0 state: ${stateLine(i.value as PartitionState)}`);
    else if (i.sk.startsWith('idx#')) lines.push(`  index ${commitLine(i.value as CommitRecord)}`);
    else lines.push(`  ${i.sk} ${JSON.stringify(i.value)}`);
  }
  for (const i of await metadata.query<unknown>(`clog#${o.output}#0`)) {
    if (!i.sk.startsWith('e#')) {
      lines.push(`  log ${i.sk} ${JSON.stringify(i.value)}`);
      continue;
    }
    const e = unpackEntry(i.value as Packed);
    const pr = e.producer ? ` pid ${e.producer.producerId}/${e.producer.producerEpoch}` : '';
    const appends = e.appends.map(
      (a) => `append p${a.partition} @${a.baseOffset}+${a.recordCount} epoch ${a.leaderEpoch}`,
    );
    const states = e.states.map(
      (s) =>
        `state p${s.partition} ${s.commit ? commitLine(s.commit) : ''} -> hw ${s.state.highWatermark} openTxns ${JSON.stringify(s.state.openTxns ?? {})}`,
    );
    lines.push(`  log ${i.sk}${pr}: ${[...appends, ...states].join('; ')}`);
  }
  const group = await metadata.query<unknown>(`group#${o.group}`);
  for (const i of group) if (i.sk.startsWith('off#')) lines.push(`group ${o.group} ${i.sk} ${JSON.stringify(i.value)}`);
  for (const i of await metadata.query<unknown>(`txn#${o.transactionalId}`))
    lines.push(`txn ${o.transactionalId} ${i.sk} ${JSON.stringify(i.value)}`);
  return lines.join('\n');
}
