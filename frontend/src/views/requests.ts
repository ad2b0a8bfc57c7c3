// Recent actions (the activity page's top): what was done from any surface
// (window, dashboard, command line), in plain words, each with Undo while
// it can still be undone as a whole.

import { api, missing, toApiError } from '../api';
import { button, h, replace } from '../dom';
import { absolute, plural, relative } from '../format';
import { onSessionsChanged, runUndo } from '../ops';
import type { ReceiptDTO } from '../types';

const shown = 8;

const said: Record<string, (n: string) => string> = {
  delete: (n) => `Moved ${n} to the trash`,
  archive: (n) => `Archived ${n}`,
  unarchive: (n) => `Unarchived ${n}`,
  restore: (n) => `Restored ${n}`,
  purge: (n) => `Deleted ${n} for good`,
  empty_trash: (n) => `Emptied the trash (${n})`,
};

/** describe says what a request did, in plain words. */
export function describe(r: ReceiptDTO): string {
  const n = plural((r.affected_ids ?? []).length, 'session');
  const op = r.op === 'undo' ? r.result_op : r.op;
  const what = (said[op] ?? ((x: string) => `${op.replace(/_/g, ' ')}: ${x}`))(n);
  if (r.op === 'delete' && !r.trashed) return `Deleted ${n}`;
  if (r.op === 'undo') return `Undo: ${what.charAt(0).toLowerCase()}${what.slice(1)}`;
  return r.matched > 0 ? `${what} by rule` : what;
}

export class RecentActions {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;
  private visible = false;

  constructor() {
    this.list = h('ul', { class: 'requests', 'aria-label': 'Recent actions, newest first' });
    this.el = h('section', { class: 'recent-actions', hidden: true }, h('h2', {}, 'Recent actions'), this.list);
    onSessionsChanged(() => (this.visible ? this.load() : undefined));
  }

  show(on: boolean): void {
    this.visible = on;
    if (on) void this.load();
  }

  async load(): Promise<void> {
    try {
      const rs = (await api.requests.recent(shown)) ?? [];
      this.el.hidden = rs.length === 0;
      replace(this.list, ...rs.map((r) => this.row(r)));
    } catch (e) {
      if (missing(e)) {
        this.el.hidden = true;
        return;
      }
      this.el.hidden = false;
      replace(this.list, h('li', { class: 'error-text' }, `Could not read the recent actions: ${toApiError(e).message}`));
    }
  }

  private row(r: ReceiptDTO): HTMLElement {
    const state = r.undone
      ? h('span', { class: 'badge' }, 'undone')
      : r.undoable
        ? button('Undo', { class: 'btn small', 'data-testid': 'request-undo' }, async (ev) => {
            (ev.currentTarget as HTMLButtonElement).disabled = true;
            await runUndo(r);
            void this.load();
          })
        : null;
    return h(
      'li',
      { 'data-testid': 'request', 'data-op': r.op },
      h('span', { class: 'req-what' }, describe(r)),
      h('time', { class: 'muted small', title: absolute(r.created_at) }, relative(r.created_at)),
      h('span', { class: 'spacer' }),
      state,
    );
  }
}
