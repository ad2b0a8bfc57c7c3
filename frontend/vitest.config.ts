import { defineConfig } from 'vitest/config';

// Unit tests of the stores and the pure helpers (src/**/*.test.ts). Stores
// have no DOM and run in node; a test that needs one says
// `// @vitest-environment jsdom` at its top.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    reporters: ['default'],
  },
});
