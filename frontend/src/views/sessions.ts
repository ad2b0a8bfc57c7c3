// The sessions list: toolbar (search, filters, Active/Archived), a
// virtualised list paged by cursor, selection and the bulk actions.

import { api, missing, on, setWindowTitle, toApiError } from '../api';
import { button, clear, h, nextFrame, replace } from '../dom';
import { absolute, num, plural, relative } from '../format';
import { confirmModal } from '../modal';
import { onSessionsChanged, opsRunning, runBulk, showMessage } from '../ops';
import { app, highlight, type View } from '../state';
import type { HitDTO, SessionDTO } from '../types';
import { VirtualList } from '../vlist';

const pageSize = 200;
const firstPage = 80; // a screenful and then some: the first paint waits for it
const bigPage = 1000; // when the viewport jumped far past what is loaded
const searchLimit = 500;
const rowHeight = 34;
const searchRowHeight = 52;
const searchDebounce = 200;

interface Item {
  session: SessionDTO;
  snippet?: string;
}

/** Hooks whose events mean the list may have changed. */
const listHooks = new Set(['on_session_delete', 'on_session_start', 'on_session_end', 'on_session_reset', 'post_compaction', 'on_session_finalize']);

let readySent = false;

export class SessionsView implements View {
  readonly el: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly sourceSel: HTMLSelectElement;
  private readonly profileSel: HTMLSelectElement;
  private readonly tabActive: HTMLButtonElement;
  private readonly tabArchived: HTMLButtonElement;
  private readonly countLabel: HTMLElement;
  private readonly selLabel: HTMLElement;
  private readonly deleteBtn: HTMLButtonElement;
  private readonly archiveBtn: HTMLButtonElement;
  private readonly unarchiveBtn: HTMLButtonElement;
  private readonly clearBtn: HTMLButtonElement;
  private readonly selectAllBtn: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly list: VirtualList;

  private archived = false;
  private query = '';
  private items: Item[] = [];
  private next: string | null = null; // cursor of the next page; null at the end
  private count: number | null = null; // Count of the filter; null when unknown
  private countSupported = true;
  private idsSupported = true;
  private gen = 0;
  private pumping = false;
  private wantUpTo = 0;
  private selection = new Set<string>();
  private anchor: number | null = null;
  private focusIndex = 0;
  private searchTimer = 0;
  private staleTimer = 0;
  private stale = false;
  private visible = false;
  private loadedOnce = false;

  constructor() {
    this.search = h('input', {
      type: 'search',
      class: 'search',
      placeholder: 'Search titles and messages  ( / )',
      'aria-label': 'Search sessions',
      'data-testid': 'search',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    this.search.addEventListener('input', () => this.onSearchInput());
    this.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowDown') {
        ev.preventDefault();
        this.focusList();
      } else if (ev.key === 'Enter') {
        ev.preventDefault();
        window.clearTimeout(this.searchTimer);
        this.query = this.search.value.trim();
        void this.reload();
      }
    });
    this.sourceSel = h('select', { 'aria-label': 'Filter by source', class: 'filter' });
    this.profileSel = h('select', { 'aria-label': 'Filter by profile', class: 'filter' });
    for (const sel of [this.sourceSel, this.profileSel]) sel.addEventListener('change', () => this.filterChanged());
    this.tabActive = button('Active', { class: 'tab', role: 'tab', 'data-testid': 'tab-active', 'aria-selected': 'true' }, () => this.setArchived(false));
    this.tabArchived = button('Archived', { class: 'tab', role: 'tab', 'data-testid': 'tab-archived', 'aria-selected': 'false' }, () => this.setArchived(true));
    this.countLabel = h('span', { class: 'count muted', 'aria-live': 'polite' });
    const toolbar = h(
      'div',
      { class: 'toolbar' },
      this.search,
      this.sourceSel,
      this.profileSel,
      h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Active or archived sessions' }, this.tabActive, this.tabArchived),
      h('span', { class: 'spacer' }),
      this.countLabel,
    );

