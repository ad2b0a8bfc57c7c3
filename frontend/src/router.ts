// The pages of the UI and the navigation between them. A page is a View with
// a name; those with a label are in the top bar (Alt+key jumps there). New
// pages (Storage, and later Gateway, Cron) are one entry in main.ts's list.

import { h } from './dom';
import type { View, ViewName } from './state';

export interface Page {
  name: ViewName;
  view: View;
  /** in the top bar when set */
  label?: string;
  /** Alt+key opens it */
  key?: string;
  /** the top-bar item that is current while this page shows (transcript: sessions) */
  under?: ViewName;
  /** a page that needs an argument falls back here without one */
  needsArg?: boolean;
}

export class Router {
  readonly nav: HTMLElement;
  readonly main: HTMLElement;
  private readonly pages = new Map<ViewName, Page>();
  private readonly buttons = new Map<ViewName, HTMLButtonElement>();
  private cur: ViewName;
  private readonly listeners = new Set<(name: ViewName) => void>();

  constructor(pages: Page[], private readonly home: ViewName) {
    this.cur = home;
    this.nav = h('nav', { class: 'nav', 'aria-label': 'Main' });
    this.main = h('main', { class: 'main' });
    for (const p of pages) {
      this.pages.set(p.name, p);
      p.view.el.hidden = true;
      this.main.append(p.view.el);
      if (!p.label) continue;
      const b = h('button', { type: 'button', class: 'nav-btn', 'data-testid': `nav-${p.name}`, title: p.key ? `${p.label} (Alt+${p.key})` : p.label }, p.label);
      b.addEventListener('click', () => this.go(p.name));
      this.buttons.set(p.name, b);
      this.nav.append(b);
    }
    document.addEventListener('keydown', (ev) => {
      if (!ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const p = pages.find((x) => x.key === ev.key);
      if (p) {
        ev.preventDefault();
        this.go(p.name);
      }
    });
  }

  get current(): ViewName {
    return this.cur;
  }

  view(name: ViewName = this.cur): View {
    return (this.pages.get(name) ?? this.pages.get(this.home)!).view;
  }

  onChange(fn: (name: ViewName) => void): void {
    this.listeners.add(fn);
  }

  go(name: ViewName, arg?: string): void {
    let p = this.pages.get(name);
    if (!p || (p.needsArg && !arg)) p = this.pages.get(this.home)!;
    const was = this.pages.get(this.cur);
    if (was && was !== p) {
      was.view.hide?.();
      was.view.el.hidden = true;
    }
    this.cur = p.name;
    p.view.el.hidden = false;
    const navName = p.under ?? p.name;
    for (const [n, b] of this.buttons) {
      if (n === navName) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    }
    p.view.show(arg);
    for (const fn of this.listeners) fn(p.name);
  }
}
