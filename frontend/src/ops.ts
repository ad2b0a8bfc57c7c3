// Bulk operations (delete, archive, unarchive) through receipts: one request
// id per user action, retried with that same id on transient failures, a
// progress bar fed by `progress` events, and a result panel.

import { api, newRequestID, on, toApiError, withRetry, type ApiError } from './api';
import { button, h, replace } from './dom';
import { num, plural, shortID } from './format';
import { confirmModal } from './modal';
import { history, type Undoable } from './stores/history';
import type { BulkOp, ReceiptDTO } from './types';

const verbs: Record<BulkOp, { ing: string; ed: string; success: string; title: string }> = {
  delete: { ing: 'Deleting', ed: 'Deleted', success: 'deleted', title: 'Delete' },
  archive: { ing: 'Archiving', ed: 'Archived', success: 'archived', title: 'Archive' },
  unarchive: { ing: 'Unarchiving', ed: 'Unarchived', success: 'unarchived', title: 'Unarchive' },
};

let progressHost: HTMLElement;
let resultHost: HTMLElement;
const changeListeners = new Set<(op: BulkOp) => void>();
let running = 0;

/** mountOps gives the status bar its two regions. */
export function mountOps(progress: HTMLElement, result: HTMLElement): void {
  progressHost = progress;
  resultHost = result;
}

/** onSessionsChanged is told after every finished bulk operation. */
export function onSessionsChanged(fn: (op: BulkOp) => void): void {
  changeListeners.add(fn);
}

export function opsRunning(): boolean {
  return running > 0;
}

interface RunOptions {
  /** the request id, when retrying an action that already has one */
  requestID?: string;
  /** what the user picked, for the summary (defaults to ids.length) */
  selectedCount?: number;
  /** an undo's own run: it is not itself put on the undo stack */
  isUndo?: boolean;
}

/** runBulk runs one user action; it resolves to its receipt, or null when it failed. */
export async function runBulk(op: BulkOp, ids: string[], o: RunOptions = {}): Promise<ReceiptDTO | null> {
  const requestID = o.requestID ?? newRequestID();
  const v = verbs[op];
  const bar = h('progress', { max: Math.max(ids.length, 1), value: 0 });
  const label = h('span', { class: 'progress-label' }, `${v.ing} ${plural(ids.length, 'session')}…`);
  const entry = h('div', { class: 'progress-entry', 'data-testid': 'progress', 'data-request-id': requestID, role: 'status' }, label, bar);
  progressHost.appendChild(entry);
  running++;
  let attempts = 1;
  const off = on('progress', (p) => {
    if (p.request_id !== requestID) return;
    const total = Math.max(p.total, 1);
    bar.max = total;
    bar.value = Math.min(p.done, total);
    label.textContent = `${v.ing} ${plural(ids.length, 'session')}… ${p.done} / ${p.total}`;
  });
  try {
    const r = await withRetry(
      () => api.sessions.bulk(op, requestID, ids),
      (e: ApiError, attempt) => {
        attempts = attempt + 1;
        label.textContent = `${v.ing}… retry ${attempt} of 3 after: ${e.message}`;
      },
    );
    bar.max = 1;
    bar.value = 1;
    const undo = o.isUndo ? null : undoOf(op, ids, r);
    if (undo) history.push(undo);
    showReceipt(op, ids, r, o.selectedCount ?? ids.length, attempts, undo);
    return r;
  } catch (raw) {
    const e = toApiError(raw);
    showFailure(op, ids, requestID, e, attempts, o);
    return null;
  } finally {
    off();
    entry.remove();
    running--;
    for (const fn of changeListeners) fn(op);
  }
}

function panel(kind: 'ok' | 'warn' | 'error', title: string, lines: Node[], actions: HTMLButtonElement[], requestID?: string): void {
  const close = button('Dismiss', { class: 'btn plain small', 'aria-label': 'Dismiss the result' }, () => dismissResult());
  const el = h(
    'div',
    // the request id is for tests and support, never shown in the main view
    { class: `result ${kind}`, 'data-testid': 'result', 'data-request-id': requestID, role: kind === 'error' ? 'alert' : 'status' },
    h('div', { class: 'result-head' }, h('strong', {}, title), h('span', { class: 'spacer' }), ...actions, close),
    ...lines,
  );
  replace(resultHost, el);
}

/** showMessage puts a one-line message in the result panel. */
export function showMessage(kind: 'ok' | 'warn' | 'error', title: string, detail?: string): void {
  panel(kind, title, detail ? [h('div', {}, detail)] : [], []);
}

export function dismissResult(): void {
  replace(resultHost);
}

/** The opposite of each op, where there is one. */
const inverse: Partial<Record<BulkOp, BulkOp>> = { archive: 'unarchive', unarchive: 'archive' };

/** undoOf is how to take a finished request back: the inverse op over the
 * requested ids that it changed (their chains follow, as they did). */
