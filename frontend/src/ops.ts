// Bulk operations (delete to the trash, archive, unarchive, restore, delete
// for good) through receipts: one request id per user action, retried with
// that same id on transient failures, a progress bar fed by `progress`
// events, a result panel in plain words, and an entry on the undo stack.

import { api, newRequestID, on, toApiError, withRetry, type ApiError } from './api';
import { button, h, replace } from './dom';
import { plural, shortID } from './format';
import { history, type Undoable } from './stores/history';
import { restoreFor, trash } from './stores/trash';
import type { BulkOp, FilterDTO, ReceiptDTO } from './types';

const verbs: Record<BulkOp, { ing: string; ed: string; success: string; title: string }> = {
  delete: { ing: 'Moving to the trash', ed: 'Moved to the trash', success: 'deleted', title: 'Delete' },
  archive: { ing: 'Archiving', ed: 'Archived', success: 'archived', title: 'Archive' },
  unarchive: { ing: 'Unarchiving', ed: 'Unarchived', success: 'unarchived', title: 'Unarchive' },
  restore: { ing: 'Restoring', ed: 'Restored', success: 'restored', title: 'Restore' },
  purge: { ing: 'Deleting for good', ed: 'Deleted for good', success: 'deleted', title: 'Delete for good' },
};

let progressHost: HTMLElement;
let resultHost: HTMLElement;
type Change = BulkOp | 'empty_trash' | 'rename' | 'pin' | 'create';
type ChangeListener = (op: Change) => void | Promise<unknown>;
const changeListeners = new Set<ChangeListener>();
let running = 0;

// A request's progress entry appears only once it has run this long, and
// its result waits at most reloadWait for the views to reload. Every change
// to the page costs the window a repaint (30-40 ms under software rendering,
// docs/benchmarks.md), and an answer from Go waits for the repaint under way:
// a quick archive used to paint its progress entry, then its result, then
// the list, one after the other.
const progressDelay = 200;
const reloadWait = 500;

/** mountOps gives the status bar its two regions. */
export function mountOps(progress: HTMLElement, result: HTMLElement): void {
  progressHost = progress;
  resultHost = result;
}

/** onSessionsChanged is told after every finished bulk operation; a
 * listener that reloads returns the reload's promise. */
export function onSessionsChanged(fn: ChangeListener): void {
  changeListeners.add(fn);
}

/** sessionsChanged tells the listeners that op finished (or failed); it
 * settles when their reloads did, or after reloadWait. */
