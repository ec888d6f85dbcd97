/**
 * FindCoordinator and the classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on
 * the ClassicGroupCoordinator; DescribeGroups, ListGroups and DeleteGroups see both classic groups
 * and the KIP-848 groups of the HTTP API (ListGroups and DeleteGroups share groups too).
 */
import { ERRORS, KafkaError, isKafkaError } from '../../wire/errors.js';
import { MemberIdRequired } from '../../groups/classic-coordinator.js';
import type { ClassicGroup } from '../../groups/classic-group.js';
import { allowed, allowedNames, authorize, denied } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, type RequestContext } from './context.js';

/**
 * This listener is every coordinator: of groups (key type 0) and of transactional ids (1), whose
 * state is in the table, so any listener serves any of them. DESCRIBE on the group or id is checked.
 */
export const findCoordinator: Handler = async (ctx, req, version) => {
  const keyType = req.keyType as number;
  const answer = async (key: string) => {
    let error: KafkaError | undefined;
    if (keyType === 0) {
      if (!(await allowed(ctx, 'DESCRIBE', 'GROUP', key))) error = denied(ctx, 'DESCRIBE', 'GROUP', key);
    } else if (keyType === 1) {
      if (!(await allowed(ctx, 'DESCRIBE', 'TRANSACTIONAL_ID', key)))
        error = denied(ctx, 'DESCRIBE', 'TRANSACTIONAL_ID', key);
    } else error = new KafkaError('INVALID_REQUEST', `Unknown coordinator key type ${keyType}`);
    return {
      key,
      nodeId: error ? -1 : ctx.broker.nodeId,
      host: error ? '' : ctx.broker.host,
      port: error ? -1 : ctx.broker.port,
      errorCode: error ? error.code : 0,
      errorMessage: error ? error.message : null,
    };
  };
  if (version >= 4)
    return { throttleTimeMs: 0, coordinators: await Promise.all((req.coordinatorKeys as string[]).map(answer)) };
  return { throttleTimeMs: 0, ...(await answer(req.key)) };
};

export const joinGroup: Handler = async (ctx, req, version) => {
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const a = await ctx.classic.join(
      {
        groupId: req.groupId,
        memberId: req.memberId,
        groupInstanceId: req.groupInstanceId,
        clientId: ctx.clientId,
        clientHost: ctx.clientHost,
        sessionTimeoutMs: req.sessionTimeoutMs,
        rebalanceTimeoutMs: req.rebalanceTimeoutMs,
        protocolType: req.protocolType,
        protocols: req.protocols,
        requireKnownMemberId: version >= 4,
      },
      ctx.signal,
    );
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      generationId: a.generationId,
      protocolType: a.protocolType,
      protocolName: a.protocolName ?? '',
      leader: a.leaderId,
      memberId: a.memberId,
      members: a.members,
    };
  } catch (e) {
    const memberId = e instanceof MemberIdRequired ? e.memberId : req.memberId;
    return {
      throttleTimeMs: 0,
      errorCode: errorCodeOf(ctx, e),
      generationId: -1,
      protocolType: null,
      protocolName: version >= 7 ? null : '',
      leader: '',
      memberId,
      members: [],
    };
  }
};

export const syncGroup: Handler = async (ctx, req) => {
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const { group, assignment } = await ctx.classic.sync(
      req.groupId,
      req.generationId,
      req.memberId,
      req.assignments,
      ctx.signal,
      req.groupInstanceId,
    );
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      assignment,
    };
  } catch (e) {
    return {
      throttleTimeMs: 0,
      errorCode: errorCodeOf(ctx, e),
      protocolType: null,
      protocolName: null,
      assignment: Buffer.alloc(0),
    };
  }
};

export const heartbeat: Handler = async (ctx, req) => {
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    await ctx.classic.heartbeat(req.groupId, req.memberId, req.generationId, req.groupInstanceId);
    return { throttleTimeMs: 0, errorCode: 0 };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: errorCodeOf(ctx, e) };
  }
};

/** LeaveGroup: from v3 a batch of members, each by member id or static instance id (KIP-345). */
export const leaveGroup: Handler = async (ctx, req, version) => {
  const leaving: { memberId: string; groupInstanceId: string | null }[] =
    version >= 3 ? req.members : [{ memberId: req.memberId, groupInstanceId: null }];
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const results = await ctx.classic.leaveMembers(req.groupId, leaving);
    const members = leaving.map((m, i) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      errorCode: results[i]?.code ?? 0,
    }));
    // Before v3 there is one member: its error is the request's.
    return { throttleTimeMs: 0, errorCode: version >= 3 ? 0 : members[0]!.errorCode, members };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: errorCodeOf(ctx, e), members: [] };
  }
};

/**
 * Classic groups, and the HTTP API's KIP-848 groups. A group that is neither is Dead, as Kafka
 * answers it: from v6 (KIP-1043) with GROUP_ID_NOT_FOUND, and for a share group the message Kafka
 * gives (a share group is not a classic group; ShareGroupDescribe describes it).
 */
