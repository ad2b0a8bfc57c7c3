// What can be done to sessions, from a row's menu, the transcript's header
// and the keys: one list, so the three places offer the same things.

import { api, copyText, isDesktop, toApiError } from './api';
import { deleteWithConfirm, purgeWithConfirm } from './confirm';
import { h } from './dom';
import { bytes } from './format';
import type { MenuEntry } from './menu';
import { openModal } from './modal';
import { runBulk, sessionsChanged, showMessage } from './ops';
import { history } from './stores/history';
import type { BulkOp, ReceiptDTO, SessionDTO } from './types';

export interface Target {
  /** the sessions the action applies to (the selection, or one) */
  sessions: SessionDTO[];
  /** the selection is the whole filter (Ctrl+A) */
  wholeFilter?: boolean;
  /** opens the one session (absent in its own transcript) */
  open?: () => void;
  /** told after an action went through */
  done?: (op: BulkOp, r: ReceiptDTO) => void;
  /** told when a session changed in place (renamed, pinned) */
  changed?: (s: SessionDTO) => void;
}

const ids = (t: Target) => t.sessions.map((s) => s.id);
const inTrash = (t: Target) => t.sessions.length > 0 && t.sessions.every((s) => s.where === 'trash');

async function run(t: Target, op: BulkOp, p: Promise<ReceiptDTO | null>): Promise<void> {
  const r = await p;
  if (r) t.done?.(op, r);
}

export function archiveOrUnarchive(t: Target): Promise<void> {
  if (t.sessions.length === 0 || inTrash(t)) return Promise.resolve();
  const op = t.sessions.every((s) => s.archived) ? 'unarchive' : 'archive';
  return run(t, op, runBulk(op, ids(t)));
}

/** deleteSessions is the Delete key: to the trash, or for good from it. */
export function deleteSessions(t: Target): Promise<void> {
  if (inTrash(t)) return run(t, 'purge', purgeWithConfirm(ids(t)));
  return run(t, 'delete', deleteWithConfirm(ids(t), { wholeFilter: t.wholeFilter }));
}

export function restoreSessions(t: Target): Promise<void> {
  return run(t, 'restore', runBulk('restore', ids(t)));
}

export function purgeSessions(t: Target): Promise<void> {
  return run(t, 'purge', purgeWithConfirm(ids(t)));
}

/** rename asks for a new title (F2); Undo puts the old one back. */
export async function renameSession(t: Target): Promise<void> {
  const s = t.sessions.length === 1 ? t.sessions[0] : undefined;
  if (!s || s.where === 'trash') return;
  const input = h('input', { type: 'text', value: s.title, 'aria-label': 'Title', 'data-testid': 'rename-input', class: 'wide-input', maxlength: 500 });
  const modal = openModal<boolean>({
    title: 'Rename',
    body: h('div', {}, input),
    cancelValue: false,
    testid: 'rename-dialog',
    buttons: [
      { label: 'Cancel', value: false, kind: 'plain' },
      { label: 'Rename', value: true, kind: 'primary', testid: 'rename-save', default: true },
    ],
  });
  input.focus();
  input.select();
  if (!(await modal)) return;
  const title = input.value.trim();
  if (title === s.title) return;
  await setTitle(t, s.id, title, s.title, false);
}

async function setTitle(t: Target, id: string, title: string, before: string, isUndo: boolean): Promise<boolean> {
  try {
    const out = await api.sessions.rename(id, title);
    showMessage('ok', isUndo ? `Undone: the title is “${out.title || '(untitled)'}” again` : `Renamed to “${out.title || '(untitled)'}”`);
    if (!isUndo) history.push({ label: 'Rename', undo: () => setTitle(t, id, before, title, true) });
    t.changed?.(out);
    void sessionsChanged('rename');
    return true;
  } catch (e) {
    showMessage('error', 'Could not rename the session', toApiError(e).message);
    return false;
  }
}

