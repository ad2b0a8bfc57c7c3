// The key sheet (?): every shortcut of the window and the dashboard, in one
// place, so that the page and the sheet cannot disagree.

import { h } from './dom';
import { openModal } from './modal';

export const keySheet: { section: string; keys: [string, string][] }[] = [
  {
    section: 'Everywhere',
    keys: [
      ['?', 'This key sheet'],
      ['/', 'Search sessions'],
      ['Ctrl+Z', 'Undo the last action'],
      ['Ctrl+N', 'New session (the window; the button on the dashboard)'],
      ['Alt+1 … Alt+7', 'Sessions, Activity, Plugins, Gateway, Cron, Storage, Settings'],
      ['Escape', 'Close, clear the search, clear the selection, back'],
    ],
  },
  {
    section: 'Sessions list',
    keys: [
      ['↑ ↓ PageUp PageDown Home End', 'Move'],
      ['Shift + a move', 'Extend the selection'],
      ['Space', 'Select or unselect the row'],
      ['Ctrl+A', 'Select every session of the filter'],
      ['Enter', 'Open the transcript'],
      ['e', 'Archive (or unarchive) the selection'],
      ['F2', 'Rename'],
      ['p', 'Pin or unpin'],
      ['→ ←', 'Show or hide a conversation\'s subagents'],
      ['Delete', 'Delete the selection'],
      ['Shift+F10, menu key', 'The row menu (also right-click or ⋯)'],
    ],
  },
  {
    section: 'Transcript',
    keys: [
      ['e', 'Archive or unarchive this session'],
      ['F2', 'Rename'],
      ['p', 'Pin or unpin'],
      ['Delete', 'Delete this session'],
      ['Enter / Shift+Enter', 'Send / new line (in the composer)'],
      ['Escape', 'Back to the list'],
    ],
  },
];

export function showKeySheet(): void {
  const body = h('div', { class: 'keysheet' });
  for (const s of keySheet) {
    const table = h('table', {}, h('caption', {}, s.section));
    for (const [k, what] of s.keys) table.append(h('tr', {}, h('th', {}, h('kbd', {}, k)), h('td', {}, what)));
    body.append(table);
  }
  void openModal({ title: 'Keys', body, buttons: [{ label: 'Close', value: undefined, kind: 'primary', default: true }], cancelValue: undefined, testid: 'keysheet', wide: true });
}
