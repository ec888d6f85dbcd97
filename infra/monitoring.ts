/**
 * A CloudWatch dashboard and alarms. Alarms: errors and throttles of every function, API 5xx
 * responses, the scheduler failing, not running at all or not finishing its rounds, DynamoDB
 * throttling the metadata table, S3 answering 5xx (SlowDown among them) on a replica bucket, and,
 * when configured, triggers falling behind their topics (TriggerOffsetLag).
 * The dashboard also shows how near the deployment runs to its limits (DynamoDB capacity consumed, the
 * account's Lambda concurrency). They notify one SNS topic (subscribe an address with the alarmEmail context value, or anything
 * else to the output ARN).
 *
 * The custom metrics are the EMF metrics of functions/observability.ts, dimension [Service]
 * (triggers' are also published per trigger, [Service, Trigger], which the dashboard leaves out).
 */
import { Duration, Validations } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { triggerLagAlarm, type TriggerLagAlarmOptions } from './trigger-lag-alarm.js';

export interface MonitoringProps {
  dashboardName: string;
  /** EMF namespace and the Service dimension's value. */
  namespace: string;
  service: string;
  /** The request-serving functions, by name. */
  functions: Readonly<Record<string, IFunction>>;
  scheduler: IFunction;
  schedulerRateMinutes: number;
  /** The API's request metrics: an HTTP API stage or a REST API have the same four. */
  api: ApiMetrics;
  /** The metadata table (its throttle events). */
  table: ITable;
  /** The standard replica buckets, each with a request metrics configuration of this filter id. */
  buckets: readonly IBucket[];
  requestMetricsFilterId: string;
  alarmEmail?: string;
  /** An alarm on every trigger's offset lag (their highest), notifying the alarm topic and these topics too. */
  triggerLagAlarm?: Omit<TriggerLagAlarmOptions, 'topics'> & { topicArns: readonly string[] };
}

export type ApiMetrics = Record<
  'metricCount' | 'metricClientError' | 'metricServerError' | 'metricLatency',
  (props?: cw.MetricOptions) => cw.Metric
>;

const FIVE_MINUTES = Duration.minutes(5);

