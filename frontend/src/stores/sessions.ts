// The sessions list as state: conversations, not rows of a table (a
// compression chain is one row, its newest part; delegate children nest
// under their parent, fetched when opened; "show subagents" lists them as
// rows of their own), the filter and the search, paging by cursor, the count
// and the selection. No DOM: the view renders what this store holds; tests
// drive it with a fake API (stores/sessions.test.ts).

import { missing, toApiError, type ConvPage, type Scope } from '../api';
import type { ConversationDTO, ConversationPageDTO, CountDTO, FacetsDTO, HitDTO, RangeDTO, SessionDTO } from '../types';
import { Emitter } from './emitter';

/** The calls the store makes (api.conversations with api.sessions' search and facets). */
export interface SessionsSource {
  list(f: ConvPage): Promise<ConversationPageDTO>;
  count(f: ConvPage): Promise<CountDTO>;
  ids(f: ConvPage): Promise<string[] | null>;
  subagents(id: string): Promise<ConversationDTO[] | null>;
  search(q: string, limit: number, scope: Scope | 'all'): Promise<HitDTO[] | null>;
  facets(): Promise<FacetsDTO>;
}

export interface Row {
  session: SessionDTO;
  /** the conversation the row stands for (list rows) */
  conv?: ConversationDTO;
  /** 1: a subagent shown under its parent */
  depth: number;
  /** a search hit: its snippet, where the words are, the message it is in,
   * and the conversation to open */
  snippet?: string;
  snippetRanges?: RangeDTO[];
  titleRanges?: RangeDTO[];
  messageID?: number;
  openID?: string;
}

function convRow(c: ConversationDTO, depth = 0): Row {
  return { session: c.session, conv: c, depth };
}

/** What changed, so a view repaints only that. */
export type Change = 'rows' | 'selection' | 'status' | 'filter' | 'facets';

export const pageSize = 200;
export const firstPage = 80; // a screenful and then some: the first paint waits for it
export const bigPage = 1000; // when the viewport jumped far past what is loaded
export const searchLimit = 500;

/** pageKey says which first page a prime asked for. */
function pageKey(f: ConvPage, want: number, query: string): string {
  return JSON.stringify([f, want, query]);
}

export class SessionsStore {
  readonly changes = new Emitter<Change>();

  // the filter
  scope: Scope = 'active';
  /** delegate children as rows of their own */
  subagents = false;
  source = '';
  profile = '';
  /** a chat platform (gateway sessions), '' for all */
  platform = '';
  query = '';

  // what is loaded
  rows: Row[] = [];
  /** cursor of the next page; null at the end */
  next: string | null = null;
  /** how many sessions the filter matches; null when unknown */
  count: number | null = null;
  /** a load that failed, with what to retry */
  error: { message: string; retry: () => void } | null = null;
  loaded = false;
  facets: FacetsDTO = { sources: [], profiles: [], platforms: [] };

  /** conversations whose subagents are shown under them */
  expanded = new Set<string>();
  /** how many nested subagent rows are in rows */
  private nested = 0;

  // the selection
  selection = new Set<string>();
  anchor: number | null = null;
  focus = 0;

  private gen = 0;
  private pumping = false;
  private wantUpTo = 0;
  private countSupported = true;
  private primed?: { key: string; page: Promise<ConversationPageDTO>; count: Promise<number | null> };
  private idsSupported = true;

  constructor(private readonly src: SessionsSource) {}

  filter(): ConvPage {
    return { scope: this.scope, source: this.source, profile: this.profile, platform: this.platform, subagents: this.subagents };
  }

  /** searchScope: a search in the trash looks in the trash; elsewhere in
   * active and archived sessions alike (each hit says where it lives). */
  get searchScope(): Scope | 'all' {
    return this.scope === 'trash' ? 'trash' : 'all';
  }

