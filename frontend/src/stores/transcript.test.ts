import { describe, expect, it } from 'vitest';
import { ApiError } from '../api';
import type { MessageDTO, SessionDTO } from '../types';
import { TranscriptStore, type TranscriptSource } from './transcript';

function session(id: string, o: Partial<SessionDTO> = {}): SessionDTO {
  return { id, source: 'cli', title: id, profile: 'default', started_at: '2026-12-01T10:00:00Z', last_activity_at: '2026-12-01T10:00:00Z', archived: false, pinned: false, message_count: 0, token_count: 0, where: 'active', ...o };
}

function msg(id: number): MessageDTO {
  return { id, role: 'user', content: `m${id}`, sent_content: null, created_at: '2026-12-01T10:00:00Z', compaction: false };
}

function source(sessions: SessionDTO[], o: { compactions?: 'missing' } = {}): TranscriptSource {
  const by = new Map(sessions.map((s) => [s.id, s]));
  return {
    get: async (id) => {
      const s = by.get(id);
      if (!s) throw new ApiError('not_found', `no session ${id}`);
      return s;
    },
    transcript: async () => Array.from({ length: 1000 }, (_, i) => msg(i + 1)),
    lineage: async () => sessions,
    compactions: async () => {
      if (o.compactions === 'missing') throw new ApiError('not_found', 'no API route GET /api/sessions/x/compactions');
      return [
        { event_id: 'b', session_id: 'c', old_session_id: 'b', kind: 'summarize', reason: 'auto', before_tokens: 9, after_tokens: 5, messages_removed: 2, created_at: '2026-12-02T00:00:00Z' },
        { event_id: 'a', session_id: 'b', old_session_id: 'a', kind: 'summarize', reason: 'auto', before_tokens: 9, after_tokens: 5, messages_removed: 2, created_at: '2026-12-01T00:00:00Z' },
      ];
    },
  };
}

describe('TranscriptStore', () => {
  it('loads a session with its chain, compactions oldest first', async () => {
    const chain = [session('a', { ended_at: 'x', end_reason: 'compression' }), session('b', { ended_at: 'x', end_reason: 'compression' }), session('c')];
    const st = new TranscriptStore(source(chain));
    st.open('b');
    await st.load();
    expect(st.session?.id).toBe('b');
    expect(st.compactions.map((c) => c.event_id)).toEqual(['a', 'b']);
    expect(st.continuation()).toEqual({ kind: 'continues', session: chain[2] });
  });

  it('says where a conversation cannot go on', async () => {
    const st = new TranscriptStore(source([session('x', { archived: true })]));
    st.open('x');
    await st.load();
    expect(st.continuation()).toEqual({ kind: 'archived' });
    const ended = new TranscriptStore(source([session('y', { ended_at: 'x', end_reason: 'user_exit' })]));
    ended.open('y');
    await ended.load();
    expect(ended.continuation()).toEqual({ kind: 'ended', reason: 'user_exit' });
    const trashed = new TranscriptStore(source([session('t', { where: 'trash', archived: true, purge_after: '2026-12-31T00:00:00Z' })]));
    trashed.open('t');
    await trashed.load();
    expect(trashed.continuation()).toEqual({ kind: 'trash', purgeAfter: '2026-12-31T00:00:00Z' });
    const live = new TranscriptStore(source([session('z')]));
    live.open('z');
    await live.load();
    expect(live.continuation()).toEqual({ kind: 'open' });
  });

  it('shows the hit even when it is older than the last messages', async () => {
    const st = new TranscriptStore(source([session('a')]));
    st.open('a', { messageID: 100, query: 'm100' });
    await st.load();
    expect(st.firstShown(400)).toBe(79);
    st.open('a');
    expect(st.firstShown(400)).toBe(600);
  });

  it('keeps a failure, and an older server without compactions', async () => {
    const st = new TranscriptStore(source([session('a')], { compactions: 'missing' }));
    st.open('nope');
    await st.load();
    expect(st.error).toEqual({ code: 'not_found', message: 'no session nope' });
    st.open('a');
    await st.load();
    expect(st.error).toBeNull();
    expect(st.compactions).toEqual([]);
  });
});
