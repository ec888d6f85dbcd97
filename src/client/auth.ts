/**
 * How requests are authenticated: nothing (a local server), a bearer token, or AWS Signature V4
 * for a deployed API with IAM auth. SigV4 uses the standard AWS credential chain (environment,
 * shared config and SSO, web identity, ECS/EC2 metadata; in a Lambda, its role) and is loaded only
 * when asked for, so a bearer-token or local user never pulls the AWS packages in.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export type AuthConfig =
  | { type: 'none' }
  | { type: 'bearer'; token: string | (() => string | Promise<string>) }
  | {
      type: 'sigv4';
      /** Defaults to AWS_REGION, then the region in the endpoint's host name. */
      region?: string;
      /** `execute-api` (API Gateway, the default) or `lambda` (a function URL, guessed from the host). */
      service?: string;
      /** Defaults to the standard AWS credential chain. */
      credentials?: AwsCredentials | (() => Promise<AwsCredentials>);
    };

export interface RequestToSign {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

/** Returns the headers to send (the given ones plus authentication). */
export type RequestSigner = (req: RequestToSign) => Promise<Record<string, string>>;

/** The sha256 constructor @smithy/signature-v4 expects, over node:crypto (Node and Lambda alike). */
class Sha256 {
  private readonly h: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.h.update(toBuffer(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
}

function toBuffer(d: string | ArrayBuffer | ArrayBufferView): Buffer {
  if (typeof d === 'string') return Buffer.from(d, 'utf8');
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.from(d);
}

/** `abc.execute-api.eu-west-1.amazonaws.com` -> eu-west-1; `x.lambda-url.us-east-1.on.aws` -> us-east-1. */
export function regionFromHost(host: string): string | undefined {
  return /\.(?:execute-api|lambda-url)\.([a-z0-9-]+)\.(?:amazonaws\.com|on\.aws)$/.exec(host)?.[1];
}

export function createSigner(
  auth: AuthConfig | undefined,
  env: Record<string, string | undefined> = process.env,
): RequestSigner {
  if (auth === undefined || auth.type === 'none') return async (req) => req.headers;
  if (auth.type === 'bearer') {
    const token = auth.token;
    return async (req) => ({
      ...req.headers,
      authorization: `Bearer ${typeof token === 'function' ? await token() : token}`,
    });
  }
  let signer: Promise<(req: RequestToSign) => Promise<Record<string, string>>> | undefined;
  const load = async () => {
    const { SignatureV4 } = await import('@smithy/signature-v4');
    let credentials = auth.credentials;
    if (credentials === undefined) {
      const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
      credentials = defaultProvider() as () => Promise<AwsCredentials>;
    }
    const cache = new Map<string, InstanceType<typeof SignatureV4>>();
    return async (req: RequestToSign) => {
      const region = auth.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? regionFromHost(req.url.hostname);
      if (!region) throw new Error('SigV4 needs a region: set auth.region or AWS_REGION');
      const service = auth.service ?? (req.url.hostname.includes('.lambda-url.') ? 'lambda' : 'execute-api');
      const key = `${region}/${service}`;
      let s = cache.get(key);
      if (!s) cache.set(key, (s = new SignatureV4({ service, region, credentials: credentials!, sha256: Sha256 })));
      // A repeated parameter is signed with all its values, as it is sent.
      const query: Record<string, string | string[]> = {};
      for (const k of new Set(req.url.searchParams.keys())) {
        const all = req.url.searchParams.getAll(k);
        query[k] = all.length === 1 ? all[0]! : all;
      }
      const signed = await s.sign({
        method: req.method,
        protocol: req.url.protocol,
        hostname: req.url.hostname,
        ...(req.url.port ? { port: Number(req.url.port) } : {}),
        path: req.url.pathname,
        query,
        headers: { ...req.headers, host: req.url.host },
        body: req.body,
      });
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = String(v);
      return out;
    };
  };
  return async (req) => {
    signer ??= load().catch((e) => {
      signer = undefined;
      throw e;
    });
    return (await signer)(req);
  };
}
