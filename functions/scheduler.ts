/**
 * Lambda entry point for the scheduled maintenance run (an EventBridge rule invokes it; see
 * infra/log-stack.ts). It composes the storage once per cold start, runs one scheduler pass in an
 * observability scope, logs what the pass did and publishes it as metrics (SchedulerWork,
 * SchedulerIncompleteRuns, SchedulerFailures); a failure is rethrown so Lambda's Errors metric and the alarm see it.
 *
 * The maintenance scheduler itself (timers, retention, compaction, segment merge, orphan GC) lives
 * in src/maintenance/scheduler.ts; `runScheduledPass` below runs one pass of it with this function's
 * logging.
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { systemClock } from '../src/clock.js';
import {
  createServices,
  createStorage,
  runMaintenancePass,
  settleBackgroundWork,
  type Storage,
} from '../src/compose.js';
import {
  failureBucketOptions,
  failureMessageOptions,
  lambdaOptions,
  serverConfigFromEnv,
  type ServerConfig,
} from '../src/config/server-config.js';
import type { AppServices } from '../src/services.js';
import { failureBucketWriter } from '../src/storage/failure-bucket-writer.js';
import { failureMessageSender } from '../src/storage/failure-message-sender.js';
import { lazyLambdaInvoker } from '../src/storage/lazy-lambda-invoker.js';
import { instrumentStorage } from './instrumented-storage.js';
import {
  addMetric,
  inScope,
  log,
  Scope,
  scopeMetrics,
  telemetryFromEnv,
  telemetryLogger,
  type Telemetry,
} from './observability.js';

export interface SchedulerDeps {
  config: ServerConfig;
  storage: Storage;
  /** The composition root's services over `storage` (the same as the HTTP functions build). */
  services: AppServices;
  /** Epoch ms by which the pass should stop taking new work (the invocation's timeout, less a margin). */
  deadline: number;
  telemetry: Telemetry;
}

/** What a pass did, as counts by kind of work (e.g. { timersFired: 3, segmentsDeleted: 1 }). */
export type SchedulerReport = Record<string, number>;

/** One pass of src/maintenance's scheduler, its structured logs going through this function's telemetry. */
export async function runScheduledPass(deps: SchedulerDeps): Promise<SchedulerReport> {
  return runMaintenancePass(deps.storage, deps.services, {
    deadline: deps.deadline,
    options: deps.config.scheduler.options,
    logger: telemetryLogger(deps.telemetry),
  });
}

/** Leaves this much of the invocation's time for the pass to finish what it started. */
const SAFETY_MARGIN_MS = 15_000;

const telemetry = telemetryFromEnv(process.env, 'scheduler');
const config = serverConfigFromEnv(process.env);
const storage = instrumentStorage(createStorage(config.backend, 'scheduler'));
// Triggers are delivered here on AWS: each run re-arms every partition with records past its
// trigger's committed offset and delivers until caught up or the deadline (docs/triggers.md).
const services = createServices(config, storage, systemClock, {
  metrics: scopeMetrics,
  logger: telemetryLogger(telemetry),
  runTriggers: true,
  lambda: lazyLambdaInvoker(lambdaOptions(config)),
  putFailureObject: failureBucketWriter(failureBucketOptions(config)),
  sendFailureMessage: failureMessageSender(failureMessageOptions(config)),
});

export const handler = async (
  event: Partial<ScheduledEvent> | undefined,
  context: Context,
): Promise<SchedulerReport> => {
  const scope = new Scope(context.awsRequestId, event?.time ? { scheduledAt: event.time } : {});
  return inScope(telemetry, scope, async () => {
    const started = systemClock.now();
    const deadline = started + Math.max(context.getRemainingTimeInMillis() - SAFETY_MARGIN_MS, 0);
    try {
      await services.features.keepRegistered('scheduler', started, (e) =>
        log(telemetry, 'warn', 'process registration failed', { error: String(e) }),
      );
      const [report, triggerPartitions] = await Promise.all([
        runScheduledPass({ config, storage, services, deadline, telemetry }),
        services.triggers.runner.deliverDue(deadline),
      ]);
      if (triggerPartitions > 0) report.triggerPartitions = triggerPartitions;
      await settleBackgroundWork(services); // nothing runs once the handler returns
      addMetric(
        'SchedulerWork',
        Object.values(report).reduce((n, v) => n + v, 0),
      );
      // A run that stopped at its deadline with units left (infra/monitoring.ts alarms when every run does).
      if (report.incomplete) addMetric('SchedulerIncompleteRuns', report.incomplete);
      log(telemetry, 'info', 'scheduler run', { durationMs: systemClock.now() - started, ...report });
      return report;
    } catch (e) {
      addMetric('SchedulerFailures');
      log(telemetry, 'error', 'scheduler run failed', {
        durationMs: systemClock.now() - started,
        error: e instanceof Error ? e.stack : String(e),
      });
      throw e;
    }
  });
};