  /** total is how many rows the list shows: those loaded, and placeholders
   * for the rest of the count while more pages exist. */
  get total(): number {
    if (this.next === null) return this.rows.length;
    if (this.count !== null) return Math.max(this.count + this.nested, this.rows.length + 1);
    return this.rows.length + 1; // unknown: one placeholder row asks for more
  }

  // ---- the filter ----

  setScope(v: Scope): void {
    if (this.scope === v) return;
    this.scope = v;
    this.filterChanged();
  }

  setSource(v: string): void {
    if (this.source === v) return;
    this.source = v;
    this.filterChanged();
  }

  setPlatform(v: string): void {
    if (this.platform === v) return;
    this.platform = v;
    this.filterChanged();
  }

  setProfile(v: string): void {
    if (this.profile === v) return;
    this.profile = v;
    this.filterChanged();
  }

  setSubagents(v: boolean): void {
    if (this.subagents === v) return;
    this.subagents = v;
    this.filterChanged();
  }

  setQuery(q: string): void {
    q = q.trim();
    if (this.query === q) return;
    this.query = q;
    this.filterChanged();
  }

  private filterChanged(): void {
    this.selection.clear();
    this.anchor = null;
    this.focus = 0;
    this.expanded.clear();
    this.changes.emit('filter');
    this.changes.emit('selection');
    void this.reload();
  }

  // ---- loading ----

  async loadFacets(): Promise<void> {
    try {
      const f = await this.src.facets();
      this.facets = {
        sources: (f.sources ?? []).filter((x) => x !== ''),
        profiles: (f.profiles ?? []).filter((x) => x !== ''),
        platforms: (f.platforms ?? []).filter((x) => x !== ''),
      };
    } catch (e) {
      this.facets = { sources: [], profiles: [], platforms: [] };
      if (!missing(e)) console.warn('facets:', e);
    }
    if (this.source && !this.facets.sources?.includes(this.source)) this.source = '';
    if (this.profile && !this.facets.profiles?.includes(this.profile)) this.profile = '';
    if (this.platform && !this.facets.platforms?.includes(this.platform)) this.platform = '';
    this.changes.emit('facets');
  }

  /** prime asks for the first page and the count now, before the list is
   * shown: the next reload with the same filter takes their answers instead
   * of asking again. The window's start calls it first thing, so the answers
   * are in hand when the list is first laid out and it is painted once, with
   * its rows (not first empty, then again). The promise it returns settles
   * (never rejects) when both answers are in. */
  prime(): Promise<void> {
    const f = this.filter();
    const want = this.firstLimit();
    const page = this.src.list({ ...f, limit: want });
    const count = this.countOf(f);
    this.primed = { key: pageKey(f, want, this.query), page, count };
    return Promise.all([page, count]).then(
      () => undefined,
      () => undefined, // reload reports it
    );
  }

  /** firstLimit is how many rows the first page of a reload asks for. */
  private firstLimit(): number {
    return Math.max(firstPage, Math.min(bigPage, this.wantUpTo + 50));
  }

  private countOf(f: ConvPage): Promise<number | null> {
    if (!this.countSupported) return Promise.resolve(null);
    return this.src.count(f).then(
      (c) => c.count,
      (e: unknown) => {
        if (missing(e)) this.countSupported = false;
        else if (toApiError(e).code !== 'unauthorized') console.warn('count:', e); // the page says that one
        return null;
      },
    );
  }

