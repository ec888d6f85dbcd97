/**
 * A peer speaking Lambda's Invoke REST API on the wire (POST /2015-03-31/functions/{name}/invocations,
 * X-Amz-Function-Error on a function error), for triggers with a Lambda target: it records each
 * invocation (the function and the Kafka event) and answers what the test says.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KafkaEvent, KafkaEventRecord } from '../../src/triggers/kafka-event.js';

export interface LambdaCall {
  functionName: string;
  invocationType: string | undefined;
  event: KafkaEvent;
}

export interface LambdaAnswer {
  /** Unhandled (or Handled): the function threw; Lambda still answers 200. */
  functionError?: 'Unhandled' | 'Handled';
  /** The function's return value (JSON), e.g. a partial batch response. */
  body?: unknown;
  /** A service error instead of an invocation (429 throttling, ...). */
  status?: number;
}

export interface LambdaPeer {
  endpoint: string;
  calls: LambdaCall[];
  /** Every record of every invocation that returned without a function error, in arrival order. */
  delivered: KafkaEventRecord[];
  answer: (call: LambdaCall, n: number) => LambdaAnswer;
  close(): Promise<void>;
}

export async function startLambdaPeer(): Promise<LambdaPeer> {
  const peer: Omit<LambdaPeer, 'endpoint' | 'close'> = { calls: [], delivered: [], answer: () => ({}) };
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const m = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !m) {
        res.writeHead(404, { 'x-amzn-errortype': 'ResourceNotFoundException' }).end('{}');
        return;
      }
      const header = req.headers['x-amz-invocation-type'];
      const call: LambdaCall = {
        functionName: decodeURIComponent(m[1]!),
        invocationType: Array.isArray(header) ? header[0] : header,
        event: JSON.parse(text) as KafkaEvent,
      };
      const a = peer.answer(call, peer.calls.length);
      peer.calls.push(call);
      if (a.status && a.status !== 200) {
        res
          .writeHead(a.status, { 'content-type': 'application/json', 'x-amzn-errortype': 'TooManyRequestsException' })
          .end('{"message":"Rate exceeded"}');
        return;
      }
      if (!a.functionError) for (const rs of Object.values(call.event.records)) peer.delivered.push(...rs);
      const body = a.functionError
        ? JSON.stringify({ errorType: 'Error', errorMessage: 'boom' })
        : a.body === undefined
          ? 'null'
          : JSON.stringify(a.body);
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'x-amz-executed-version': '$LATEST',
          ...(a.functionError && { 'x-amz-function-error': a.functionError }),
        })
        .end(body);
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
