// What can be done to sessions, from a row's menu, the transcript's header
// and the keys: one list, so the three places offer the same things.

import { copyText } from './api';
import { deleteWithConfirm, purgeWithConfirm } from './confirm';
import type { MenuEntry } from './menu';
import { runBulk, showMessage } from './ops';
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

/** sessionMenu is the menu of a row, a selection or a transcript. */
export function sessionMenu(t: Target): MenuEntry[] {
  const n = t.sessions.length;
  const one = n === 1 ? t.sessions[0] : undefined;
  const many = (label: string) => (n > 1 ? `${label} ${n} sessions` : label);
  const entries: MenuEntry[] = [];
  if (one && t.open) entries.push({ label: 'Open', hint: 'Enter', run: t.open, testid: 'menu-open' });
  if (inTrash(t)) {
    entries.push({ label: many('Restore'), run: () => void restoreSessions(t), testid: 'menu-restore' });
  } else {
    const archived = n > 0 && t.sessions.every((s) => s.archived);
    entries.push({ label: many(archived ? 'Unarchive' : 'Archive'), hint: 'e', run: () => void archiveOrUnarchive(t), testid: archived ? 'menu-unarchive' : 'menu-archive' });
  }
  if (one) {
    entries.push('separator', {
      label: 'Copy id',
      run: () => void copyText(one.id).then((ok) => showMessage(ok ? 'ok' : 'error', ok ? 'Session id copied' : 'Could not copy the id')),
      testid: 'menu-copy-id',
    });
  }
  entries.push('separator');
  if (!inTrash(t)) entries.push({ label: `${many('Move to trash')}`, hint: 'Delete', danger: true, run: () => void deleteSessions(t), testid: 'menu-delete' });
  entries.push({ label: `${many('Delete for good')}…`, hint: inTrash(t) ? 'Delete' : undefined, danger: true, run: () => void purgeSessions(t), testid: 'menu-purge' });
  return entries;
}
