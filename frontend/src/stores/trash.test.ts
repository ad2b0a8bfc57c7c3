import { describe, expect, it } from 'vitest';
import { ApiError } from '../api';
import { restoreFor, TrashStore } from './trash';

describe('TrashStore', () => {
  it('knows how long deletes stay restorable', async () => {
    const st = new TrashStore({ summary: async () => ({ sessions: 2, messages: 9, bytes: 100, trash_days: 30, oldest_trashed_at: null, next_purge_at: null }) });
    expect(st.days).toBeNull();
    expect(await st.ensureDays()).toBe(30);
  });

  it('an older server without a trash means deletes are for good', async () => {
    const st = new TrashStore({ summary: () => Promise.reject(new ApiError('not_found', 'no API route GET /api/trash')) });
    expect(await st.ensureDays()).toBe(0);
    expect(st.unsupported).toBe(true);
  });
});

describe('restoreFor', () => {
  const now = Date.parse('2026-12-01T00:00:00Z');
  it('counts days, then hours, from the purge time', () => {
    expect(restoreFor('2026-12-31T00:00:00Z', 30, now)).toBe('for 30 days');
    expect(restoreFor('2026-12-02T00:00:00Z', 30, now)).toBe('for 1 day');
    expect(restoreFor('2026-12-01T05:00:00Z', 30, now)).toBe('for 5 hours');
    expect(restoreFor(null, 30, now)).toBe('for 30 days');
    expect(restoreFor(undefined, null, now)).toBe('until it is purged');
  });
});
