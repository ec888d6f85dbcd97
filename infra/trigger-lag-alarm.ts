/**
 * The alarm on triggers' offset lag (TriggerOffsetLag: a trigger partition's records past its
 * committed offset, Lambda's OffsetLag for a Kafka event source mapping), for the log stack (every
 * trigger's together: the highest lag any partition of any trigger reported) and for a
 * KafkaLogTrigger (its own, under its Trigger dimension). The deliverers report the gauge after
 * each delivery's commit and the scheduled function on each pass, so an idle trigger reports no
 * data rather than zero: missing data does not breach.
 */
import { Duration } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

export interface TriggerLagAlarmOptions {
  /** Records behind: the alarm fires when the highest lag reported is at or above it. */
  readonly threshold: number;
  /** For how many consecutive minutes (default 5): a backlog being worked down is not an alarm. */
  readonly minutes?: number;
  /** Topics notified when it fires and when it clears. */
  readonly topics?: readonly sns.ITopic[];
}

export function triggerLagAlarm(
  scope: Construct,
  id: string,
  metric: { namespace: string; service: string; trigger?: string },
  options: TriggerLagAlarmOptions,
): cw.Alarm {
  const minutes = options.minutes ?? 5;
  if (!Number.isInteger(options.threshold) || options.threshold < 1)
    throw new Error(`The trigger lag alarm's threshold is a number of records (1 or more), got ${options.threshold}`);
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 1440)
    throw new Error(`The trigger lag alarm's minutes are 1-1440, got ${minutes}`);
  const what = metric.trigger === undefined ? 'A trigger' : `Trigger ${metric.trigger}`;
  const alarm = new cw.Alarm(scope, id, {
    alarmDescription: `${what} has been ${options.threshold} or more records behind its topic for ${minutes} minute(s) (TriggerOffsetLag): its target is failing, slow or throttled, or the topic outgrows its batch size`,
    metric: new cw.Metric({
      namespace: metric.namespace,
      metricName: 'TriggerOffsetLag',
      dimensionsMap: {
        Service: metric.service,
        ...(metric.trigger !== undefined && { Trigger: metric.trigger }),
      },
      statistic: 'Maximum',
      period: Duration.minutes(1),
    }),
    threshold: options.threshold,
    evaluationPeriods: minutes,
    comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cw.TreatMissingData.NOT_BREACHING,
  });
  for (const topic of options.topics ?? []) {
    alarm.addAlarmAction(new SnsAction(topic));
    alarm.addOkAction(new SnsAction(topic));
  }
  return alarm;
}
