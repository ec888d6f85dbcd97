/**
 * The web console's build (console/README is docs/console.md). `npm run build:console` runs it and
 * writes the result into src/console/assets.generated.ts, the module the server serves from.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Assets are linked relative to the page, so the console works under any path prefix
  // (/console/ locally, /<stage>/console/ behind a REST API stage).
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: false,
    reportCompressedSize: false,
  },
});