    this.selectAllBtn = button('Select all', { class: 'btn small', 'data-testid': 'select-all', title: 'Select every session in this filter (Ctrl+A)' }, () => void this.selectAll());
    this.selLabel = h('span', { class: 'sel-label', 'aria-live': 'polite' }, 'None selected');
    this.deleteBtn = button('Delete', { class: 'btn small danger', 'data-testid': 'delete-selected', title: 'Delete the selection (Delete)' }, () => void this.deleteSelected());
    this.archiveBtn = button('Archive', { class: 'btn small', 'data-testid': 'archive-selected' }, () => void this.archiveSelected(true));
    this.unarchiveBtn = button('Unarchive', { class: 'btn small', 'data-testid': 'unarchive-selected' }, () => void this.archiveSelected(false));
    this.clearBtn = button('Clear', { class: 'btn small plain', title: 'Clear the selection (Escape)' }, () => this.clearSelection());
    const selbar = h('div', { class: 'selbar' }, this.selectAllBtn, this.selLabel, this.deleteBtn, this.archiveBtn, this.unarchiveBtn, this.clearBtn);

    const header = h(
      'div',
      { class: 'row header', 'aria-hidden': 'true' },
      h('span', { class: 'c-title' }, 'Title'),
      h('span', { class: 'c-source' }, 'Source'),
      h('span', { class: 'c-profile' }, 'Profile'),
      h('span', { class: 'c-time' }, 'Last activity'),
      h('span', { class: 'c-msgs' }, 'Msgs'),
      h('span', { class: 'c-marks' }, ''),
    );
    this.list = new VirtualList(
      {
        rowHeight,
        overscan: 12,
        create: () => this.createRow(),
        render: (el, i) => this.renderRow(el, i),
        release: (el) => {
          // a pooled row is no session: selectors and tests must not find it
          delete el.dataset.id;
          delete el.dataset.index;
          el.dataset.testid = 'session-row-pooled';
          el.removeAttribute('id');
        },
        onRange: (_f, last) => {
          this.wantUpTo = last;
          void this.pump();
        },
      },
      { role: 'listbox', 'aria-multiselectable': 'true', 'aria-label': 'Sessions', tabindex: '0', 'data-testid': 'session-list' },
    );
    const vp = this.list.viewport;
    // the header's columns line up with the rows, scrollbar or not
    new ResizeObserver(() => {
      header.style.paddingRight = `${10 + vp.offsetWidth - vp.clientWidth - 2}px`;
    }).observe(vp);
    vp.addEventListener('click', (ev) => this.onRowClick(ev));
    vp.addEventListener('dblclick', (ev) => {
      const i = this.rowIndexOf(ev.target);
      if (i !== null) this.open(i);
    });
    vp.addEventListener('keydown', (ev) => this.onListKey(ev));
    vp.addEventListener('mousedown', (ev) => {
      if (ev.shiftKey) ev.preventDefault(); // no text selection on shift-click
    });
    this.status = h('div', { class: 'list-status', role: 'status' });

    this.el = h('section', { class: 'view sessions-view', 'aria-label': 'Sessions' }, toolbar, selbar, header, vp, this.status);
    this.updateSelection();

