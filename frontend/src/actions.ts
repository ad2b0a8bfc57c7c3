// What can be done to sessions, from a row's menu, the transcript's header
// and the keys: one list, so the three places offer the same things.

import { copyText } from './api';
import type { MenuEntry } from './menu';
import { deleteWithConfirm, runBulk, showMessage } from './ops';
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

export async function archiveOrUnarchive(t: Target): Promise<void> {
  const ids = t.sessions.map((s) => s.id);
  if (ids.length === 0) return;
  const op = t.sessions.every((s) => s.archived) ? 'unarchive' : 'archive';
  const r = await runBulk(op, ids);
  if (r) t.done?.(op, r);
}

export async function deleteSessions(t: Target): Promise<void> {
  const r = await deleteWithConfirm(
    t.sessions.map((s) => s.id),
    { wholeFilter: t.wholeFilter },
  );
  if (r) t.done?.('delete', r);
}

/** sessionMenu is the menu of a row, a selection or a transcript. */
export function sessionMenu(t: Target): MenuEntry[] {
  const n = t.sessions.length;
  const one = n === 1 ? t.sessions[0] : undefined;
  const archived = n > 0 && t.sessions.every((s) => s.archived);
  const entries: MenuEntry[] = [];
  if (one && t.open) entries.push({ label: 'Open', hint: 'Enter', run: t.open, testid: 'menu-open' });
  entries.push({
    label: archived ? (n > 1 ? `Unarchive ${n} sessions` : 'Unarchive') : n > 1 ? `Archive ${n} sessions` : 'Archive',
    hint: 'e',
    run: () => void archiveOrUnarchive(t),
    testid: archived ? 'menu-unarchive' : 'menu-archive',
  });
  if (one) {
    entries.push('separator', {
      label: 'Copy id',
      run: () => void copyText(one.id).then((ok) => showMessage(ok ? 'ok' : 'error', ok ? 'Session id copied' : 'Could not copy the id')),
      testid: 'menu-copy-id',
    });
  }
  entries.push('separator', {
    label: n > 1 ? `Delete ${n} sessions…` : 'Delete…',
    hint: 'Delete',
    danger: true,
    run: () => void deleteSessions(t),
    testid: 'menu-delete',
  });
  return entries;
}