export function sessionsChanged(op: Change): Promise<void> {
  const reloads = [...changeListeners].map((fn) => {
    try {
      return Promise.resolve(fn(op)).catch(() => undefined);
    } catch {
      return Promise.resolve();
    }
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((done) => (timer = setTimeout(done, reloadWait)));
  return Promise.race([Promise.all(reloads).then(() => undefined), late]).finally(() => clearTimeout(timer));
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

/** A request to run: what it does, to how many, and the call (given the
 * request id, the same on every retry). */
interface Job {
  op: BulkOp;
  /** how many sessions, for the progress label */
  count: number;
  /** the ids the user picked (none for a rule) */
  requested: string[];
  call: (requestID: string) => Promise<ReceiptDTO>;
}

/** runBulk runs one user action on ids; it resolves to its receipt, or null when it failed. */
export function runBulk(op: BulkOp, ids: string[], o: RunOptions = {}): Promise<ReceiptDTO | null> {
  return execute({ op, count: ids.length, requested: ids, call: (rid) => api.sessions.bulk(op, rid, ids) }, o);
}

/** runRule runs op on what a rule matches (expected: the preview's count). */
export function runRule(op: BulkOp, filter: FilterDTO, expected: number, o: RunOptions = {}): Promise<ReceiptDTO | null> {
  return execute({ op, count: expected, requested: [], call: (rid) => api.sessions.bulkRule(op, rid, filter) }, o);
}

/** runUndo reverses request r as a whole, on the server (a retry replays). */
export function runUndo(r: ReceiptDTO): Promise<ReceiptDTO | null> {
  const affected = r.affected_ids ?? [];
  const op = (inverse[r.op as BulkOp] ?? r.op) as BulkOp;
  return execute({ op, count: affected.length, requested: affected, call: () => api.requests.undo(r.request_id) }, { isUndo: true });
}

async function execute(job: Job, o: RunOptions): Promise<ReceiptDTO | null> {
  const { op, count } = job;
  const requestID = o.requestID ?? newRequestID();
  const v = verbs[op];
  const bar = h('progress', { max: Math.max(count, 1), value: 0 });
  const label = h('span', { class: 'progress-label' }, `${v.ing} ${plural(count, 'session')}…`);
  const entry = h('div', { class: 'progress-entry', 'data-testid': 'progress', 'data-request-id': requestID, role: 'status' }, label, bar);
  const showProgress = setTimeout(() => progressHost.appendChild(entry), progressDelay);
  running++;
  let attempts = 1;
  let out: ReceiptDTO | null = null;
  let show = (): void => {};
  const off = on('progress', (p) => {
    if (p.request_id !== requestID) return;
    const total = Math.max(p.total, 1);
    bar.max = total;
    bar.value = Math.min(p.done, total);
    label.textContent = `${v.ing} ${plural(p.total, 'session')}… ${p.done} / ${p.total}`;
  });
  try {
    const r = await withRetry(
      () => job.call(requestID),
      (e: ApiError, attempt) => {
        attempts = attempt + 1;
        label.textContent = `${v.ing}… retry ${attempt} of 3 after: ${e.message}`;
      },
    );
    bar.max = 1;
    bar.value = 1;
    const undo = o.isUndo ? null : undoOf(op, job.requested, r);
    out = r;
    show = () => {
      if (undo) history.push(undo);
      if (o.isUndo) history.forget((e) => e.requestID === r.request_id);
      showReceipt(op, job.requested, r, o.selectedCount ?? job.requested.length, attempts, undo, !!o.isUndo);
    };
  } catch (raw) {
    const e = toApiError(raw);
    show = () => showFailure(job, requestID, e, attempts, o);
  } finally {
    clearTimeout(showProgress);
    off();
    entry.remove();
    running--;
  }
  // The views reload first, and the result is shown with them: one repaint.
  await sessionsChanged(op);
  show();
  return out;
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

/** showAction puts a message with one action in the result panel. */
export function showAction(kind: 'ok' | 'warn' | 'error', title: string, detail: string, label: string, fn: () => void): void {
  const b = button(label, { class: 'btn primary small' }, () => {
    dismissResult();
    fn();
  });
  panel(kind, title, detail ? [h('div', {}, detail)] : [], [b]);
}

export function dismissResult(): void {
  replace(resultHost);
}

/** The opposite of each op, where there is one (a delete to the trash is
 * restored; a purge has none). */
const inverse: Partial<Record<BulkOp, BulkOp>> = { archive: 'unarchive', unarchive: 'archive', delete: 'restore', restore: 'delete' };

/** undoOf is how to take a finished request back: on the server as a whole
 * when it can (one receipt, a retry replays), else the inverse op over what
 * it changed (a restore brings back all that its delete took). */
function undoOf(op: BulkOp, requested: string[], r: ReceiptDTO): Undoable | null {
  const back = inverse[op];
  const affected = r.affected_ids ?? [];
  const label = `${verbs[op].title} of ${plural(affected.length, 'session')}`;
  if (r.undoable && affected.length > 0) return { label, requestID: r.request_id, undo: async () => (await runUndo(r)) !== null };
  if (!back || affected.length === 0 || r.replayed || (op === 'delete' && !r.trashed)) return null;
  const changed = requested.filter((id) => affected.includes(id));
  const ids = op === 'delete' ? affected : changed.length > 0 ? changed : affected;
  return { label, requestID: r.request_id, undo: async () => (await runBulk(back, ids, { isUndo: true })) !== null };
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

function showReceipt(op: BulkOp, requested: string[], r: ReceiptDTO, selected: number, attempts: number, undo: Undoable | null, isUndo: boolean): void {
  const v = verbs[op];
  const affected = r.affected_ids ?? [];
  const req = new Set(requested);
  // a rule's cascade is beyond what it matched; an undo has none of its own
  const cascaded = isUndo ? 0 : requested.length === 0 ? Math.max(0, affected.length - (r.matched || affected.length)) : affected.filter((id) => !req.has(id)).length;
  if (requested.length === 0) selected = r.matched;
  const failed = (r.outcomes ?? []).filter((o) => o.status !== v.success);
  const permanent = op === 'delete' && !r.trashed;
  const n = plural(affected.length, 'session');
  let title = permanent ? `Deleted ${n}` : op === 'delete' ? `Moved ${n} to the trash` : op === 'purge' ? `Deleted ${n} for good` : `${v.ed} ${n}`;
  if (cascaded > 0) {
    title += op === 'delete' || op === 'purge' ? `, ${cascaded} of them cascaded beyond the ${selected} selected` : `, ${cascaded} more with them`;
  }
  const lines: Node[] = [];
  if (isUndo) title = `Undone: ${title.charAt(0).toLowerCase()}${title.slice(1)}`;
  if (op === 'delete' && r.trashed && affected.length > 0) {
    lines.push(h('div', { 'data-testid': 'restorable' }, `You can restore ${affected.length === 1 ? 'it' : 'them'} ${restoreFor(r.purge_after, trash.days)}.`));
  }
  if (r.replayed) lines.push(h('div', { class: 'replayed' }, 'This had already been applied: nothing ran twice.'));
  if (attempts > 1) lines.push(h('div', {}, `Succeeded after ${plural(attempts, 'attempt')}.`));
  if (failed.length > 0) {
    // in words, by what happened; the ids only on demand
    const by = new Map<string, number>();
    for (const f of failed) by.set(f.status, (by.get(f.status) ?? 0) + 1);
    for (const [status, n] of by) lines.push(h('div', {}, `${plural(n, 'selected session')} ${outcomeWords(status, n)}.`));
    const list = h('ul', { class: 'outcomes' });
    for (const f of failed.slice(0, 50)) {
      list.appendChild(h('li', {}, h('code', { title: f.id }, shortID(f.id)), ` ${f.status.replace(/_/g, ' ')}`, f.error ? `: ${f.error}` : ''));
    }
    if (failed.length > 50) list.appendChild(h('li', {}, `… and ${failed.length - 50} more`));
    lines.push(h('details', {}, h('summary', {}, 'Which ones'), list));
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

/** outcomeWords says an outcome that is not the op's success in words. */
function outcomeWords(status: string, n: number): string {
  const were = n === 1 ? 'was' : 'were';
  switch (status) {
    case 'unchanged':
      return `${were} already that way`;
    case 'not_found':
      return n === 1 ? 'no longer exists' : 'no longer exist';
    case 'kept':
      return `${were} kept (pinned, or still in use)`;
    default:
      return `: ${status.replace(/_/g, ' ')}`;
  }
}

/** showFailure says what went wrong in plain words, with a retry that
 * cannot run twice (the same request id). */
function showFailure(job: Job, requestID: string, e: ApiError, attempts: number, o: RunOptions): void {
  const v = verbs[job.op];
  const lines: Node[] = [h('div', {}, e.message)];
  if (attempts > 1) lines.push(h('div', {}, `Gave up after ${plural(attempts, 'attempt')}; trying again cannot run it twice.`));
  const actions: HTMLButtonElement[] = [];
  if (attempts > 1 || ['network', 'timeout', 'internal', 'busy', 'unavailable'].includes(e.code)) {
    // Same id again: if the first attempt did go through, this replays it.
    actions.push(button('Try again', { class: 'btn primary small' }, () => void execute(job, { ...o, requestID })));
  }
  panel('error', `${o.isUndo ? 'Undo' : v.title} of ${plural(job.count, 'session')} failed`, lines, actions, requestID);
}