    onSessionsChanged((op) => {
      if (op !== 'unarchive' || this.archived) this.clearSelectionOf();
      void this.reload();
      void this.loadFacets();
    });
    on('activity', (evs) => {
      if (evs.some((e) => listHooks.has(e.hook))) this.markStale();
    });
  }

  // ---- view ----

  show(): void {
    this.visible = true;
    if (!this.loadedOnce) {
      this.loadedOnce = true;
      // The filter choices scan every session: they come after the first
      // page is painted, so they never hold it up.
      void this.reload().then(() => this.loadFacets());
    } else if (this.stale) {
      void this.reload();
    } else {
      this.list.refresh();
      void this.updateTitle();
    }
  }

  hide(): void {
    this.visible = false;
  }

  escape(): boolean {
    if (this.search.value !== '') {
      this.search.value = '';
      this.query = '';
      window.clearTimeout(this.searchTimer);
      void this.reload();
      return true;
    }
    if (this.selection.size > 0) {
      this.clearSelection();
      return true;
    }
    return false;
  }

  key(ev: KeyboardEvent): boolean {
    const mod = ev.ctrlKey || ev.metaKey;
    if (mod && (ev.key === 'a' || ev.key === 'A') && !ev.shiftKey && !ev.altKey) {
      void this.selectAll();
      return true;
    }
    if (ev.key === 'Delete' && !mod) {
      void this.deleteSelected();
      return true;
    }
    return false;
  }

  focusSearch(): void {
    this.search.focus();
    this.search.select();
  }

  focusList(): void {
    this.list.viewport.focus();
    this.moveFocus(Math.min(this.focusIndex, Math.max(0, this.list.count - 1)), false);
  }

  /** refreshAfterReconnect reloads when the live stream had a gap. */
  markStale(): void {
    this.stale = true;
    if (!this.visible) return;
    window.clearTimeout(this.staleTimer);
    this.staleTimer = window.setTimeout(() => {
      if (opsRunning()) return; // the op refreshes when it ends
      void this.reload();
    }, 800);
  }

  // ---- loading ----

  private filter() {
    return { archived: this.archived, source: this.sourceSel.value, profile: this.profileSel.value };
  }

  private async loadFacets(): Promise<void> {
    try {
      const f = await api.sessions.facets();
      fillSelect(this.sourceSel, 'All sources', f.sources ?? []);
      fillSelect(this.profileSel, 'All profiles', f.profiles ?? []);
      this.sourceSel.hidden = (f.sources ?? []).length === 0;
      this.profileSel.hidden = (f.profiles ?? []).length === 0;
    } catch (e) {
      this.sourceSel.hidden = true;
      this.profileSel.hidden = true;
      if (!missing(e)) console.warn('facets:', e);
    }
  }

  private filterChanged(): void {
    this.selection.clear();
    this.anchor = null;
    this.focusIndex = 0;
    this.list.viewport.scrollTop = 0;
    this.updateSelection();
    void this.reload();
  }

  private setArchived(v: boolean): void {
    if (this.archived === v) return;
    this.archived = v;
    this.tabActive.setAttribute('aria-selected', String(!v));
    this.tabArchived.setAttribute('aria-selected', String(v));
    this.tabActive.classList.toggle('on', !v);
    this.tabArchived.classList.toggle('on', v);
    this.filterChanged();
  }

  private onSearchInput(): void {
    window.clearTimeout(this.searchTimer);
    this.searchTimer = window.setTimeout(() => {
      const q = this.search.value.trim();
      if (q === this.query) return;
      this.query = q;
      this.filterChanged();
    }, searchDebounce);
  }

  /** reload loads the list (or the hits) again from the start; the scroll
   * position and the selection stay. */
  async reload(): Promise<void> {
    const gen = ++this.gen;
    this.stale = false;
    this.pumping = false;
    const f = this.filter();
    const countP = this.countSupported
      ? api.sessions.count(f).then(
          (c) => c.count,
          (e: unknown) => {
            if (missing(e)) this.countSupported = false;
            else console.warn('count:', e);
            return null;
          },
        )
      : Promise.resolve(null);
    try {
      if (this.query) {
        this.list.setRowHeight(searchRowHeight);
        const [hits, count] = await Promise.all([api.sessions.search(this.query, searchLimit, this.archived), countP]);
        if (gen !== this.gen) return;
        this.items = (hits ?? []).map((x: HitDTO) => ({ session: x.session, snippet: x.snippet }));
        this.next = null;
        this.count = count;
        this.list.setTotal(this.items.length);
      } else {
        this.list.setRowHeight(rowHeight);
        const want = Math.max(firstPage, Math.min(bigPage, this.wantUpTo + 50));
        const [page, count] = await Promise.all([api.sessions.list({ ...f, limit: want }), countP]);
        if (gen !== this.gen) return;
        this.items = (page.sessions ?? []).map((s) => ({ session: s }));
        this.next = page.next ? page.next : null;
        this.count = count;
        this.list.setTotal(this.listTotal());
      }
      this.setStatus(null);
      this.list.renderNow();
      this.updateCountLabel();
      this.updateSelection();
      await nextFrame();
      if (gen !== this.gen) return;
      await this.updateTitle();
      if (!readySent) {
        // The first page is on screen: the window may start its plugins.
        readySent = true;
        api.settings.ready().catch((e: unknown) => console.warn('ready:', e));
      }
      void this.pump();
    } catch (raw) {
      if (gen !== this.gen) return;
      const e = toApiError(raw);
      this.setStatus(`Could not load sessions: ${e.message}`, () => void this.reload());
    }
  }

  private listTotal(): number {
    if (this.next === null) return this.items.length;
    if (this.count !== null) return Math.max(this.count, this.items.length + 1);
    return this.items.length + 1; // unknown: one placeholder row asks for more
  }

  /** pump loads pages until the viewport's rows are there. */
  private async pump(): Promise<void> {
    if (this.pumping || this.query || this.next === null) return;
    const gen = this.gen;
    this.pumping = true;
    try {
      while (gen === this.gen && this.next !== null && this.items.length <= this.wantUpTo + 50) {
        const gap = this.wantUpTo - this.items.length;
        const limit = gap > bigPage ? bigPage : gap > pageSize ? Math.min(bigPage, gap + pageSize) : pageSize;
        const page = await api.sessions.list({ ...this.filter(), limit, cursor: this.next });
        if (gen !== this.gen) return;
        for (const s of page.sessions ?? []) this.items.push({ session: s });
        this.next = page.next ? page.next : null;
        this.list.setTotal(this.listTotal());
        this.updateCountLabel();
      }
    } catch (raw) {
      if (gen !== this.gen) return;
      this.setStatus(`Could not load more sessions: ${toApiError(raw).message}`, () => void this.pump());
    } finally {
      if (gen === this.gen) this.pumping = false;
    }
  }

  private setStatus(text: string | null, retry?: () => void): void {
    if (text === null) {
      if (this.items.length === 0) {
        const what = this.query ? 'No session matches this search.' : this.archived ? 'No archived sessions.' : 'No sessions yet.';
        replace(this.status, what);
        this.status.className = 'list-status empty';
      } else {
        clear(this.status);
        this.status.className = 'list-status';
      }
      return;
    }
    this.status.className = 'list-status error';
    replace(this.status, text, retry ? button('Retry', { class: 'btn small' }, () => retry()) : null);
  }

  private updateCountLabel(): void {
    const n = this.count;
    if (this.query) {
      const hits = this.items.length;
      this.countLabel.textContent = `${plural(hits, 'hit')}${hits >= searchLimit ? ' (first 500)' : ''}`;
    } else if (n !== null) {
      this.countLabel.textContent = `${num(n)} ${this.archived ? 'archived' : n === 1 ? 'session' : 'sessions'}`;
    } else {
      this.countLabel.textContent = `${num(this.items.length)}${this.next !== null ? '+' : ''} loaded`;
    }
  }

  private async updateTitle(): Promise<void> {
    const n = this.count ?? (this.query || this.next !== null ? null : this.items.length);
    const what = n === null ? '?' : String(n);
    setWindowTitle(`Atrium · ${app.info.profile} · ${what} ${this.archived ? 'archived' : 'sessions'}`);
  }

  // ---- rows ----

  private createRow(): HTMLElement {
    const el = h(
      'div',
      { class: 'row', role: 'option' },
      h('span', { class: 'c-title' }, h('span', { class: 'title' }), h('span', { class: 'snippet' })),
      h('span', { class: 'c-source' }),
      h('span', { class: 'c-profile' }),
      h('span', { class: 'c-time' }),
      h('span', { class: 'c-msgs' }),
      h('span', { class: 'c-marks' }),
    );
    return el;
  }

  private renderRow(el: HTMLElement, i: number): void {
    const it = this.items[i];
    const [cTitle, cSource, cProfile, cTime, cMsgs, cMarks] = Array.from(el.children) as HTMLElement[];
    const title = cTitle!.firstElementChild as HTMLElement;
    const snippet = cTitle!.lastElementChild as HTMLElement;
    el.dataset.index = String(i);
    el.id = `session-row-${i}`;
    el.classList.toggle('focused', i === this.focusIndex);
    if (!it) {
      el.dataset.testid = 'session-row-loading';
      delete el.dataset.id;
      el.classList.add('placeholder');
      el.classList.remove('selected');
      el.setAttribute('aria-selected', 'false');
      title.textContent = 'Loading…';
      title.classList.remove('untitled');
      for (const c of [snippet, cSource!, cProfile!, cTime!, cMsgs!, cMarks!]) c.textContent = '';
      cTime!.removeAttribute('title');
      return;
    }
    const s = it.session;
    const sel = this.selection.has(s.id);
    el.dataset.testid = 'session-row';
    el.dataset.id = s.id;
    el.classList.remove('placeholder');
    el.classList.toggle('selected', sel);
    el.setAttribute('aria-selected', String(sel));
    title.classList.toggle('untitled', !s.title);
    if (this.query && s.title) replace(title, ...highlight(s.title, this.query));
    else title.textContent = s.title || '(untitled)';
    title.title = s.title ? `${s.title}\n${s.id}` : s.id;
    if (this.query && it.snippet && it.snippet !== s.title) replace(snippet, ...highlight(it.snippet, this.query));
    else snippet.textContent = '';
    cSource!.textContent = s.source;
    cProfile!.textContent = s.profile;
    cTime!.textContent = relative(s.last_activity_at);
    cTime!.title = absolute(s.last_activity_at);
    cMsgs!.textContent = num(s.message_count);
    clear(cMarks!);
    if (s.pinned) cMarks!.appendChild(h('span', { class: 'badge pin', title: 'Pinned: never pruned or idle-archived' }, 'pinned'));
    if (s.archived) cMarks!.appendChild(h('span', { class: 'badge arch', title: s.archived_at ? `Archived ${absolute(s.archived_at)}` : 'Archived' }, 'archived'));
    if (s.ended_at && s.end_reason === 'compression') cMarks!.appendChild(h('span', { class: 'badge', title: 'Continued in a compressed session' }, 'compressed'));
  }

  private rowIndexOf(target: EventTarget | null): number | null {
    if (!(target instanceof Element)) return null;
    const row = target.closest<HTMLElement>('.vrow');
    if (!row || row.dataset.index === undefined) return null;
    const i = Number(row.dataset.index);
    return Number.isInteger(i) ? i : null;
  }

  // ---- selection ----

  private onRowClick(ev: MouseEvent): void {
    const i = this.rowIndexOf(ev.target);
    if (i === null) return;
    const it = this.items[i];
    if (!it) return;
    this.list.viewport.focus({ preventScroll: true });
    const mod = ev.ctrlKey || ev.metaKey;
    if (ev.shiftKey && this.anchor !== null) {
      this.selectRange(this.anchor, i, mod);
    } else if (mod) {
      if (this.selection.has(it.session.id)) this.selection.delete(it.session.id);
      else this.selection.add(it.session.id);
      this.anchor = i;
    } else {
      this.selection = new Set([it.session.id]);
      this.anchor = i;
    }
    this.focusIndex = i;
    this.afterSelection();
  }

  private selectRange(a: number, b: number, add: boolean): void {
    const [lo, hi] = a < b ? [a, b] : [b, a];
    const next = add ? new Set(this.selection) : new Set<string>();
    for (let k = lo; k <= hi; k++) {
      const it = this.items[k];
      if (it) next.add(it.session.id);
    }
    this.selection = next;
  }

  private afterSelection(): void {
    this.list.refresh();
    this.updateSelection();
  }

  private updateSelection(): void {
    const n = this.selection.size;
    this.selLabel.textContent = n === 0 ? 'None selected' : `${num(n)} selected`;
    this.deleteBtn.disabled = n === 0;
    this.archiveBtn.disabled = n === 0;
    this.unarchiveBtn.disabled = n === 0;
    this.clearBtn.disabled = n === 0;
    this.archiveBtn.hidden = this.archived;
    this.unarchiveBtn.hidden = !this.archived;
    this.list.viewport.setAttribute('aria-activedescendant', `session-row-${this.focusIndex}`);
  }

  clearSelection(): void {
    this.selection.clear();
    this.anchor = null;
    this.afterSelection();
  }

  private clearSelectionOf(): void {
    this.selection.clear();
    this.anchor = null;
    this.updateSelection();
  }

  async selectAll(): Promise<void> {
    if (this.query) {
      this.selection = new Set(this.items.map((it) => it.session.id));
      this.afterSelection();
      return;
    }
    const gen = this.gen;
    if (this.idsSupported) {
      try {
        this.selectAllBtn.disabled = true;
        const ids = await api.sessions.ids(this.filter());
        if (gen !== this.gen) return;
        this.selection = new Set(ids ?? []);
        this.afterSelection();
        return;
      } catch (e) {
        if (!missing(e)) {
          showMessage('error', 'Select all failed', toApiError(e).message);
          return;
        }
        this.idsSupported = false;
      } finally {
        this.selectAllBtn.disabled = false;
      }
    }
    this.selection = new Set(this.items.map((it) => it.session.id));
    this.afterSelection();
    if (this.next !== null) showMessage('warn', `Selected the ${num(this.items.length)} loaded sessions`, 'This server cannot list every id of a filter yet.');
  }

  // ---- keyboard in the list ----

  private moveFocus(i: number, extend: boolean): void {
    const total = this.list.count;
    if (total === 0) return;
    const to = Math.max(0, Math.min(total - 1, i));
    this.focusIndex = to;
    if (extend && this.anchor !== null) this.selectRange(this.anchor, to, false);
    else if (extend) {
      this.anchor = to;
      const it = this.items[to];
      if (it) this.selection.add(it.session.id);
    }
    this.list.scrollToIndex(to);
    this.afterSelection();
  }

  private onListKey(ev: KeyboardEvent): void {
    if (ev.altKey) return;
    const page = this.list.rowsPerPage();
    switch (ev.key) {
      case 'ArrowDown':
        this.moveFocus(this.focusIndex + 1, ev.shiftKey);
        break;
      case 'ArrowUp':
        this.moveFocus(this.focusIndex - 1, ev.shiftKey);
        break;
      case 'PageDown':
        this.moveFocus(this.focusIndex + page, ev.shiftKey);
        break;
      case 'PageUp':
        this.moveFocus(this.focusIndex - page, ev.shiftKey);
        break;
      case 'Home':
        this.moveFocus(0, ev.shiftKey);
        break;
      case 'End':
        this.moveFocus(this.list.count - 1, ev.shiftKey);
        break;
      case ' ': {
        const it = this.items[this.focusIndex];
        if (!it) break;
        if (this.selection.has(it.session.id)) this.selection.delete(it.session.id);
        else this.selection.add(it.session.id);
        this.anchor = this.focusIndex;
        this.afterSelection();
        break;
      }
      case 'Enter':
        this.open(this.focusIndex);
        break;
      default:
        return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }

  private open(i: number): void {
    const it = this.items[i];
    if (!it) return;
    this.focusIndex = i;
    this.list.refresh();
    app.go('transcript', it.session.id);
  }

  // ---- actions ----

  private selectedIDs(): string[] {
    return Array.from(this.selection);
  }

  async deleteSelected(): Promise<void> {
    const ids = this.selectedIDs();
    if (ids.length === 0) return;
    let preview;
    try {
      preview = await api.sessions.preview(ids);
    } catch (e) {
      showMessage('error', 'Could not preview the delete', toApiError(e).message);
      return;
    }
    const cascaded = preview.cascaded;
    const text =
      `${plural(preview.count, 'session')} will be removed` +
      (cascaded > 0 ? `, ${cascaded} of them cascaded (compression chains and delegate children) beyond the ${num(ids.length)} selected.` : '.');
    const body = h(
      'div',
      {},
      h('p', { 'data-testid': 'confirm-text', 'data-count': preview.count, 'data-cascaded': cascaded }, text),
      h('p', { class: 'muted' }, 'Transcripts and their sidecar files are deleted for good. Plugins are told once.'),
    );
    if (preview.count === 0) {
      body.appendChild(h('p', { class: 'warn-text' }, 'None of the selected sessions exists any more.'));
    }
    const ok = await confirmModal({
      title: `Delete ${plural(ids.length, 'selected session')}?`,
      body,
      confirmLabel: `Delete ${plural(preview.count, 'session')}`,
      danger: true,
      confirmTestid: 'confirm-delete',
    });
    if (!ok) return;
    this.list.viewport.focus({ preventScroll: true });
    await runBulk('delete', ids, { selectedCount: ids.length });
  }

  async archiveSelected(archive: boolean): Promise<void> {
    const ids = this.selectedIDs();
    if (ids.length === 0) return;
    if (archive === this.archived) return; // the button of the other view
    await runBulk(archive ? 'archive' : 'unarchive', ids);
  }
}

function fillSelect(sel: HTMLSelectElement, all: string, values: string[]): void {
  const cur = sel.value;
  clear(sel);
  sel.appendChild(h('option', { value: '' }, all));
  for (const v of values.filter((x) => x !== '')) sel.appendChild(h('option', { value: v }, v));
  sel.value = values.includes(cur) ? cur : '';
}
