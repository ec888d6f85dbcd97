/**
 * A load generator in its own process (forked by the bench with `--import tsx`): it runs the jobs
 * it is sent over IPC and answers with their results.
 */
import { runJob, type Job } from './load.js';

process.on('message', (msg: { id: number; job: Job }) => {
  runJob(msg.job).then(
    (result) => process.send!({ id: msg.id, result }),
    (e: Error) => process.send!({ id: msg.id, error: e.stack ?? String(e) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
