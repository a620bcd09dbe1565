// Vite build of the dashboard app: index.html + src/ → dist/ with content-hashed assets under
// dist/assets/ (served immutable by server/). The runtime config is fetched, never built in.
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Every supported browser has module preload; the polyfill would only add bytes.
    modulePreload: { polyfill: false },
    // The CSP allows no inline script or style, so nothing may be inlined as a data: URL either.
    assetsInlineLimit: 0,
    target: 'es2022',
  },
});
