// One session's transcript as state: the session, its messages, its
// compression chain and compactions, where to land (a search hit), and where
// the conversation continues when this session can no longer take a message.

import { missing, toApiError } from '../api';
import type { OpenAt } from '../state';
import type { CompactionDTO, MessageDTO, SessionDTO } from '../types';
import { Emitter } from './emitter';

/** The calls the store makes (api.sessions satisfies it). */
export interface TranscriptSource {
  get(id: string): Promise<SessionDTO>;
  transcript(id: string): Promise<MessageDTO[] | null>;
  lineage(id: string): Promise<SessionDTO[] | null>;
  compactions(id: string): Promise<CompactionDTO[] | null>;
}

/** Where a conversation goes on, when this session cannot take a message. */
export type Continuation =
  | { kind: 'open' }
  | { kind: 'continues'; session: SessionDTO }
  | { kind: 'archived' }
  | { kind: 'trash'; purgeAfter: string | undefined }
  | { kind: 'ended'; reason: string };

export type TranscriptChange = 'loading' | 'loaded' | 'error';

export class TranscriptStore {
  readonly changes = new Emitter<TranscriptChange>();
  id = '';
  session: SessionDTO | null = null;
  messages: MessageDTO[] = [];
  chain: SessionDTO[] = [];
  compactions: CompactionDTO[] = [];
  error: { code: string; message: string } | null = null;
  /** where to land once loaded; cleared when another session opens */
  at: OpenAt | null = null;
  private gen = 0;
  private compactionsSupported = true;

  constructor(private readonly src: TranscriptSource) {}

  /** open switches to session id (at a message, if given). */
  open(id: string, at?: OpenAt): void {
    if (id !== this.id) {
      this.id = id;
      this.session = null;
      this.messages = [];
      this.chain = [];
      this.compactions = [];
    }
    this.at = at && (at.messageID || at.query) ? at : null;
  }

  async load(): Promise<void> {
    const gen = ++this.gen;
    const id = this.id;
    this.changes.emit('loading');
    const compP = this.compactionsSupported
      ? this.src.compactions(id).catch((e: unknown) => {
          if (missing(e)) this.compactionsSupported = false;
          else console.warn('compactions:', e);
          return [] as CompactionDTO[];
        })
      : Promise.resolve([] as CompactionDTO[]);
    try {
      const [s, msgs, lin, comps] = await Promise.all([
        this.src.get(id),
        this.src.transcript(id),
        this.src.lineage(id).catch(() => [] as SessionDTO[]),
        compP,
      ]);
      if (gen !== this.gen) return;
      this.session = s;
      this.messages = msgs ?? [];
      this.chain = lin ?? [];
      this.compactions = [...(comps ?? [])].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
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
    if (id && id !== this.id) this.open(id);
  }

  /** continuation says whether the composer can send here, or where the
   * conversation goes on: the chain's newest part for a compressed session,
   * unarchiving for an archived one, restoring for a deleted one. */
  continuation(): Continuation {
    const s = this.session;
    if (!s) return { kind: 'open' };
    if (s.where === 'trash') return { kind: 'trash', purgeAfter: s.purge_after };
    if (s.archived) return { kind: 'archived' };
    const i = this.chain.findIndex((c) => c.id === s.id);
    const tip = this.chain[this.chain.length - 1];
    if (s.ended_at && tip && i >= 0 && i < this.chain.length - 1) return { kind: 'continues', session: tip };
    if (s.ended_at) return { kind: 'ended', reason: s.end_reason ?? '' };
    return { kind: 'open' };
  }

  /** firstShown is the index of the first message to render when only the
   * last `limit` are shown at first, moved back to include the hit. */
  firstShown(limit: number): number {
    let start = Math.max(0, this.messages.length - limit);
    const want = this.at?.messageID;
    if (want) {
      const i = this.messages.findIndex((m) => m.id === want);
      if (i >= 0 && i < start) start = Math.max(0, i - 20);
    }
    return start;
  }
}
