// Storage: how big the store is and what fills it (per source, per age),
// the trash, what retention would remove next and when (automatic pruning
// waits until this preview was seen once), and reclaiming free space.

import { api, on, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, bytes, num, plural, relative } from '../format';
import { showMessage } from '../ops';
import type { View } from '../state';
import type { BucketDTO, StorageDTO } from '../types';

export class StorageView implements View {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;
  private readonly status: HTMLElement;
  private busy = false;

  constructor() {
    this.status = h('div', { class: 'list-status', role: 'status' });
    this.body = h('div', { class: 'storage', 'data-testid': 'storage' });
    this.el = h(
      'section',
      { class: 'view storage-view', 'aria-label': 'Storage' },
      h('div', { class: 'page-head' }, h('h1', {}, 'Storage'), h('span', { class: 'spacer' }), button('Refresh', { class: 'btn small' }, () => void this.load())),
      this.status,
      this.body,
    );
    // the first automatic prune waits for the window: ask here
    on('retention:pending', () => void this.load());
  }

  show(): void {
    void this.load();
  }

  private async load(): Promise<void> {
    replace(this.status, 'Loading…');
    try {
      const r = await api.storage.report();
      clear(this.status);
      this.render(r);
    } catch (e) {
      replace(this.status, `Could not read the storage: ${toApiError(e).message}`, button('Retry', { class: 'btn small' }, () => void this.load()));
    }
  }

  private render(r: StorageDTO): void {
    const total = r.db_bytes + r.wal_bytes;
    const vacuum = button('Reclaim free space', { class: 'btn small', 'data-testid': 'vacuum', title: `Runs ${r.auto_vacuum === 'incremental' ? 'incremental_vacuum' : 'VACUUM'}` }, (ev) =>
      void this.vacuum(ev.currentTarget as HTMLButtonElement),
    );
    vacuum.disabled = r.free_bytes === 0;
    const db = card(
      'Database',
      h('p', { class: 'big', 'data-testid': 'db-size' }, bytes(total)),
      h('p', { class: 'muted small' }, `${bytes(r.db_bytes)} in the store, ${bytes(r.wal_bytes)} in its write-ahead log · `, h('code', { class: 'selectable' }, r.path)),
      h('p', {}, r.free_bytes > 0 ? `${bytes(r.free_bytes)} is free inside the file and can be given back.` : 'No free space to give back.', ' ', vacuum),
    );
    const counts = card(
      'Sessions',
      h('p', { class: 'big' }, `${num(r.sessions)} sessions`),
      h('p', { class: 'muted small' }, `${num(r.messages)} messages`),
      buckets('By source', r.by_source ?? []),
      buckets('By last activity', r.by_age ?? []),
    );
    const t = r.trash;
    const trashCard = card(
      'Trash',
      h('p', { class: 'big' }, plural(t.sessions, 'session')),
      h('p', { class: 'muted small' }, `${plural(t.messages, 'message')}, ${bytes(t.bytes)}`),
      h('p', {}, t.trash_days > 0 ? `Deleted sessions are kept ${plural(t.trash_days, 'day')}.` : 'The trash is off: deletes are for good.', t.next_purge_at ? ` Next purge ${relative(t.next_purge_at)}.` : ''),
    );
    this.body.replaceChildren(h('div', { class: 'cards' }, db, counts, trashCard), this.retention(r));
  }

  private retention(r: StorageDTO): HTMLElement {
    const x = r.retention;
    const lines: Node[] = [];
    const goes = x.to_trash ? 'would move to the trash' : 'would be deleted';
    if (x.sessions > 0) {
      lines.push(
        h('p', { 'data-testid': 'retention-preview' }, `${plural(x.sessions, 'ended session')} (${plural(x.messages, 'message')}) inactive for more than ${plural(x.days, 'day')} ${goes}${x.next_at ? ` at the next run, ${relative(x.next_at)} (${absolute(x.next_at)})` : ''}. Pinned sessions are never pruned.`),
      );
      const titles = x.titles ?? [];
      if (titles.length > 0) {
        const ul = h('ul', { class: 'titles' });
        for (const s of titles.slice(0, 10)) ul.append(h('li', {}, s || '(untitled)'));
        if (x.sessions > titles.length) ul.append(h('li', { class: 'muted' }, `… and ${num(x.sessions - titles.length)} more`));
        lines.push(ul);
      }
    } else {
      lines.push(h('p', { 'data-testid': 'retention-preview' }, `Nothing is older than ${plural(x.days, 'day')}: retention would remove nothing now.`));
    }
    if (!x.auto_prune) lines.push(h('p', { class: 'muted' }, 'Automatic pruning is off (sessions.auto_prune): nothing goes unless you prune.'));
    if (x.needs_confirmation) {
      lines.push(
        h(
          'div',
          { class: 'notice warn', 'data-testid': 'retention-pending' },
          'Automatic pruning waits until you have seen this preview once. ',
          button('Let retention run', { class: 'btn small primary', 'data-testid': 'confirm-retention' }, () => void this.confirm()),
        ),
      );
    } else if (x.confirmed_at) {
      lines.push(h('p', { class: 'muted small' }, `Reviewed ${relative(x.confirmed_at)}.`));
    }
    return card('Retention', ...lines);
  }

  private async vacuum(btn: HTMLButtonElement): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    btn.disabled = true;
    btn.textContent = 'Reclaiming…';
    try {
      const v = await api.storage.vacuum();
      showMessage('ok', `Gave back ${bytes(v.freed_bytes)}`, `${bytes(v.before_bytes)} → ${bytes(v.after_bytes)} in ${(v.took_ms / 1000).toFixed(1)} s.`);
    } catch (e) {
      showMessage('error', 'Could not reclaim the space', toApiError(e).message);
    } finally {
      this.busy = false;
      void this.load();
    }
  }

  private async confirm(): Promise<void> {
    try {
      this.render(await api.storage.confirmRetention());
      showMessage('ok', 'Retention will run as its preview says');
    } catch (e) {
      showMessage('error', 'Could not confirm retention', toApiError(e).message);
    }
  }
}

function card(title: string, ...children: (Node | string)[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

function buckets(title: string, rows: BucketDTO[]): HTMLElement {
  const table = h('table', { class: 'buckets' }, h('caption', {}, title), h('tr', {}, h('th', {}, ''), h('th', {}, 'Sessions'), h('th', {}, 'Messages')));
  for (const b of rows) table.append(h('tr', {}, h('td', {}, b.name || '(none)'), h('td', {}, num(b.sessions)), h('td', {}, num(b.messages))));
  if (rows.length === 0) table.append(h('tr', {}, h('td', { colspan: 3, class: 'muted' }, 'None')));
  return table;
}
