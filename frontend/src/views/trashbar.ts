// The trash tab's header: how much it holds, how long it keeps sessions,
// when it next purges, and "Empty trash".

import { button, h, replace } from '../dom';
import { emptyTrashWithConfirm } from '../confirm';
import { bytes, plural, relative } from '../format';
import { onSessionsChanged } from '../ops';
import { trash } from '../stores/trash';

export class TrashBar {
  readonly el: HTMLElement;
  private readonly text: HTMLElement;
  private readonly emptyBtn: HTMLButtonElement;

  constructor() {
    this.text = h('span', { class: 'trash-text', 'data-testid': 'trash-summary' });
    this.emptyBtn = button('Empty trash', { class: 'btn small danger', 'data-testid': 'empty-trash' }, () => void emptyTrashWithConfirm());
    this.el = h('div', { class: 'trashbar', hidden: true }, this.text, h('span', { class: 'spacer' }), this.emptyBtn);
    trash.changes.subscribe(() => this.render());
    onSessionsChanged(() => (this.el.hidden ? undefined : trash.load()));
  }

  show(on: boolean): void {
    this.el.hidden = !on;
    if (on) void trash.load();
  }

  private render(): void {
    const s = trash.summary;
    if (trash.unsupported) {
      replace(this.text, 'This server has no trash: deletes are for good.');
      this.emptyBtn.hidden = true;
      return;
    }
    if (!s) return;
    this.emptyBtn.hidden = false;
    this.emptyBtn.disabled = s.sessions === 0;
    const keep = s.trash_days > 0 ? `Deleted sessions are kept ${plural(s.trash_days, 'day')}, then deleted for good.` : 'The trash is off: deletes are for good.';
    const holds = s.sessions > 0 ? ` It holds ${plural(s.sessions, 'session')} (${plural(s.messages, 'message')}, ${bytes(s.bytes)}).` : '';
    const next = s.next_purge_at ? ` Next purge ${relative(s.next_purge_at)}.` : '';
    replace(this.text, keep + holds + next);
  }
}
