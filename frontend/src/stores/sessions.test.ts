import { describe, expect, it } from 'vitest';
import { ApiError, type ConvPage } from '../api';
import type { ConversationDTO, ConversationPageDTO, HitDTO, SessionDTO } from '../types';
import { SessionsStore, type Change, type SessionsSource } from './sessions';

function session(i: number, o: Partial<SessionDTO> = {}): SessionDTO {
  return {
    id: `s${i}`,
    source: i % 2 ? 'cli' : 'cron',
    title: `Session ${i}`,
    profile: 'default',
    started_at: '2026-12-01T10:00:00Z',
    last_activity_at: '2026-12-01T10:00:00Z',
    archived: false,
    pinned: false,
    message_count: i,
    token_count: 0,
    where: 'active',
    ...o,
  };
}

/** fake is an API over an in-memory list, paged like the server's. */
function fake(n: number, o: { ids?: 'missing' | 'fail'; count?: 'missing' } = {}) {
  const all = Array.from({ length: n }, (_, i) => session(i));
  const calls: string[] = [];
  const match = (f: ConvPage) => all.filter((s) => s.where === f.scope && (!f.source || s.source === f.source) && (!f.platform || s.platform === f.platform));
  const conv = (s: SessionDTO, subagents = 0): ConversationDTO => ({ session: s, parts: 1, chain_ids: [s.id], total_messages: s.message_count, total_tokens: 0, subagents, origin_title: '' });
  const src: SessionsSource = {
    async list(f: ConvPage): Promise<ConversationPageDTO> {
      calls.push(`list ${f.limit} ${f.cursor ?? ''}`);
      const rows = match(f);
      const start = f.cursor ? Number(f.cursor) : 0;
      const end = start + (f.limit || 50);
      return { rows: rows.slice(start, end).map((s) => conv(s, s.id === 's0' ? 2 : 0)), next: end < rows.length ? String(end) : undefined };
    },
    async subagents(id: string) {
      calls.push(`subagents ${id}`);
      return [conv(session(100, { title: `${id} task 1`, parent_session_id: id, relation: 'delegate' })), conv(session(101, { parent_session_id: id, relation: 'delegate' }))];
    },
    async count(f) {
      if (o.count === 'missing') throw new ApiError('not_found', 'no API route GET /api/sessions/count');
      return { count: match(f).length };
    },
    async ids(f) {
      calls.push('ids');
      if (o.ids === 'missing') throw new ApiError('not_found', 'no API route GET /api/sessions/ids');
      if (o.ids === 'fail') throw new ApiError('internal', 'Internal error.');
      return match(f).map((s) => s.id);
    },
    async search(q: string, _limit: number, scope: string): Promise<HitDTO[]> {
      calls.push(`search ${q} ${scope}`);
      return all
        .filter((s) => s.title.includes(q))
        .map((s) => ({ session: s, conversation_id: `tip-of-${s.id}`, where: s.where, snippet: `…${q}…`, snippet_highlights: [{ start: 1, end: 1 + q.length }], title_highlights: null, in_title: true, message_id: 7 }));
    },
    async facets() {
      return { sources: ['cli', 'cron', 'gateway', ''], profiles: ['default'], platforms: ['telegram', ''] };
    },
  };
  return { all, calls, src };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('SessionsStore loading', () => {
  it('loads a first page, counts, and pages on as the viewport asks', async () => {
    const { src, calls } = fake(500);
    const st = new SessionsStore(src);
    const changes: Change[] = [];
    st.changes.subscribe((c) => changes.push(c));
    await st.reload();
    expect(st.rows).toHaveLength(80);
    expect(st.count).toBe(500);
    expect(st.total).toBe(500); // placeholders for the rest
    expect(changes).toContain('rows');
    st.want(300);
    await settle();
    await settle();
    expect(st.rows.length).toBeGreaterThanOrEqual(350);
    expect(calls[0]).toBe('list 80 ');
    expect(calls.slice(1).every((c) => c.startsWith('list '))).toBe(true);
  });

  it('a prime asks once: the first reload takes its answers', async () => {
    const { src, calls } = fake(500);
    let counts = 0;
    const st = new SessionsStore({ ...src, count: (f) => (counts++, src.count(f)) });
    await st.prime();
    expect(calls).toEqual(['list 80 ']);
    await st.reload();
    expect(calls).toEqual(['list 80 ']);
    expect(counts).toBe(1);
    expect(st.rows).toHaveLength(80);
    expect(st.count).toBe(500);
    // Taken once: the next reload asks again.
    await st.reload();
    expect(calls).toEqual(['list 80 ', 'list 80 ']);
    expect(counts).toBe(2);
  });

  it('a prime for another filter is not taken', async () => {
    const { src, calls } = fake(20);
    const st = new SessionsStore(src);
    await st.prime();
    st.setSource('cli'); // reloads for the new filter
    await settle();
    await settle();
    expect(calls).toEqual(['list 80 ', 'list 80 ']);
    expect(st.rows.every((r) => r.session.source === 'cli')).toBe(true);
    expect(st.rows).toHaveLength(10);
  });

  it('a prime that fails settles, and its reload says why', async () => {
    const { src } = fake(3);
    const st = new SessionsStore({ ...src, list: () => Promise.reject(new ApiError('unavailable', 'down')) });
    await expect(st.prime()).resolves.toBeUndefined();
    await st.reload();
    expect(st.error?.message).toBe('Could not load sessions: down');
  });

  it('without a count it shows one placeholder row while more exist', async () => {
    const { src } = fake(100, { count: 'missing' });
    const st = new SessionsStore(src);
    await st.reload();
    expect(st.count).toBeNull();
    expect(st.total).toBe(81);
  });

  it('a failed load keeps an error with a retry', async () => {
    const { src } = fake(3);
    let fail = true;
    const flaky: SessionsSource = { ...src, list: (f) => (fail ? Promise.reject(new ApiError('unavailable', 'down')) : src.list(f)) };
    const st = new SessionsStore(flaky);
    await st.reload();
    expect(st.error?.message).toBe('Could not load sessions: down');
    fail = false;
    st.error?.retry();
    await settle();
    await settle();
    expect(st.error).toBeNull();
    expect(st.rows).toHaveLength(3);
  });

  it('a stale answer never overwrites a newer one', async () => {
    const { src } = fake(10);
    let release: () => void = () => {};
    const slow: SessionsSource = {
      ...src,
      list: async (f) => {
        if (!f.source) await new Promise<void>((r) => (release = r));
        return src.list(f);
      },
    };
    const st = new SessionsStore(slow);
    const first = st.reload(); // waits
    st.setSource('cron'); // a newer filter
    await settle();
    release();
    await first;
    await settle();
    expect(st.rows.every((r) => r.session.source === 'cron')).toBe(true);
    expect(st.rows).toHaveLength(5);
  });

  it('search keeps the snippet and the matching message, in active and archived alike (the trash alone)', async () => {
    const { src, calls } = fake(20);
    const st = new SessionsStore(src);
    st.setQuery('  Session 1  ');
    await settle();
    await settle();
    expect(st.query).toBe('Session 1');
    expect(st.rows.map((r) => r.session.id)).toEqual(['s1', 's10', 's11', 's12', 's13', 's14', 's15', 's16', 's17', 's18', 's19']);
    expect(st.rows[0]).toMatchObject({ snippet: '…Session 1…', messageID: 7, snippetRanges: [{ start: 1, end: 10 }] });
    expect(st.openID(0)).toBe('tip-of-s1'); // a hit opens its conversation
    expect(st.next).toBeNull();
    expect(calls).toContain('search Session 1 all');
    st.setScope('trash');
    await settle();
    expect(calls).toContain('search Session 1 trash');
  });

  it('facets drop the empty value and a filter value that is gone', async () => {
    const { src } = fake(2);
    const st = new SessionsStore(src);
    st.source = 'gateway';
    await st.loadFacets();
    expect(st.facets.sources).toEqual(['cli', 'cron', 'gateway']);
    expect(st.facets.platforms).toEqual(['telegram']);
    expect(st.source).toBe('gateway');
    st.platform = 'slack';
    await st.loadFacets();
    expect(st.platform).toBe('');
  });

  it('filters by platform: gateway sessions of one chat platform', async () => {
    const { all, src } = fake(6);
    all[1]!.platform = 'telegram';
    all[4]!.platform = 'telegram';
    all[5]!.platform = 'slack';
    const st = new SessionsStore(src);
    await st.reload();
    expect(st.rows.length).toBe(6);
    st.setPlatform('telegram');
    await settle();
    await settle();
    expect(st.filter().platform).toBe('telegram');
    expect(st.rows.map((r) => r.session.id)).toEqual(['s1', 's4']);
  });
});

describe('SessionsStore selection', () => {
  it('click, ctrl-click and shift-click select as a list does', async () => {
    const st = new SessionsStore(fake(10).src);
    await st.reload();
    st.click(2);
    expect(st.selectedIDs()).toEqual(['s2']);
    st.click(5, { shift: true });
    expect(st.selectedIDs().sort()).toEqual(['s2', 's3', 's4', 's5']);
    st.click(8, { mod: true });
    expect(st.selection.size).toBe(5);
    st.click(8, { mod: true });
    expect(st.selection.has('s8')).toBe(false);
    st.click(0);
    expect(st.selectedIDs()).toEqual(['s0']);
  });

  it('arrows move the focus, Shift extends from the anchor, Space toggles', async () => {
    const st = new SessionsStore(fake(10).src);
    await st.reload();
    st.click(3);
    expect(st.moveFocus(5, true)).toBe(5);
    expect(st.selectedIDs().sort()).toEqual(['s3', 's4', 's5']);
    expect(st.moveFocus(99)).toBe(9);
    st.toggle();
    expect(st.selection.has('s9')).toBe(true);
  });

  it('selectAll selects every id of the filter, not just the loaded rows', async () => {
    const st = new SessionsStore(fake(300).src);
    await st.reload();
    expect(st.rows.length).toBeLessThan(300);
    expect(await st.selectAll()).toBeNull();
    expect(st.selection.size).toBe(300);
    expect(st.wholeFilter).toBe(true);
    st.click(0);
    expect(st.wholeFilter).toBe(false);
  });

  it('selectAll falls back to the loaded rows on an older server, and says so', async () => {
    const st = new SessionsStore(fake(300, { ids: 'missing' }).src);
    await st.reload();
    const warning = await st.selectAll();
    expect(warning).toMatch(/Selected the 80 loaded sessions/);
    expect(st.selection.size).toBe(80);
  });

  it('selectAll reports a real failure and changes nothing', async () => {
    const st = new SessionsStore(fake(300, { ids: 'fail' }).src);
    await st.reload();
    st.click(1);
    await expect(st.selectAll()).rejects.toThrow('Internal error.');
    expect(st.selectedIDs()).toEqual(['s1']);
  });

  it('a new filter or search clears the selection', async () => {
    const st = new SessionsStore(fake(10).src);
    await st.reload();
    st.click(1);
    st.setScope('archived');
    expect(st.selection.size).toBe(0);
    expect(st.focus).toBe(0);
  });
});

describe('SessionsStore conversations', () => {
  it('nests a conversation\'s subagents under it on demand, and hides them again', async () => {
    const { src, calls } = fake(10);
    const st = new SessionsStore(src);
    await st.reload();
    expect(st.rows[0]!.conv?.subagents).toBe(2);
    await st.toggleSubagents(0);
    expect(calls).toContain('subagents s0');
    expect(st.rows.slice(0, 4).map((r) => [r.session.id, r.depth])).toEqual([['s0', 0], ['s100', 1], ['s101', 1], ['s1', 0]]);
    expect(st.total).toBe(12);
    await st.toggleSubagents(0);
    expect(st.rows.map((r) => r.session.id).slice(0, 2)).toEqual(['s0', 's1']);
    expect(st.total).toBe(10);
  });

  it('keeps open subagents open across a reload', async () => {
    const { src } = fake(10);
    const st = new SessionsStore(src);
    await st.reload();
    await st.toggleSubagents(0);
    await st.reload();
    expect(st.rows[1]).toMatchObject({ depth: 1 });
    expect(st.expanded.has('s0')).toBe(true);
  });

  it('"show subagents" asks for them as rows of their own, and closes nested ones', async () => {
    const { src } = fake(10);
    const seen: ConvPage[] = [];
    const st = new SessionsStore({ ...src, list: (f) => (seen.push(f), src.list(f)) });
    await st.reload();
    await st.toggleSubagents(0);
    st.setSubagents(true);
    await new Promise((r) => setTimeout(r, 0));
    expect(seen[seen.length - 1]).toMatchObject({ subagents: true });
    expect(st.expanded.size).toBe(0);
  });
});
