/**
 * A partition's wait for commits is shared by the runs that follow each other on it: a run may end
 * with its wait still armed (a KEY run's idle wait), and that wait's timer must not undo the next
 * run's wait, or a commit would no longer wake it (its window, or its idle lanes, would run out).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CommitSignal } from '../../src/triggers/trigger-runner.js';

describe('CommitSignal', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a stale wait running out leaves the newer wait to be woken by a commit', async () => {
    vi.useFakeTimers();
    const commits = new CommitSignal();
    const stale = commits.wait(100);
    let woken: boolean | undefined;
    void commits.wait(60_000).then((c) => {
      woken = c;
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(await stale).toBe(false);
    commits.signal(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(woken).toBe(true);
  });

  it('a commit wakes the wait in progress; a stop ends it with false', async () => {
    vi.useFakeTimers();
    const commits = new CommitSignal();
    const first = commits.wait(60_000);
    commits.signal(true);
    expect(await first).toBe(true);
    const second = commits.wait(60_000);
    commits.signal(false);
    expect(await second).toBe(false);
    // No wait in progress: a signal is a no-op, and the next wait runs its time.
    commits.signal(true);
    const third = commits.wait(50);
    await vi.advanceTimersByTimeAsync(50);
    expect(await third).toBe(false);
  });
});
