import { describe, expect, it } from 'vitest';
import { ApiError } from '../api';
import { errorField, RuleStore, toFilter } from './rule';

describe('rule', () => {
  it('makes the shared filter from the form, leaving empty fields out', () => {
    expect(toFilter({ op: 'delete', scope: 'active', source: 'cron', inactiveFor: ' 30d ', messages: '< 3', match: '', skipPinned: true })).toEqual({
      scope: 'active',
      source: 'cron',
      inactive_for: '30d',
      messages: '<3',
      pinned: false,
    });
    expect(toFilter({ op: 'archive', scope: 'all', source: '', inactiveFor: '', messages: '', match: 'deploy', skipPinned: false })).toEqual({ scope: 'all', match: 'deploy' });
  });

  it('finds the field a server error names', () => {
    expect(errorField('filter field messages: "<<3" is not a count comparison')).toBe('messages');
    expect(errorField('something else')).toBeNull();
  });

  it('previews the rule, keeps the newest answer, and keeps an error with its field', async () => {
    const seen: unknown[] = [];
    const st = new RuleStore({
      previewRule: async (op, f) => {
        seen.push([op, f]);
        if (f.messages === '<<3') throw new ApiError('invalid', 'filter field messages: "<<3" is not a count comparison');
        return { affected_ids: ['a', 'b'], count: 2, cascaded: 1, matched: 1 };
      },
    }, { source: 'cron' });
    await st.refresh();
    expect(st.preview?.count).toBe(2);
    expect(st.narrow).toBe(true);
    st.set({ messages: '<<3' });
    await new Promise((r) => setTimeout(r, 0));
    expect(st.preview).toBeNull();
    expect(st.error).toEqual({ field: 'messages', message: 'filter field messages: "<<3" is not a count comparison' });
    expect(seen[0]).toEqual(['delete', { scope: 'active', source: 'cron', inactive_for: '30d', pinned: false }]);
  });
});
