import type { AppServices } from '../services.js';
import type { Resources } from './resources.js';

/** Where denied requests and ACL changes are reported: one structured line each. */
export type AuditSink = (msg: string, fields: Record<string, unknown>) => void;

export type AppEnv = {
  Variables: {
    services: AppServices;
    resources: Resources;
    maxRequestBytes: number;
    /** The caller, as Kafka writes principals (`User:alice`); set for every /v3 and /consumers request. */
    principal: string;
    /** The caller's address, for ACLs that name a host ('' when unknown: only host '*' matches). */
    host: string;
    audit: AuditSink;
    /** Bytes of the request body once read, and of a fetch's answer: what byte-rate quotas count. */
    bodyBytes: number;
    responseBytes: number;
  };
};
