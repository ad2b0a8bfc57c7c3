import { describe, expect, it } from 'vitest';
import { inWords } from './format';

describe('inWords', () => {
  it('drops the leading symbol of a status line, and nothing else', () => {
    expect(inWords('⏱️ Rate limited. Waiting 4.2s (attempt 1/3)...')).toBe('Rate limited. Waiting 4.2s (attempt 1/3)...');
    expect(inWords('🔄 main-model failed (server error): switching to fallback spare via custom')).toBe('main-model failed (server error): switching to fallback spare via custom');
    expect(inWords('⚠️ Fallback x via y passed over: its key is not set')).toBe('Fallback x via y passed over: its key is not set');
    expect(inWords('3 retries left')).toBe('3 retries left');
    expect(inWords('')).toBe('');
  });
});
