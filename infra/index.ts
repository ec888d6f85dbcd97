/**
 * The CDK constructs the package exports (`s3-kafka-log/infra`): the log's stack, and the trigger
 * a user's own stack binds their function to a topic with.
 */
export { LogStack, type LogStackProps } from './log-stack.js';
export { stackConfig, stackName, type LogStackConfig } from './stack-config.js';
export {
  KafkaLog,
  KafkaLogTrigger,
  type KafkaLogReference,
  type KafkaLogTriggerProps,
  type TriggerStartingPosition,
} from './log-trigger.js';
