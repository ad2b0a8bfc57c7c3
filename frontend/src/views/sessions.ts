// The sessions list: toolbar (search, filters, Active/Archived/Trash), a
// virtualised list, selection and the bulk actions. The state lives in
// stores/sessions.ts; this file renders it and binds the keys.

import { api, on, setWindowTitle } from '../api';
import { button, clear, h, nextFrame, replace } from '../dom';
import { absolute, num, plural, relative, runningWhere } from '../format';
import { archiveOrUnarchive, deleteSessions, newSession, purgeSessions, renameSession, restoreSessions, sessionMenu, togglePin, type Target } from '../actions';
import type { Scope } from '../api';
import { openMenu } from '../menu';
import { onSessionsChanged, opsRunning, showMessage } from '../ops';
import { loadMarkdown } from '../markdown';
import { app, type View } from '../state';
import { searchLimit, SessionsStore, type Change } from '../stores/sessions';
import type { SessionDTO } from '../types';
import { VirtualList } from '../vlist';
import { openRuleDialog } from './rule';
import { clearTitleCell, renderTitleCell, titleCell } from './rowtitle';
import { TrashBar } from './trashbar';

const emptyText: Record<Scope, string> = {
  active: 'No active sessions.',
  archived: 'No archived sessions.',
  trash: 'The trash is empty.',
};

function scopeWord(scope: Scope, n: number): string {
  return scope === 'archived' ? 'archived' : scope === 'trash' ? 'in the trash' : n === 1 ? 'session' : 'sessions';
}

const rowHeight = 34;
const searchRowHeight = 52;
const searchDebounce = 200;

/** Hooks whose events mean the list may have changed. */
const listHooks = new Set(['on_session_delete', 'on_session_restore', 'on_session_start', 'on_session_end', 'on_session_reset', 'post_compaction', 'on_session_finalize']);

let readySent = false;

export class SessionsView implements View {
  readonly el: HTMLElement;
  readonly store = new SessionsStore({ ...api.conversations, search: api.sessions.search, facets: api.sessions.facets });
  private readonly search: HTMLInputElement;
  private readonly sourceSel: HTMLSelectElement;
  private readonly platformSel: HTMLSelectElement;
  private readonly profileSel: HTMLSelectElement;
  private readonly tabs: Record<Scope, HTMLButtonElement>;
  private readonly timeHead: HTMLElement;
  private readonly trashBar = new TrashBar();
  private readonly countLabel: HTMLElement;
  private readonly cleanBtn: HTMLButtonElement;
  private readonly newBtn: HTMLButtonElement;
  private readonly subagentsBox = h('input', { type: 'checkbox', 'data-testid': 'show-subagents' });
  private readonly selLabel: HTMLElement;
  private readonly actions: Record<'selectAll' | 'del' | 'archive' | 'unarchive' | 'restore' | 'purge' | 'clear', HTMLButtonElement>;
  private readonly status: HTMLElement;
  private readonly list: VirtualList;
  private searchTimer = 0;
  private staleTimer = 0;
  private stale = false;
  private staleFacets = false;
  private visible = false;
  private loadedOnce = false;

