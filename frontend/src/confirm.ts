// The questions asked before what is big or cannot be taken back. A delete
// goes to the trash: a few sessions go at once (the result panel offers
// Undo); more than 20, or a whole filter, are asked about first with the
// count and the cascade, Cancel focused. Deleting for good (the trash off,
// "Delete now", emptying the trash) is always asked, Cancel focused.

import { api, newRequestID, toApiError } from './api';
import { h } from './dom';
import { num, plural } from './format';
import { confirmModal } from './modal';
import { dismissResult, runBulk, sessionsChanged, showMessage } from './ops';
import { trash } from './stores/trash';
import type { PreviewDTO, ReceiptDTO } from './types';

/** Deleting more than this many sessions asks first, even to the trash. */
export const askAbove = 20;

async function preview(ids: string[]): Promise<PreviewDTO | null> {
  try {
    return await api.sessions.preview(ids);
  } catch (e) {
    showMessage('error', 'Could not count what the delete would remove', toApiError(e).message);
    return null;
  }
}

function countLine(p: PreviewDTO, selected: number, verb: string): HTMLElement {
  const text =
    `${plural(p.count, 'session')} ${verb}` +
    (p.cascaded > 0 ? `, ${p.cascaded} of them cascaded (compression chains and delegate children) beyond the ${num(selected)} selected.` : '.');
  return h('p', { 'data-testid': 'confirm-text', 'data-count': p.count, 'data-cascaded': p.cascaded }, text);
}

/** deleteWithConfirm moves sessions to the trash (or deletes them, when the
 * trash is off), asking first when it is big or for good. */
export async function deleteWithConfirm(ids: string[], o: { wholeFilter?: boolean } = {}): Promise<ReceiptDTO | null> {
  if (ids.length === 0) return null;
  const [days, p] = await Promise.all([trash.ensureDays(), preview(ids)]);
  if (!p) return null;
  if (days > 0 && !o.wholeFilter && p.count <= askAbove) return runBulk('delete', ids, { selectedCount: ids.length });
  const forGood = days === 0;
  const body = h(
    'div',
    {},
    countLine(p, ids.length, forGood ? 'will be deleted' : 'will move to the trash'),
    o.wholeFilter ? h('p', { class: 'warn-text' }, 'This is every session of the current filter.') : null,
    forGood
      ? h('p', { class: 'warn-text' }, 'The trash is off: transcripts and their files are deleted for good.')
      : h('p', { 'data-testid': 'restorable' }, `You can restore them for ${plural(days, 'day')}.`),
  );
  if (p.count === 0) body.appendChild(h('p', { class: 'warn-text' }, 'None of the selected sessions exists any more.'));
  const what = o.wholeFilter ? `all ${plural(ids.length, 'session')} of this filter` : plural(ids.length, 'selected session');
  const ok = await confirmModal({
    title: forGood ? `Delete ${what} for good?` : `Move ${what} to the trash?`,
    body,
    confirmLabel: forGood ? `Delete ${plural(p.count, 'session')}` : `Move ${plural(p.count, 'session')} to the trash`,
    danger: forGood,
    cancelFocused: true,
    confirmTestid: 'confirm-delete',
  });
  if (!ok) return null;
  return runBulk('delete', ids, { selectedCount: ids.length });
}

/** purgeWithConfirm deletes sessions for good now ("Delete now", in the
 * trash or out of it): always asked. */
export async function purgeWithConfirm(ids: string[]): Promise<ReceiptDTO | null> {
  if (ids.length === 0) return null;
  const p = await preview(ids);
  if (!p) return null;
  const ok = await confirmModal({
    title: `Delete ${plural(ids.length, 'session')} for good?`,
    body: h('div', {}, countLine(p, ids.length, 'will be deleted for good'), h('p', { class: 'warn-text' }, 'Transcripts and their files are removed. This cannot be undone.')),
    confirmLabel: `Delete ${plural(p.count, 'session')} for good`,
    danger: true,
    confirmTestid: 'confirm-purge',
  });
  if (!ok) return null;
  return runBulk('purge', ids, { selectedCount: ids.length });
}

/** emptyTrashWithConfirm purges everything in the trash: always asked. */
export async function emptyTrashWithConfirm(): Promise<ReceiptDTO | null> {
  const s = await trash.load();
  const n = s?.sessions ?? 0;
  if (n === 0) {
    showMessage('ok', 'The trash is empty');
    return null;
  }
  const ok = await confirmModal({
    title: 'Empty the trash?',
    body: h(
      'div',
      {},
      h('p', { 'data-testid': 'confirm-text', 'data-count': n }, `${plural(n, 'session')} and ${plural(s?.messages ?? 0, 'message')} will be deleted for good.`),
      h('p', { class: 'warn-text' }, 'This cannot be undone.'),
    ),
    confirmLabel: `Delete ${plural(n, 'session')} for good`,
    danger: true,
    confirmTestid: 'confirm-empty',
  });
  if (!ok) return null;
  dismissResult();
  try {
    const r = await api.trash.empty(newRequestID());
    showMessage('ok', `Emptied the trash: ${plural((r.affected_ids ?? []).length, 'session')} deleted for good`);
    return r;
  } catch (e) {
    showMessage('error', 'Could not empty the trash', toApiError(e).message);
    return null;
  } finally {
    void sessionsChanged('empty_trash');
  }
}