export class Monitoring extends Construct {
  readonly dashboard: cw.Dashboard;
  readonly alarmTopic: sns.Topic;
  readonly alarms: cw.Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { displayName: `${props.service} alarms`, enforceSSL: true });
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry alarm names and states only. CloudWatch alarms cannot publish to a topic encrypted with the ' +
        'AWS-managed SNS key, and a customer-managed key would add a fixed monthly cost to an otherwise idle deployment.',
    });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    const action = new SnsAction(this.alarmTopic);
    const alarm = (alarmId: string, alarmProps: cw.AlarmProps) => {
      const a = new cw.Alarm(this, alarmId, alarmProps);
      a.addAlarmAction(action);
      a.addOkAction(action);
      this.alarms.push(a);
      return a;
    };

    if (props.triggerLagAlarm) {
      const { topicArns, ...options } = props.triggerLagAlarm;
      const topics = topicArns.map((arn, i) => sns.Topic.fromTopicArn(this, `TriggerLagTopic${i}`, arn));
      this.alarms.push(
        triggerLagAlarm(
          this,
          'TriggerOffsetLag',
          { namespace: props.namespace, service: props.service },
          { ...options, topics: [this.alarmTopic, ...topics] },
        ),
      );
    }

    const custom = (metricName: string, label: string, statistic = 'Sum') =>
      new cw.Metric({
        namespace: props.namespace,
        metricName,
        dimensionsMap: { Service: props.service },
        statistic,
        label,
        period: Duration.minutes(1),
      });
    const all = { ...props.functions, scheduler: props.scheduler };
    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(`${name}Errors`, {
        alarmDescription: `The ${name} function failed invocations (crashes, timeouts)`,
        metric: fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, fn] of Object.entries(all)) {
      alarm(`${name}Throttles`, {
        alarmDescription: `Invocations of the ${name} function were throttled (account or reserved concurrency)`,
        metric: fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    }
    alarm('Api5xx', {
      alarmDescription: 'The API answered 5xx: a storage failure, a function error, or an integration timeout',
      metric: props.api.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    // One failed run is retried by the next tick; two in fifteen minutes is a pattern.
    alarm('SchedulerFailures', {
      alarmDescription: 'Scheduled maintenance runs are failing (retention, compaction and timers are not advancing)',
      metric: props.scheduler.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    const silence = Duration.minutes(Math.max(15, 3 * props.schedulerRateMinutes));
    alarm('SchedulerNotRunning', {
      alarmDescription: `The scheduler has not been invoked for ${silence.toMinutes()} minutes (rule disabled or deleted?)`,
      metric: props.scheduler.metricInvocations({ period: silence, statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cw.TreatMissingData.BREACHING,
    });

    // Runs that stop at their deadline with units left are normal for a while (the cursor resumes);
    // every run of half an hour stopping so means rounds no longer finish: retention, compaction and
    // object sweeps fall behind the rate they are needed at.
    alarm('SchedulerRoundsIncomplete', {
      alarmDescription:
        'Every scheduler run for 30 minutes stopped at its deadline with maintenance left: rounds are not finishing ' +
        '(raise the scheduler timeout or rate, or look for slow units in its logs)',
      metric: new cw.Metric({
        namespace: props.namespace,
        metricName: 'SchedulerIncompleteRuns',
        dimensionsMap: { Service: props.service },
        statistic: 'Sum',
        period: FIVE_MINUTES,
      }),
      threshold: 1,
      evaluationPeriods: 6,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    });
    // The SDK retries throttled calls, so one burst is absorbed; throttling in two of three five-minute
    // periods is a hot partition key or an account limit that requests are paying for in latency.
    for (const [kind, metricName] of [
      ['Read', 'ReadThrottleEvents'],
      ['Write', 'WriteThrottleEvents'],
    ] as const) {
      alarm(`Metadata${kind}Throttles`, {
        alarmDescription: `DynamoDB throttled ${kind.toLowerCase()}s of the metadata table (a hot key, or the account's limits)`,
        metric: props.table.metric(metricName, { period: FIVE_MINUTES, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    }
    // S3 answers 503 SlowDown past a prefix's request rate and, rarely, 500/503 otherwise; both count
    // in 5xxErrors. The SDK retries them; a steady rate means requests are slowed or failing.
    props.buckets.forEach((bucket, i) => {
      alarm(`Store${i}5xx`, {
        alarmDescription: `S3 answered 5xx (SlowDown or InternalError) to requests on replica bucket ${i}`,
        metric: s3RequestMetric(bucket, props.requestMetricsFilterId, '5xxErrors'),
        threshold: 5,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      });
    });

    const perFunction = (label: string, metric: (fn: IFunction) => cw.IMetric) =>
      new cw.GraphWidget({ title: label, width: 6, left: Object.values(all).map(metric) });

    this.dashboard = new cw.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'API requests',
        width: 12,
        left: [props.api.metricCount({ statistic: 'Sum', label: 'requests' })],
        right: [
          props.api.metricClientError({ statistic: 'Sum', label: '4xx' }),
          props.api.metricServerError({ statistic: 'Sum', label: '5xx' }),
        ],
      }),
      new cw.GraphWidget({
        title: 'API latency (ms)',
        width: 12,
        left: [
          props.api.metricLatency({ statistic: 'p50', label: 'p50' }),
          props.api.metricLatency({ statistic: 'p99', label: 'p99' }),
        ],
      }),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Produce',
        width: 12,
        left: [custom('ProduceBytes', 'bytes')],
        right: [custom('ProduceRecords', 'records')],
      }),
      new cw.GraphWidget({
        title: 'Fetch',
        width: 12,
        left: [custom('FetchBytes', 'bytes')],
        right: [custom('FetchRecords', 'records')],
      }),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Contention and replication',
        width: 12,
        left: [
          custom('CommitRetries', 'commit retries'),
          custom('ConditionFailures', 'condition failures'),
          custom('IsrShrinks', 'ISR shrinks'),
        ],
      }),
      new cw.GraphWidget({
        title: 'Storage requests',
        width: 12,
        left: [
          custom('S3WriteRequests', 'S3 PUT/LIST'),
          custom('S3ReadRequests', 'S3 GET/HEAD'),
          custom('DynamoDbReadRequests', 'DynamoDB reads'),
          custom('DynamoDbWriteRequests', 'DynamoDB writes'),
        ],
      }),
    );
    // Throttles are not graphed: every function's throttles alarm, in the status widget, and the
    // dashboard's metrics (50 in the free tier, 46 to 50 with per-function panels) go to triggers.
    this.dashboard.addWidgets(
      perFunction('Invocations', (fn) => fn.metricInvocations({ statistic: 'Sum' })),
      perFunction('Errors', (fn) => fn.metricErrors({ statistic: 'Sum' })),
      perFunction('Duration p99 (ms)', (fn) => fn.metricDuration({ statistic: 'p99' })),
      // Every trigger's together (each trigger's own series carry the Trigger dimension: one per
      // trigger would not fit the budget); the lag is the highest a delivery left behind its commit.
      new cw.GraphWidget({
        title: 'Triggers',
        width: 6,
        left: [
          custom('TriggerInvocations', 'invocations'),
          custom('TriggerErrors', 'errors'),
          custom('TriggerRecordsToFailureDestination', 'to failure destination'),
          custom('TriggerRecordsFiltered', 'filtered'),
        ],
        right: [custom('TriggerOffsetLag', 'offset lag (max)', 'Maximum')],
      }),
    );
    // How near the deployment runs to what throttles first as traffic grows. Throttle events and S3's
    // SlowDown have alarms (in the status widget); the dashboard stays within the free tier's 50 metrics.
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'DynamoDB capacity consumed',
        width: 12,
        left: [
          props.table.metricConsumedReadCapacityUnits({ statistic: 'Sum', label: 'RCU' }),
          props.table.metricConsumedWriteCapacityUnits({ statistic: 'Sum', label: 'WCU' }),
        ],
      }),
      new cw.GraphWidget({
        title: 'Lambda concurrency claimed in the account',
        width: 12,
        left: [
          new cw.Metric({
            namespace: 'AWS/Lambda',
            metricName: 'ClaimedAccountConcurrency',
            statistic: 'Maximum',
            label: 'claimed',
            period: Duration.minutes(1),
          }),
        ],
        // Accounts start at 1,000 concurrent executions per Region (raised on request); past it, throttles.
        leftAnnotations: [{ value: 1_000, label: 'default account limit' }],
      }),
    );
    this.dashboard.addWidgets(
      new cw.GraphWidget({
        title: 'Scheduler',
        width: 12,
        left: [custom('SchedulerWork', 'work items'), custom('SchedulerFailures', 'failed runs')],
        right: [props.scheduler.metricDuration({ statistic: 'Maximum', label: 'duration max (ms)' })],
      }),
      new cw.AlarmStatusWidget({ title: 'Alarms', width: 12, alarms: this.alarms }),
    );
  }
}

/** One of a bucket's CloudWatch request metrics (published only with a metrics configuration). */
function s3RequestMetric(bucket: IBucket, filterId: string, metricName: string): cw.Metric {
  return new cw.Metric({
    namespace: 'AWS/S3',
    metricName,
    dimensionsMap: { BucketName: bucket.bucketName, FilterId: filterId },
    statistic: 'Sum',
    period: FIVE_MINUTES,
  });
}