  constructor() {
    const s = this.store;
    this.search = h('input', {
      type: 'search',
      class: 'search',
      placeholder: 'Search titles and messages  ( / )',
      'aria-label': 'Search sessions',
      'data-testid': 'search',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    this.search.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.applySearch(), searchDebounce);
    });
    this.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowDown') {
        ev.preventDefault();
        window.clearTimeout(this.searchTimer);
        this.applySearch(); // what was typed applies now, not after the pause
        this.focusList();
      } else if (ev.key === 'Enter') {
        ev.preventDefault();
        window.clearTimeout(this.searchTimer);
        if (this.search.value.trim() === s.query) void s.reload();
        else this.applySearch();
      }
    });
    this.sourceSel = h('select', { 'aria-label': 'Filter by source', class: 'filter', hidden: true });
    this.profileSel = h('select', { 'aria-label': 'Filter by profile', class: 'filter', hidden: true });
    this.platformSel = h('select', { 'aria-label': 'Filter by platform', class: 'filter', 'data-testid': 'filter-platform', hidden: true });
    this.sourceSel.addEventListener('change', () => s.setSource(this.sourceSel.value));
    this.platformSel.addEventListener('change', () => s.setPlatform(this.platformSel.value));
    this.profileSel.addEventListener('change', () => s.setProfile(this.profileSel.value));
    const tab = (scope: Scope, label: string) =>
      button(label, { class: 'tab', role: 'tab', 'data-testid': `tab-${scope}`, 'aria-selected': String(scope === 'active') }, () => s.setScope(scope));
    this.tabs = { active: tab('active', 'Active'), archived: tab('archived', 'Archived'), trash: tab('trash', 'Trash') };
    this.countLabel = h('span', { class: 'count muted', 'aria-live': 'polite' });
    this.subagentsBox.addEventListener('change', () => s.setSubagents(this.subagentsBox.checked));
    this.newBtn = button('New session', { class: 'btn small primary', 'data-testid': 'new-session', title: 'Start a session (Ctrl+N)' }, () => void newSession((id) => app.openSession(id)));
    this.cleanBtn = button('Clean up…', { class: 'btn small', 'data-testid': 'clean-up', title: 'Archive or delete the sessions a rule matches, with a preview' }, () =>
      void openRuleDialog({ scope: s.scope === 'archived' ? 'archived' : 'active', source: s.source }, s.facets.sources ?? []),
    );
    const toolbar = h(
      'div',
      { class: 'toolbar' },
      this.search,
      this.sourceSel,
      this.platformSel,
      this.profileSel,
      h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Active, archived or deleted sessions' }, this.tabs.active, this.tabs.archived, this.tabs.trash),
      this.cleanBtn,
      h('label', { class: 'check small', title: 'List subagents as rows of their own' }, this.subagentsBox, ' Show subagents'),
      h('span', { class: 'spacer' }),
      this.countLabel,
      this.newBtn,
    );

    this.selLabel = h('span', { class: 'sel-label', 'aria-live': 'polite' }, 'None selected');
    this.actions = {
      selectAll: button('Select all', { class: 'btn small', 'data-testid': 'select-all', title: 'Select every session in this filter (Ctrl+A)' }, () => void this.selectAll()),
      del: button('Delete', { class: 'btn small danger', 'data-testid': 'delete-selected', title: 'Move the selection to the trash (Delete)' }, () => void this.deleteSelected()),
      archive: button('Archive', { class: 'btn small', 'data-testid': 'archive-selected', title: 'Archive the selection (e)' }, () => void this.archiveSelected(true)),
      unarchive: button('Unarchive', { class: 'btn small', 'data-testid': 'unarchive-selected', title: 'Unarchive the selection (e)' }, () => void this.archiveSelected(false)),
      restore: button('Restore', { class: 'btn small', 'data-testid': 'restore-selected', title: 'Bring the selection back' }, () => void restoreSessions(this.target())),
      purge: button('Delete for good', { class: 'btn small danger', 'data-testid': 'purge-selected', title: 'Delete the selection for good (Delete)' }, () => void purgeSessions(this.target())),
      clear: button('Clear', { class: 'btn small plain', title: 'Clear the selection (Escape)' }, () => s.clearSelection()),
    };
    const a = this.actions;
    const selbar = h('div', { class: 'selbar' }, a.selectAll, this.selLabel, a.del, a.archive, a.unarchive, a.restore, a.purge, a.clear);
    this.timeHead = h('span', { class: 'c-time' }, 'Last activity');

    const header = h(
      'div',
      { class: 'row header', 'aria-hidden': 'true' },
      h('span', { class: 'c-title' }, 'Title'),
      h('span', { class: 'c-source' }, 'Source'),
      h('span', { class: 'c-profile' }, 'Profile'),
      this.timeHead,
      h('span', { class: 'c-msgs' }, 'Msgs'),
      h('span', { class: 'c-marks' }, ''),
      h('span', { class: 'c-menu' }, ''),
    );
    this.list = new VirtualList(
      {
        rowHeight,
        overscan: 12,
        create: createRow,
        render: (el, i) => this.renderRow(el, i),
        release: (el) => {
          // a pooled row is no session: selectors and tests must not find it
          delete el.dataset.id;
          delete el.dataset.index;
          el.dataset.testid = 'session-row-pooled';
          el.removeAttribute('id');
        },
        onRange: (_f, last) => s.want(last),
      },
      { role: 'listbox', 'aria-multiselectable': 'true', 'aria-label': 'Sessions', tabindex: '0', 'data-testid': 'session-list' },
    );
    const vp = this.list.viewport;
    // the header's columns line up with the rows, scrollbar or not
    new ResizeObserver(() => {
      header.style.paddingRight = `${10 + vp.offsetWidth - vp.clientWidth - 2}px`;
    }).observe(vp);
    vp.addEventListener('click', (ev) => {
      const i = rowIndexOf(ev.target);
      if (i === null) return;
      vp.focus({ preventScroll: true });
      const menuBtn = ev.target instanceof Element ? ev.target.closest<HTMLElement>('.row-menu') : null;
      const subBtn = ev.target instanceof Element ? ev.target.closest<HTMLElement>('.sub-toggle') : null;
      if (menuBtn) this.rowMenu(i, menuBtn);
      else if (subBtn) void s.toggleSubagents(i);
      else s.click(i, { shift: ev.shiftKey, mod: ev.ctrlKey || ev.metaKey });
    });
    vp.addEventListener('contextmenu', (ev) => {
      const i = rowIndexOf(ev.target);
      if (i === null) return;
      ev.preventDefault();
      vp.focus({ preventScroll: true });
      this.rowMenu(i, { x: ev.clientX, y: ev.clientY });
    });
    // A double click opens the session its first click landed on: the list
    // may have moved under the pointer between the two (a turn ended
    // elsewhere and its row rose to the top).
    let pressed: { id: string; messageID?: number } | null = null;
    vp.addEventListener('dblclick', (ev) => {
      const i = rowIndexOf(ev.target);
      if (i === null) return;
      const p = pressed;
      const first = p === null ? -1 : s.rows.findIndex((r) => r.session.id === p.id && r.messageID === p.messageID);
      this.open(first >= 0 ? first : i);
    });
    vp.addEventListener('keydown', (ev) => this.onListKey(ev));
    vp.addEventListener('mousedown', (ev) => {
      if (ev.shiftKey) ev.preventDefault(); // no text selection on shift-click
      if (ev.detail <= 1) {
        const r = s.rows[rowIndexOf(ev.target) ?? -1];
        pressed = r ? { id: r.session.id, messageID: r.messageID } : null;
      }
    });
    this.status = h('div', { class: 'list-status', role: 'status' });

    this.el = h('section', { class: 'view sessions-view', 'aria-label': 'Sessions' }, toolbar, this.trashBar.el, selbar, header, vp, this.status);
    s.changes.subscribe((c) => this.onChange(c));
    this.onChange('selection');

    onSessionsChanged(async (op) => {
      // The selection is cleared with the new rows in hand, so the list is
      // drawn once.
      await Promise.all([s.reload(), s.loadFacets()]);
      if (op !== 'rename' && op !== 'pin' && op !== 'create') s.clearSelection();
    });
    on('activity', (evs) => {
      // a session started elsewhere (a gateway chat, a cron run) may bring
      // a source or a platform the filters do not offer yet
      if (evs.some((e) => listHooks.has(e.hook))) this.markStale(evs.some((e) => e.hook === 'on_session_start'));
    });
    // a turn began or ended somewhere (its row's "running" mark)
    on('runs', () => this.markStale(false));
  }

  private onChange(c: Change): void {
    const s = this.store;
    switch (c) {
      case 'rows':
        this.list.setRowHeight(s.query ? searchRowHeight : rowHeight);
        this.list.setTotal(s.total);
        this.list.renderNow();
        this.updateCount();
        void this.afterFirstPaint();
        break;
      case 'selection': {
        const n = s.selection.size;
        this.selLabel.textContent = n === 0 ? 'None selected' : `${num(n)} selected`;
        const a = this.actions;
        for (const b of [a.del, a.archive, a.unarchive, a.restore, a.purge, a.clear]) b.disabled = n === 0;
        a.del.hidden = s.scope === 'trash';
        a.archive.hidden = s.scope !== 'active';
        a.unarchive.hidden = s.scope !== 'archived';
        a.restore.hidden = a.purge.hidden = s.scope !== 'trash';
        this.list.viewport.setAttribute('aria-activedescendant', `session-row-${s.focus}`);
        this.list.refresh();
        break;
      }
      case 'filter':
        for (const [scope, b] of Object.entries(this.tabs)) {
          b.setAttribute('aria-selected', String(scope === s.scope));
          b.classList.toggle('on', scope === s.scope);
        }
        this.timeHead.textContent = s.scope === 'trash' ? 'Deleted' : 'Last activity';
        this.trashBar.show(s.scope === 'trash');
        this.cleanBtn.hidden = s.scope === 'trash';
        this.list.viewport.scrollTop = 0;
        break;
      case 'facets':
        fillSelect(this.sourceSel, 'All sources', s.facets.sources ?? [], s.source);
        fillSelect(this.platformSel, 'All platforms', s.facets.platforms ?? [], s.platform);
        fillSelect(this.profileSel, 'All profiles', s.facets.profiles ?? [], s.profile);
        break;
      case 'status':
        this.renderStatus();
        break;
    }
  }

  // ---- view ----

  show(): void {
    this.visible = true;
    if (!this.loadedOnce) {
      this.loadedOnce = true;
      // The filter choices scan every session: they come after the first
      // page is painted, so they never hold it up.
      // So is the Markdown engine, which transcripts need.
      void this.store.reload().then(() => {
        void this.store.loadFacets();
        void nextFrame().then(loadMarkdown);
      });
    } else if (this.stale) {
      this.reloadStale();
    } else {
      this.list.refresh();
      this.updateTitle();
    }
  }

  hide(): void {
    this.visible = false;
  }

  escape(): boolean {
    if (this.search.value !== '') {
      this.search.value = '';
      window.clearTimeout(this.searchTimer);
      this.store.setQuery('');
      return true;
    }
    if (this.store.selection.size > 0) {
      this.store.clearSelection();
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
    if (ev.key === 'e' && !mod && !ev.altKey && this.store.selection.size > 0) {
      void archiveOrUnarchive(this.target());
      return true;
    }
    if ((ev.key === 'F2' || (ev.key === 'p' && !mod && !ev.altKey)) && this.store.selection.size === 1) {
      void (ev.key === 'F2' ? renameSession(this.target()) : togglePin(this.target()));
      return true;
    }
    return false;
  }

  /** target is what the actions apply to: the selected sessions. */
  private target(): Target {
    const s = this.store;
    const sessions = s.selectedIDs().map((id) => s.rowOf(id)?.session ?? ({ id, archived: s.scope === 'archived', where: s.scope } as SessionDTO));
    return { sessions, wholeFilter: s.wholeFilter };
  }

  /** rowMenu opens row i's menu: for the selection when i is in it, else
   * for row i alone (which becomes the selection). */
  private rowMenu(i: number, at: HTMLElement | { x: number; y: number }): void {
    const s = this.store;
    const r = s.rows[i];
    if (!r) return;
    if (!s.selection.has(r.session.id)) s.click(i);
    const t = this.target();
    if (t.sessions.length === 1) t.open = () => this.open(i);
    openMenu(sessionMenu(t), at, 'Session actions');
  }

  /** prime asks for the first page before the view is shown (SessionsStore.prime). */
  prime(): Promise<void> {
    return this.store.prime();
  }

  focusSearch(): void {
    this.search.focus();
    this.search.select();
  }

  focusList(): void {
    this.list.viewport.focus();
    this.moveFocus(Math.min(this.store.focus, Math.max(0, this.list.count - 1)), false);
  }

  /** markStale reloads soon (now if shown): the list may have changed. */
  markStale(facets = false): void {
    this.stale = true;
    this.staleFacets ||= facets;
    if (!this.visible) return;
    window.clearTimeout(this.staleTimer);
    this.staleTimer = window.setTimeout(() => {
      if (opsRunning()) return; // the op refreshes when it ends
      this.reloadStale();
    }, 800);
  }

  private reloadStale(): void {
    const facets = this.staleFacets;
    this.stale = false;
    this.staleFacets = false;
    void this.store.reload().then(() => (facets ? this.store.loadFacets() : undefined));
  }

  private applySearch(): void {
    this.store.setQuery(this.search.value);
  }

  private async afterFirstPaint(): Promise<void> {
    await nextFrame();
    if (this.visible) this.updateTitle();
    if (!readySent) {
      // The first page is on screen: the window may start its plugins.
      readySent = true;
      api.settings.ready().catch((e: unknown) => console.warn('ready:', e));
    }
  }

  private renderStatus(): void {
    const s = this.store;
    if (s.error) {
      const retry = s.error.retry;
      this.status.className = 'list-status error';
      replace(this.status, s.error.message, button('Retry', { class: 'btn small' }, () => retry()));
      return;
    }
    if (s.loaded && s.rows.length === 0) {
      const filtered = s.source !== '' || s.profile !== '' || s.platform !== '';
      replace(this.status, s.query ? 'No session matches this search.' : filtered ? 'No session matches these filters.' : emptyText[s.scope]);
      this.status.className = 'list-status empty';
    } else {
      clear(this.status);
      this.status.className = 'list-status';
    }
  }

  private updateCount(): void {
    const s = this.store;
    if (s.query) {
      const hits = s.rows.length;
      this.countLabel.textContent = `${plural(hits, 'hit')}${hits >= searchLimit ? ` (first ${searchLimit})` : ''}`;
    } else if (s.count !== null) {
      this.countLabel.textContent = `${num(s.count)} ${scopeWord(s.scope, s.count)}`;
    } else {
      this.countLabel.textContent = `${num(s.rows.length)}${s.next !== null ? '+' : ''} loaded`;
    }
  }

  private updateTitle(): void {
    const s = this.store;
    const n = s.count ?? (s.query || s.next !== null ? null : s.rows.length);
    setWindowTitle(`Atrium · ${app.info.profile} · ${n === null ? '?' : String(n)} ${scopeWord(s.scope, 2)}`);
  }

  // ---- rows ----

  private renderRow(el: HTMLElement, i: number): void {
    const s = this.store;
    const r = s.rows[i];
    const [cTitle, cSource, cProfile, cTime, cMsgs, cMarks] = Array.from(el.children) as HTMLElement[];
    el.dataset.index = String(i);
    el.id = `session-row-${i}`;
    el.classList.toggle('focused', i === s.focus);
    (el.lastElementChild as HTMLElement).style.visibility = r ? '' : 'hidden';
    if (!r) {
      el.dataset.testid = 'session-row-loading';
      delete el.dataset.id;
      el.classList.add('placeholder');
      el.classList.remove('selected');
      el.setAttribute('aria-selected', 'false');
      clearTitleCell(cTitle!);
      for (const c of [cSource!, cProfile!, cTime!, cMsgs!, cMarks!]) c.textContent = '';
      cTime!.removeAttribute('title');
      return;
    }
    const x = r.session;
    const sel = s.selection.has(x.id);
    el.dataset.testid = 'session-row';
    el.dataset.id = x.id;
    el.classList.remove('placeholder');
    el.classList.toggle('selected', sel);
    el.setAttribute('aria-selected', String(sel));
    el.dataset.depth = String(r.depth);
    el.dataset.parts = String(r.conv?.parts ?? 1);
    renderTitleCell(cTitle!, r, { expanded: s.expanded.has(x.id), query: s.query, flat: s.subagents });
    renderSource(cSource!, x);
    cProfile!.textContent = x.profile;
    const when = s.scope === 'trash' && x.trashed_at ? x.trashed_at : x.last_activity_at;
    cTime!.textContent = relative(when);
    cTime!.title = absolute(when);
    cMsgs!.textContent = num(r.conv?.total_messages ?? x.message_count);
    cMsgs!.title = r.conv && r.conv.parts > 1 ? `${num(r.conv.total_messages)} messages in ${r.conv.parts} parts` : '';
    clear(cMarks!);
    if (x.running_in) cMarks!.appendChild(h('span', { class: 'badge live', 'data-testid': 'row-running', title: `A turn is running, in ${runningWhere(x.running_in)}: open it to stop it` }, 'running'));
    if (x.pinned) cMarks!.appendChild(h('span', { class: 'badge pin', title: 'Pinned: never pruned or idle-archived' }, 'pinned'));
    if (x.where === 'trash') {
      cMarks!.appendChild(h('span', { class: 'badge trash', 'data-where': 'trash', title: x.purge_after ? `Deleted for good ${absolute(x.purge_after)}` : 'In the trash' }, x.purge_after ? `purged ${relative(x.purge_after)}` : 'in the trash'));
    } else if (x.archived) {
      cMarks!.appendChild(h('span', { class: 'badge arch', 'data-where': 'archived', title: x.archived_at ? `Archived ${absolute(x.archived_at)}` : 'Archived' }, 'archived'));
    }
    if (x.ended_at && x.end_reason === 'compression') cMarks!.appendChild(h('span', { class: 'badge', title: 'Continued in a compressed session' }, 'compressed'));
  }

  // ---- keyboard in the list ----

  private moveFocus(i: number, extend: boolean): void {
    if (this.list.count === 0) return;
    this.list.scrollToIndex(this.store.moveFocus(i, extend));
  }

  private onListKey(ev: KeyboardEvent): void {
    if (ev.altKey) return;
    const s = this.store;
    const page = this.list.rowsPerPage();
    const moves: Record<string, number> = {
      ArrowDown: s.focus + 1,
      ArrowUp: s.focus - 1,
      PageDown: s.focus + page,
      PageUp: s.focus - page,
      Home: 0,
      End: this.list.count - 1,
    };
    const to = moves[ev.key];
    if (to !== undefined) this.moveFocus(to, ev.shiftKey);
    else if (ev.key === ' ') s.toggle();
    else if ((ev.key === 'ArrowRight' && !s.expanded.has(s.rows[s.focus]?.session.id ?? '')) || (ev.key === 'ArrowLeft' && s.expanded.has(s.rows[s.focus]?.session.id ?? ''))) {
      if (s.rows[s.focus]?.conv?.subagents) void s.toggleSubagents(s.focus);
    }
    else if (ev.key === 'Enter') this.open(s.focus);
    else if (ev.key === 'ContextMenu' || (ev.key === 'F10' && ev.shiftKey)) {
      const el = this.list.elementFor(s.focus);
      if (el) this.rowMenu(s.focus, el.querySelector<HTMLElement>('.row-menu') ?? el);
    } else return;
    ev.preventDefault();
    ev.stopPropagation();
  }

  private open(i: number): void {
    const r = this.store.rows[i];
    if (!r) return;
    this.store.focus = i;
    this.list.refresh();
    const q = this.store.query;
    app.openSession(this.store.openID(i) ?? r.session.id, q ? { messageID: r.messageID, query: q } : undefined);
  }

  // ---- actions ----

  private async selectAll(): Promise<void> {
    this.actions.selectAll.disabled = true;
    try {
      const warning = await this.store.selectAll();
      if (warning) showMessage('warn', 'Selected what is loaded', warning);
    } catch (e) {
      showMessage('error', 'Select all failed', e instanceof Error ? e.message : String(e));
    } finally {
      this.actions.selectAll.disabled = false;
    }
  }

  async deleteSelected(): Promise<void> {
    if (this.store.selection.size === 0) return;
    await deleteSessions(this.target());
    this.list.viewport.focus({ preventScroll: true });
  }

  async archiveSelected(archive: boolean): Promise<void> {
    if (this.store.selection.size === 0 || archive !== (this.store.scope === 'active')) return;
    await archiveOrUnarchive(this.target());
  }
}

