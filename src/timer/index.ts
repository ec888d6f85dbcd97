export { TimingWheel, type TimingWheelOptions } from './timing-wheel.js';
export { TimerTaskEntry, TimerTaskList } from './timer-task-list.js';
export {
  SystemTimer,
  type Clock,
  type SystemTimerOptions,
  type Timer,
  type TimerTask,
  type TimerTaskState,
} from './system-timer.js';
export { DelayedOperation, type DelayedOperationOutcome } from './delayed-operation.js';
export { Purgatory, type PurgatoryOptions } from './purgatory.js';
export {
  awaitCondition,
  DEFAULT_RECHECK_BACKOFF_MS,
  type AwaitConditionOptions,
  type RecheckBackoff,
} from './await-condition.js';
