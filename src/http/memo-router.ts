/**
 * Hono's router with the last routes it matched remembered. The app's routes do not fit Hono's
 * regular-expression router (a `-` segment beside a `:topic` one, names such as
 * `records:acknowledge`), so Hono falls back to its trie router, which walks the path anew for
 * every request (about 5 µs for a record route); a request's path is most often one seen a
 * moment ago (a producer's partition, a worker's group). A match is Hono's own answer, read and
 * never changed by the request (its handlers and the path's parameter values), so one answer serves
 * every request for the same method and path. A bound, not an LRU: refilling is cheap.
 */
import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

const REMEMBERED = 1024;

export class MemoRouter<T> implements Router<T> {
  readonly name = 'MemoRouter';
  private readonly matched = new Map<string, Result<T>>();

  /** By default the router Hono itself takes: the regular-expression router where the routes fit it, else the trie. */
  constructor(
    private readonly router: Router<T> = new SmartRouter({ routers: [new RegExpRouter(), new TrieRouter()] }),
  ) {}

  add(method: string, path: string, handler: T): void {
    this.matched.clear();
    this.router.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    const known = this.matched.get(key);
    if (known) return known;
    const result = this.router.match(method, path);
    if (this.matched.size >= REMEMBERED) this.matched.clear();
    this.matched.set(key, result);
    return result;
  }
}
