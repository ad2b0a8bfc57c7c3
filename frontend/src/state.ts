// What every view shares: where the UI runs and how to move between views.

import type { InfoDTO } from './types';

export type ViewName = 'sessions' | 'transcript' | 'plugins' | 'activity' | 'settings';

export interface View {
  readonly el: HTMLElement;
  show(arg?: string): void;
  hide?(): void;
  /** Escape with no modal open; true if it did something */
  escape?(): boolean;
  /** a key the page did not handle (focus not in a text field unless stated) */
  key?(ev: KeyboardEvent): boolean;
}

export const app = {
  info: { version: '', platform: '', profile: 'default', home: '' } as InfoDTO,
  desktop: false,
  go: (_view: ViewName, _arg?: string): void => {},
  current: 'sessions' as ViewName,
  /** the sessions list should reload when next shown */
  sessionsStale: (): void => {},
};

/** highlight splits text into text nodes and <mark>s for the query's words. */
export function highlight(text: string, query: string): Node[] {
  const words = query
    .split(/\s+/)
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w.length > 0);
  if (words.length === 0) return [document.createTextNode(text)];
  const lower = text.toLowerCase();
  const out: Node[] = [];
  let i = 0;
  while (i < text.length) {
    let best = -1;
    let len = 0;
    for (const w of words) {
      const at = lower.indexOf(w, i);
      if (at >= 0 && (best < 0 || at < best || (at === best && w.length > len))) {
        best = at;
        len = w.length;
      }
    }
    if (best < 0) break;
    if (best > i) out.push(document.createTextNode(text.slice(i, best)));
    const m = document.createElement('mark');
    m.textContent = text.slice(best, best + len);
    out.push(m);
    i = best + len;
  }
  if (i < text.length) out.push(document.createTextNode(text.slice(i)));
  return out;
}
