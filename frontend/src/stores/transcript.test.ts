import { describe, expect, it } from 'vitest';
import { ApiError } from '../api';
import type { ChainDTO, ItemDTO, MessageDTO, SessionDTO } from '../types';
import { TranscriptStore, type TranscriptSource } from './transcript';

function session(id: string, o: Partial<SessionDTO> = {}): SessionDTO {
  return { id, source: 'cli', title: id, profile: 'default', started_at: '2026-12-01T10:00:00Z', last_activity_at: '2026-12-01T10:00:00Z', archived: false, pinned: false, message_count: 0, token_count: 0, where: 'active', ...o };
}

function msg(id: number, content = `m${id}`): MessageDTO {
  return { id, role: 'user', content, sent_content: null, created_at: '2026-12-01T10:00:00Z', compaction: false };
}

/** a chain a → b → c of 3 parts, 1000 messages, a divider before parts 2 and 3 */
function source(sessions: SessionDTO[], seen: string[] = []): TranscriptSource {
  const by = new Map(sessions.map((s) => [s.id, s]));
  return {
    get: async (id) => {
      const s = by.get(id);
      if (!s) throw new ApiError('not_found', `no session ${id}`);
      return s;
    },
    conversation: async (id, highlight): Promise<ChainDTO> => {
      seen.push(`${id} ${highlight}`);
      if (!by.has(id)) throw new ApiError('not_found', `no session ${id}`);
      const tip = sessions[sessions.length - 1]!;
      const items: ItemDTO[] = [];
      for (let i = 1; i <= 1000; i++) {
        if (i === 400 || i === 800) items.push({ kind: 'divider', part: i === 400 ? 2 : 3, divider: { part: i === 400 ? 2 : 3, of: 3, kind: 'summarize', reason: 'auto', before_tokens: 896, after_tokens: 545, text: 'Part 2 of 3 · compacted: summarize, 896 → 545 tokens' } });
        const m = msg(i, i === 100 ? 'The checksum mismatch in shard 7' : `m${i}`);
        items.push({ kind: 'message', part: 1, message: m, highlights: i === 100 && highlight ? [{ start: 4, end: 12 }, { start: 13, end: 21 }] : undefined });
      }
      return { id: tip.id, title: tip.title, where: tip.where, parts: sessions.map((s, k) => ({ session_id: s.id, index: k + 1, title: s.title, message_count: 0 })), items };
    },
  };
}

describe('TranscriptStore', () => {
  it('reads a chain as one conversation, its newest part as the session', async () => {
    const chain = [session('a', { ended_at: 'x', end_reason: 'compression' }), session('b', { ended_at: 'x', end_reason: 'compression' }), session('c')];
    const st = new TranscriptStore(source(chain));
    st.open('a');
    await st.load();
    expect(st.session?.id).toBe('c');
    expect(st.items.filter((i) => i.kind === 'divider')).toHaveLength(2);
    expect(st.continuation()).toEqual({ kind: 'open' });
  });

  it('says where a conversation cannot go on', async () => {
    const cases: [SessionDTO[], unknown][] = [
      [[session('x', { archived: true, where: 'archived' })], { kind: 'archived' }],
      [[session('t', { where: 'trash', purge_after: '2026-12-31T00:00:00Z' })], { kind: 'trash', purgeAfter: '2026-12-31T00:00:00Z' }],
      [[session('y', { ended_at: 'x', end_reason: 'user_exit' })], { kind: 'ended', reason: 'user_exit' }],
      [[session('p', { title: 'Parent' }), session('k', { ended_at: 'x', relation: 'delegate', parent_session_id: 'p' })], { kind: 'continues', id: 'p', title: 'Parent' }],
    ];
    for (const [ss, want] of cases) {
      const st = new TranscriptStore({ ...source(ss), conversation: async (id) => ({ id, title: id, where: 'active', parts: [], items: [] }) });
      st.open(ss[ss.length - 1]!.id);
      await st.load();
      expect(st.continuation()).toEqual(want);
    }
  });

  it('lands on the hit even when it is older than the last items, with the words the server marked', async () => {
    const seen: string[] = [];
    const st = new TranscriptStore(source([session('a')], seen));
    st.open('a', { messageID: 100, query: 'checksum mismatch' });
    await st.load();
    expect(seen).toEqual(['a checksum mismatch']);
    expect(st.firstShown(400)).toBe(79);
    expect(st.hitWords()).toEqual(['checksum', 'mismatch']);
    st.open('a');
    expect(st.firstShown(400)).toBe(602);
  });

  it('keeps a failure', async () => {
    const st = new TranscriptStore(source([session('a')]));
    st.open('nope');
    await st.load();
    expect(st.error).toEqual({ code: 'not_found', message: 'no session nope' });
  });
});
