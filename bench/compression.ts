/**
 * Each codec on one record batch of ~1 MiB (4,000 JSON-like records of ~250 bytes): the ratio,
 * and compress / decompress throughput in MiB/s of uncompressed bytes (the median of 5 runs).
 * Short: a few seconds.  npx tsx bench/compression.ts
 */
import { compress, CODEC, decompress, ZSTD_ENGINE } from '../src/wire/compression/index.js';
import { encodeRecordBatch, RECORD_BATCH_OVERHEAD } from '../src/wire/record-batch.js';

const records = Array.from({ length: 4000 }, (_, i) => ({
  key: Buffer.from(`user-${i % 977}`),
  value: Buffer.from(
    JSON.stringify({
      id: i,
      user: `user-${i % 977}`,
      event: ['view', 'click', 'purchase', 'scroll'][i % 4],
      page: `/products/${(i * 7919) % 5000}`,
      ts: 1_700_000_000_000 + i * 13,
      session: ((i * 2654435761) >>> 0).toString(16),
      note: 'the quick brown fox jumps over the lazy dog',
    }),
  ),
  headers: [],
  timestamp: 1_700_000_000_000 + i,
}));
const plain = encodeRecordBatch(records).subarray(RECORD_BATCH_OVERHEAD);
const mib = plain.byteLength / 1024 / 1024;

const median = (f: () => void) => {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    f();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[2]!;
};

console.log(`records ${plain.byteLength} bytes; zstd engine: ${ZSTD_ENGINE}; Node ${process.version}`);
console.log('codec   ratio  compress MiB/s  decompress MiB/s');
for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
  let packed = compress(codec, plain);
  const c = median(() => {
    packed = compress(codec, plain);
  });
  const d = median(() => decompress(CODEC[codec], packed, 64 << 20));
  console.log(
    `${codec.padEnd(7)} ${(plain.byteLength / packed.byteLength).toFixed(1).padStart(5)}  ${(mib / (c / 1000)).toFixed(0).padStart(14)}  ${(mib / (d / 1000)).toFixed(0).padStart(16)}`,
  );
}