/** togglePin pins or unpins (p); pinned sessions are never pruned nor idle-archived. */
export async function togglePin(t: Target, isUndo = false): Promise<boolean> {
  const s = t.sessions.length === 1 ? t.sessions[0] : undefined;
  if (!s || s.where === 'trash') return false;
  try {
    const out = await api.sessions.setPinned(s.id, !s.pinned);
    showMessage('ok', `${isUndo ? 'Undone: ' : ''}${out.pinned ? 'Pinned' : 'Unpinned'} “${out.title || '(untitled)'}”`, out.pinned ? 'Retention and idle archiving leave it alone.' : undefined);
    if (!isUndo) history.push({ label: out.pinned ? 'Pin' : 'Unpin', undo: () => togglePin({ ...t, sessions: [out] }, true) });
    t.changed?.(out);
    void sessionsChanged('pin');
    return true;
  } catch (e) {
    showMessage('error', s.pinned ? 'Could not unpin the session' : 'Could not pin the session', toApiError(e).message);
    return false;
  }
}

/** exportSession saves the whole conversation as Markdown or JSON: a
 * native save dialog in the window, a download on the dashboard. */
export async function exportSession(t: Target, format: 'markdown' | 'json'): Promise<void> {
  const s = t.sessions.length === 1 ? t.sessions[0] : undefined;
  if (!s) return;
  try {
    if (isDesktop()) {
      const saved = await api.sessions.saveExport(s.id, format);
      if (saved.path) showMessage('ok', `Saved ${saved.path} (${bytes(saved.bytes)})`);
      return;
    }
    const x = await api.sessions.export(s.id, format);
    const url = URL.createObjectURL(new Blob([x.content], { type: x.content_type }));
    const a = h('a', { href: url, download: x.filename, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
    showMessage('ok', `Exported ${x.filename} (${bytes(x.content.length)})`);
  } catch (e) {
    showMessage('error', 'Could not export the session', toApiError(e).message);
  }
}

/** newSession starts a session (Ctrl+N) and opens it. */
export async function newSession(open: (id: string) => void): Promise<void> {
  try {
    const s = await api.sessions.create('');
    void sessionsChanged('create');
    open(s.id);
  } catch (e) {
    showMessage('error', 'Could not start a session', toApiError(e).message);
  }
}

/** sessionMenu is the menu of a row, a selection or a transcript. */
export function sessionMenu(t: Target): MenuEntry[] {
  const n = t.sessions.length;
  const one = n === 1 ? t.sessions[0] : undefined;
  const many = (label: string) => (n > 1 ? `${label} ${n} sessions` : label);
  const entries: MenuEntry[] = [];
  if (one && t.open) entries.push({ label: 'Open', hint: 'Enter', run: t.open, testid: 'menu-open' });
  if (one && !inTrash(t)) {
    entries.push(
      { label: 'Rename…', hint: 'F2', run: () => void renameSession(t), testid: 'menu-rename' },
      { label: one.pinned ? 'Unpin' : 'Pin', hint: 'p', run: () => void togglePin(t), testid: one.pinned ? 'menu-unpin' : 'menu-pin' },
    );
  }
  if (inTrash(t)) {
    entries.push({ label: many('Restore'), run: () => void restoreSessions(t), testid: 'menu-restore' });
  } else {
    const archived = n > 0 && t.sessions.every((s) => s.archived);
    entries.push({ label: many(archived ? 'Unarchive' : 'Archive'), hint: 'e', run: () => void archiveOrUnarchive(t), testid: archived ? 'menu-unarchive' : 'menu-archive' });
  }
  if (one) {
    entries.push(
      'separator',
      { label: 'Export as Markdown', run: () => void exportSession(t, 'markdown'), testid: 'menu-export-md' },
      { label: 'Export as JSON', run: () => void exportSession(t, 'json'), testid: 'menu-export-json' },
      {
      label: 'Copy id',
      run: () => void copyText(one.id).then((ok) => showMessage(ok ? 'ok' : 'error', ok ? 'Session id copied' : 'Could not copy the id')),
      testid: 'menu-copy-id',
      },
    );
  }
  entries.push('separator');
  if (!inTrash(t)) entries.push({ label: `${many('Move to trash')}`, hint: 'Delete', danger: true, run: () => void deleteSessions(t), testid: 'menu-delete' });
  entries.push({ label: `${many('Delete for good')}…`, hint: inTrash(t) ? 'Delete' : undefined, danger: true, run: () => void purgeSessions(t), testid: 'menu-purge' });
  return entries;
}
