/**
 * Share sessions (KIP-932), as Kafka's ShareSessionCache keeps them: per listener process, one per
 * (group, member), holding the share-partitions the member fetches from so that each ShareFetch
 * names only what changed. Epoch 0 opens a session, -1 closes it, and every other request must
 * carry the session's next epoch (INVALID_SHARE_SESSION_EPOCH otherwise, SHARE_SESSION_NOT_FOUND
 * without a session). At most `maxSessions` at once (group.share.max.share.sessions):
 * SHARE_SESSION_LIMIT_REACHED past it. A session belongs to the connection that opened it: when
 * that connection closes, the session ends and `onEnd` runs (the handler releases the records the
 * member still holds, as Kafka does when a share consumer's connection drops).
 */
import { KafkaError } from '../wire/errors.js';

export interface SharePartitionKey {
  /** The topic id, as the registry writes it (lower-case, dashed). */
  topicId: string;
  partition: number;
}

export interface ShareSession {
  group: string;
  member: string;
  /** The epoch the next request must carry. */
  nextEpoch: number;
  /** The share-partitions of the session, by `${topicId}:${partition}`. */
  partitions: Map<string, SharePartitionKey>;
  /** Runs once when the session ends, whether closed by the member or by its connection closing. */
  onEnd?: (session: ShareSession) => void;
}

/** group.share.max.share.sessions. */
export const MAX_SHARE_SESSIONS = 2000;

export const partitionKey = (p: SharePartitionKey) => `${p.topicId}:${p.partition}`;

export class ShareSessions {
  private readonly sessions = new Map<string, ShareSession>();

  constructor(readonly maxSessions = MAX_SHARE_SESSIONS) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Epoch 0: a new session for the member, ended when `connection` aborts. One the member already
   * had (a consumer that reconnected) is replaced without ending it: the member still holds its
   * records and may acknowledge them in the new session.
   */
  open(group: string, member: string, connection: AbortSignal): ShareSession {
    const key = sessionKey(group, member);
    const previous = this.sessions.get(key);
    if (!previous && this.sessions.size >= this.maxSessions)
      throw new KafkaError('SHARE_SESSION_LIMIT_REACHED', `The limit of ${this.maxSessions} share sessions is reached`);
    const session: ShareSession = { group, member, nextEpoch: 1, partitions: new Map() };
    this.sessions.set(key, session);
    connection.addEventListener('abort', () => this.end(session), { once: true });
    return session;
  }

  /** The session of a request with `epoch` (> 0), moved to the next epoch. */
  next(group: string, member: string, epoch: number): ShareSession {
    const session = this.require(group, member);
    if (epoch !== session.nextEpoch)
      throw new KafkaError(
        'INVALID_SHARE_SESSION_EPOCH',
        `Share session epoch ${epoch} is not the expected ${session.nextEpoch}`,
      );
    session.nextEpoch = epoch === 0x7fff_ffff ? 1 : epoch + 1;
    return session;
  }

  /** Epoch -1: the member's session, which the caller ends (`end`) once the request is served. */
  require(group: string, member: string): ShareSession {
    const session = this.sessions.get(sessionKey(group, member));
    if (!session) throw new KafkaError('SHARE_SESSION_NOT_FOUND', `No share session for member ${member} of ${group}`);
    return session;
  }

  /** Ends the session if it is still the member's current one (a replaced session ends silently). */
  end(session: ShareSession): void {
    const key = sessionKey(session.group, session.member);
    if (this.sessions.get(key) !== session) return;
    this.sessions.delete(key);
    session.onEnd?.(session);
  }
}

const sessionKey = (group: string, member: string) => `${group}\u0000${member}`;