function undoOf(op: BulkOp, requested: string[], r: ReceiptDTO): Undoable | null {
  const back = inverse[op];
  const affected = r.affected_ids ?? [];
  if (!back || affected.length === 0 || r.replayed) return null;
  const changed = requested.filter((id) => affected.includes(id));
  const ids = changed.length > 0 ? changed : affected;
  return {
    label: `${verbs[op].title} of ${plural(affected.length, 'session')}`,
    requestID: r.request_id,
    undo: async () => (await runBulk(back, ids, { isUndo: true })) !== null,
  };
}

/** undoLast takes back the newest action (Ctrl+Z), saying so when there is none. */
export async function undoLast(): Promise<void> {
  const e = history.last;
  if (!e) {
    showMessage('warn', 'Nothing to undo');
    return;
  }
  await history.undo(e);
}

function showReceipt(op: BulkOp, requested: string[], r: ReceiptDTO, selected: number, attempts: number, undo: Undoable | null): void {
  const v = verbs[op];
  const affected = r.affected_ids ?? [];
  const req = new Set(requested);
  const cascaded = affected.filter((id) => !req.has(id)).length;
  const failed = (r.outcomes ?? []).filter((o) => o.status !== v.success);
  let title = `${v.ed} ${plural(affected.length, 'session')}`;
  if (cascaded > 0) {
    title += op === 'delete' ? `, ${cascaded} of them cascaded beyond the ${selected} selected` : `, ${cascaded} more from their compression chains`;
  }
  const lines: Node[] = [];
  if (r.replayed) lines.push(h('div', { class: 'replayed' }, 'This had already been applied: nothing ran twice.'));
  if (attempts > 1) lines.push(h('div', {}, `Succeeded after ${plural(attempts, 'attempt')}.`));
  if (failed.length > 0) {
    const list = h('ul', { class: 'outcomes' });
    for (const f of failed.slice(0, 50)) {
      list.appendChild(h('li', {}, h('code', { title: f.id }, shortID(f.id)), ` ${f.status.replace(/_/g, ' ')}`, f.error ? `: ${f.error}` : ''));
    }
    if (failed.length > 50) list.appendChild(h('li', {}, `… and ${failed.length - 50} more`));
    lines.push(h('div', {}, `${plural(failed.length, 'requested session')} not ${v.success}:`), list);
  }
  const actions: HTMLButtonElement[] = [];
  if (undo) {
    actions.push(
      button('Undo', { class: 'btn primary small', 'data-testid': 'undo', title: 'Undo (Ctrl+Z)' }, () => {
        dismissResult();
        void history.undo(undo);
      }),
    );
  }
  panel(failed.length > 0 ? 'warn' : 'ok', title, lines, actions, r.request_id);
}

function showFailure(op: BulkOp, ids: string[], requestID: string, e: ApiError, attempts: number, o: RunOptions): void {
  const v = verbs[op];
  const lines: Node[] = [h('div', {}, e.message)];
  if (attempts > 1) lines.push(h('div', {}, `Gave up after ${plural(attempts, 'attempt')}; trying again cannot run it twice.`));
  const actions: HTMLButtonElement[] = [];
  if (attempts > 1 || ['network', 'timeout', 'internal', 'busy', 'unavailable'].includes(e.code)) {
    // Same id again: if the first attempt did go through, this replays it.
    actions.push(button('Try again', { class: 'btn primary small' }, () => void runBulk(op, ids, { ...o, requestID })));
  }
  panel('error', `${v.title} of ${plural(ids.length, 'session')} failed`, lines, actions, requestID);
}

/** deleteWithConfirm previews a delete (the count with its cascade), asks
 * with Cancel focused (Ctrl+A, Delete, Enter deletes nothing), then runs it. */
export async function deleteWithConfirm(ids: string[], o: { wholeFilter?: boolean } = {}): Promise<ReceiptDTO | null> {
  if (ids.length === 0) return null;
  let preview;
  try {
    preview = await api.sessions.preview(ids);
  } catch (e) {
    showMessage('error', 'Could not preview the delete', toApiError(e).message);
    return null;
  }
  const cascaded = preview.cascaded;
  const text =
    `${plural(preview.count, 'session')} will be removed` +
    (cascaded > 0 ? `, ${cascaded} of them cascaded (compression chains and delegate children) beyond the ${num(ids.length)} selected.` : '.');
  const body = h(
    'div',
    {},
    h('p', { 'data-testid': 'confirm-text', 'data-count': preview.count, 'data-cascaded': cascaded }, text),
    o.wholeFilter ? h('p', { class: 'warn-text' }, 'This is every session of the current filter.') : null,
    h('p', { class: 'muted' }, 'Transcripts and their sidecar files are deleted for good. Plugins are told once.'),
  );
  if (preview.count === 0) body.appendChild(h('p', { class: 'warn-text' }, 'None of the selected sessions exists any more.'));
  const ok = await confirmModal({
    title: o.wholeFilter ? `Delete all ${plural(ids.length, 'session')} of this filter?` : `Delete ${plural(ids.length, 'selected session')}?`,
    body,
    confirmLabel: `Delete ${plural(preview.count, 'session')}`,
    danger: true,
    confirmTestid: 'confirm-delete',
  });
  if (!ok) return null;
  return runBulk('delete', ids, { selectedCount: ids.length });
}
