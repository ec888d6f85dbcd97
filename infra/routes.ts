/**
 * Which function serves which path: API Gateway's routes, as data so the stack builds them and
 * the tests check them. All three functions run the same Hono app (functions/http-entry.ts), so a
 * route only decides sizing and permissions, never behaviour.
 */
export type HttpFunctionName = 'produce' | 'fetch' | 'admin';

export interface ApiRoute {
  method: 'GET' | 'POST' | 'ANY';
  /** An HTTP API route path: `{name}` is one segment, a final `{name+}` is the rest of the path. */
  path: string;
  target: HttpFunctionName;
}

export const API_ROUTES: readonly ApiRoute[] = [
  // Produce is `.../records` and `.../records:batch`. The action is a path variable rather than two
  // literal routes because HTTP API route paths are not documented to accept ':'; the one other
  // POST at this depth, `.../configs:alter`, also lands here, and needs no permission the produce
  // function lacks (it reads and conditionally writes the topic item).
  { method: 'POST', path: '/v3/clusters/{clusterId}/topics/{topicName}/{action}', target: 'produce' },
  // Record batches (Kafka's bytes) are produced per partition, and fetched on the same path.
  {
    method: 'POST',
    path: '/v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
    target: 'produce',
  },
  {
    method: 'GET',
    path: '/v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
    target: 'fetch',
  },
  // Kafka's ProduceRequest: many partitions' batches in one request. Its fetch counterpart,
  // `.../records:fetch`, has a ':' in its one segment (see above), so it stays on the greedy
  // route: the admin function has the reads and the index-repair write it makes, and 29 s for its
  // long poll.
  { method: 'POST', path: '/v3/clusters/{clusterId}/records', target: 'produce' },
  { method: 'ANY', path: '/{proxy+}', target: 'admin' },
];

/**
 * The route API Gateway picks for a request: a route whose every segment matches beats a greedy
 * one, and a route with the exact method beats ANY (as HTTP APIs select routes). `path` is the
 * request path without the query string.
 */
export function routeFor(method: string, path: string, routes: readonly ApiRoute[] = API_ROUTES): ApiRoute | undefined {
  const segments = path.split('/').slice(1);
  const score = (r: ApiRoute): number => {
    if (r.method !== 'ANY' && r.method !== method.toUpperCase()) return -1;
    const pattern = r.path.split('/').slice(1);
    const greedy = pattern.at(-1)?.endsWith('+}') ?? false;
    if (greedy ? segments.length < pattern.length : segments.length !== pattern.length) return -1;
    let literals = 0;
    for (let i = 0; i < pattern.length; i++) {
      const p = pattern[i]!;
      const s = segments[i]!;
      if (p.startsWith('{')) {
        if (s === '') return -1;
      } else if (p === s) literals++;
      else return -1;
    }
    return (greedy ? 0 : 1_000_000) + literals * 10 + (r.method === 'ANY' ? 0 : 1);
  };
  let best: ApiRoute | undefined;
  let bestScore = -1;
  for (const r of routes) {
    const s = score(r);
    if (s > bestScore) [best, bestScore] = [r, s];
  }
  return best;
}
