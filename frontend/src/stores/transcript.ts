// One conversation's transcript as state: a compression chain read as one
// scroll (every part's messages, a divider at each rotation), the session it
// continues in (its newest part: the header, the composer), where to land (a
// search hit, its words), and where the conversation goes on when this one
// can no longer take a message.

import { toApiError } from '../api';
import type { OpenAt } from '../state';
import type { ChainDTO, ItemDTO, SessionDTO } from '../types';
import { Emitter } from './emitter';

/** The calls the store makes. */
export interface TranscriptSource {
  get(id: string): Promise<SessionDTO>;
  conversation(id: string, highlight: string): Promise<ChainDTO>;
}

/** Where a conversation goes on, when it cannot take a message here. */
export type Continuation =
  | { kind: 'open' }
  | { kind: 'continues'; id: string; title: string }
  | { kind: 'archived' }
  | { kind: 'trash'; purgeAfter: string | undefined }
  | { kind: 'ended'; reason: string };

export type TranscriptChange = 'loading' | 'loaded' | 'error';

export class TranscriptStore {
  readonly changes = new Emitter<TranscriptChange>();
  /** the id opened (any part of the chain) */
  id = '';
  /** the newest part: the header and the composer's session */
  session: SessionDTO | null = null;
  chain: ChainDTO | null = null;
  error: { code: string; message: string } | null = null;
  /** where to land once loaded; cleared when another conversation opens */
  at: OpenAt | null = null;
  /** the parent a subagent reports to, for "continues in" */
  parent: SessionDTO | null = null;
  private gen = 0;

  constructor(private readonly src: TranscriptSource) {}

  get items(): ItemDTO[] {
    return this.chain?.items ?? [];
  }

  /** open switches to the conversation of id (at a message, if given). */
  open(id: string, at?: OpenAt): void {
    if (id !== this.id && !this.chain?.parts?.some((p) => p.session_id === id)) {
      this.session = null;
      this.chain = null;
      this.parent = null;
    }
    this.id = id;
    this.at = at && (at.messageID || at.query) ? at : null;
  }

  async load(): Promise<void> {
    const gen = ++this.gen;
    const id = this.id;
    this.changes.emit('loading');
    try {
      const chain = await this.src.conversation(id, this.at?.query ?? '');
      const s = await this.src.get(chain.id || id);
      const parent = s.relation === 'delegate' && s.parent_session_id && s.ended_at ? await this.src.get(s.parent_session_id).catch(() => null) : null;
      if (gen !== this.gen) return;
      this.chain = chain;
      this.session = s;
      this.parent = parent;
      this.error = null;
      this.changes.emit('loaded');
    } catch (raw) {
      if (gen !== this.gen) return;
      const e = toApiError(raw);
      this.error = { code: e.code, message: e.message };
      this.changes.emit('error');
    }
  }

  /** moved follows the conversation into the session it rotated into. */
  moved(id: string): void {
    if (id && id !== this.session?.id) this.open(id);
  }

  /** continuation says whether the composer can send here, or where the
   * conversation goes on: restoring a deleted one, unarchiving an archived
   * one, the parent of a subagent that ended. */
  continuation(): Continuation {
    const s = this.session;
    if (!s) return { kind: 'open' };
    if (s.where === 'trash') return { kind: 'trash', purgeAfter: s.purge_after };
    if (s.archived) return { kind: 'archived' };
    if (s.ended_at && this.parent) return { kind: 'continues', id: this.parent.id, title: this.parent.title };
    if (s.ended_at) return { kind: 'ended', reason: s.end_reason ?? '' };
    return { kind: 'open' };
  }

  /** firstShown is the index of the first item to render when only the
   * last `limit` are shown at first, moved back to include the hit. */
  firstShown(limit: number): number {
    const items = this.items;
    let start = Math.max(0, items.length - limit);
    const want = this.at?.messageID;
    if (want) {
      const i = items.findIndex((it) => it.message?.id === want);
      if (i >= 0 && i < start) start = Math.max(0, i - 20);
    }
    return start;
  }

  /** hitWords are the words the server marked (its ranges in the
   * messages), for marking the rendered Markdown. */
  hitWords(): string[] {
    const out = new Set<string>();
    for (const it of this.items) {
      const text = it.message?.content ?? '';
      for (const r of it.highlights ?? []) out.add(text.slice(r.start, r.end).toLowerCase());
    }
    return [...out].filter((w) => w.trim() !== '');
  }
}
