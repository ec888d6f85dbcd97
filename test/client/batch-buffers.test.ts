import { describe, expect, it } from 'vitest';
import { BatchBuffers } from '../../src/client/producer/batch-buffers.js';

const MiB = 1024 * 1024;

describe('BatchBuffers (encoded batches reuse memory)', () => {
  it('hands out memory given back, in the power-of-two class of the size asked', () => {
    const buffers = new BatchBuffers(8 * MiB);
    const first = buffers.take(700_000);
    expect(first.byteLength).toBe(700_000);
    expect(first.buffer.byteLength).toBe(MiB);
    buffers.release(first);
    expect(buffers.keptBytes).toBe(MiB);
    const again = buffers.take(600_000);
    expect(again.buffer).toBe(first.buffer);
    expect(again.byteLength).toBe(600_000);
    expect(buffers.keptBytes).toBe(0);
    // Another class gets its own memory.
    expect(buffers.take(2 * MiB).buffer).not.toBe(first.buffer);
  });

  it('keeps at most maxFreeBytes, and no small buffers', () => {
    const buffers = new BatchBuffers(2 * MiB);
    const held = [buffers.take(MiB), buffers.take(MiB), buffers.take(MiB)];
    for (const b of held) buffers.release(b);
    expect(buffers.keptBytes).toBe(2 * MiB);
    const small = buffers.take(1000);
    expect(small.buffer.byteLength).toBe(1000);
    buffers.release(small);
    expect(buffers.keptBytes).toBe(2 * MiB);
  });
});
