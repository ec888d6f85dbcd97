/**
 * The pieces the request path of every route shares, read faster than Hono and the web Request
 * would read them, answer as those do: a header from node's raw list as Headers.get, the memoized
 * router as Hono's, a request's origin as URL's.
 */
import type { Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';
import { describe, expect, it } from 'vitest';
import { incomingHeader } from '../../src/http/incoming-header.js';
import { MemoRouter } from '../../src/http/memo-router.js';
import { originOf } from '../../src/http/routed-app.js';

describe('incomingHeader', () => {
  const raw = [
    'Host',
    'localhost:8080',
    'Content-Type',
    'application/vnd.kafka.record-batch.v2',
    'X-Client-Id',
    'a',
    'x-client-id',
    '  b \t',
    'Authorization',
    'Bearer t1',
    'authorization',
    'Bearer t2',
    'X-Empty',
    '',
    'X-Nbsp',
    '\u00a0v\u00a0',
  ];
  const headers = new Headers();
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);

  it.each(['host', 'content-type', 'x-client-id', 'authorization', 'x-empty', 'x-nbsp', 'content-length'])(
    '%s as Headers.get answers it (repeats joined, whitespace trimmed, absent undefined)',
    (name) => {
      expect(incomingHeader(raw, name)).toBe(headers.get(name) ?? undefined);
    },
  );

  it('a repeated field is every value, so a second token makes the Authorization unusable as with Headers', () => {
    expect(incomingHeader(raw, 'authorization')).toBe('Bearer t1, Bearer t2');
  });
});

describe('MemoRouter', () => {
  const routes: [string, string, string][] = [
    ['ALL', '/v3/*', 'security'],
    ['GET', '/v3/clusters/:clusterId/topics/:topic', 'topic'],
    ['GET', '/v3/clusters/:clusterId/topics/-/configs', 'all configs'],
    ['POST', '/v3/clusters/:clusterId/share-groups/:group/records:acknowledge', 'ack'],
  ];
  const build = <R extends Router<string>>(r: R) => {
    for (const [m, p, h] of routes) r.add(m, p, h);
    return r;
  };
  const requests: [string, string][] = [
    ['GET', '/v3/clusters/c/topics/t'],
    ['GET', '/v3/clusters/c/topics/-/configs'],
    ['POST', '/v3/clusters/c/share-groups/g/records:acknowledge'],
    ['POST', '/v3/clusters/c/topics/t'],
    ['GET', '/elsewhere'],
  ];

  it('matches as the router it wraps, the first time and from memory', () => {
    const plain = build(new TrieRouter<string>());
    const memo = build(new MemoRouter<string>(new TrieRouter<string>()));
    for (let round = 0; round < 2; round++)
      for (const [m, p] of requests) expect(memo.match(m, p)).toEqual(plain.match(m, p));
  });

  it('forgets what it matched when a route is added', () => {
    const memo = new MemoRouter<string>(new TrieRouter<string>());
    memo.add('GET', '/a/:x', 'first');
    expect(memo.match('GET', '/a/b')[0].map(([h]) => h)).toEqual(['first']);
    memo.add('GET', '/a/b', 'second');
    expect(memo.match('GET', '/a/b')[0].map(([h]) => h)).toEqual(['first', 'second']);
  });

  it("by default wraps Hono's own default router (regular expressions where the routes fit, else the trie)", () => {
    const hono = build(new SmartRouter<string>({ routers: [new RegExpRouter(), new TrieRouter()] }));
    const memo = build(new MemoRouter<string>());
    for (const [m, p] of requests) expect(memo.match(m, p)).toEqual(hono.match(m, p));
  });
});

describe('originOf', () => {
  it.each([
    'http://localhost:8080/v3/clusters/c?x=1',
    'https://example.com/v3',
    'http://[::1]:9000/health',
    'http://user:pw@host:81/v3/clusters',
    'http://10.0.0.1/',
  ])('%s as URL.origin', (url) => {
    expect(originOf(url)).toBe(new URL(url).origin);
  });
});