  /** reload loads the list (or the hits) again from the start; the
   * selection stays (ids that left the list are dropped by the caller). */
  async reload(): Promise<void> {
    const gen = ++this.gen;
    this.pumping = false;
    const f = this.filter();
    const want = this.firstLimit();
    const primed = this.primed?.key === pageKey(f, want, this.query) ? this.primed : undefined;
    this.primed = undefined;
    const countP = primed?.count ?? this.countOf(f);
    try {
      if (this.query) {
        const [hits, count] = await Promise.all([this.src.search(this.query, searchLimit, this.searchScope), countP]);
        if (gen !== this.gen) return;
        this.rows = (hits ?? []).map((x) => ({
          session: x.session,
          depth: 0,
          snippet: x.snippet,
          snippetRanges: x.snippet_highlights ?? undefined,
          titleRanges: x.title_highlights ?? undefined,
          messageID: x.message_id,
          openID: x.conversation_id || x.session.id,
        }));
        this.nested = 0;
        this.next = null;
        this.count = count;
      } else {
        const [page, count] = await Promise.all([primed?.page ?? this.src.list({ ...f, limit: want }), countP]);
        if (gen !== this.gen) return;
        this.rows = (page.rows ?? []).map((c) => convRow(c));
        this.nested = 0;
        this.next = page.next ? page.next : null;
        this.count = count;
        await this.reexpand(gen);
        if (gen !== this.gen) return;
      }
      this.error = null;
      this.loaded = true;
      this.focus = Math.min(this.focus, Math.max(0, this.total - 1));
      this.changes.emit('rows');
      this.changes.emit('status');
      void this.pump();
    } catch (raw) {
      if (gen !== this.gen) return;
      this.error = { message: `Could not load sessions: ${toApiError(raw).message}`, retry: () => void this.reload() };
      this.changes.emit('status');
    }
  }

