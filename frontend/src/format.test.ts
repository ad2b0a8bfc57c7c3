import { describe, expect, it } from 'vitest';
import { countdown, inWords } from './format';

describe('inWords', () => {
  it('drops the leading symbol of a status line, and nothing else', () => {
    expect(inWords('⏱️ Rate limited. Waiting 4.2s (attempt 1/3)...')).toBe('Rate limited. Waiting 4.2s (attempt 1/3)...');
    expect(inWords('🔄 main-model failed (server error): switching to fallback spare via custom')).toBe('main-model failed (server error): switching to fallback spare via custom');
    expect(inWords('⚠️ Fallback x via y passed over: its key is not set')).toBe('Fallback x via y passed over: its key is not set');
    expect(inWords('3 retries left')).toBe('3 retries left');
    expect(inWords('')).toBe('');
  });
});

describe('countdown', () => {
  const waiting = '⏱️ Rate limited. Waiting 4.2s (attempt 1/3)...';
  it('says the wait as it came, then what is left in whole seconds, then that it tries again', () => {
    expect(countdown(waiting, 0)).toBe(waiting);
    expect(countdown(waiting, 999)).toBe(waiting);
    expect(countdown(waiting, 1000)).toBe('⏱️ Rate limited. Waiting 4s (attempt 1/3)...');
    expect(countdown(waiting, 3300)).toBe('⏱️ Rate limited. Waiting 1s (attempt 1/3)...');
    expect(countdown(waiting, 4200)).toBe('⏱️ Rate limited. Trying again now (attempt 1/3)...');
    expect(countdown(waiting, 60_000)).toBe('⏱️ Rate limited. Trying again now (attempt 1/3)...');
  });
  it('leaves any other status as it is', () => {
    const fallback = '🔄 main-model failed (server error): switching to fallback spare via custom';
    expect(countdown(fallback, 5000)).toBe(fallback);
  });
});
