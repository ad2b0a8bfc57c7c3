// Activity: the hook event log, newest first, live. Events are merged by
// seq (a later copy of an event carries its new deliveries), the DOM is
// updated once per animation frame, and at most maxRows are kept.

import { api, on, onReconnect, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, plural, relative, shortID } from '../format';
import { app, type View } from '../state';
import type { EventDTO } from '../types';
import { RecentActions } from './requests';

const maxRows = 1000;
const pageSize = 1000;
const maxPages = 200; // walking the log forward to its newest events

interface Payload {
  session_id?: unknown;
  deleted_ids?: unknown;
  reason?: unknown;
  old_session_id?: unknown;
  new_session_id?: unknown;
}

export class ActivityView implements View {
  readonly el: HTMLElement;
  private readonly listEl: HTMLElement;
  private readonly status: HTMLElement;
  private readonly hookSel: HTMLSelectElement;
  private readonly failuresOnly: HTMLInputElement;
  private readonly events = new Map<number, EventDTO>();
  private readonly els = new Map<number, HTMLElement>();
  private readonly dirty = new Set<number>();
  private frame = 0;
  private loaded = false;
  private loading = false;
  private visible = false;
  private reorder = false;
  private hooks = new Set<string>();
  private readonly recent = new RecentActions();

  constructor() {
    this.status = h('div', { class: 'list-status', role: 'status' });
    this.hookSel = h('select', { 'aria-label': 'Filter by hook', class: 'filter' }, h('option', { value: '' }, 'All hooks'));
    this.failuresOnly = h('input', { type: 'checkbox' });
    for (const c of [this.hookSel, this.failuresOnly]) c.addEventListener('change', () => this.refilter());
    this.listEl = h('div', { class: 'activity-list', role: 'list', 'aria-label': 'Hook events, newest first', 'aria-live': 'off' });
    this.el = h(
      'section',
      { class: 'view activity-view', 'aria-label': 'Activity' },
      h(
        'div',
        { class: 'page-head' },
        h('h1', {}, 'Activity'),
        h('span', { class: 'spacer' }),
        this.hookSel,
        h('label', { class: 'check' }, this.failuresOnly, ' Failures only'),
        button('Reload', { class: 'btn small' }, () => void this.load(true)),
      ),
      this.recent.el,
      h(
        'div',
        { class: 'row header activity-header', 'aria-hidden': 'true' },
        h('span', { class: 'a-time' }, 'When'),
        h('span', { class: 'a-hook' }, 'Hook'),
        h('span', { class: 'a-session' }, 'Session'),
        h('span', { class: 'a-reason' }, 'Reason'),
        h('span', { class: 'a-delivery' }, 'Delivery'),
      ),
      this.status,
      this.listEl,
    );
    on('activity', (evs) => this.merge(evs ?? []));
    onReconnect(() => {
      if (this.loaded) void this.load(false);
    });
  }

  show(): void {
    this.visible = true;
    this.recent.show(true);
    if (!this.loaded) void this.load(false);
    this.flushSoon();
  }

  hide(): void {
    this.visible = false;
    this.recent.show(false);
  }

