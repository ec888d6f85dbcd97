/** Which handler answers which API. */
import * as acls from './handlers/acls.js';
import * as admin from './handlers/admin.js';
import * as cluster from './handlers/cluster.js';
import { consumerGroupHeartbeat } from './handlers/consumer-groups.js';
import type { Handler } from './handlers/context.js';
import { fetch } from './handlers/fetch.js';
import * as groupOffsets from './handlers/group-offsets.js';
import * as groups from './handlers/groups.js';
import * as offsets from './handlers/offsets.js';
import { produce } from './handlers/produce.js';
import * as sasl from './handlers/sasl.js';
import * as scram from './handlers/scram-credentials.js';
import * as share from './handlers/share.js';
import * as shareOffsets from './handlers/share-offsets.js';
import * as txn from './handlers/transactions.js';
import * as m from './protocol/messages/index.js';

export const HANDLERS: ReadonlyMap<number, Handler> = new Map<number, Handler>([
  [m.Produce.apiKey, produce],
  [m.Fetch.apiKey, fetch],
  [m.ListOffsets.apiKey, offsets.listOffsets],
  [m.Metadata.apiKey, cluster.metadata],
  [m.OffsetCommit.apiKey, groupOffsets.offsetCommit],
  [m.OffsetFetch.apiKey, groupOffsets.offsetFetch],
  [m.FindCoordinator.apiKey, groups.findCoordinator],
  [m.JoinGroup.apiKey, groups.joinGroup],
  [m.Heartbeat.apiKey, groups.heartbeat],
  [m.LeaveGroup.apiKey, groups.leaveGroup],
  [m.SyncGroup.apiKey, groups.syncGroup],
  [m.DescribeGroups.apiKey, groups.describeGroups],
  [m.ListGroups.apiKey, groups.listGroups],
  [m.SaslHandshake.apiKey, sasl.saslHandshake],
  [m.ApiVersions.apiKey, cluster.apiVersions],
  [m.CreateTopics.apiKey, admin.createTopics],
  [m.DeleteTopics.apiKey, admin.deleteTopics],
  [m.DeleteRecords.apiKey, offsets.deleteRecords],
  [m.InitProducerId.apiKey, offsets.initProducerId],
  [m.OffsetForLeaderEpoch.apiKey, offsets.offsetForLeaderEpoch],
  [m.AddPartitionsToTxn.apiKey, txn.addPartitionsToTxn],
  [m.AddOffsetsToTxn.apiKey, txn.addOffsetsToTxn],
  [m.EndTxn.apiKey, txn.endTxn],
  [m.TxnOffsetCommit.apiKey, txn.txnOffsetCommit],
  [m.DescribeAcls.apiKey, acls.describeAcls],
  [m.CreateAcls.apiKey, acls.createAcls],
  [m.DeleteAcls.apiKey, acls.deleteAcls],
  [m.DescribeConfigs.apiKey, admin.describeConfigs],
  [m.AlterConfigs.apiKey, admin.alterConfigs],
  [m.SaslAuthenticate.apiKey, sasl.saslAuthenticate],
  [m.CreatePartitions.apiKey, admin.createPartitions],
  [m.DeleteGroups.apiKey, groups.deleteGroups],
  [m.IncrementalAlterConfigs.apiKey, admin.incrementalAlterConfigs],
  [m.OffsetDelete.apiKey, groupOffsets.offsetDelete],
  [m.DescribeCluster.apiKey, cluster.describeCluster],
  [m.ConsumerGroupHeartbeat.apiKey, consumerGroupHeartbeat],
  [m.DescribeUserScramCredentials.apiKey, scram.describeUserScramCredentials],
  [m.AlterUserScramCredentials.apiKey, scram.alterUserScramCredentials],
  [m.ShareGroupHeartbeat.apiKey, share.shareGroupHeartbeat],
  [m.ShareGroupDescribe.apiKey, share.shareGroupDescribe],
  [m.ShareFetch.apiKey, share.shareFetch],
  [m.ShareAcknowledge.apiKey, share.shareAcknowledge],
  [m.DescribeShareGroupOffsets.apiKey, shareOffsets.describeShareGroupOffsets],
  [m.AlterShareGroupOffsets.apiKey, shareOffsets.alterShareGroupOffsets],
  [m.DeleteShareGroupOffsets.apiKey, shareOffsets.deleteShareGroupOffsets],
]);
