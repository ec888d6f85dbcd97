/**
 * A request whose path some route serves under another method is answered 405 with `Allow`
 * (RFC 9110), not 404: the path is right, the method is not. Hono's router answers neither; this
 * looks the path up among the app's routes (their patterns turned into regular expressions once).
 */
type Route = { method: string; path: string };

/** A Hono route pattern as a regular expression: `:name` (and `:name{re}`) is one segment, `*` the rest. */
function patternOf(path: string): RegExp {
  const segments = path.split('/').map((s) => {
    if (s === '*') return '.*';
    if (s.startsWith(':')) return s.endsWith('?') ? '[^/]*' : '[^/]+';
    return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${segments.join('/').replace(/\/\.\*$/, '(?:/.*)?')}/?$`);
}

/** The methods other routes serve `path` with (empty: no route has the path; 404 stands). */
export function allowedMethods(routes: readonly Route[]): (path: string) => string[] {
  let compiled: { method: string; pattern: RegExp }[] | undefined;
  return (path) => {
    compiled ??= routes
      .filter((r) => r.method !== 'ALL' && !r.path.endsWith('*'))
      .map((r) => ({ method: r.method, pattern: patternOf(r.path) }));
    const methods = new Set(compiled.filter((r) => r.pattern.test(path)).map((r) => r.method));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
}