function createRow(): HTMLElement {
  return h(
    'div',
    { class: 'row', role: 'option' },
    titleCell(),
    h('span', { class: 'c-source' }),
    h('span', { class: 'c-profile' }),
    h('span', { class: 'c-time' }),
    h('span', { class: 'c-msgs' }),
    h('span', { class: 'c-marks' }),
    h('span', { class: 'c-menu' }, h('button', { type: 'button', class: 'row-menu', title: 'Actions (right-click)', 'aria-label': 'Session actions', 'data-testid': 'row-menu', tabindex: '-1' }, '⋯')),
  );
}

/** The source cell: a gateway session shows its platform and its sender. */
function renderSource(cell: HTMLElement, x: { source: string; platform?: string; sender_id?: string; sender_name?: string }): void {
  const sender = x.sender_name || x.sender_id || '';
  if (!x.platform || x.platform === x.source) {
    cell.textContent = x.source;
    cell.title = x.source;
    return;
  }
  replace(cell, h('span', { class: 'platform', 'data-testid': 'row-platform' }, x.platform), sender ? h('span', { class: 'sender muted', 'data-testid': 'row-sender' }, ` · ${sender}`) : '');
  cell.title = `${x.source} on ${x.platform}${sender ? `, from ${sender}${x.sender_id && x.sender_id !== sender ? ` (${x.sender_id})` : ''}` : ''}`;
}

function rowIndexOf(target: EventTarget | null): number | null {
  if (!(target instanceof Element)) return null;
  const row = target.closest<HTMLElement>('.vrow');
  if (!row || row.dataset.index === undefined) return null;
  const i = Number(row.dataset.index);
  return Number.isInteger(i) ? i : null;
}

function fillSelect(sel: HTMLSelectElement, all: string, values: string[], current: string): void {
  clear(sel);
  sel.appendChild(h('option', { value: '' }, all));
  for (const v of values) sel.appendChild(h('option', { value: v }, v));
  sel.value = values.includes(current) ? current : '';
  sel.hidden = values.length === 0;
}
