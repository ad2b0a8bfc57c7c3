// Storage: how big the store is and what fills it (per source, per age),
// the trash, what retention would remove next and when (automatic pruning
// waits until this preview was seen once), and reclaiming free space.

import { api, on, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, bytes, num, plural, relative } from '../format';
import { showMessage } from '../ops';
import { app, type View } from '../state';
import type { BucketDTO, ImportDTO, ImportSourceDTO, StorageDTO } from '../types';

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
      h('p', { class: 'big' }, plural(r.sessions, 'session')),
      h('p', { class: 'muted small' }, plural(r.messages, 'message')),
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
    this.body.replaceChildren(h('div', { class: 'cards' }, db, counts, trashCard), this.retention(r), this.importCard);
    void this.loadSources();
  }

  // Import from other agents: one row per agent, its default place, and a
  // preview (dry run) before the import. Imports fire no hook.
  private readonly importCard = card('Import from other agents');
  private readonly importResult = h('div', { class: 'import-result', 'data-testid': 'import-result', role: 'status' });

  private async loadSources(): Promise<void> {
    let sources: ImportSourceDTO[];
    try {
      sources = (await api.storage.importSources()) ?? [];
    } catch (e) {
      this.importCard.replaceChildren(h('h2', {}, 'Import from other agents'), h('p', { class: 'muted' }, `Could not look for other agents: ${toApiError(e).message}`));
      return;
    }
    const table = h('table', { class: 'imports' }, h('tr', {}, h('th', {}, 'Agent'), h('th', {}, 'Where'), h('th', {}, '')));
    for (const src of sources) {
      const preview = button('Preview', { class: 'btn small', 'data-testid': `import-preview-${src.kind}` }, (ev) => void this.runImport(src, true, ev.currentTarget as HTMLButtonElement));
      const run = button('Import', { class: 'btn small primary', 'data-testid': `import-run-${src.kind}` }, (ev) => void this.runImport(src, false, ev.currentTarget as HTMLButtonElement));
      preview.disabled = run.disabled = !src.found;
      table.append(
        h(
          'tr',
          { 'data-testid': `import-source-${src.kind}` },
          h('td', {}, src.label),
          h('td', {}, h('code', { class: 'selectable' }, src.path), src.found ? '' : h('span', { class: 'muted small' }, ' · nothing there')),
          h('td', { class: 'actions' }, preview, ' ', run),
        ),
      );
    }
    this.importCard.replaceChildren(
      h('h2', {}, 'Import from other agents'),
      h('p', { class: 'muted small' }, 'Their files are only read. Importing again adds only what is new; nothing is copied twice. Imports fire no hook.'),
      table,
      this.importResult,
    );
  }

  private async runImport(src: ImportSourceDTO, dryRun: boolean, btn: HTMLButtonElement): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    const label = btn.textContent ?? '';
    btn.disabled = true;
    btn.textContent = dryRun ? 'Reading…' : 'Importing…';
    replace(this.importResult, `${dryRun ? 'Reading' : 'Importing'} ${src.label}…`);
    try {
      const r = await api.storage.import({ kind: src.kind, dry_run: dryRun });
      this.importResult.replaceChildren(...importSummary(src, r));
      if (!dryRun) {
        showMessage('ok', `Imported from ${src.label}`, importLine(r));
        // new sessions, perhaps of new sources and platforms: the list and its filter choices
        if ((r.counts?.imported ?? 0) + (r.counts?.updated ?? 0) > 0) app.sessionsStale(true);
        this.busy = false;
        await this.load();
      }
    } catch (e) {
      replace(this.importResult, `Could not import from ${src.label}: ${toApiError(e).message}`);
      showMessage('error', `Could not import from ${src.label}`, toApiError(e).message);
    } finally {
      this.busy = false;
      btn.disabled = false;
      btn.textContent = label;
    }
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

const importOrder: [string, string][] = [
  ['imported', 'new'],
  ['updated', 'with new messages'],
  ['unchanged', 'unchanged'],
  ['skipped', 'skipped'],
  ['conflict', 'in conflict'],
];

function importLine(r: ImportDTO): string {
  const counts = r.counts ?? {};
  const parts = importOrder.filter(([k]) => (counts[k] ?? 0) > 0).map(([k, what]) => `${num(counts[k] ?? 0)} ${what}`);
  const sessionsPart = parts.length > 0 ? `Sessions: ${parts.join(', ')}` : 'No session found';
  return `${sessionsPart}; ${plural(r.messages, 'message')} ${r.dry_run ? 'to add' : 'added'}.`;
}

function importSummary(src: ImportSourceDTO, r: ImportDTO): Node[] {
  const out: Node[] = [h('p', { 'data-testid': 'import-line' }, h('strong', {}, r.dry_run ? `Preview of ${src.label}: ` : `${src.label}: `), importLine(r))];
  const notable = r.notable ?? [];
  if (notable.length > 0) {
    const ul = h('ul', { class: 'titles' });
    for (const o of notable) ul.append(h('li', {}, h('code', {}, o.id), ` ${o.status}${o.title ? ` · ${o.title}` : ''}${o.note ? ` — ${o.note}` : ''}`));
    out.push(ul);
  }
  if (r.skipped > 0) {
    const ul = h('ul', { class: 'titles muted small' });
    for (const p of r.problems ?? []) ul.append(h('li', {}, p));
    out.push(h('details', {}, h('summary', {}, `${plural(r.skipped, 'thing')} could not be read and ${r.skipped === 1 ? 'was' : 'were'} skipped`), ul));
  }
  return out;
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
