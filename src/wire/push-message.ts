/**
 * The push connection's `ready` message, as the server's notifier sends it (src/push) and the
 * client's push channel reads it (src/client/consumer/push-channel.ts).
 */
export type PushMessage = {
  type: 'ready';
  topic: string;
  partitions: PushedPartition[];
};

export interface PushedPartition {
  partition: number;
  high_watermark?: number;
  /** With records: the partition's last stable offset after their commit. */
  last_stable_offset?: number;
  /** With records: the offsets of the first and last record (or marker) the batches hold. */
  base_offset?: number;
  last_offset?: number;
  /** Record batches (Kafka's format, absolute offsets), base64. */
  records?: string;
  /** Told without records to a consumer that takes them: it stays armed. */
  armed?: boolean;
}