  /** want says the viewport shows rows up to index last: pages load until
   * they are there. */
  want(last: number): void {
    this.wantUpTo = last;
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.pumping || this.query || this.next === null) return;
    const gen = this.gen;
    this.pumping = true;
    try {
      while (gen === this.gen && this.next !== null && this.rows.length <= this.wantUpTo + 50) {
        const gap = this.wantUpTo - this.rows.length;
        const limit = gap > bigPage ? bigPage : gap > pageSize ? Math.min(bigPage, gap + pageSize) : pageSize;
        const page = await this.src.list({ ...this.filter(), limit, cursor: this.next });
        if (gen !== this.gen) return;
        for (const c of page.rows ?? []) this.rows.push(convRow(c));
        this.next = page.next ? page.next : null;
        this.changes.emit('rows');
      }
    } catch (raw) {
      if (gen !== this.gen) return;
      this.error = { message: `Could not load more sessions: ${toApiError(raw).message}`, retry: () => void this.pump() };
      this.changes.emit('status');
    } finally {
      if (gen === this.gen) this.pumping = false;
    }
  }

  // ---- subagents under their parent ----

  /** toggleSubagents shows (fetching them) or hides the subagents of row i. */
  async toggleSubagents(i: number): Promise<void> {
    const r = this.rows[i];
    if (!r?.conv || r.depth > 0) return;
    const id = r.session.id;
    if (this.expanded.has(id)) {
      this.expanded.delete(id);
      const n = this.childCount(i);
      this.rows.splice(i + 1, n);
      this.nested -= n;
      this.changes.emit('rows');
      return;
    }
    this.expanded.add(id);
    const gen = this.gen;
    try {
      const kids = (await this.src.subagents(id)) ?? [];
      if (gen !== this.gen || !this.expanded.has(id)) return;
      const at = this.rows.findIndex((x) => x.depth === 0 && x.session.id === id);
      if (at < 0) return;
      this.rows.splice(at + 1, this.childCount(at), ...kids.map((c) => convRow(c, 1)));
      this.nested = this.rows.filter((x) => x.depth > 0).length;
      this.changes.emit('rows');
    } catch (raw) {
      this.expanded.delete(id);
      this.error = { message: `Could not load the subagents: ${toApiError(raw).message}`, retry: () => void this.toggleSubagents(i) };
      this.changes.emit('status');
    }
  }

  /** childCount is how many nested rows follow row i. */
  private childCount(i: number): number {
    let n = 0;
    while (this.rows[i + 1 + n]?.depth) n++;
    return n;
  }

  /** reexpand fetches again the subagents of the conversations that were
   * open before a reload. */
  private async reexpand(gen: number): Promise<void> {
    const open = [...this.expanded];
    this.expanded.clear();
    for (const id of open) {
      const i = this.rows.findIndex((x) => x.depth === 0 && x.session.id === id);
      if (i >= 0 && gen === this.gen) await this.toggleSubagents(i);
    }
  }

  // ---- the selection ----

  /** click selects as a list does: plain replaces, Ctrl toggles, Shift
   * extends from the anchor (Ctrl+Shift adds the range). */
  click(i: number, o: { shift?: boolean; mod?: boolean } = {}): void {
    const r = this.rows[i];
    if (!r) return;
    if (o.shift && this.anchor !== null) {
      this.selectRange(this.anchor, i, !!o.mod);
    } else if (o.mod) {
      this.toggleID(r.session.id);
      this.anchor = i;
    } else {
      this.selection = new Set([r.session.id]);
      this.anchor = i;
    }
    this.focus = i;
    this.changes.emit('selection');
  }

  /** toggle flips the focused row (Space). */
  toggle(i = this.focus): void {
    const r = this.rows[i];
    if (!r) return;
    this.toggleID(r.session.id);
    this.anchor = i;
    this.changes.emit('selection');
  }

  private toggleID(id: string): void {
    if (this.selection.has(id)) this.selection.delete(id);
    else this.selection.add(id);
  }

  private selectRange(a: number, b: number, add: boolean): void {
    const [lo, hi] = a < b ? [a, b] : [b, a];
    const next = add ? new Set(this.selection) : new Set<string>();
    for (let k = lo; k <= hi; k++) {
      const r = this.rows[k];
      if (r) next.add(r.session.id);
    }
    this.selection = next;
  }

  /** moveFocus moves the focused row (arrows); extend selects the range
   * from the anchor (Shift+arrows). It returns the new focus. */
  moveFocus(i: number, extend = false): number {
    const total = this.total;
    if (total === 0) return 0;
    const to = Math.max(0, Math.min(total - 1, i));
    this.focus = to;
    if (extend && this.anchor !== null) this.selectRange(this.anchor, to, false);
    else if (extend) {
      this.anchor = to;
      const r = this.rows[to];
      if (r) this.selection.add(r.session.id);
    }
    this.changes.emit('selection');
    return to;
  }

  /** selectAll selects every session of the filter (the server lists the
   * ids), or every hit of a search. It returns a warning when it could only
   * select the loaded rows. */
  async selectAll(): Promise<string | null> {
    if (this.query || this.next === null) {
      this.selection = new Set(this.rows.map((r) => r.session.id));
      this.changes.emit('selection');
      return null;
    }
    const gen = this.gen;
    if (this.idsSupported) {
      try {
        const ids = await this.src.ids(this.filter());
        if (gen !== this.gen) return null;
        this.selection = new Set(ids ?? []);
        this.changes.emit('selection');
        return null;
      } catch (e) {
        if (!missing(e)) throw toApiError(e);
        this.idsSupported = false;
      }
    }
    this.selection = new Set(this.rows.map((r) => r.session.id));
    this.changes.emit('selection');
    return `Selected the ${this.rows.length} loaded sessions: this server cannot list every id of a filter.`;
  }

  clearSelection(): void {
    if (this.selection.size === 0 && this.anchor === null) return;
    this.selection.clear();
    this.anchor = null;
    this.changes.emit('selection');
  }

  /** wholeFilter is true when the selection is every session of the filter
   * (Ctrl+A), which the confirmation says as such. */
  get wholeFilter(): boolean {
    const n = this.count ?? (this.next === null ? this.rows.length : null);
    return n !== null && n > 0 && this.selection.size >= n && !this.query;
  }

  selectedIDs(): string[] {
    return Array.from(this.selection);
  }

  /** openID is what opening row i shows: a hit's conversation, else the row. */
  openID(i: number): string | undefined {
    const r = this.rows[i];
    return r ? (r.openID ?? r.session.id) : undefined;
  }

  rowOf(id: string): Row | undefined {
    return this.rows.find((r) => r.session.id === id);
  }
}
