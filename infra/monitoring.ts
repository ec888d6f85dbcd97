/**
 * A CloudWatch dashboard and alarms. Alarms: errors and throttles of every function, API 5xx
 * responses, and the scheduler failing or not running at all. They notify one SNS topic
 * (subscribe an address with the alarmEmail context value, or anything else to the output ARN).
 *
 * The custom metrics are the EMF metrics of functions/observability.ts, dimension [Service].
 */
import { Duration, Validations } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';

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
  alarmEmail?: string;
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

    const custom = (metricName: string, label: string, statistic = 'Sum') =>
      new cw.Metric({
        namespace: props.namespace,
        metricName,
        dimensionsMap: { Service: props.service },
        statistic,
        label,
        period: Duration.minutes(1),
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
    this.dashboard.addWidgets(
      perFunction('Invocations', (fn) => fn.metricInvocations({ statistic: 'Sum' })),
      perFunction('Errors', (fn) => fn.metricErrors({ statistic: 'Sum' })),
      perFunction('Throttles', (fn) => fn.metricThrottles({ statistic: 'Sum' })),
      perFunction('Duration p99 (ms)', (fn) => fn.metricDuration({ statistic: 'p99' })),
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
