/** Every API this listener speaks, by key. ApiVersions answers from this table. */
import type { ApiSpec } from '../schema.js';
import {
  AlterConfigs,
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  DescribeConfigs,
  IncrementalAlterConfigs,
} from './admin.js';
import { CreateAcls, DeleteAcls, DescribeAcls } from './acls.js';
import { ApiVersions, DescribeCluster, Metadata, SaslAuthenticate, SaslHandshake } from './cluster.js';
import {
  ConsumerGroupHeartbeat,
  DeleteGroups,
  DescribeGroups,
  FindCoordinator,
  Heartbeat,
  JoinGroup,
  LeaveGroup,
  ListGroups,
  OffsetCommit,
  OffsetDelete,
  OffsetFetch,
  SyncGroup,
} from './groups.js';
import { DeleteRecords, Fetch, InitProducerId, ListOffsets, OffsetForLeaderEpoch, Produce } from './records.js';
import { AlterUserScramCredentials, DescribeUserScramCredentials } from './scram.js';
import { ShareAcknowledge, ShareFetch, ShareGroupDescribe, ShareGroupHeartbeat } from './share.js';
import { AlterShareGroupOffsets, DeleteShareGroupOffsets, DescribeShareGroupOffsets } from './share-offsets.js';
import { AddOffsetsToTxn, AddPartitionsToTxn, EndTxn, TxnOffsetCommit } from './transactions.js';

export const APIS: readonly ApiSpec[] = [
  Produce,
  Fetch,
  ListOffsets,
  Metadata,
  OffsetCommit,
  OffsetFetch,
  FindCoordinator,
  JoinGroup,
  Heartbeat,
  LeaveGroup,
  SyncGroup,
  DescribeGroups,
  ListGroups,
  SaslHandshake,
  ApiVersions,
  CreateTopics,
  DeleteTopics,
  DeleteRecords,
  InitProducerId,
  OffsetForLeaderEpoch,
  AddPartitionsToTxn,
  AddOffsetsToTxn,
  EndTxn,
  TxnOffsetCommit,
  DescribeAcls,
  CreateAcls,
  DeleteAcls,
  DescribeConfigs,
  AlterConfigs,
  SaslAuthenticate,
  CreatePartitions,
  DeleteGroups,
  IncrementalAlterConfigs,
  OffsetDelete,
  DescribeCluster,
  ConsumerGroupHeartbeat,
  DescribeUserScramCredentials,
  AlterUserScramCredentials,
  ShareGroupHeartbeat,
  ShareGroupDescribe,
  ShareFetch,
  ShareAcknowledge,
  DescribeShareGroupOffsets,
  AlterShareGroupOffsets,
  DeleteShareGroupOffsets,
];

export const API_BY_KEY: ReadonlyMap<number, ApiSpec> = new Map(APIS.map((a) => [a.apiKey, a]));

export * from './acls.js';
export * from './admin.js';
export * from './cluster.js';
export * from './groups.js';
export * from './records.js';
export * from './scram.js';
export * from './share.js';
export * from './share-offsets.js';
export * from './transactions.js';
