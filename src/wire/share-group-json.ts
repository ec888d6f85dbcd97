/**
 * A share group as the HTTP API describes it (`GET /share-groups/{group}`, KIP-932's
 * DescribeShareGroups with its partitions' SPSO and SPEO): the JSON the client and the web console
 * read, in one place. The server's schema (src/http/share-group-routes.ts) is what it answers.
 */
export interface ShareGroupJson {
  group_id: string;
  /** STABLE while members or receivers hold records under unexpired locks, else EMPTY. */
  state: 'EMPTY' | 'STABLE';
  lag: number;
  /** The Kafka protocol's live members (ShareGroupHeartbeat); HTTP receivers have no membership. */
  members: {
    member_id: string;
    member_epoch: number;
    client_id: string;
    client_host: string;
    rack_id: string | null;
    subscribed_topic_names: string[];
    assignment: { topic_name: string; partition_ids: number[] }[];
    /** ISO 8601: the last heartbeat written. */
    last_heartbeat: string;
  }[];
  partitions: {
    topic_name: string;
    partition_id: number;
    /** SPSO: every record below it is acknowledged or archived. */
    start_offset: number;
    /** SPEO: records from it on were never delivered. */
    end_offset: number;
    state_epoch: number;
    high_watermark: number;
    /** Records from SPSO to the high watermark not yet acknowledged or archived. */
    lag: number;
    in_flight: { available: number; acquired: number; acknowledged: number; archived: number };
  }[];
}