export const describeGroups: Handler = async (ctx, req, version) => {
  const groups = await Promise.all(
    (req.groups as string[]).map(async (groupId) => {
      const base = {
        errorCode: 0,
        errorMessage: null as string | null,
        groupId,
        groupState: 'Dead',
        protocolType: '',
        protocolData: '',
        members: [] as unknown[],
        authorizedOperations: -2147483648,
      };
      try {
        await authorize(ctx, 'DESCRIBE', 'GROUP', groupId);
        const g = await ctx.classic.describe(groupId);
        if (g) return { ...base, ...describeClassic(g) };
        const snap = await ctx.services.groups.coordinator.find(groupId);
        if (!snap) {
          if (version < 6) return base;
          const share = await ctx.services.share.requireGroup(groupId).then(
            () => true,
            () => false,
          );
          const message = share ? `Group ${groupId} is not a classic group.` : `Group ${groupId} not found.`;
          return { ...base, errorCode: ERRORS.GROUP_ID_NOT_FOUND.code, errorMessage: message };
        }
        const g848 = snap.group;
        return {
          ...base,
          groupState: g848.state,
          protocolType: g848.protocolType,
          protocolData: g848.assignor,
          members: Object.values(g848.members).map((m) => ({
            memberId: m.memberId,
            groupInstanceId: null,
            clientId: m.clientId,
            clientHost: '',
            memberMetadata: Buffer.alloc(0),
            memberAssignment: Buffer.alloc(0),
          })),
        };
      } catch (e) {
        return { ...base, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, groups };
};

function describeClassic(g: ClassicGroup) {
  const stable = g.state === 'Stable';
  return {
    groupState: g.state,
    protocolType: g.protocolType ?? '',
    protocolData: stable ? (g.protocolName ?? '') : '',
    members: Object.values(g.members).map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: stable
        ? Buffer.from(m.protocols.find((p) => p.name === g.protocolName)?.metadata ?? '', 'base64')
        : Buffer.alloc(0),
      memberAssignment: stable ? Buffer.from(m.assignment, 'base64') : Buffer.alloc(0),
    })),
  };
}

export const listGroups: Handler = async (ctx, req) => {
  try {
    const { share } = ctx.services;
    const [classic, others, shared] = await Promise.all([
      ctx.classic.list(),
      ctx.services.groups.coordinator.list(),
      share.list(),
    ]);
    type Listed = { groupId: string; protocolType: string; groupState: string; groupType: string };
    const out = new Map<string, Listed>();
    // Share groups have a namespace of their own here (docs/share-groups.md): a consumer group of
    // the same id is the one listed. Their state is the one the HTTP routes, ShareGroupDescribe
    // and the offset changes' NON_EMPTY_GROUP go by (members, or records under unexpired locks).
    for (const groupId of shared)
      out.set(groupId, {
        groupId,
        protocolType: 'share',
        groupState: (await share.state(groupId)) === 'STABLE' ? 'Stable' : 'Empty',
        groupType: 'share',
      });
    for (const g of others)
      out.set(g.groupId, {
        groupId: g.groupId,
        protocolType: g.protocolType,
        groupState: g.state,
        groupType: 'consumer',
      });
    for (const g of classic)
      out.set(g.groupId, {
        groupId: g.groupId,
        protocolType: g.protocolType ?? '',
        groupState: g.state,
        groupType: 'classic',
      });
    const states = new Set<string>((req.statesFilter as string[]).map((s) => s.toLowerCase()));
    const types = new Set<string>((req.typesFilter as string[]).map((s) => s.toLowerCase()));
    // Every group with DESCRIBE on the cluster, else those the connection may DESCRIBE (Kafka's ListGroups).
    const mayDescribe = (await allowed(ctx, 'DESCRIBE', 'CLUSTER'))
      ? () => true
      : await allowedNames(ctx, 'DESCRIBE', 'GROUP');
    const groups = [...out.values()].filter(
      (g) =>
        mayDescribe(g.groupId) &&
        (states.size === 0 || states.has(g.groupState.toLowerCase())) &&
        (types.size === 0 || types.has(g.groupType)),
    );
    return { throttleTimeMs: 0, errorCode: 0, groups };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: errorCodeOf(ctx, e), groups: [] };
  }
};

export const deleteGroups: Handler = async (ctx, req) => {
  const results = await Promise.all(
    (req.groupsNames as string[]).map(async (groupId) => {
      try {
        await authorize(ctx, 'DELETE', 'GROUP', groupId);
        await deleteGroup(ctx, groupId);
        return { groupId, errorCode: 0 };
      } catch (e) {
        return { groupId, errorCode: errorCodeOf(ctx, e) };
      }
    }),
  );
  return { throttleTimeMs: 0, results };
};

/**
 * The group of that name, whichever kind: share groups have a namespace of their own here (Kafka
 * has one for all), so a name may be a share group and a consumer group both, and both go. The
 * share group first: when it refuses (NON_EMPTY_GROUP), the consumer group of the name stays too.
 */
async function deleteGroup(ctx: RequestContext, groupId: string): Promise<void> {
  const share = await ctx.services.share.deleteGroup(groupId).then(
    () => true,
    (e: unknown) => (isKafkaError(e, 'GROUP_ID_NOT_FOUND') ? false : Promise.reject(e)),
  );
  const classic = await ctx.classic.delete(groupId);
  try {
    await ctx.services.groups.admin.delete(groupId);
  } catch (e) {
    if (!((classic || share) && isKafkaError(e, 'GROUP_ID_NOT_FOUND'))) throw e;
  }
}
