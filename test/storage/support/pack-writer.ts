/**
 * A child process for the crash test of test/storage/local-object-store.test.ts: puts objects
 * `k/<i>` (bytes a function of i, sizes up to 64 KiB) into the LocalObjectStore at $PACK_WRITER_DIR,
 * eight at a time, and prints `ok <i>` once each put has resolved, until it is killed.
 */
import { LocalObjectStore } from '../../../src/storage/local-object-store.js';

export const bodyOf = (i: number): Uint8Array => {
  const size = ((i * 7919) % 65_536) + 1;
  return Uint8Array.from({ length: size }, (_, j) => (i * 31 + j) % 251);
};

const dir = process.env.PACK_WRITER_DIR;
if (dir) {
  const store = new LocalObjectStore(dir, { packBytes: 256 * 1024 });
  let next = Number(process.env.PACK_WRITER_FIRST ?? 0);
  const worker = async () => {
    for (;;) {
      const i = next++;
      await store.put(`k/${i}`, bodyOf(i));
      process.stdout.write(`ok ${i}\n`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}
