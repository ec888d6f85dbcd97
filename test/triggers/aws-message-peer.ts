/**
 * A peer speaking SQS's and SNS's wire protocols as the SDK sends them, for triggers' SQS and SNS
 * on-failure destinations: SQS SendMessage over the AWS JSON 1.0 protocol (POST /, X-Amz-Target
 * AmazonSQS.SendMessage) and SNS Publish over the Query protocol (POST /, a form with
 * Action=Publish), each checked for a SigV4 signature of the peer's credentials, in the queue's or
 * topic's region, for the service it is addressed to. It answers as the services do: SQS with the
 * body's MD5 (which the SDK checks) and a message id, SNS with PublishResponse XML; a queue or
 * topic that does not exist, a message over 256 KiB and a bad signature with the services' errors.
 *
 * Not an emulator (nothing is kept but the messages received, nothing can be received back):
 * enough to test that the adapters' requests are what SQS and SNS take.
 */
import { createHash, createHmac, randomUUID, type Hash, type Hmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';

export const PEER_CREDENTIALS = { accessKeyId: 'AKIDPEER', secretAccessKey: 'peer-secret' } as const;
const MAX_BYTES = 256 * 1024;

export interface ReceivedMessage {
  service: 'sqs' | 'sns';
  /** The queue's or topic's ARN. */
  arn: string;
  body: string;
}

export interface AwsMessagePeer {
  endpoint: string;
  /** Queues and topics that exist, by ARN: add to make one. */
  destinations: Set<string>;
  received: ReceivedMessage[];
  /** Requests refused, with the error code answered. */
  refused: string[];
  close(): Promise<void>;
}

class NodeSha256 {
  private h: Hash | Hmac;
  constructor(key?: Uint8Array | string) {
    this.h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  }
  update(d: string | Uint8Array) {
    this.h.update(d);
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
}

/** The Authorization header the peer's credentials give this request, signed again at its own time over its own signed headers. */
async function expectedAuthorization(req: IncomingMessage, body: string, service: string, region: string) {
  const auth = String(req.headers.authorization ?? '');
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(auth)?.[1]?.split(';') ?? [];
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const date = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const headers = Object.fromEntries(signedHeaders.map((h) => [h, String(req.headers[h] ?? '')]));
  const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
  const signer = new SignatureV4({ service, region, credentials: PEER_CREDENTIALS, sha256: NodeSha256 as never });
  const signed = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    },
    { signingDate: date },
  );
  return String(signed.headers.authorization);
}

const regionOf = (arn: string) => arn.split(':')[3] ?? '';

export async function startAwsMessagePeer(): Promise<AwsMessagePeer> {
  const peer = { destinations: new Set<string>(), received: [] as ReceivedMessage[], refused: [] as string[] };

  const sqsError = (res: ServerResponse, status: number, code: string, queryCode: string, message: string) => {
    peer.refused.push(code);
    res
      .writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-requestid': randomUUID(),
        'x-amzn-query-error': `${queryCode};Sender`,
      })
      .end(JSON.stringify({ __type: `com.amazonaws.sqs#${code}`, message }));
  };
  const snsError = (res: ServerResponse, status: number, code: string, message: string) => {
    peer.refused.push(code);
    res
      .writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() })
      .end(
        `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`,
      );
  };
  /** Signed with the peer's key for this service, in `region` (the destination's; for one that does not exist, the signature's own). */
  const signedFor = async (req: IncomingMessage, body: string, service: string, region: string | undefined) => {
    const auth = String(req.headers.authorization ?? '');
    const scope = /Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth);
    if (!scope || scope[1] !== PEER_CREDENTIALS.accessKeyId || scope[3] !== service) return false;
    if (region !== undefined && scope[2] !== region) return false;
    return auth === (await expectedAuthorization(req, body, service, scope[2]!));
  };

  const sqs = async (req: IncomingMessage, res: ServerResponse, text: string) => {
    if (
      req.headers['x-amz-target'] !== 'AmazonSQS.SendMessage' ||
      req.headers['content-type'] !== 'application/x-amz-json-1.0'
    )
      return sqsError(res, 400, 'InvalidAction', 'AWS.SimpleQueueService.InvalidAction', 'Unknown action');
    const input = JSON.parse(text) as { QueueUrl?: string; MessageBody?: string };
    const [, account, name] = new URL(input.QueueUrl ?? '', 'http://x').pathname.split('/');
    const arn = [...peer.destinations].find((a) => a.startsWith('arn:aws:sqs:') && a.endsWith(`:${account}:${name}`));
    if (!(await signedFor(req, text, 'sqs', arn && regionOf(arn))))
      return sqsError(
        res,
        403,
        'SignatureDoesNotMatch',
        'SignatureDoesNotMatch',
        'The request signature does not match',
      );
    if (!arn)
      return sqsError(
        res,
        400,
        'QueueDoesNotExist',
        'AWS.SimpleQueueService.NonExistentQueue',
        'The specified queue does not exist.',
      );
    const body = input.MessageBody ?? '';
    if (Buffer.byteLength(body) > MAX_BYTES)
      return sqsError(
        res,
        400,
        'InvalidParameterValue',
        'InvalidParameterValue',
        `Message must be shorter than ${MAX_BYTES} bytes.`,
      );
    peer.received.push({ service: 'sqs', arn, body });
    res
      .writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() })
      .end(JSON.stringify({ MD5OfMessageBody: createHash('md5').update(body).digest('hex'), MessageId: randomUUID() }));
  };

  const sns = async (req: IncomingMessage, res: ServerResponse, text: string) => {
    const form = new URLSearchParams(text);
    if (form.get('Action') !== 'Publish' || form.get('Version') !== '2010-03-31')
      return snsError(res, 400, 'InvalidAction', 'Unknown action');
    const arn = form.get('TopicArn') ?? '';
    if (!(await signedFor(req, text, 'sns', peer.destinations.has(arn) ? regionOf(arn) : undefined)))
      return snsError(res, 403, 'SignatureDoesNotMatch', 'The request signature does not match');
    if (!peer.destinations.has(arn)) return snsError(res, 404, 'NotFound', 'Topic does not exist');
    const body = form.get('Message') ?? '';
    if (Buffer.byteLength(body) > MAX_BYTES) return snsError(res, 400, 'InvalidParameter', 'Message too long');
    peer.received.push({ service: 'sns', arn, body });
    res
      .writeHead(200, { 'content-type': 'text/xml', 'x-amzn-requestid': randomUUID() })
      .end(
        `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${randomUUID()}</MessageId></PublishResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishResponse>`,
      );
  };

  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const json = req.headers['content-type'] === 'application/x-amz-json-1.0' || 'x-amz-target' in req.headers;
      (json ? sqs : sns)(req, res, text).catch((e: unknown) => res.writeHead(500).end(String(e)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(peer, {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}
