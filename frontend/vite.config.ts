import { defineConfig, type Plugin } from 'vite';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

// dist/.keep is tracked so that Go builds work before the UI is built; Vite's
// own emptyOutDir would delete it, so the old build is removed here instead.
function cleanDistKeepingKeep(dir: string): Plugin {
  return {
    name: 'atrium-clean-dist',
    apply: 'build',
    buildStart() {
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        return;
      }
      for (const name of names) {
        if (name !== '.keep') rmSync(join(dir, name), { recursive: true, force: true });
      }
    },
  };
}

const outDir = 'dist';

export default defineConfig({
  base: './',
  plugins: [cleanDistKeepingKeep(outDir)],
  build: {
    outDir,
    emptyOutDir: false,
    target: 'es2021',
    assetsDir: 'assets',
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
  server: {
    proxy: {
      // ATRIUM_API=http://127.0.0.1:PORT npm run dev; the token cookie is set
      // by opening the printed link once against the proxy.
      '/api': { target: process.env.ATRIUM_API ?? 'http://127.0.0.1:8765', changeOrigin: true },
    },
  },
});