  /** load reads the log from the start, keeping its newest maxRows events. */
  private async load(reset: boolean): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    if (reset) {
      this.events.clear();
      this.els.clear();
      clear(this.listEl);
    }
    replace(this.status, 'Loading…');
    try {
      let after = 0;
      let pages = 0;
      let first = true;
      for (;;) {
        // the first page is small so that something shows at once
        const limit = first ? 200 : pageSize;
        const evs = (await api.activity.recent(after, limit)) ?? [];
        this.merge(evs);
        pages++;
        const last = evs[evs.length - 1];
        if (!last || evs.length < limit || pages >= maxPages) break;
        after = last.seq;
        first = false;
      }
      this.loaded = true;
      clear(this.status);
    } catch (e) {
      replace(this.status, `Could not load the activity: ${toApiError(e).message}`, button('Retry', { class: 'btn small' }, () => void this.load(false)));
    } finally {
      this.loading = false;
      this.flushSoon();
    }
  }

  private merge(evs: EventDTO[]): void {
    if (evs.length === 0) return;
    let newest = -1;
    for (const s of this.events.keys()) newest = Math.max(newest, s);
    for (const e of evs) {
      if (!this.events.has(e.seq) && e.seq < newest) this.reorder = true;
      this.events.set(e.seq, e);
      this.dirty.add(e.seq);
      if (!this.hooks.has(e.hook)) {
        this.hooks.add(e.hook);
        this.hookSel.append(h('option', { value: e.hook }, e.hook));
      }
    }
    if (this.events.size > maxRows) {
      const seqs = [...this.events.keys()].sort((a, b) => a - b);
      for (const s of seqs.slice(0, this.events.size - maxRows)) {
        this.events.delete(s);
        this.dirty.delete(s);
        this.els.get(s)?.remove();
        this.els.delete(s);
      }
    }
    this.flushSoon();
  }

  private flushSoon(): void {
    if (this.frame || !this.visible) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.flush();
    });
  }

  private refilter(): void {
    for (const [seq, el] of this.els) el.hidden = !this.passes(this.events.get(seq));
  }

  private passes(e: EventDTO | undefined): boolean {
    if (!e) return false;
    if (this.hookSel.value && e.hook !== this.hookSel.value) return false;
    if (this.failuresOnly.checked && !(e.deliveries ?? []).some((d) => d.status !== 'ok')) return false;
    return true;
  }

  /** flush applies the dirty events to the DOM. */
  private flush(): void {
    if (this.dirty.size === 0 && !this.reorder) {
      this.showEmpty();
      return;
    }
    const fresh: number[] = [];
    for (const seq of this.dirty) {
      const e = this.events.get(seq);
      if (!e) continue;
      const el = row(e);
      el.hidden = !this.passes(e);
      const old = this.els.get(seq);
      if (old) old.replaceWith(el);
      else fresh.push(seq);
      this.els.set(seq, el);
    }
    this.dirty.clear();
    if (this.reorder) {
      this.reorder = false;
      const frag = document.createDocumentFragment();
      for (const seq of [...this.els.keys()].sort((a, b) => b - a)) frag.append(this.els.get(seq)!);
      replace(this.listEl, frag);
    } else if (fresh.length > 0) {
      // new events are newer than every shown one: they go on top
      const frag = document.createDocumentFragment();
      for (const seq of fresh.sort((a, b) => b - a)) frag.append(this.els.get(seq)!);
      this.listEl.prepend(frag);
    }
    this.showEmpty();
  }

  private showEmpty(): void {
    if (!this.loaded) return;
    if (this.events.size === 0) replace(this.status, 'No hook events yet. Deletes, archives, turns and compactions show up here as they happen.');
    else clear(this.status);
  }
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function row(e: EventDTO): HTMLElement {
  const p = (e.payload && typeof e.payload === 'object' ? e.payload : {}) as Payload;
  const sid = str(p.session_id);
  const deleted = Array.isArray(p.deleted_ids) ? p.deleted_ids.length : 0;
  const session = h('span', { class: 'a-session' });
  if (sid) {
    const a = h('a', { href: '#', title: sid }, shortID(sid));
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      app.go('transcript', sid);
    });
    session.append(a);
  }
  if (deleted > 0) session.append(h('span', { class: 'muted' }, `${sid ? ' · ' : ''}${plural(deleted, 'session')}`));
  const deliveries = e.deliveries ?? [];
  const bad = deliveries.filter((d) => d.status !== 'ok');
  const okCount = deliveries.length - bad.length;
  const delivery = h(
    'span',
    { class: 'a-delivery' },
    h(
      'span',
      { class: `badge ${e.delivered ? 'ok' : 'pending'}`, title: e.delivered ? '' : `waiting for ${(e.pending ?? []).join(', ') || 'the plugin host'}` },
      e.delivered ? 'delivered' : 'pending',
    ),
    deliveries.length > 0 ? h('span', { class: 'muted small' }, ` ${okCount}/${deliveries.length} ok`) : null,
  );
  const el = h(
    'div',
    { class: `activity-row${bad.length ? ' has-failures' : ''}`, role: 'listitem', 'data-testid': 'activity-row', 'data-seq': e.seq, 'data-hook': e.hook },
    h(
      'div',
      { class: 'row' },
      h('time', { class: 'a-time', title: `${absolute(e.created_at)} · seq ${e.seq} · event ${e.event_id}` }, relative(e.created_at)),
      h('span', { class: 'a-hook' }, e.hook),
      session,
      h('span', { class: 'a-reason' }, str(p.reason)),
      delivery,
    ),
  );
  if (bad.length > 0) {
    el.append(
      h(
        'ul',
        { class: 'failures' },
        ...bad.map((d) =>
          h('li', {}, h('strong', {}, d.subscriber), ` ${d.status}${d.redelivery ? ' (redelivery)' : ''}${(d.attempts ?? 0) > 1 && d.status !== 'retrying' ? ` after ${d.attempts} attempts` : ''}`, d.error ? `: ${d.error}` : ''),
        ),
      ),
    );
  }
  return el;
}
