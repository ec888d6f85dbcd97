import { Hono } from 'hono';
import { consoleAsset } from '../console/assets.js';

/**
 * The web console at /console/ (docs/console.md): the built page and its assets, which call the
 * same API from the browser. `/console` redirects to `/console/` so the page's relative links
 * (assets, and the API at ../v3) resolve under any path prefix, such as an API Gateway stage.
 */
export function consoleRoutes(): Hono {
  const app = new Hono();
  app.get('/', (c) => {
    if (!new URL(c.req.url).pathname.endsWith('/')) return c.redirect('console/', 308);
    return serve('') ?? c.notFound();
  });
  app.get('/*', (c) => {
    const path = new URL(c.req.url).pathname.replace(/^.*?\/console\//, '');
    return serve(path) ?? c.notFound();
  });
  return app;
}

function serve(path: string): Response | undefined {
  const asset = consoleAsset(path);
  if (!asset) return undefined;
  return new Response(asset.body, {
    headers: {
      'content-type': asset.type,
      'cache-control': asset.cacheControl,
      // The console loads only its own files and calls only this origin.
      'content-security-policy':
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
    },
  });
}
